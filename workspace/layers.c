#include "workspace/layers.h"
#include "workspace/blank.h"
#include "workspace/layersfuse.h"
#include "workspace/wslayer.h"
#include "base/fdio.h"
#include "base/state.h"
#include "base/cleanup.h"
#include "base/timeutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define LAYERS_FUSE_BY                                                                                    \
	"fuse2fs: an ext4 image of that size, served in the keeper's user namespace; the workspace through " \
	"fuse-overlayfs, and the box's root too where --disk is given"

bool layers_disk_capable(char *why, size_t n)
{
	if (geteuid() != 0) {
		/* Without root: fuse2fs serves the image and fuse-overlayfs
		 * the box's copy-on-write over it (layersfuse.h). */
		char f[120];
		if (!layersfuse_capable(f, sizeof(f))) {
			snprintf(why, n, "not enforced: without root a size-capped file system needs fuse2fs: %s", f);
			return false;
		}
		if (!layersfuse_overlayfs()) {
			snprintf(why, n, "not enforced: fuse2fs could serve the layers, but the box's copy-on-write over "
					 "them needs fuse-overlayfs (apt-get install fuse-overlayfs)");
			return false;
		}
		snprintf(why, n, "%s", LAYERS_FUSE_BY);
		return true;
	}
	if (access("/dev/loop-control", R_OK | W_OK) < 0) {
		snprintf(why, n, "not enforced: no /dev/loop-control (loop devices) on this machine");
		return false;
	}
	if (!blank_mkfs()) {
		snprintf(why, n, "not enforced: mkfs.ext4 is missing (apt-get install e2fsprogs)");
		return false;
	}
	snprintf(why, n, "an ext4 image of that size, loop-mounted (kernel-enforced)");
	return true;
}

/* Locks are held for a mount or an unmount: milliseconds; a keeper that
 * serves the layers waits this long for the readers to let go. */
#define LAYERS_LOCK_WAIT_MS 10000

/* flock(fd, how), tried each poll_us until LAYERS_LOCK_WAIT_MS have gone
 * (-ETIMEDOUT), so that nobody who stops holding a lock stops us for good. */
