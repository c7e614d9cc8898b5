/* Blank ext4 images, made once and copied (workspace/blank.h). */
#include "workspace/blank.h"
#include "base/cleanup.h"
#include "base/child.h"
#include "base/state.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const blank_mkfs_paths[] = { "/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4" };

const char *blank_mkfs(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(blank_mkfs_paths); i++)
		if (access(blank_mkfs_paths[i], X_OK) == 0)
			return blank_mkfs_paths[i];
	return NULL;
}

int blank_once(const char *path, bool lock, int (*make)(const char *tmp, const void *arg, struct err *e),
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

struct blank_spec {
	uint64_t size;
	const char *label;
};

static int blank_mkfs_into(const char *tmp, const void *arg, struct err *e)
{
	const struct blank_spec *b = arg;
	const char *mkfs = blank_mkfs();
	if (!mkfs)
		return err_set(e, -ENOENT, "mkfs.ext4 is missing (apt-get install e2fsprogs)");
	_cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)b->size) < 0)
		return err_setc(e, -errno, "cannot make %s", tmp);
	/* Lazy inode tables and journal: a few MiB of the host's disk for any
	 * size (a vm's guest mounts it noinit_itable, so nothing zeroes them
	 * later either); the root directory root's whoever runs this. */
	char *argv[] = { (char *)mkfs, "-q", "-F", "-m", "0", "-L", (char *)b->label, "-E",
			 "lazy_itable_init=1,lazy_journal_init=1,nodiscard,root_owner=0:0", (char *)tmp, NULL };
	int st = child_wait(argv, NULL, 0);
	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return err_set(e, st < 0 ? st : -EIO, "mkfs.ext4 of %s failed", tmp);
	return fsync(fd) < 0 ? err_setc(e, -errno, "cannot write %s", tmp) : 0;
}

int blank_ext4(uint64_t size, const char *label, char *out, size_t n, struct err *e)
{
	char dir[PATH_MAX - 128];
	int r = state_cache_dir("blanks", "blank ext4 images", dir, sizeof(dir), e);
	if (r < 0)
		return r;
	snprintf(out, n, "%s/%s-%llu.ext4", dir, label, (unsigned long long)size);
	const struct blank_spec b = { size, label };
	return blank_once(out, true, blank_mkfs_into, &b, e);
}

int blank_copy(int src, int dst, off_t size)
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
			ssize_t k = copy_file_range(src, &in, dst, &out, (size_t)(hole - in), 0);
			if (k < 0)
				return -errno;
			if (k == 0)
				return -EIO;
		}
		at = hole;
	}
	return 0;
}

int blank_copy_into(int dst, uint64_t size, const char *label, struct err *e)
{
	char blank[PATH_MAX];
	int r = blank_ext4(size, label, blank, sizeof(blank), e);
	if (r < 0)
		return r;
	_cleanup_close_ int in = open(blank, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return err_setc(e, -errno, "cannot read the blank image %s", blank);
	r = blank_copy(in, dst, (off_t)size);
	return r < 0 ? err_setc(e, r, "cannot copy the blank image %s", blank) : 0;
}
