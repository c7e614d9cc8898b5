#include "workspace/layersfuse.h"
#include "workspace/layers.h"
#include "workspace/blank.h"
#include "base/cleanup.h"
#include "base/child.h"
#include "base/fdio.h"
#include "base/timeutil.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define LAYERSFUSE_MAGIC 0x65735546	/* FUSE_SUPER_MAGIC */
#define LAYERSFUSE_MOUNT_WAIT_MS 5000

static const char *const layersfuse_paths[] = { "/usr/bin/fuse2fs", "/usr/sbin/fuse2fs", "/sbin/fuse2fs" };

const char *layersfuse_fuse2fs(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(layersfuse_paths); i++)
		if (access(layersfuse_paths[i], X_OK) == 0)
			return layersfuse_paths[i];
	return NULL;
}

bool layersfuse_capable(char *why, size_t n)
{
	if (!layersfuse_fuse2fs()) {
		snprintf(why, n, "fuse2fs is missing (apt-get install fuse2fs)");
		return false;
	}
	if (!blank_mkfs()) {
		snprintf(why, n, "mkfs.ext4 is missing (apt-get install e2fsprogs)");
		return false;
	}
	if (access("/dev/fuse", R_OK | W_OK) < 0) {
		snprintf(why, n, "/dev/fuse cannot be opened (%s)", strerror(errno));
		return false;
	}
	char v[16] = "";
	_cleanup_close_ int fd = open("/proc/sys/user/max_user_namespaces", O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && read(fd, v, sizeof(v) - 1) > 0 && v[0] == '0') {
		snprintf(why, n, "user namespaces are off (user.max_user_namespaces = 0)");
		return false;
	}
	snprintf(why, n, "fuse2fs: an ext4 image of that size, in a user namespace of the user's own");
	return true;
}

int layersfuse_mkfs(const char *image, uint64_t size, struct err *e)
{
	_cleanup_close_ int fd = open(image, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)size) < 0)
		return err_setc(e, -errno, "cannot make the layers image %s", image);
	/* No journal: fuse2fs does not write one (it warns, and replays
	 * nothing). Lazy inode tables: made in milliseconds. */
	/* Its top directory the user's (mke2fs makes it root's): the user is
	 * its own uid where the image is served. */
	char ext[96];
	snprintf(ext, sizeof(ext), "lazy_itable_init=1,nodiscard,root_owner=%u:%u", (unsigned)geteuid(),
		 (unsigned)getegid());
	char *argv[] = { (char *)blank_mkfs(), "-q", "-F", "-m", "0", "-O", "^has_journal", "-L", "ward-layers", "-E",
			 ext, (char *)image, NULL };
	int st = child_wait(argv, NULL, 0);
	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return err_set(e, st < 0 ? st : -EIO, "cannot make the layers image %s (mkfs.ext4)", image);
	return 0;
}

int layersfuse_path(pid_t pid, const char *dir, char *out, size_t n)
{
	if ((size_t)snprintf(out, n, "/proc/%d/root%s", (int)pid, dir) >= n)
		return -ENAMETOOLONG;
	return 0;
}

bool layersfuse_mounted(pid_t pid, const char *dir)
{
	char p[PATH_MAX], up[PATH_MAX + 4];
	if (pid <= 0 || layersfuse_path(pid, dir, p, sizeof(p)) < 0)
		return false;
	snprintf(up, sizeof(up), "%s/..", p);
	struct statfs sf;
	struct stat a, b;
	return statfs(p, &sf) == 0 && sf.f_type == LAYERSFUSE_MAGIC && stat(p, &a) == 0 && stat(up, &b) == 0 &&
	       a.st_dev != b.st_dev;
}

static int layersfuse_map_same(const char *file, unsigned id)
{
	char m[64];
	snprintf(m, sizeof(m), "%u %u 1\n", id, id);
	return fdio_write_str(AT_FDCWD, file, m);
}

/* In the child, before the exec: CAP_SYS_ADMIN kept across it (an
 * ambient capability; the uid is not 0 here), so that the daemon can
 * mount in this user namespace, and nothing else. */
static void layersfuse_keep_mount_cap(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };
	d[CAP_SYS_ADMIN / 32].permitted = d[CAP_SYS_ADMIN / 32].effective = d[CAP_SYS_ADMIN / 32].inheritable =
		1u << (CAP_SYS_ADMIN % 32);
	if (syscall(SYS_capset, &h, d) < 0 || prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_ADMIN, 0, 0) < 0)
		_exit(126);
}