static int layers_lock_every(int fd, int how, useconds_t poll_us)
{
	int64_t until = now_ms() + LAYERS_LOCK_WAIT_MS;
	while (flock(fd, how | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (now_ms() > until)
			return -ETIMEDOUT;
		usleep(poll_us);
	}
	return 0;
}

static int layers_lock(int fd, int how)
{
	return layers_lock_every(fd, how, 10000);
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

/* Attach the image to a free loop device (released when the file system
 * is unmounted) and mount it over dir. The loop device gets an open file
 * of its own: the lock on the caller's must not live on in it. */
static int layers_mount(const char *image, const char *dir, struct err *e)
{
	_cleanup_close_ int imgfd = open(image, O_RDWR | O_CLOEXEC);
	if (imgfd < 0)
		return err_setc(e, -errno, "cannot open %s", image);
	_cleanup_close_ int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return err_setc(e, -errno, "cannot open /dev/loop-control");
	/* LOOP_CTL_GET_FREE hands every caller the same lowest free device
	 * until one of them binds it: boxes made at once would each lose that
	 * race in turn (24 at once: some lost 16 times). wards take turns on
	 * a lock of loop-control's own inode, held from the choice to the
	 * bind (microseconds), polled each millisecond and bounded, so that a
	 * ward stopped while it holds the lock stops nobody else for long;
	 * another program's race is what the tries are for. */
	int r = layers_lock_every(ctl, LOCK_EX, 1000);
	if (r == -ETIMEDOUT)
		return err_set(e, r, "/dev/loop-control has been locked by another program for over %d s "
			       "(a ward stopped while it attached a loop device?): end it and try again", LAYERS_LOCK_WAIT_MS / 1000);
	if (r < 0)
		return err_setc(e, r, "cannot lock /dev/loop-control");
	for (int tries = 0; tries < 16; tries++) {
		int n = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (n < 0)
			return err_setc(e, -errno, "no free loop device");
		char dev[32];
		snprintf(dev, sizeof(dev), "/dev/loop%d", n);
		_cleanup_close_ int lfd = open(dev, O_RDWR | O_CLOEXEC);
		if (lfd < 0)
			return err_setc(e, -errno, "cannot open %s", dev);
		struct loop_config cfg = { .fd = (unsigned)imgfd, .info = { .lo_flags = LO_FLAGS_AUTOCLEAR } };
		if (ioctl(lfd, LOOP_CONFIGURE, &cfg) < 0) {
			if (errno == EBUSY)
				continue;	/* taken meanwhile */
			return err_setc(e, -errno, "cannot attach it to %s", dev);
		}
		flock(ctl, LOCK_UN);
		/* discard: space the box frees goes back to the host's disk. */
		if (mount(dev, dir, "ext4", MS_NOSUID | MS_NODEV | MS_NOATIME, "discard") < 0) {
			r = err_setc(e, -errno, "cannot mount %s", dev);
			ioctl(lfd, LOOP_CLR_FD, 0);
			return r;
		}
		return 0;
	}
	return err_set(e, -EBUSY, "every free loop device was taken by another program before it could be attached (16 tries)");
}

/* Hold NAME's image, mounting it over dir if nobody has: the image's lock
 * shared, on an open file of our own. create > 0 makes the image (of that
 * size) when there is none. Returns the held fd, -ENOENT when there is no
 * image, or -errno. */
static int layers_hold(const char *dir, uint64_t create, struct err *e)
{
	char image[PATH_MAX];
	snprintf(image, sizeof(image), "%s.img", dir);
	if (create) {
		char parent[PATH_MAX];
		snprintf(parent, sizeof(parent), "%s", dir);
		char *slash = strrchr(parent, '/');
		if (slash)
			*slash = 0;
		if (state_mkdir_p(parent, 0700) < 0)
			return err_setc(e, -errno, "cannot create %s", parent);
	}
	for (int tries = 0; tries < 8; tries++) {
		int fd = open(image, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
		if (fd < 0)
			return errno == ENOENT ? -ENOENT : err_setc(e, -errno, "cannot open the layers image %s", image);
		/* Mounted and in use (a running box): share it. Only a mount or
		 * an unmount takes the lock exclusively, for milliseconds. */
		if (layers_lock(fd, LOCK_SH) == 0 && layers_mounted(dir))
			return fd;
		if (layers_lock(fd, LOCK_EX) < 0) {
			close(fd);
			return err_set(e, -ETIMEDOUT, "%s is locked by another ward for over %d s", image,
				       LAYERS_LOCK_WAIT_MS / 1000);
		}
		int r = 0;
		if (!layers_mounted(dir)) {
			struct stat st;
			if (fstat(fd, &st) < 0)
				r = err_setc(e, -errno, "%s", image);
			else if (state_mkdir_p(dir, 0700) < 0)
				r = err_setc(e, -errno, "cannot create %s", dir);
			else if (st.st_size == 0 && !layers_dir_empty(dir))
				r = -EEXIST;	/* layers from before the cap: never hidden under a mount */
			else if (st.st_size == 0 && (r = blank_copy_into(fd, create, "ward-layers", e)) < 0)
				err_wrap(e, "cannot make the layers image %s", image);
			if (r >= 0 && (r = layers_mount(image, dir, e)) < 0)
				err_wrap(e, "cannot mount the layers image %s on %s", image, dir);
			if (r < 0 && st.st_size == 0)
				unlink(image);
		}
		if (r < 0) {
			close(fd);
			return r == -EEXIST ? -ENOENT : r;
		}
		/* Shared from here: others may use it too. The change from
		 * exclusive is not atomic, so check the mount survived it. */
		if (layers_lock(fd, LOCK_SH) == 0 && layers_mounted(dir))
			return fd;
		close(fd);
	}
	return err_set(e, -EBUSY, "the layers image %s keeps being unmounted under us", image);
}

/* Layers without an image are held all the same, by a shared lock on a
 * file beside them (NAME.lock), so that one who needs them alone (a
 * rewind) excludes a box being made or woken over them on either kind. */
static int layers_hold_plain(struct layers *l, struct err *e)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s.lock", l->dir);
	for (int tries = 0; tries < 8; tries++) {
		int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			return err_setc(e, -errno, "cannot open %s", p);
		int r = layers_lock(fd, LOCK_SH);
		if (r < 0) {
			close(fd);
			return r == -ETIMEDOUT ? err_set(e, r,
							 "the workspace layers %s are held alone by another ward (a "
							 "rewind) for over %d s; try again when it is done",
							 l->dir, LAYERS_LOCK_WAIT_MS / 1000)
					       : err_setc(e, r, "cannot lock %s", p);
		}
		/* layers_drop unlinks the lock under its exclusive hold: a lock
		 * taken on the file it removed is on nothing; take the new one. */
		struct stat a, b;
		if (fstat(fd, &a) == 0 && stat(p, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
			l->lock_fd = fd;
			return 0;
		}
		close(fd);
	}
	return err_set(e, -EBUSY, "the lock of the workspace layers %s keeps being removed under us", l->dir);
}

/* NAME.fuse beside the layers: the pid of the process whose mount
 * namespace has the image mounted over dir (a keeper, or a holder). */
static pid_t layers_fuse_pid(const char *dir)
{
	char p[PATH_MAX], v[24] = "";
	snprintf(p, sizeof(p), "%s.fuse", dir);
	_cleanup_close_ int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t k = fd < 0 ? -1 : read(fd, v, sizeof(v) - 1);
	return k > 0 ? (pid_t)atoi(v) : 0;
}

static void layers_fuse_pid_set(const char *dir, pid_t pid)
{
	char p[PATH_MAX], t[PATH_MAX + 8], v[24];
	snprintf(p, sizeof(p), "%s.fuse", dir);
	snprintf(t, sizeof(t), "%s.new", p);
	snprintf(v, sizeof(v), "%d\n", (int)pid);
	_cleanup_close_ int fd = open(t, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0 && fdio_write_full(fd, v, strlen(v)) == 0)
		rename(t, p);
}

/* Without root: hold NAME's image, served by fuse2fs, mounting it if
 * nobody has (as this process's child where it entered a namespace of its
 * own, else by a holder of its own); create > 0 makes it. The image's lock
 * as layers_hold has it. Sets l's fuse fields; returns the held fd,
 * -ENOENT when there is no image, or -errno. */
static int layers_fuse_hold(struct layers *l, uint64_t create, struct err *e)
{
	char image[PATH_MAX];
	snprintf(image, sizeof(image), "%s.img", l->dir);
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s", l->dir);
	*strrchr(parent, '/') = 0;
	if (create && state_mkdir_p(parent, 0700) < 0)
		return err_setc(e, -errno, "cannot create %s", parent);
	int fd = open(image, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : err_setc(e, -errno, "cannot open the layers image %s", image);
	pid_t pid;
	if (layers_lock(fd, LOCK_SH) == 0 && layersfuse_mounted(pid = layers_fuse_pid(l->dir), l->dir))
		goto held;
	if (layers_lock(fd, LOCK_EX) < 0) {
		close(fd);
		return err_set(e, -ETIMEDOUT, "%s is locked by another ward for over %d s", image,
			       LAYERS_LOCK_WAIT_MS / 1000);
	}
	if (!layersfuse_mounted(pid = layers_fuse_pid(l->dir), l->dir)) {
		struct stat st;
		int r = fstat(fd, &st) < 0 ? -errno : 0;
		if (r >= 0 && state_mkdir_p(l->dir, 0700) < 0)
			r = -errno;
		if (r >= 0 && st.st_size == 0)
			r = !create ? -ENOENT : !layers_dir_empty(l->dir) ? -ENOENT : layersfuse_mkfs(image, create, e);
		if (r >= 0 && layersfuse_entered()) {
			r = layersfuse_serve(image, l->dir, &l->fuse_pid, e);
			pid = getpid();
		} else if (r >= 0) {
			r = layersfuse_mount(image, l->dir, &l->fuse_holder, e);
			pid = l->fuse_holder;
		}
		if (r < 0) {
			if (st.st_size == 0 && create)
				unlink(image);
			close(fd);
			return r == -ENOENT ? r : err_setc(e, r, "cannot serve the layers image %s", image);
		}
		layers_fuse_pid_set(l->dir, pid);
	}
	layers_lock(fd, LOCK_SH);
held:
	l->fuse = true;
	l->image = true;
	/* This process reaches the mount where it is (its own namespace);
	 * any other through the mounter's root. */
	if (pid == getpid())
		snprintf(l->view, sizeof(l->view), "%s", l->dir);
	else
		layersfuse_path(pid, l->dir, l->view, sizeof(l->view));
	return fd;
}

static void layers_fill(struct layers *l)
{
	/* On fuse2fs: where this process reaches the image (view, until a
	 * box's view takes the name); the root's changes on it where its
	 * keeper put them there (layers_root_on_image), else beside it. */
	const char *at = l->fuse ? l->view : l->dir;
	snprintf(l->upper, sizeof(l->upper), "%s/upper", at);
	snprintf(l->work, sizeof(l->work), "%s/work", at);
	snprintf(l->root, sizeof(l->root), "%s/root", at);
	l->root_image = l->image;
	if (l->fuse && access(l->root, F_OK) < 0) {
		snprintf(l->root, sizeof(l->root), "%s.root", l->dir);
		l->root_image = false;
	}
	struct statvfs sv;
	if (l->image && statvfs(at, &sv) == 0)
		l->disk = (uint64_t)sv.f_blocks * sv.f_frsize;
	if (l->fuse)
		l->view[0] = 0;
}

int layers_open(const char *name, uint64_t disk, struct layers *ret, struct err *e)
{
	*ret = (struct layers){ .lock_fd = -1 };
	int r = state_layers_dir(name, ret->dir, sizeof(ret->dir), e);
	if (r < 0)
		return r;
	bool capable = layers_disk_capable(ret->disk_by, sizeof(ret->disk_by));
	if (!disk)
		snprintf(ret->disk_by, sizeof(ret->disk_by), "not enforced: no --disk");
	if (disk && capable && geteuid() != 0 && !layersfuse_entered()) {
		capable = false;
		snprintf(ret->disk_by, sizeof(ret->disk_by),
			 "not enforced: without root only an ns box's keeper serves the layers on fuse2fs");
	}
	if (disk && capable) {
		int fd = geteuid() != 0 ? layers_fuse_hold(ret, disk, e) : layers_hold(ret->dir, disk, e);
		if (fd == -ENOENT)
			snprintf(ret->disk_by, sizeof(ret->disk_by),
				 "not enforced: these layers were made before the cap (apply or drop them)");
		else if (fd < 0)
			return fd;
		ret->lock_fd = fd;
		ret->image = fd >= 0;
	}
	if (!ret->image) {
		if (state_mkdir_p(ret->dir, 0700) < 0)
			return err_setc(e, -errno, "cannot create %s", ret->dir);
		if ((r = layers_hold_plain(ret, e)) < 0)
			return r;
	}
	layers_fill(ret);
	if (state_mkdir_p(ret->upper, 0755) < 0 || state_mkdir_p(ret->work, 0700) < 0) {
		r = err_setc(e, -errno, "cannot create the workspace layers under %s", ret->dir);
		layers_release(ret);
		return r;
	}
	if (ret->fuse && (r = wslayer_writer_claim(ret->dir, WSLAYER_FUSE_OVERLAYFS, e)) < 0) {
		layers_release(ret);
		return r;
	}
	return 0;
}

int layers_find(const char *name, struct layers *ret, struct err *e)
{
	*ret = (struct layers){ .lock_fd = -1 };
	int r = state_layers_dir(name, ret->dir, sizeof(ret->dir), e);
	if (r < 0)
		return r;
	if (geteuid() == 0 || layersfuse_capable(NULL, 0)) {
		int fd = geteuid() == 0 ? layers_hold(ret->dir, 0, e) : layers_fuse_hold(ret, 0, e);
		if (fd < 0 && fd != -ENOENT)
			return fd;
		ret->lock_fd = fd;
		ret->image = fd >= 0;
	}
	if (!ret->image) {
		if (access(ret->dir, F_OK) < 0)
			return 0;
		if ((r = layers_hold_plain(ret, e)) < 0)
			return r;
	}
	layers_fill(ret);
	if (access(ret->upper, F_OK) == 0)
		return 1;
	layers_release(ret);
	return 0;
}

bool layers_alone(struct layers *l)
{
	if (l->lock_fd < 0)
		return false;
	if (flock(l->lock_fd, LOCK_EX | LOCK_NB) == 0)
		return true;
	/* A failed conversion may have let go of the shared lock (flock(2)). */
	layers_lock(l->lock_fd, LOCK_SH);
	return false;
}

/* Unmount dir's image if nobody else holds it; fd is an open of the image
 * (ours, shared or not held). */
static void layers_let_go(const char *dir, int fd)
{
	if (flock(fd, LOCK_EX | LOCK_NB) == 0 && layers_mounted(dir))
		umount2(dir, MNT_DETACH);
}

/* On fuse2fs: the last user ends the mount. Its server (a keeper, whose
 * namespace has it) waits for the readers first, bounded. */
static void layers_fuse_let_go(struct layers *l)
{
	layers_view_end(l);
	bool last = l->fuse_pid > 0 ? layers_lock(l->lock_fd, LOCK_EX) == 0 : flock(l->lock_fd, LOCK_EX | LOCK_NB) == 0;
	if (l->fuse_pid > 0)
		layersfuse_stop(l->fuse_pid);
	else if (last)
		layersfuse_unmount(layers_fuse_pid(l->dir), l->dir);
	if (last || l->fuse_pid > 0) {
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s.fuse", l->dir);
		unlink(p);
	}
	l->fuse_pid = l->fuse_holder = 0;
	l->fuse = false;
}

void layers_release(struct layers *l)
{
	if (l->lock_fd >= 0) {
		if (l->fuse)
			layers_fuse_let_go(l);
		else if (l->image)
			layers_let_go(l->dir, l->lock_fd);
		close(l->lock_fd);
	}
	l->lock_fd = -1;
	l->image = false;
}

int layers_view(struct layers *l, const char *lower, const char *mp, struct err *e)
{
	if (!l->fuse)
		return 0;
	if (mkdir(mp, 0700) < 0 && errno != EEXIST)
		return err_setc(e, -errno, "cannot create %s", mp);
	int r = layersfuse_overlay(lower, l->upper, l->work, mp, &l->view_pid, e);
	if (r < 0)
		return r;
	snprintf(l->view, sizeof(l->view), "%s", mp);
	return 0;
}

void layers_root_on_image(struct layers *l)
{
	if (!l->fuse || l->root_image)
		return;
	/* upper is AT/upper: AT/root beside it. */
	snprintf(l->root, sizeof(l->root), "%.*s/root", (int)(strlen(l->upper) - strlen("/upper")), l->upper);
	l->root_image = true;
}

int layers_root_view(struct layers *l, const char *lower, const char *layer, const char *dir, struct err *e)
{
	if (!l->fuse || !l->root_image || l->nroot >= LAYERS_ROOT_VIEWS_MAX)
		return err_set(e, -EINVAL, "the box's root has no room for another view on the layers image");
	char mp[PATH_MAX], up[PATH_MAX], wk[PATH_MAX];
	if ((size_t)snprintf(mp, sizeof(mp), "%s/%s", dir, layer) >= sizeof(mp) ||
	    (size_t)snprintf(up, sizeof(up), "%s/%s", l->root, layer) >= sizeof(up))
		return err_set(e, -ENAMETOOLONG, "the root layer's path is too long");
	if ((mkdir(dir, 0700) < 0 && errno != EEXIST) || (mkdir(mp, 0700) < 0 && errno != EEXIST) ||
	    (mkdir(up, 0700) < 0 && errno != EEXIST))
		return err_setc(e, -errno, "cannot make the root's view of %s", lower);
	snprintf(l->root_views, sizeof(l->root_views), "%s", dir);
	snprintf(up, sizeof(up), "%s/%s/upper", l->root, layer);
	snprintf(wk, sizeof(wk), "%s/%s/work", l->root, layer);
	if ((mkdir(up, 0755) < 0 && errno != EEXIST) || (mkdir(wk, 0700) < 0 && errno != EEXIST))
		return err_setc(e, -errno, "cannot make the root layer's %s", layer);
	int r = layersfuse_overlay(lower, up, wk, mp, &l->root_pid[l->nroot], e);
	if (r < 0) {
		rmdir(mp);
		return r;
	}
	l->nroot++;
	return 0;
}

void layers_view_end(struct layers *l)
{
	if (l->view_pid > 0) {
		layersfuse_stop(l->view_pid);
		rmdir(l->view);
	}
	l->view_pid = 0;
	l->view[0] = 0;
	for (size_t i = 0; i < l->nroot; i++)
		layersfuse_stop(l->root_pid[i]);
	l->nroot = 0;
	/* The mount points, empty now (rmdir: never into a mount left). */
	_cleanup_closedir_ DIR *d = l->root_views[0] ? opendir(l->root_views) : NULL;
	for (struct dirent *de; d && (de = readdir(d));)
		if (de->d_name[0] != '.')
			unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
	if (d)
		rmdir(l->root_views);
	l->root_views[0] = 0;
}

void layers_drop(const char *name)
{
	char dir[PATH_MAX - 16], image[PATH_MAX];
	if (state_layers_dir(name, dir, sizeof(dir), NULL) < 0)
		return;
	snprintf(image, sizeof(image), "%s.img", dir);
	_cleanup_close_ int fd = open(image, O_RDWR | O_CLOEXEC);
	if (fd >= 0)
		layers_lock(fd, LOCK_EX);
	/* Without an image, the lock beside: nobody is inside while they go. */
	char lock[PATH_MAX];
	snprintf(lock, sizeof(lock), "%s.lock", dir);
	_cleanup_close_ int lfd = fd < 0 ? open(lock, O_RDWR | O_CLOEXEC) : -1;
	if (lfd >= 0)
		layers_lock(lfd, LOCK_EX);
	/* Detached: a reader still inside lets go when it is done; the loop
	 * device is freed with the last reference (autoclear). */
	if (layers_mounted(dir))
		umount2(dir, MNT_DETACH);
	state_rm_rf(dir);
	if (fd >= 0)
		unlink(image);
	snprintf(image, sizeof(image), "%s.base", dir);
	unlink(image);
	unlink(lock);
	snprintf(image, sizeof(image), "%s.fuse", dir);
	unlink(image);
	snprintf(image, sizeof(image), "%s.root", dir);
	state_rm_rf(image);
}

/* Inodes a fresh ext4 holds before anything is put on it (the reserved
 * ones up to lost+found): not the box's entries. */
#define LAYERS_EXT4_FIRST_INODES 11

int layers_copy_image(const char *from, const char *to, uint64_t *bytes, uint64_t *entries, struct err *e)
{
	*bytes = *entries = 0;
	if (geteuid() != 0)
		return 0;
	char dir[PATH_MAX - 16], image[PATH_MAX];
	int r = state_layers_dir(to, dir, sizeof(dir), e);
	if (r < 0)
		return r;
	snprintf(image, sizeof(image), "%s.img", dir);
	if (access(dir, F_OK) == 0 || access(image, F_OK) == 0)
		return 0;
	struct layers pl;
	r = layers_find(from, &pl, e);
	if (r <= 0)
		return r;
	if (!pl.image || pl.fuse) {
		layers_release(&pl);
		return 0;
	}
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s", dir);
	*strrchr(parent, '/') = 0;
	_cleanup_close_ int src = -1, dst = -1, mnt = open(pl.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char srcp[PATH_MAX];
	snprintf(srcp, sizeof(srcp), "%s.img", pl.dir);
	src = open(srcp, O_RDONLY | O_CLOEXEC);
	/* Unnamed until whole: a copy cut short leaves nothing to mount. */
	dst = open(parent, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	struct stat st;
	if (mnt < 0 || src < 0 || dst < 0 || fstat(src, &st) < 0) {
		r = err_setc(e, -errno, "cannot open box %s's layers image to copy it", from);
		goto out;
	}
	if (ioctl(mnt, FIFREEZE, 0) < 0) {
		r = err_setc(e, -errno, "cannot freeze box %s's layers image %s", from, srcp);
		goto out;
	}
	r = blank_copy(src, dst, st.st_size);
	struct statvfs sv;
	if (r >= 0 && fstatvfs(mnt, &sv) == 0 && sv.f_files > sv.f_ffree + LAYERS_EXT4_FIRST_INODES)
		*entries = sv.f_files - sv.f_ffree - LAYERS_EXT4_FIRST_INODES;
	ioctl(mnt, FITHAW, 0);
	if (r < 0) {
		err_setc(e, r, "cannot copy box %s's layers image %s", from, srcp);
		goto out;
	}
	char fdp[32];
	snprintf(fdp, sizeof(fdp), "/proc/self/fd/%d", dst);
	if (linkat(AT_FDCWD, fdp, AT_FDCWD, image, AT_SYMLINK_FOLLOW) < 0) {
		r = err_setc(e, -errno, "cannot make the layers image %s", image);
		goto out;
	}
	if (fstat(dst, &st) == 0)
		*bytes = (uint64_t)st.st_blocks * 512;
	r = 1;
out:
	layers_release(&pl);
	return r;
}

void layers_thaw(const char *name)
{
	char dir[PATH_MAX - 16];
	if (geteuid() != 0 || state_layers_dir(name, dir, sizeof(dir), NULL) < 0 || !layers_mounted(dir))
		return;
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0)
		ioctl(fd, FITHAW, 0);	/* EINVAL: not frozen */
}

int layers_beside(const char *name, const char *suffix, char *out, size_t n, struct err *e)
{
	char dir[PATH_MAX - 16];
	int r = state_layers_dir(name, dir, sizeof(dir), e);
	if (r < 0)
		return r;
	if ((size_t)snprintf(out, n, "%s%s", dir, suffix) >= n)
		return err_set(e, -ENAMETOOLONG, "%s%s: the path is too long", dir, suffix);
	*strrchr(dir, '/') = 0;
	r = state_mkdir_p(dir, 0700);
	return r < 0 ? err_setc(e, r, "cannot create %s", dir) : 0;
}

int layers_base_path(const char *name, char *out, size_t n, struct err *e)
{
	return layers_beside(name, ".base", out, n, e);
}

int layers_root_make(struct layers *l, bool fresh, uid_t uid, gid_t gid, struct err *e)
{
	if (fresh)
		state_rm_rf(l->root);
	if (mkdir(l->root, 0700) < 0 && errno != EEXIST)
		return err_setc(e, -errno, "cannot create the box's root layer %s", l->root);
	struct stat st;
	if (lstat(l->root, &st) < 0 || !S_ISDIR(st.st_mode))
		return err_setc(e, -ENOTDIR, "the box's root layer %s is not a directory", l->root);
	if ((st.st_uid != uid || st.st_gid != gid) && lchown(l->root, uid, gid) < 0)
		return err_setc(e, -errno, "cannot give the box's root layer %s to its root", l->root);
	return 0;
}

void layers_root_clear(struct layers *l)
{
	if (l->root[0])
		state_rm_rf(l->root);
}

void layers_root_drop(const char *name)
{
	struct layers l;
	if (layers_find(name, &l, NULL) <= 0)
		return;
	layers_root_clear(&l);
	layers_release(&l);
}

void layers_sweep(void)
{
	char dir[PATH_MAX - 16];
	if (geteuid() != 0 || state_layers_dir("x", dir, sizeof(dir), NULL) < 0)
		return;
	*strrchr(dir, '/') = 0;
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l < 5 || strcmp(de->d_name + l - 4, ".img"))
			continue;
		char img[PATH_MAX], mnt[PATH_MAX];
		snprintf(img, sizeof(img), "%s/%s", dir, de->d_name);
		snprintf(mnt, sizeof(mnt), "%.*s", (int)(strlen(img) - 4), img);
		_cleanup_close_ int fd = open(img, O_RDWR | O_CLOEXEC);
		if (fd >= 0)
			layers_let_go(mnt, fd);
	}
}
