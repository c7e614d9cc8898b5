/* A vm box's own disk: a sparse file of --disk's size holding an ext4 that
 * the box's guest alone mounts, for its root's changes (the copy-on-write
 * layer over its image or the host view) and its /tmp. It is made at
 * create by copying a blank one (mkfs.ext4 once per size, in the cache)
 * extent by extent, so the host's disk holds only what the box writes; it
 * is attached to the VM as a virtio-blk device and never mounted on the
 * host (what a box wrote is parsed by the box's own kernel only). */
#include "sandbox/vm-int.h"
#include "sandbox/vmimage.h"
#include "workspace/layers.h"
#include "base/state.h"
#include "base/cleanup.h"
#include "base/child.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Where a blank is, or what it is called, beside the cache's images. */
static int vm_disk_cached(const char *leaf, char *out, size_t n, struct err *e)
{
	char dir[PATH_MAX - 64];
	int r = vmimage_cache_dir(dir, sizeof(dir), e);
	if (r < 0)
		return r;
	snprintf(out, n, "%s/%s", dir, leaf);
	return 0;
}

/* A file made once: by make(tmp) and renamed into place, so that nobody
 * sees half of it; a shared one (lock) under an exclusive lock beside it,
 * so that two boxes never make it twice. */
static int vm_disk_once(const char *path, bool lock, int (*make)(const char *tmp, const void *arg, struct err *e),
			const void *arg, struct err *e)
{
	if (access(path, R_OK) == 0)
		return 0;
	char lp[PATH_MAX + 8], tmp[PATH_MAX + 8];
	snprintf(lp, sizeof(lp), "%s.lock", path);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	_cleanup_close_ int lk = lock ? open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0600) : -1;
	if (lock && (lk < 0 || flock(lk, LOCK_EX) < 0))
		return err_setc(e, -errno, "cannot lock %s", lp);
	if (access(path, R_OK) == 0)
		return 0;
	unlink(tmp);
	int r = make(tmp, arg, e);
	if (r >= 0 && rename(tmp, path) < 0)
		r = err_setc(e, -errno, "cannot write %s", path);
	if (r < 0)
		unlink(tmp);
	return r;
}

static int vm_disk_mkfs(const char *tmp, const void *arg, struct err *e)
{
	uint64_t size = *(const uint64_t *)arg;
	const char *mkfs = layers_mkfs();
	if (!mkfs)
		return err_set(e, -ENOENT, "mkfs.ext4 is missing (apt-get install e2fsprogs): a vm box's disk is ext4");
	_cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)size) < 0)
		return err_setc(e, -errno, "cannot make %s", tmp);
	/* Lazy inode tables and journal: a few MiB of the host's disk for any
	 * size (the guest mounts it noinit_itable, so nothing zeroes them
	 * later either); the root directory root's whoever runs this. */
	char *argv[] = { (char *)mkfs, "-q", "-F", "-m", "0", "-L", "ward-disk", "-E",
			 "lazy_itable_init=1,lazy_journal_init=1,nodiscard,root_owner=0:0", (char *)tmp, NULL };
	int st = child_wait(argv, NULL, 0);
	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return err_set(e, -EIO, "mkfs.ext4 of a vm box's disk (%s) failed", tmp);
	return 0;
}

/* Copy src to dst, holes kept: a clone where the file system can, else
 * each extent of data (SEEK_DATA, SEEK_HOLE) with copy_file_range. */
static int vm_disk_copy(int src, int dst, off_t size)
{
	if (ioctl(dst, FICLONE, src) == 0)
		return 0;
	if (ftruncate(dst, size) < 0)
		return -errno;
	for (off_t at = 0; at < size;) {
		off_t data = lseek(src, at, SEEK_DATA);
		if (data < 0)
			return errno == ENXIO ? 0 : -errno;
		off_t hole = lseek(src, data, SEEK_HOLE);
		if (hole < 0)
			return -errno;
		off_t in = data, out = data;
		while (in < hole) {
			ssize_t n = copy_file_range(src, &in, dst, &out, (size_t)(hole - in), 0);
			if (n < 0)
				return -errno;
			if (n == 0)
				return -EIO;
		}
		at = hole;
	}
	return 0;
}

struct vm_disk_src {
	const char *blank;
	uint64_t size;
};

static int vm_disk_clone(const char *tmp, const void *arg, struct err *e)
{
	const struct vm_disk_src *s = arg;
	_cleanup_close_ int in = open(s->blank, O_RDONLY | O_CLOEXEC);
	_cleanup_close_ int out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (in < 0 || out < 0)
		return err_setc(e, -errno, "cannot copy %s to %s", s->blank, tmp);
	int r = vm_disk_copy(in, out, (off_t)s->size);
	return r < 0 ? err_setc(e, r, "cannot copy %s to %s", s->blank, tmp) : 0;
}

int vm_disk_copy_file(const char *from, const char *to, struct err *e)
{
	_cleanup_close_ int in = open(from, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (in < 0 || fstat(in, &st) < 0)
		return err_setc(e, -errno, "cannot read the disk %s", from);
	unlink(to);
	_cleanup_close_ int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0)
		return err_setc(e, -errno, "cannot make %s", to);
	int r = vm_disk_copy(in, out, st.st_size);
	if (r >= 0 && fsync(out) < 0)
		r = -errno;
	if (r < 0) {
		unlink(to);
		return err_setc(e, r, "cannot copy the disk %s to %s", from, to);
	}
	return 0;
}

int vm_disk_make(const char *path, uint64_t size, struct err *e)
{
	if (access(path, F_OK) == 0)
		return 0;
	char dir[PATH_MAX], blank[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	if (state_mkdir_p(dir, 0700) < 0)
		return err_setc(e, -errno, "cannot create %s", dir);
	char leaf[64];
	snprintf(leaf, sizeof(leaf), "disk-%llu.ext4", (unsigned long long)size);
	int r = vm_disk_cached(leaf, blank, sizeof(blank), e);
	if (r >= 0)
		r = vm_disk_once(blank, true, vm_disk_mkfs, &size, e);
	if (r < 0)
		return r;
	struct vm_disk_src src = { blank, size };
	return vm_disk_once(path, false, vm_disk_clone, &src, e);
}

static int vm_disk_zeros(const char *tmp, const void *arg, struct err *e)
{
	_cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, VM_DISK_STANDIN) < 0)
		return err_setc(e, -errno, "cannot make %s", tmp);
	return 0;
}

int vm_disk_standin(const char *path, char *out, size_t n, struct err *e)
{
	char p[PATH_MAX];
	int r = 0;
	if (path)
		snprintf(p, sizeof(p), "%s", path);
	else
		r = vm_disk_cached("standin.img", p, sizeof(p), e);
	if (r >= 0)
		r = vm_disk_once(p, !path, vm_disk_zeros, NULL, e);
	if (r >= 0)
		snprintf(out, n, "%s", p);
	return r;
}