/* The holder: a user and mount namespace of its own, the user its own
 * uid there (fuse2fs keeps what mounting needs across the exec as an
 * ambient capability), then fuse2fs in the foreground, which mounts over
 * dir and serves until it is told to end. Never returns. */
static __attribute__((noreturn)) void layersfuse_holder(const char *image, const char *dir, off_t size)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0 || layersfuse_map_same("/proc/self/uid_map", uid) < 0 ||
	    fdio_write_str(AT_FDCWD, "/proc/self/setgroups", "deny\n") < 0 ||
	    layersfuse_map_same("/proc/self/gid_map", gid) < 0)
		_exit(126);
	struct rlimit fs = { (rlim_t)size, (rlim_t)size };
	setrlimit(RLIMIT_FSIZE, &fs);
	signal(SIGXFSZ, SIG_IGN);	/* a write past the cap fails (EFBIG) instead */
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
		_exit(126);
	fdio_close_all_but(3, NULL, 0);
	layersfuse_keep_mount_cap();
	char *argv[] = { (char *)layersfuse_fuse2fs(), (char *)image, (char *)dir, "-f", "-o", "fsname=ward-layers",
			 NULL };
	char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
	execve(argv[0], argv, envp);
	_exit(127);
}

int layersfuse_mount(const char *image, const char *dir, pid_t *ret_pid, struct err *e)
{
	if (!layersfuse_fuse2fs())
		return err_set(e, -ENOENT, "fuse2fs is missing (apt-get install fuse2fs)");
	struct stat st;
	if (stat(image, &st) < 0)
		return err_setc(e, -errno, "%s", image);
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return err_setc(e, -errno, "pipe");
	/* Twice forked: the holder is nobody's child here (the kernel reaps
	 * it when it ends), and in a session of its own, so that no signal
	 * for the caller's terminal reaches it. */
	pid_t mid = fork();
	if (mid < 0) {
		int r = -errno;
		close(p[0]), close(p[1]);
		return err_setc(e, r, "fork");
	}
	if (mid == 0) {
		close(p[0]);
		sigset_t all;
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		setsid();
		pid_t h = fork();
		if (h == 0)
			layersfuse_holder(image, dir, st.st_size);
		fdio_write_full(p[1], &h, sizeof(h));
		_exit(h < 0);
	}
	close(p[1]);
	pid_t h = -1;
	int r = fdio_read_full(p[0], &h, sizeof(h));
	close(p[0]);
	child_reap(mid);
	if (r < 0 || h <= 0)
		return err_set(e, -EIO, "cannot start fuse2fs for %s", image);
	_cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, h, 0);
	for (int64_t until = now_ms() + LAYERSFUSE_MOUNT_WAIT_MS; !layersfuse_mounted(h, dir);) {
		struct pollfd pf = { .fd = pidfd, .events = POLLIN };
		if (pidfd < 0 || poll(&pf, 1, 10) != 0)
			return err_set(e, -EIO, "fuse2fs ended before it mounted %s (is it an ext4 image?)", image);
		if (now_ms() > until) {
			kill(h, SIGKILL);
			return err_set(e, -ETIMEDOUT, "fuse2fs did not mount %s within %d s", image,
				       LAYERSFUSE_MOUNT_WAIT_MS / 1000);
		}
	}
	*ret_pid = h;
	return 0;
}

/* Wait up to ms for the process behind pidfd to end: whether it did. */
static bool layersfuse_wait(int pidfd, int ms)
{
	struct pollfd pf = { .fd = pidfd, .events = POLLIN };
	return poll(&pf, 1, ms) > 0;
}

/* fuse2fs and fuse-overlayfs unmount and exit on SIGTERM; SIGKILL after
 * 2 s. */
static void layersfuse_end(int pidfd)
{
	syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, NULL, 0);
	if (layersfuse_wait(pidfd, 2000))
		return;
	syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
	layersfuse_wait(pidfd, 1000);
}

void layersfuse_unmount(pid_t pid, const char *dir)
{
	_cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	/* The pidfd first, then the check: a pid reused after the check is
	 * not the one signalled. */
	if (pidfd < 0 || !layersfuse_mounted(pid, dir))
		return;
	layersfuse_end(pidfd);
}

static bool layersfuse_in_own;

bool layersfuse_entered(void)
{
	return layersfuse_in_own;
}

