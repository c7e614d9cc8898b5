/* An image's tree as erofs, for a vm box: the VM gets the image as a
 * read-only virtio-blk device it mounts itself, not as a share of the
 * host's files, so nothing of the host is behind it but the one file. The
 * image is uncompressed (the host's page cache holds it once for every VM
 * of the image), and keeps the tree's owners, modes, links and extended
 * attributes as they are; the guest mounts it nosuid and nodev. */
#include "image/erofs.h"
#include "image/image.h"
#include "base/cleanup.h"
#include "base/child.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const erofs_mkfs_paths[] = { "/usr/bin/mkfs.erofs", "/usr/sbin/mkfs.erofs", "/sbin/mkfs.erofs" };

static const char *erofs_mkfs(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(erofs_mkfs_paths); i++)
		if (access(erofs_mkfs_paths[i], X_OK) == 0)
			return erofs_mkfs_paths[i];
	return NULL;
}

bool image_erofs_capable(char *why, size_t n)
{
	const char *m = erofs_mkfs();
	if (m)
		snprintf(why, n, "%s: an image reaches a vm box as a read-only erofs block device", m);
	else
		snprintf(why, n, "mkfs.erofs is missing (apt-get install erofs-utils): vm boxes with an image cannot be made");
	return m != NULL;
}

/* The last line of what a failed mkfs.erofs said (fd: its stderr). */
static void erofs_why(int fd, char *out, size_t n)
{
	char buf[512];
	ssize_t got = pread(fd, buf, sizeof(buf) - 1, MAX(lseek(fd, 0, SEEK_END) - (off_t)sizeof(buf) + 1, 0));
	out[0] = 0;
	if (got <= 0)
		return;
	buf[got] = 0;
	while (got > 0 && (buf[got - 1] == '\n' || buf[got - 1] == '\r'))
		buf[--got] = 0;
	char *line = strrchr(buf, '\n');
	line = line ? line + 1 : buf;
	/* mkfs.erofs's own text: printable ASCII only into the message. */
	size_t k = 0;
	for (const char *p = line; *p && k + 1 < n; p++)
		out[k++] = *p >= 0x20 && *p < 0x7f ? *p : '?';
	out[k] = 0;
}

static int erofs_make(const char *root, const char *tmp, struct err *e)
{
	const char *mkfs = erofs_mkfs();
	if (!mkfs)
		return err_set(e, -ENOENT, "mkfs.erofs is missing (apt-get install erofs-utils): a vm box's image "
			       "reaches the VM as an erofs image");
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", tmp);
	*strrchr(dir, '/') = 0;
	_cleanup_close_ int errfd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	/* A tree unpacked by an unprivileged user is all that user's: in the
	 * image its files are root's, as in a rootless container. */
	char *argv[8];
	int ac = 0;
	argv[ac++] = (char *)mkfs;
	argv[ac++] = "--quiet";
	if (geteuid() != 0)
		argv[ac++] = "--all-root";
	argv[ac++] = (char *)tmp;
	argv[ac++] = (char *)root;
	argv[ac] = NULL;
	int fds[] = { -1, -1, errfd };
	int st = child_wait(argv, fds, 3);
	if (st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	char why[200] = "";
	if (errfd >= 0)
		erofs_why(errfd, why, sizeof(why));
	if (st < 0)
		return err_setc(e, st, "cannot run %s", mkfs);
	return err_set(e, -EIO, "mkfs.erofs of the image's tree %s failed%s%s", root, why[0] ? ": " : "", why);
}

int image_erofs_make(const char *root, const char *path, struct err *e)
{
	char tmp[PATH_MAX + 8];
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return err_set(e, -ENAMETOOLONG, "%s: the path is too long", path);
	unlink(tmp);
	int r = erofs_make(root, tmp, e);
	if (r >= 0 && chmod(tmp, 0600) < 0)
		r = err_setc(e, -errno, "cannot write %s", tmp);
	if (r >= 0 && rename(tmp, path) < 0)
		r = err_setc(e, -errno, "cannot write %s", path);
	if (r < 0)
		unlink(tmp);
	return r;
}

int image_erofs_tree(const char *root, char *out, size_t n, struct err *e)
{
	char path[PATH_MAX], lock[PATH_MAX + 8], tmp[PATH_MAX + 8];
	size_t l = strlen(root);
	while (l > 1 && root[l - 1] == '/')
		l--;
	if ((size_t)snprintf(path, sizeof(path), "%.*s.erofs", (int)l, root) >= sizeof(path))
		return err_set(e, -ENAMETOOLONG, "%s: the path is too long", root);
	snprintf(lock, sizeof(lock), "%s.lock", path);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	struct stat st;
	if (stat(root, &st) < 0)
		return err_setc(e, -errno, "the image's tree %s", root);
	if (!S_ISDIR(st.st_mode))
		return err_set(e, -ENOTDIR, "the image's tree %s is not a directory", root);
	int r = 0;
	if (access(path, R_OK) != 0) {
		_cleanup_close_ int lk = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (lk < 0 || flock(lk, LOCK_EX) < 0)
			return err_setc(e, -errno, "cannot lock %s", lock);
		if (access(path, R_OK) != 0) {
			/* A temporary file left by one that died is nobody's now
			 * (the lock is ours). */
			unlink(tmp);
			r = erofs_make(root, tmp, e);
			/* The user's alone, as the rest of the store. */
			if (r >= 0 && chmod(tmp, 0600) < 0)
				r = err_setc(e, -errno, "cannot write %s", tmp);
			if (r >= 0 && rename(tmp, path) < 0)
				r = err_setc(e, -errno, "cannot write %s", path);
			if (r < 0)
				unlink(tmp);
		}
	}
	if (r >= 0)
		snprintf(out, n, "%s", path);
	return r;
}

int image_erofs(const struct image_info *img, char *out, size_t n, struct err *e)
{
	return image_erofs_tree(img->root, out, n, e);
}
