/* A vm box's own disk: a sparse file of --disk's size holding an ext4 that
 * the box's guest alone mounts, for its root's changes (the copy-on-write
 * layer over its image or the host view) and its /tmp. It is made at
 * create by copying a blank one (workspace/blank.h: mkfs.ext4 once per
 * size, in the cache) extent by extent, so the host's disk holds only
 * what the box writes; it is attached to the VM as a virtio-blk device and never mounted on the
 * host (what a box wrote is parsed by the box's own kernel only). */
#include "sandbox/vm-int.h"
#include "sandbox/vmimage.h"
#include "workspace/blank.h"
#include "base/state.h"
#include "base/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
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
	int r = blank_copy(in, out, st.st_size);
	if (r >= 0 && fsync(out) < 0)
		r = -errno;
	if (r < 0) {
		unlink(to);
		return err_setc(e, r, "cannot copy the disk %s to %s", from, to);
	}
	return 0;
}

static int vm_disk_clone(const char *tmp, const void *arg, struct err *e)
{
	_cleanup_close_ int out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0)
		return err_setc(e, -errno, "cannot make %s", tmp);
	return blank_copy_into(out, *(const uint64_t *)arg, "ward-disk", e);
}

int vm_disk_make(const char *path, uint64_t size, struct err *e)
{
	if (access(path, F_OK) == 0)
		return 0;
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	if (state_mkdir_p(dir, 0700) < 0)
		return err_setc(e, -errno, "cannot create %s", dir);
	return blank_once(path, false, vm_disk_clone, &size, e);
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
		r = blank_once(p, !path, vm_disk_zeros, NULL, e);
	if (r >= 0)
		snprintf(out, n, "%s", p);
	return r;
}
