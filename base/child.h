/* Child processes: running a helper program (diff, mkfs.ext4, a decompressor, ldd) and
 * waiting for it: one way, for every caller. */
#pragma once
#include <stddef.h>
#include <sys/types.h>

/* Start argv (argv[0] searched in PATH unless it holds a '/') with fds[i]
 * as its descriptor i for i < n: -1 is /dev/null for 0, 1 and 2 (and
 * nothing above); 2 is /dev/null when n < 3. Every signal is at its
 * default and none is blocked, whatever the caller's mask. 0 or -errno. */
int child_start(char *const argv[], const int *fds, size_t n, pid_t *ret_pid);
/* child_start and wait: the wait status, or -errno if it did not start. */
int child_wait(char *const argv[], const int *fds, size_t n);
/* Wait for pid, through EINTR: its wait status. */
int child_reap(pid_t pid);
