/* Child processes: running a helper program (diff, mkfs.ext4, a decompressor, ldd) and
 * waiting for it: one way, for every caller. */
#pragma once
#include <stddef.h>
#include <sys/types.h>

/* Start argv (argv[0] searched in PATH unless it holds a '/') with fds[i]
 * as its descriptor i for i < n: -1 is /dev/null for 0, 1 and 2 (and
 * nothing above); 2 is /dev/null when n < 3. Every signal is at its
 * default and none is blocked, whatever the caller's mask. A program ward
 * runs for itself (diff, mkfs.ext4): its environment is PATH alone, never
 * ward's own. 0 or -errno. */
int child_start(char *const argv[], const int *fds, size_t n, pid_t *ret_pid);
/* A program of the user's (a hook): as child_start, with ward's whole
 * environment, as the leader of a process group of its own (its pid is the
 * group's id), so that it and every child it starts can be signalled at
 * once with kill(-pid, ...). */
int child_start_group(char *const argv[], const int *fds, size_t n, pid_t *ret_pid);
/* A helper program of ward's: path exec'd as it is (no PATH search), with
 * the environment envp that the caller built for it. */
int child_start_env(const char *path, char *const argv[], char *const envp[], const int *fds, size_t n,
		    pid_t *ret_pid);
/* child_start and wait: the wait status, or -errno if it did not start. */
int child_wait(char *const argv[], const int *fds, size_t n);
/* End a group child_start_group made: SIGTERM to the whole group, then
 * SIGKILL after grace_ms, and reap its leader. Its children that left the
 * group (setsid) are not reached. */
void child_kill_group(pid_t pid, int64_t grace_ms);
/* Wait for pid, through EINTR: its wait status. */
int child_reap(pid_t pid);
