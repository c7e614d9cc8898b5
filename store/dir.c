/* The directory backend: object KEY is the file DIR/KEY, a key's '/' a
 * subdirectory (made 0700). A put writes "KEY~PID" first; '~' is never in
 * a key, so no object is ever mistaken for one of those. */
#include "store/backend.h"
#include "base/cleanup.h"
#include "base/fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COPY_BUF (1u << 20)

struct dir {
	int fd;
	char path[PATH_MAX];
};

int dir_open(const char *path, void **ret, char *desc, size_t desc_len, struct err *e)
{
	_cleanup_free_ struct dir *d = calloc(1, sizeof(*d));
	if (!d)
		return err_set(e, -ENOMEM, "out of memory");
	if ((size_t)snprintf(d->path, sizeof(d->path), "%s", path) >= sizeof(d->path))
		return err_set(e, -ENAMETOOLONG, "store directory: the path is too long");
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return err_setc(e, -errno, "store directory %s: cannot make it%s", path,
				errno == ENOENT ? " (its parent does not exist)" : "");
	d->fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* Every verb needs all three; say so now rather than at the first put. */
	if (d->fd >= 0 && faccessat(d->fd, ".", R_OK | W_OK | X_OK, AT_EACCESS) < 0) {
		int r = -errno;
		close(d->fd);
		d->fd = -1;
		errno = -r;
	}
	if (d->fd < 0 && errno == EACCES)
		return err_set(e, -EACCES,
			       "store directory %s is not readable and writable by uid %u: "
			       "chown it to this user or give another directory",
			       path, (unsigned)geteuid());
	if (d->fd < 0)
		return err_setc(e, -errno, "store directory %s", path);
	snprintf(desc, desc_len, "dir %s", path);
	*ret = TAKE_PTR(d);
	return 0;
}

static void dir_free(void *impl)
{
	struct dir *d = impl;
	close(d->fd);
	free(d);
}

/* All of in_fd from where it is to its end, into out_fd. */
static int copy_fd(int in_fd, int out_fd)
{
	for (;;) {
		ssize_t n = copy_file_range(in_fd, NULL, out_fd, NULL, COPY_BUF, 0);
		if (n == 0)
			return 0;
		if (n > 0)
			continue;
		if (errno == EINTR)
			continue;
		/* Another file system on a kernel before 5.3, or one that
		 * does not do it: plain reads and writes. */
		if (errno != EXDEV && errno != EINVAL && errno != EOPNOTSUPP && errno != ENOSYS)
			return -errno;
		break;
	}
	_cleanup_free_ char *buf = malloc(COPY_BUF);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n = fdio_read_some(in_fd, buf, COPY_BUF);
		if (n <= 0)
			return (int)n;
		int r = fdio_write_full(out_fd, buf, (size_t)n);
		if (r < 0)
			return r;
	}
}

/* The directory that holds key, opened; its subdirectories made on the
 * way when make. *ret_name: the key's last part. */
static int parent_open(struct dir *d, const char *key, bool make, const char **ret_name)
{
	const char *slash = strrchr(key, '/');
	*ret_name = slash ? slash + 1 : key;
	if (!slash) {
		int fd = fcntl(d->fd, F_DUPFD_CLOEXEC, 3);
		return fd < 0 ? -errno : fd;
	}
	char sub[PATH_MAX];
	snprintf(sub, sizeof(sub), "%.*s", (int)(slash - key), key);
	/* Each ancestor in turn: "a", then "a/b", ... */
	for (char *p = sub; make; p++) {
		if (*p != '/' && *p != 0)
			continue;
		char c = *p;
		*p = 0;
		if (mkdirat(d->fd, sub, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = c;
		if (!c)
			break;
	}
	int fd = openat(d->fd, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	return fd < 0 ? -errno : fd;
}

static int dir_put(void *impl, const char *key, int in_fd, uint64_t size, struct err *e)
{
	struct dir *d = impl;
	const char *name;
	_cleanup_close_ int pfd = parent_open(d, key, true, &name);
	if (pfd < 0)
		return err_setc(e, pfd, "store directory %s: making the directory of %s", d->path,
				key);
	char tmp[NAME_MAX + 1];
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s~%d", name, (int)getpid()) >= sizeof(tmp))
		return err_set(e, -ENAMETOOLONG, "store key %s: its last part is too long", key);
	_cleanup_close_ int fd =
		openat(pfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return err_setc(e, -errno, "store directory %s: writing %s", d->path, key);
	int r = copy_fd(in_fd, fd);
	if (r < 0) {
		unlinkat(pfd, tmp, 0);
		return err_setc(e, r, "store directory %s: writing %s", d->path, key);
	}
	char what[PATH_MAX + 600];
	snprintf(what, sizeof(what), "store directory %s: %s", d->path, key);
	return store_commit(pfd, fd, tmp, name, what, e);
}

static int dir_get(void *impl, const char *key, int out_fd, struct err *e)
{
	struct dir *d = impl;
	_cleanup_close_ int fd = openat(d->fd, key, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
		return err_set(e, -ENOENT, "store directory %s has no object %s", d->path, key);
	if (fd < 0)
		return err_setc(e, -errno, "store directory %s: reading %s", d->path, key);
	int r = copy_fd(fd, out_fd);
	if (r < 0)
		return err_setc(e, r, "store directory %s: reading %s", d->path, key);
	return 0;
}

static int dir_del(void *impl, const char *key, struct err *e)
{
	struct dir *d = impl;
	const char *name;
	_cleanup_close_ int pfd = parent_open(d, key, false, &name);
	if (pfd == -ENOENT || pfd == -ENOTDIR)
		return 0;
	if (pfd < 0)
		return err_setc(e, pfd, "store directory %s: removing %s", d->path, key);
	if (unlinkat(pfd, name, 0) < 0 && errno != ENOENT)
		return err_setc(e, -errno, "store directory %s: removing %s", d->path, key);
	fsync(pfd);
	return 0;
}

const struct store_backend dir_backend = {
	.put = dir_put,
	.get = dir_get,
	.del = dir_del,
	.free = dir_free,
};
