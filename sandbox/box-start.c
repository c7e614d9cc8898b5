#include "sandbox/box-start.h"
#include "image/image.h"

#include "base/fdio.h"
#include "base/timeutil.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/sched.h>
#include <stdint.h>
#include <stdio.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

pid_t box_clone3(uint64_t flags, int *cgfd, int *pidfd)
{
	struct clone_args a = {
		.flags = flags | CLONE_PIDFD,
		.pidfd = (uint64_t)(uintptr_t)pidfd,
		.exit_signal = SIGCHLD,
	};
	if (*cgfd >= 0) {
		a.flags |= CLONE_INTO_CGROUP;
		a.cgroup = (uint64_t)*cgfd;
	}
	pid_t pid = (pid_t)syscall(SYS_clone3, &a, sizeof(a));
	if (pid < 0 && *cgfd >= 0) {
		/* Placement refused (a cgroup we cannot write after all). */
		a.flags &= ~(uint64_t)CLONE_INTO_CGROUP;
		a.cgroup = 0;
		close(*cgfd);
		*cgfd = -1;
		pid = (pid_t)syscall(SYS_clone3, &a, sizeof(a));
	}
	return pid;
}

static int box_write_proc(pid_t pid, const char *file, const char *s)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", pid, file);
	return fdio_write_str(AT_FDCWD, path, s);
}

int box_userns_map(pid_t pid, unsigned inside, uid_t uid, gid_t gid)
{
	char map[64];
	snprintf(map, sizeof(map), "%u %u 1\n", inside, uid);
	int r = box_write_proc(pid, "uid_map", map);
	if (r < 0)
		return r;
	r = box_write_proc(pid, "setgroups", "deny");
	if (r < 0 && r != -ENOENT)
		return r;
	snprintf(map, sizeof(map), "%u %u 1\n", inside, gid);
	return box_write_proc(pid, "gid_map", map);
}

int box_userns_map_range(pid_t pid, unsigned base, unsigned count)
{
	char map[64];
	snprintf(map, sizeof(map), "0 %u %u\n", base, count);
	int r = box_write_proc(pid, "uid_map", map);
	return r < 0 ? r : box_write_proc(pid, "gid_map", map);
}

const char *box_tool_cwd(const struct box_spec *s)
{
	const char *w = s->image ? s->image->workdir : NULL;
	if (!s->opts->workspace && w && w[0] == '/' && strlen(w) < 1024)
		return w;
	return "/workspace";
}

int box_go_ahead(int sync_fd, const struct cgroup_set *cg, pid_t pid, struct cgroup_held *ret_held)
{
	*ret_held = (struct cgroup_held){ 0 };
	int r = fdio_write_full(sync_fd, "m", 1);
	if (r >= 0 && cg) {
		/* A refused attach (or clone3 placement) shows in where the
		 * child is: that, not what was asked, is what holds it. */
		cgroup_attach_v1(cg, pid);
		cgroup_held_by(cg, pid, ret_held);
	}
	char go = (char)(BOX_GO | (ret_held->memory ? BOX_GO_MEMORY : 0) | (ret_held->pids ? BOX_GO_PIDS : 0));
	if (r >= 0)
		r = fdio_write_full(sync_fd, &go, 1);
	return r;
}

int box_mount_overlay(const char *lower, const char *upper, const char *work, const char *target)
{
	char opts[3 * PATH_MAX + 64];
	/* userxattr: overlayfs in a user namespace keeps its own metadata in
	 * user.* xattrs. */
	if (snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s,userxattr", lower, upper, work) >=
	    (int)sizeof(opts)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return mount("overlay", target, "overlay", MS_NOSUID | MS_NODEV, opts);
}

/* How long a killed guest has to be reaped before it is left to init. */
#define BOX_REAP_MS 2000

void box_kill_reap(pid_t pid, int pidfd, int chan_fd)
{
	if (pidfd >= 0)
		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
	else
		kill(pid, SIGKILL);
	int64_t until = now_ms() + BOX_REAP_MS;
	while (now_ms() < until) {
		pid_t p = waitpid(pid, NULL, WNOHANG);
		if (p == pid || (p < 0 && errno == ECHILD))
			break;
		struct pollfd pf = { .fd = pidfd, .events = POLLIN };
		poll(&pf, 1, 10);
	}
	if (pidfd >= 0)
		close(pidfd);
	if (chan_fd >= 0)
		close(chan_fd);
}
