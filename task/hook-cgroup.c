#include "task/hook-cgroup.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/timeutil.h"
#include "sandbox/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

static char none_why[160];
static int seq;

int hook_cgroup_base(char *out, size_t n)
{
	/* What this machine's cgroups can do, looked at once (sandbox/cgroup.h:
	 * v2 at /sys/fs/cgroup, or /sys/fs/cgroup/unified beside v1). */
	static struct cgroup_caps caps;
	static bool probed;
	if (!probed) {
		cgroup_probe(&caps);
		probed = true;
	}
	if (!caps.v2_base[0]) {
		snprintf(none_why, sizeof(none_why), "no cgroup v2 here");
		return -ENOTSUP;
	}
	if (!caps.v2_writable || !caps.v2_kill) {
		snprintf(none_why, sizeof(none_why), "%s", !caps.v2_kill ? "this kernel's cgroups have no cgroup.kill"
								      : "ward may not make a cgroup under its own");
		return -EACCES;
	}
	if ((size_t)snprintf(out, n, "%s", caps.v2_base) >= n)
		return -ENAMETOOLONG;
	return 0;
}

int hook_cgroup_new(struct hook_cgroup *cg)
{
	cg->fd = -1;
	char base[PATH_MAX - 64], kill_file[PATH_MAX];
	int r = hook_cgroup_base(base, sizeof(base));
	if (r < 0)
		return r;
	cg->seq = ++seq;
	snprintf(cg->path, sizeof(cg->path), "%s/ward-hook-%d-%d", base, (int)getpid(), cg->seq);
	if (mkdir(cg->path, 0700) < 0) {
		r = -errno;
		snprintf(none_why, sizeof(none_why), "ward may not make a cgroup under %.100s (%s)", base, strerror(-r));
		return r;
	}
	snprintf(kill_file, sizeof(kill_file), "%s/cgroup.kill", cg->path);
	if (access(kill_file, W_OK) < 0 || (cg->fd = open(cg->path, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
		r = -errno;
		rmdir(cg->path);
		cg->fd = -1;
		snprintf(none_why, sizeof(none_why), "this kernel's cgroups have no cgroup.kill");
		return r;
	}
	none_why[0] = 0;
	return 0;
}

int hook_cgroup_spawn(const struct hook_cgroup *cg, char *const argv[], const int fds[3], pid_t *ret_pid)
{
	/* Everything the child needs is ready before the clone: it makes
	 * system calls only (a fork of a ward with threads). */
	int moved[3];
	for (int i = 0; i < 3; i++)
		moved[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
	for (int i = 0; i < 3; i++)
		if (moved[i] < 0) {
			for (int k = 0; k < 3; k++)
				if (moved[k] >= 0)
					close(moved[k]);
			return -EMFILE;
		}
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	struct clone_args a = { .flags = CLONE_INTO_CGROUP, .exit_signal = SIGCHLD, .cgroup = (uint64_t)cg->fd };
	pid_t pid = (pid_t)syscall(SYS_clone3, &a, sizeof(a));
	if (pid == 0) {
		setpgid(0, 0);
		for (int s = 1; s < 65; s++)
			if (s != SIGKILL && s != SIGSTOP)
				signal(s, SIG_DFL);
		for (int i = 0; i < 3; i++)
			dup2(moved[i], i);
		syscall(SYS_close_range, 3, ~0U, 0);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execve("/bin/sh", argv, environ);
		_exit(127);
	}
	int r = pid < 0 ? -errno : 0;
	sigprocmask(SIG_SETMASK, &old, NULL);
	for (int i = 0; i < 3; i++)
		close(moved[i]);
	if (r == 0) {
		/* Its group is its own before ward signals it (the child may not
		 * have run yet). */
		setpgid(pid, pid);
		*ret_pid = pid;
	}
	return r;
}

void hook_cgroup_end(struct hook_cgroup *cg)
{
	if (cg->fd < 0)
		return;
	char p[PATH_MAX + 32];
	snprintf(p, sizeof(p), "%s/cgroup.kill", cg->path);
	_cleanup_close_ int k = open(p, O_WRONLY | O_CLOEXEC);
	if (k >= 0)
		fdio_write_full(k, "1", 1);
	/* The kill is done when cgroup.events says populated 0 (it is
	 * signalled with POLLPRI); then the directory can go. */
	snprintf(p, sizeof(p), "%s/cgroup.events", cg->path);
	_cleanup_close_ int ev = open(p, O_RDONLY | O_CLOEXEC);
	int64_t until = now_ms() + 1000;
	while (rmdir(cg->path) < 0 && errno == EBUSY && now_ms() < until) {
		struct pollfd pf = { .fd = ev, .events = POLLPRI };
		if (ev < 0 || poll(&pf, 1, 20) < 0)
			usleep(20000);
		if (ev >= 0)
			lseek(ev, 0, SEEK_SET);
	}
	close(cg->fd);
	cg->fd = -1;
}

const char *hook_cgroup_none(void)
{
	return none_why;
}