static const char *const layersfuse_ovl_paths[] = { "/usr/bin/fuse-overlayfs", "/usr/local/bin/fuse-overlayfs" };

const char *layersfuse_overlayfs(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(layersfuse_ovl_paths); i++)
		if (access(layersfuse_ovl_paths[i], X_OK) == 0)
			return layersfuse_ovl_paths[i];
	return NULL;
}

int layersfuse_enter(struct err *e)
{
	if (layersfuse_in_own)
		return 0;
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		return err_setc(e, -errno, "cannot make a user and mount namespace for the layers");
	int r = layersfuse_map_same("/proc/self/uid_map", uid);
	if (r >= 0)
		r = fdio_write_str(AT_FDCWD, "/proc/self/setgroups", "deny\n");
	if (r >= 0)
		r = layersfuse_map_same("/proc/self/gid_map", gid);
	if (r < 0)
		return err_setc(e, r, "cannot map the user in the layers' namespace");
	/* Nothing mounted here reaches the host's mount namespace. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return err_setc(e, -errno, "cannot make the layers' mounts private");
	layersfuse_in_own = true;
	return 0;
}

static int layersfuse_spawn(char **argv, const char *dir, off_t fsize, pid_t *ret, struct err *e)
{
	if (!layersfuse_in_own)
		return err_set(e, -EINVAL, "the layers' namespace is not entered");
	pid_t pid = fork();
	if (pid < 0)
		return err_setc(e, -errno, "fork");
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		sigset_t all;
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		setsid();
		if (fsize) {
			struct rlimit fs = { (rlim_t)fsize, (rlim_t)fsize };
			setrlimit(RLIMIT_FSIZE, &fs);
			signal(SIGXFSZ, SIG_IGN);
		}
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
			_exit(126);
		fdio_close_all_but(3, NULL, 0);
		layersfuse_keep_mount_cap();
		char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
		execve(argv[0], argv, envp);
		_exit(127);
	}
	_cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	for (int64_t until = now_ms() + LAYERSFUSE_MOUNT_WAIT_MS; !layersfuse_mounted(getpid(), dir);) {
		struct pollfd pf = { .fd = pidfd, .events = POLLIN };
		if (pidfd < 0 || poll(&pf, 1, 10) != 0) {
			waitpid(pid, NULL, 0);
			return err_set(e, -EIO, "%s ended before it mounted %s", argv[0], dir);
		}
		if (now_ms() > until) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			return err_set(e, -ETIMEDOUT, "%s did not mount %s within %d s", argv[0], dir,
				       LAYERSFUSE_MOUNT_WAIT_MS / 1000);
		}
	}
	*ret = pid;
	return 0;
}

int layersfuse_serve(const char *image, const char *dir, pid_t *ret_pid, struct err *e)
{
	if (!layersfuse_fuse2fs())
		return err_set(e, -ENOENT, "fuse2fs is missing (apt-get install fuse2fs)");
	struct stat st;
	if (stat(image, &st) < 0)
		return err_setc(e, -errno, "%s", image);
	char *argv[] = { (char *)layersfuse_fuse2fs(), (char *)image, (char *)dir, "-f", "-o", "fsname=ward-layers",
			 NULL };
	return layersfuse_spawn(argv, dir, st.st_size, ret_pid, e);
}

int layersfuse_overlay(const char *lower, const char *upper, const char *work, const char *mp, pid_t *ret_pid,
		       struct err *e)
{
	if (!layersfuse_overlayfs())
		return err_set(e, -ENOENT, "fuse-overlayfs is missing (apt-get install fuse-overlayfs)");
	char opts[3 * PATH_MAX + 64];
	if ((size_t)snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s,writeback=0", lower, upper, work) >=
	    sizeof(opts))
		return err_set(e, -ENAMETOOLONG, "the workspace's paths are too long for fuse-overlayfs");
	if (strchr(lower, ',') || strchr(lower, ':') || strchr(upper, ',') || strchr(work, ','))
		return err_set(e, -EINVAL, "fuse-overlayfs cannot take a path with ',' or ':' (%s)", lower);
	char *argv[] = { (char *)layersfuse_overlayfs(), "-f", "-o", opts, (char *)mp, NULL };
	return layersfuse_spawn(argv, mp, 0, ret_pid, e);
}

void layersfuse_stop(pid_t pid)
{
	if (pid <= 0)
		return;
	_cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return;
	layersfuse_end(pidfd);
	waitpid(pid, NULL, WNOHANG);
}
