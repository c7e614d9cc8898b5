#include "sandbox/layers.h"
#include "sandbox/state.h"
#include "base/cleanup.h"
#include "base/child.h"
#include "base/timeutil.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const layers_mkfs_paths[] = { "/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4" };

static const char *layers_mkfs(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(layers_mkfs_paths); i++)
		if (access(layers_mkfs_paths[i], X_OK) == 0)
			return layers_mkfs_paths[i];
	return NULL;
}

bool layers_disk_capable(char *why, size_t n)
{
	if (geteuid() != 0) {
		snprintf(why, n, "not enforced: a size-capped file system for the layers needs root (loop devices)");
		return false;
	}
	if (access("/dev/loop-control", R_OK | W_OK) < 0) {
		snprintf(why, n, "not enforced: no /dev/loop-control (loop devices) on this machine");
		return false;
	}
	if (!layers_mkfs()) {
		snprintf(why, n, "not enforced: mkfs.ext4 is missing (apt-get install e2fsprogs)");
		return false;
	}
	snprintf(why, n, "an ext4 image of that size, loop-mounted (kernel-enforced)");
	return true;
}

/* Locks are held for a mount or an unmount: milliseconds. */
#define LAYERS_LOCK_WAIT_MS 10000

static int layers_lock(int fd)
{
	int64_t until = now_ms() + LAYERS_LOCK_WAIT_MS;
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (now_ms() > until)
			return -ETIMEDOUT;
		usleep(10000);
	}
	return 0;
}

/* A mount point: its device differs from its parent's. */
static bool layers_mounted(const char *dir)
{
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s/..", dir);
	struct stat a, b;
	return stat(dir, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev;
}

static bool layers_dir_empty(const char *dir)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/upper", dir);
	return access(p, F_OK) < 0;
}

