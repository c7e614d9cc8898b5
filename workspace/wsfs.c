#include "workspace/wsfs.h"
#include "base/array.h"
#include "base/child.h"
#include "base/cleanup.h"
#include "base/fdio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

int ws_open(int root, const char *rel, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(unsigned)(flags | O_CLOEXEC),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
	};
	int fd = (int)syscall(SYS_openat2, root, *rel ? rel : ".", &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}

int ws_open_reg(int root, const char *rel, struct stat *ret_st)
{
	int fd = ws_open(root, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return fd;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	if (ret_st)
		*ret_st = st;
	return fd;
}

int ws_lstat(int root, const char *rel, struct stat *st)
{
	_cleanup_close_ int fd = ws_open(root, rel, O_PATH | O_NOFOLLOW);
	if (fd < 0)
		return fd;
	return fstat(fd, st) < 0 ? -errno : 0;
}

int ws_readlink(int root, const char *rel, char *buf, size_t n)
{
	_cleanup_close_ int fd = ws_open(root, rel, O_PATH | O_NOFOLLOW);
	if (fd < 0)
		return fd;
	ssize_t k = readlinkat(fd, "", buf, n - 1);
	if (k < 0)
		return -errno;
	buf[k] = 0;
	return (int)k;
}

int ws_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void ws_free_list(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int ws_strv_add(char ***v, size_t *n, size_t *cap, const char *s)
{
	if (array_grow(v, cap, *n, sizeof(**v), 32) < 0)
		return -ENOMEM;
	if (!((*v)[*n] = strdup(s)))
		return -ENOMEM;
	(*n)++;
	return 0;
}

int ws_list_dir(int root, const char *rel, char ***ret, size_t *n)
{
	int fd = ws_open(root, rel, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fd;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	char **v = NULL;
	size_t k = 0, cap = 0;
	int r = 0;
	struct dirent *de;
	while (r >= 0 && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			r = ws_strv_add(&v, &k, &cap, de->d_name);
	closedir(d);
	if (r < 0) {
		ws_free_list(v, k);
		return r;
	}
	if (k)
		qsort(v, k, sizeof(*v), ws_name_cmp);
	*ret = v;
	*n = k;
	return 0;
}

/* The tree's own path is the user's choice: opened as given. */
int ws_roots(const char *lower, const char *upper, int *lroot, int *uroot, struct err *e)
{
	*lroot = open(lower, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*lroot < 0)
		return err_setc(e, -errno, "cannot open %s", lower);
	*uroot = open(upper, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*uroot < 0) {
		int r = -errno;
		close(*lroot);
		*lroot = -1;
		return err_setc(e, r, "cannot open the workspace changes in %s", upper);
	}
	return 0;
}

/* diff(1) of two files already opened without following any symlink: it
 * reads them as /dev/fd/3 and /dev/fd/4, and its output comes back through
 * a pipe into out, whatever out is (a file, a terminal, a memory stream). */
int ws_run_diff(FILE *out, const char *la, const char *lb, int fa, int fb, bool text)
{
	char *argv[] = { "diff", text ? "-ua" : "-u", "--label", (char *)la, "--label", (char *)lb,
			 fa >= 0 ? "/dev/fd/3" : "/dev/null", fb >= 0 ? "/dev/fd/4" : "/dev/null", NULL };
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	int fds[] = { -1, p[1], -1, fa, fb };
	pid_t pid;
	int r = child_start(argv, fds, ARRAY_SIZE(fds), &pid);
	close(p[1]);
	if (r < 0) {
		close(p[0]);
		return r;
	}
	char b[65536];
	ssize_t n;
	while ((n = fdio_read_some(p[0], b, sizeof(b))) > 0) {
		if (fwrite(b, 1, (size_t)n, out) != (size_t)n) {
			r = errno == EPIPE ? -EPIPE : -EIO;
			kill(pid, SIGKILL);
			break;
		}
	}
	close(p[0]);
	int st = child_reap(pid);
	if (r < 0)
		return r;
	if (n < 0)
		return (int)n;
	if (fflush(out) == EOF)
		return errno == EPIPE ? -EPIPE : -EIO;
	/* 0 same, 1 different, 2 trouble. */
	return WIFEXITED(st) && WEXITSTATUS(st) <= 1 ? 0 : -EIO;
}

int ws_put(FILE *out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vfprintf(out, fmt, ap);
	va_end(ap);
	if (n < 0 || fflush(out) == EOF)
		return errno == EPIPE ? -EPIPE : -EIO;
	return 0;
}

int ws_copy_sparse(int src, int dst, off_t size)
{
	char b[65536];
	off_t off = 0;
	while (off < size) {
		off_t data = lseek(src, off, SEEK_DATA);
		if (data < 0) {
			if (errno == ENXIO)
				break;	/* a hole to the end */
			data = off;	/* no SEEK_DATA here: copy all */
		}
		off_t hole = lseek(src, data, SEEK_HOLE);
		if (hole < 0)
			hole = size;
		for (off = data; off < hole;) {
			ssize_t n = pread(src, b, (size_t)MIN((off_t)sizeof(b), hole - off), off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return n < 0 ? -errno : -EIO;
			for (ssize_t w = 0; w < n;) {
				ssize_t k = pwrite(dst, b + w, (size_t)(n - w), off + w);
				if (k < 0 && errno != EINTR)
					return -errno;
				if (k > 0)
					w += k;
			}
			off += n;
		}
	}
	return ftruncate(dst, size) < 0 ? -errno : 0;
}

int ws_clone_or_copy(int src, int dst, off_t size)
{
	if (ioctl(dst, FICLONE, src) == 0)
		return 1;
	/* Another file system, or one without shared extents (ext4, tmpfs):
	 * the bytes. A clone that failed half-way left nothing to undo. */
	int r = ftruncate(dst, 0) < 0 ? -errno : ws_copy_sparse(src, dst, size);
	return r < 0 ? r : 0;
}
