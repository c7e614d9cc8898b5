#include "base/child.h"
#include "base/cleanup.h"
#include "base/timeutil.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int child_spawn(const char *path, char *const argv[], char *const envp[], const int *fds, size_t n,
		       bool group, pid_t *ret_pid)
{
	/* A source among the targets (fds[i] == j, j < n) would be overwritten
	 * before it is read, or (j == i) keep its close-on-exec flag: each
	 * goes through a copy above them first. */
	size_t top = n > 3 ? n : 3;
	int tmp[16];
	size_t ntmp = 0;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	for (size_t i = 0; i < top; i++) {
		int fd = i < n ? fds[i] : -1;
		if (fd >= 0 && (size_t)fd < top && ntmp < ARRAY_SIZE(tmp)) {
			int hi = fcntl(fd, F_DUPFD_CLOEXEC, (int)top);
			if (hi >= 0)
				fd = tmp[ntmp++] = hi;
		}
		if (fd >= 0)
			posix_spawn_file_actions_adddup2(&fa, fd, (int)i);
		else if (i <= 2)
			posix_spawn_file_actions_addopen(&fa, (int)i, "/dev/null", i ? O_WRONLY : O_RDONLY, 0);
	}
	posix_spawnattr_t at;
	posix_spawnattr_init(&at);
	sigset_t all, none;
	sigfillset(&all);
	sigemptyset(&none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setsigmask(&at, &none);
	/* Nothing but the descriptors given crosses into the child. */
	posix_spawn_file_actions_addclosefrom_np(&fa, (int)top);
	short fl = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
	if (group) {
		fl |= POSIX_SPAWN_SETPGROUP;
		posix_spawnattr_setpgroup(&at, 0);
	}
	posix_spawnattr_setflags(&at, fl);
	pid_t pid;
	int r = path ? posix_spawn(&pid, path, &fa, &at, argv, envp) : posix_spawnp(&pid, argv[0], &fa, &at, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	for (size_t i = 0; i < ntmp; i++)
		close(tmp[i]);
	if (r != 0)
		return -r;
	*ret_pid = pid;
	return 0;
}

/* The programs ward runs for itself (diff, mkfs.ext4, ldd, a decompressor)
 * get PATH and nothing else of its environment, which holds the API keys;
 * their messages are in the C locale. */
static int child_tool(char *const argv[], const int *fds, size_t n, pid_t *ret_pid)
{
	const char *p = getenv("PATH");
	_cleanup_free_ char *var = NULL;
	if (asprintf(&var, "PATH=%s", p && *p ? p : "/usr/bin:/bin") < 0)
		return -ENOMEM;
	char *envp[] = { var, NULL };
	return child_spawn(NULL, argv, envp, fds, n, false, ret_pid);
}

int child_start(char *const argv[], const int *fds, size_t n, pid_t *ret_pid)
{
	return child_tool(argv, fds, n, ret_pid);
}

int child_start_group(char *const argv[], const int *fds, size_t n, pid_t *ret_pid)
{
	return child_spawn(NULL, argv, environ, fds, n, true, ret_pid);
}

int child_start_env(const char *path, char *const argv[], char *const envp[], const int *fds, size_t n,
		    pid_t *ret_pid)
{
	return child_spawn(path, argv, envp, fds, n, false, ret_pid);
}

void child_kill_group(pid_t pid, int64_t grace_ms)
{
	kill(-pid, SIGTERM);
	int64_t until = now_ms() + grace_ms;
	int st;
	while (now_ms() < until && waitpid(pid, &st, WNOHANG) == 0)
		usleep(10000);
	/* Whether or not the leader left, what it started may still be there. */
	kill(-pid, SIGKILL);
	waitpid(pid, &st, 0);
}

int child_reap(pid_t pid)
{
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return st;
}

int child_wait(char *const argv[], const int *fds, size_t n)
{
	pid_t pid;
	int r = child_start(argv, fds, n, &pid);
	return r < 0 ? r : child_reap(pid);
}