static int layers_run_mkfs(const char *image)
{
	/* Lazy inode tables and journal: a 10 GiB image is made in
	 * milliseconds and a few MiB of the host's disk. */
	char *argv[] = { (char *)layers_mkfs(), "-q", "-F", "-m", "0", "-L", "ward-layers", "-E",
			 "lazy_itable_init=1,lazy_journal_init=1,nodiscard", (char *)image, NULL };
	int st = child_wait(argv, NULL, 0);
	if (st < 0)
		return st;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

/* Attach the image to a free loop device (released when the file system
 * is unmounted) and mount it over dir. The loop device gets an open file
 * of its own: the lock on the caller's must not live on in it. */
static int layers_mount(const char *image, const char *dir)
{
	_cleanup_close_ int imgfd = open(image, O_RDWR | O_CLOEXEC);
	if (imgfd < 0)
		return -errno;
	_cleanup_close_ int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return -errno;
	for (int tries = 0; tries < 16; tries++) {
		int n = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (n < 0)
			return -errno;
		char dev[32];
		snprintf(dev, sizeof(dev), "/dev/loop%d", n);
		_cleanup_close_ int lfd = open(dev, O_RDWR | O_CLOEXEC);
		if (lfd < 0)
			return -errno;
		struct loop_config cfg = { .fd = (unsigned)imgfd, .info = { .lo_flags = LO_FLAGS_AUTOCLEAR } };
		if (ioctl(lfd, LOOP_CONFIGURE, &cfg) < 0) {
			if (errno == EBUSY)
				continue;	/* taken meanwhile */
			return -errno;
		}
		/* discard: space the box frees goes back to the host's disk. */
		if (mount(dev, dir, "ext4", MS_NOSUID | MS_NODEV | MS_NOATIME, "discard") < 0) {
			int r = -errno;
			ioctl(lfd, LOOP_CLR_FD, 0);
			return r;
		}
		return 0;
	}
	return -EBUSY;
}

/* Mount NAME's image over dir if it has one and nothing is mounted yet;
 * create it first (disk bytes) when asked. Under the image's lock, so two
 * wards never mount one image twice. 1 mounted, 0 no image, -errno. */
static int layers_ensure(const char *dir, uint64_t create, struct err *e)
{
	char image[PATH_MAX];
	snprintf(image, sizeof(image), "%s.img", dir);
	_cleanup_close_ int fd = open(image, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
	if (fd < 0)
		return errno == ENOENT ? 0 : err_setc(e, -errno, "cannot open the layers image %s", image);
	if (layers_lock(fd) < 0)
		return err_setc(e, -ETIMEDOUT, "%s is locked by another ward for over %d s", image,
				LAYERS_LOCK_WAIT_MS / 1000);
	if (layers_mounted(dir))
		return 1;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return err_setc(e, -errno, "%s", image);
	if (state_mkdir_p(dir, 0700) < 0)
		return err_setc(e, -errno, "cannot create %s", dir);
	int r;
	if (st.st_size == 0) {
		if (!layers_dir_empty(dir)) {
			/* Layers from before the cap: never hide them under a mount. */
			unlink(image);
			return 0;
		}
		r = ftruncate(fd, (off_t)create) < 0 ? -errno : layers_run_mkfs(image);
		if (r < 0) {
			unlink(image);
			return err_setc(e, r, "cannot make the layers image %s (mkfs.ext4)", image);
		}
	}
	r = layers_mount(image, dir);
	if (r < 0)
		return err_setc(e, r, "cannot mount the layers image %s on %s", image, dir);
	return 1;
}

int layers_open(const char *name, uint64_t disk, struct layers *ret, struct err *e)
{
	*ret = (struct layers){ 0 };
	int r = state_layers_dir(name, ret->dir, sizeof(ret->dir), e);
	if (r < 0)
		return r;
	bool capable = layers_disk_capable(ret->disk_by, sizeof(ret->disk_by));
	if (!disk)
		snprintf(ret->disk_by, sizeof(ret->disk_by), "not enforced: no --disk");
	int m = 0;
	if (disk && capable) {
		m = layers_ensure(ret->dir, disk, e);
		if (m < 0)
			return m;
		if (m == 0)
			snprintf(ret->disk_by, sizeof(ret->disk_by),
				 "not enforced: these layers were made before the cap (apply or drop them)");
	}
	snprintf(ret->upper, sizeof(ret->upper), "%s/upper", ret->dir);
	snprintf(ret->work, sizeof(ret->work), "%s/work", ret->dir);
	if (state_mkdir_p(ret->upper, 0755) < 0 || state_mkdir_p(ret->work, 0700) < 0)
		return err_setc(e, -errno, "cannot create the workspace layers under %s", ret->dir);
	struct statvfs sv;
	if (m == 1 && statvfs(ret->dir, &sv) == 0)
		ret->disk = (uint64_t)sv.f_blocks * sv.f_frsize;
	return 0;
}

int layers_find(const char *name, char *upper, size_t n, struct err *e)
{
	char dir[PATH_MAX - 16];
	int r = state_layers_dir(name, dir, sizeof(dir), e);
	if (r < 0)
		return r;
	if (geteuid() == 0) {
		r = layers_ensure(dir, 0, e);
		if (r < 0)
			return r;
	}
	snprintf(upper, n, "%s/upper", dir);
	return access(upper, F_OK) == 0 ? 1 : 0;
}

void layers_drop(const char *name)
{
	char dir[PATH_MAX - 16], image[PATH_MAX];
	if (state_layers_dir(name, dir, sizeof(dir), NULL) < 0)
		return;
	snprintf(image, sizeof(image), "%s.img", dir);
	_cleanup_close_ int fd = open(image, O_RDWR | O_CLOEXEC);
	if (fd >= 0)
		layers_lock(fd);
	/* Detached: a reader still inside lets go when it is done; the loop
	 * device is freed with the last reference (autoclear). */
	if (layers_mounted(dir))
		umount2(dir, MNT_DETACH);
	state_rm_rf(dir);
	if (fd >= 0)
		unlink(image);
}
