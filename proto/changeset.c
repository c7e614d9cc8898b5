/* A workspace's change set: its encoders and the host's reader
 * (proto/changeset.h says what the stream is and what the reader
 * refuses). The reader is a state machine fed bytes as frames come: a
 * record's head is gathered in a buffer of its own (its size is bounded
 * by the path limit), a file's data is written as it arrives, so no part
 * of the stream is held whole. */
#include "proto/changeset.h"
#include "base/cleanup.h"
#include "base/fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

/* op, path length, path, the largest op's fields (a symlink's target). */
#define CS_HEAD_MAX (3 + CHANGESET_PATH_MAX + 2 + CHANGESET_PATH_MAX)
/* What a mode keeps: no setuid, setgid or sticky bit comes to the host. */
#define CS_MODE_MASK 0777

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get32(const uint8_t *p) { uint32_t v = 0; for (int i = 3; i >= 0; i--) v = v << 8 | p[i]; return v; }
static uint64_t get64(const uint8_t *p) { uint64_t v = 0; for (int i = 7; i >= 0; i--) v = v << 8 | p[i]; return v; }

static int cs_head(struct buf *b, char op, const char *path, const uint8_t *extra, size_t nextra)
{
	size_t pl = strlen(path);
	if (pl > CHANGESET_PATH_MAX)
		return -ENAMETOOLONG;
	uint8_t h[3];
	h[0] = (uint8_t)op;
	put16(h + 1, (uint16_t)pl);
	size_t before = b->len;
	int r = buf_append(b, h, 3);
	if (r >= 0)
		r = buf_append(b, path, pl);
	if (r >= 0 && nextra)
		r = buf_append(b, extra, nextra);
	if (r < 0)
		b->len = before;
	return r;
}

int changeset_put_magic(struct buf *b)
{
	return buf_append(b, CHANGESET_MAGIC, 4);
}

int changeset_put_dir(struct buf *b, const char *path, mode_t mode, bool opaque, int64_t mtime_ns)
{
	uint8_t x[13];
	put32(x, (uint32_t)mode);
	x[4] = opaque ? CHANGESET_F_OPAQUE : 0;
	put64(x + 5, (uint64_t)mtime_ns);
	return cs_head(b, CHANGESET_DIR, path, x, sizeof(x));
}

int changeset_put_file(struct buf *b, const char *path, mode_t mode, int64_t mtime_ns, uint64_t size)
{
	uint8_t x[20];
	put32(x, (uint32_t)mode);
	put64(x + 4, (uint64_t)mtime_ns);
	put64(x + 12, size);
	return cs_head(b, CHANGESET_FILE, path, x, sizeof(x));
}

int changeset_put_keep(struct buf *b, const char *path)
{
	return cs_head(b, CHANGESET_KEEP, path, NULL, 0);
}

int changeset_put_link(struct buf *b, const char *path, const char *target)
{
	size_t tl = strlen(target);
	if (tl > CHANGESET_PATH_MAX)
		return -ENAMETOOLONG;
	uint8_t x[2 + CHANGESET_PATH_MAX];
	put16(x, (uint16_t)tl);
	memcpy(x + 2, target, tl);
	return cs_head(b, CHANGESET_LINK, path, x, 2 + tl);
}

int changeset_put_whiteout(struct buf *b, const char *path)
{
	return cs_head(b, CHANGESET_WHITEOUT, path, NULL, 0);
}

int changeset_put_end(struct buf *b)
{
	return cs_head(b, CHANGESET_END, "", NULL, 0);
}

/* A directory whose mode is set at the end: one without its owner's
 * write bit would refuse what the stream puts in it next. */
struct cs_dirmode {
	char *path;
	mode_t mode;
	int64_t mtime_ns;
};

struct changeset_reader {
	int dirfd, old;
	struct changeset_limits lim;
	struct changeset_stats st;
	bool magic, ended, failed;
	uint8_t head[CS_HEAD_MAX];
	size_t hlen;
	/* The file being written, what of it is still to come, and what it
	 * gets at its end. */
	int fd;
	uint64_t left;
	mode_t fmode;
	int64_t fmtime;
	char fpath[CHANGESET_PATH_MAX + 1];
	struct cs_dirmode *dirs;
	size_t ndirs, cdirs;
};

int changeset_path_check(const char *p, size_t n, const struct changeset_limits *lim)
{
	if (n == 0 || n > lim->path_bytes || n > CHANGESET_PATH_MAX || memchr(p, 0, n) || p[0] == '/')
		return -EINVAL;
	unsigned depth = 0;
	size_t i = 0;
	while (i < n) {
		size_t j = i;
		while (j < n && p[j] != '/')
			j++;
		size_t l = j - i;
		if (l == 0 || l > CHANGESET_NAME_MAX || (l == 1 && p[i] == '.') || (l == 2 && p[i] == '.' && p[i + 1] == '.'))
			return -EINVAL;
		if (++depth > lim->depth)
			return -EINVAL;
		i = j + 1;
		if (j + 1 == n)
			return -EINVAL;	/* a trailing '/' */
	}
	return 0;
}

int changeset_reader_new(int dirfd, int old, const struct changeset_limits *lim, struct changeset_reader **ret)
{
	struct changeset_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->dirfd = dirfd;
	r->old = old;
	r->lim = *lim;
	if (!r->lim.path_bytes || r->lim.path_bytes > CHANGESET_PATH_MAX)
		r->lim.path_bytes = CHANGESET_PATH_MAX;
	if (!r->lim.depth)
		r->lim.depth = CHANGESET_DEPTH_MAX;
	if (!r->lim.entries)
		r->lim.entries = CHANGESET_ENTRIES_MAX;
	r->fd = -1;
	*ret = r;
	return 0;
}

void changeset_reader_free(struct changeset_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	for (size_t i = 0; i < r->ndirs; i++)
		free(r->dirs[i].path);
	free(r->dirs);
	free(r);
}

/* rel beneath root, no symlink anywhere on the way (the last component
 * neither: O_NOFOLLOW with O_PATH opens a symlink as itself, and
 * O_DIRECTORY refuses it). */
int changeset_open_beneath(int root, const char *rel, int flags)
{
	struct open_how how = { .flags = (uint64_t)(unsigned)(flags | O_CLOEXEC),
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV };
	int fd = (int)syscall(SYS_openat2, root, *rel ? rel : ".", &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}

/* The parent directory of path (made by this stream before), opened, and
 * its last component. */
static int cs_parent(int root, char *path, const char **ret_base)
{
	char *sl = strrchr(path, '/');
	if (!sl) {
		*ret_base = path;
		int fd = fcntl(root, F_DUPFD_CLOEXEC, 3);
		return fd < 0 ? -errno : fd;
	}
	*sl = 0;
	int fd = changeset_open_beneath(root, path, O_PATH | O_DIRECTORY | O_NOFOLLOW);
	*sl = '/';
	*ret_base = sl + 1;
	return fd;
}

static int cs_fail(struct changeset_reader *r, struct err *e, int code, const char *what, const char *path)
{
	r->failed = true;
	if (path && *path)
		return err_set(e, code, "the box's change set was refused: %s (at \"%.200s\")", what, path);
	return err_set(e, code, "the box's change set was refused: %s", what);
}

static int cs_dirmode_add(struct changeset_reader *r, const char *path, mode_t mode, int64_t mtime)
{
	if (r->ndirs == r->cdirs) {
		size_t n = r->cdirs ? r->cdirs * 2 : 64;
		struct cs_dirmode *d = realloc(r->dirs, n * sizeof(*d));
		if (!d)
			return -ENOMEM;
		r->dirs = d;
		r->cdirs = n;
	}
	char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	r->dirs[r->ndirs++] = (struct cs_dirmode){ .path = p, .mode = mode, .mtime_ns = mtime };
	return 0;
}

static void cs_times(int fd, int64_t mtime_ns)
{
	struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT },
				  { .tv_sec = mtime_ns / 1000000000, .tv_nsec = mtime_ns % 1000000000 } };
	if (mtime_ns >= 0)
		futimens(fd, ts);
}

/* How many bytes the head in r->head needs, from what it holds so far
 * (it grows as the lengths in it are read). */
static size_t cs_head_need(const struct changeset_reader *r)
{
	if (r->hlen < 3)
		return 3;
	size_t pl = get16(r->head + 1), base = 3 + pl;
	switch (r->head[0]) {
	case CHANGESET_DIR:
		return base + 13;
	case CHANGESET_FILE:
		return base + 20;
	case CHANGESET_LINK:
		if (r->hlen < base + 2)
			return base + 2;
		return base + 2 + get16(r->head + base);
	default:
		return base;
	}
}

/* One whole record head: check it, make what it says. */
static int cs_record(struct changeset_reader *r, struct err *e)
{
	char op = (char)r->head[0];
	size_t pl = get16(r->head + 1);
	const uint8_t *x = r->head + 3 + pl;
	char path[CHANGESET_PATH_MAX + 1];
	memcpy(path, r->head + 3, pl);
	path[pl] = 0;
	if (op == CHANGESET_END) {
		if (pl)
			return cs_fail(r, e, -EPROTO, "its end record has a path", NULL);
		r->ended = true;
		return 0;
	}
	if (op != CHANGESET_DIR && op != CHANGESET_FILE && op != CHANGESET_KEEP && op != CHANGESET_LINK &&
	    op != CHANGESET_WHITEOUT)
		return cs_fail(r, e, -EPROTO, "a record of an unknown kind", NULL);
	if (changeset_path_check(path, pl, &r->lim) < 0)
		return cs_fail(r, e, -EINVAL,
			       "a path that is empty, absolute, too long or too deep, or has a NUL, \".\" or \"..\"",
			       memchr(path, 0, pl) ? NULL : path);
	if (r->st.entries >= r->lim.entries)
		return cs_fail(r, e, -E2BIG, "more entries than a box's change set may have", NULL);
	r->st.entries++;
	uint64_t size = 0;
	if (op == CHANGESET_FILE) {
		size = get64(x + 12);
		if (size > r->lim.file_bytes)
			return cs_fail(r, e, -EFBIG, "a file larger than a box's change set may hold", path);
		if (size > r->lim.total_bytes - MIN(r->st.bytes, r->lim.total_bytes))
			return cs_fail(r, e, -EFBIG, "more bytes than a box's change set may hold", path);
	}
	const char *base;
	_cleanup_close_ int pfd = cs_parent(r->dirfd, path, &base);
	if (pfd < 0)
		return cs_fail(r, e, pfd, "its parent is not a directory the change set made before", path);
	switch (op) {
	case CHANGESET_DIR: {
		mode_t mode = get32(x) & CS_MODE_MASK;
		if (mkdirat(pfd, base, 0700) < 0)
			return cs_fail(r, e, -errno, errno == EEXIST ? "an entry made twice" : strerror(errno), path);
		if (x[4] & CHANGESET_F_OPAQUE) {
			_cleanup_close_ int d = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			const char *xa = r->lim.opaque_xattr ? r->lim.opaque_xattr : "user.overlay.opaque";
			if (d < 0 || fsetxattr(d, xa, "y", 1, 0) < 0)
				return cs_fail(r, e, -errno, "cannot mark an opaque directory (user xattrs)", path);
		}
		if (cs_dirmode_add(r, path, mode, (int64_t)get64(x + 5)) < 0)
			return cs_fail(r, e, -ENOMEM, "out of memory", NULL);
		return 0;
	}
	case CHANGESET_FILE: {
		int fd = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return cs_fail(r, e, -errno, errno == EEXIST ? "an entry made twice" : strerror(errno), path);
		r->fd = fd;
		r->left = size;
		r->fmode = get32(x) & CS_MODE_MASK;
		r->fmtime = (int64_t)get64(x + 4);
		memcpy(r->fpath, path, pl + 1);
		r->st.files++;
		r->st.bytes += size;
		return 0;
	}
	case CHANGESET_KEEP: {
		if (r->old < 0)
			return cs_fail(r, e, -ESTALE, "a file kept from a sync the host does not have", path);
		const char *obase;
		_cleanup_close_ int ofd = cs_parent(r->old, path, &obase);
		struct stat st;
		if (ofd < 0 || fstatat(ofd, obase, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			return cs_fail(r, e, -ESTALE, "a file kept from the last sync that the host does not have", path);
		if (linkat(ofd, obase, pfd, base, 0) < 0)
			return cs_fail(r, e, -errno, errno == EEXIST ? "an entry made twice" : strerror(errno), path);
		r->st.kept++;
		return 0;
	}
	case CHANGESET_LINK: {
		size_t tl = get16(x);
		char target[CHANGESET_PATH_MAX + 1];
		if (tl > CHANGESET_PATH_MAX)
			return cs_fail(r, e, -ENAMETOOLONG, "a symlink's target longer than a path may be", path);
		memcpy(target, x + 2, tl);
		target[tl] = 0;
		if (tl == 0 || memchr(target, 0, tl))
			return cs_fail(r, e, -EINVAL, "a symlink whose target is empty or has a NUL", path);
		if (symlinkat(target, pfd, base) < 0)
			return cs_fail(r, e, -errno, errno == EEXIST ? "an entry made twice" : strerror(errno), path);
		return 0;
	}
	case CHANGESET_WHITEOUT:
		/* A character device 0/0, which the kernel lets anyone make
		 * (Linux 5.8): overlayfs's whiteout, as the readers know it. */
		if (mknodat(pfd, base, S_IFCHR | 0600, makedev(0, 0)) < 0)
			return cs_fail(r, e, -errno, errno == EEXIST ? "an entry made twice" : strerror(errno), path);
		return 0;
	}
	return 0;
}

static int cs_file_done(struct changeset_reader *r, struct err *e)
{
	int fd = r->fd;
	r->fd = -1;
	int k = fchmod(fd, r->fmode) < 0 ? -errno : 0;
	if (k >= 0)
		cs_times(fd, r->fmtime);
	if (close(fd) < 0 && k >= 0)
		k = -errno;
	return k < 0 ? cs_fail(r, e, k, "cannot finish a file", r->fpath) : 0;
}

int changeset_reader_feed(struct changeset_reader *r, const void *p, size_t n, struct err *e)
{
	const uint8_t *b = p;
	if (r->failed)
		return err_set(e, -EPROTO, "the box's change set was refused already");
	while (n) {
		if (!r->magic) {
			size_t take = MIN(n, 4 - r->hlen);
			memcpy(r->head + r->hlen, b, take);
			r->hlen += take;
			b += take;
			n -= take;
			if (r->hlen == 4) {
				if (memcmp(r->head, CHANGESET_MAGIC, 4))
					return cs_fail(r, e, -EPROTO, "it does not start with " CHANGESET_MAGIC, NULL);
				r->magic = true;
				r->hlen = 0;
			}
			continue;
		}
		if (r->ended)
			return cs_fail(r, e, -EPROTO, "bytes after its end record", NULL);
		if (r->fd >= 0) {
			size_t take = (size_t)MIN((uint64_t)n, r->left);
			int k = take ? fdio_write_full(r->fd, b, take) : 0;
			if (k < 0)
				return cs_fail(r, e, k, "cannot write a file", r->fpath);
			r->left -= take;
			b += take;
			n -= take;
			if (!r->left) {
				int k = cs_file_done(r, e);
				if (k < 0)
					return k;
			}
			continue;
		}
		/* Lengths are checked as soon as they are read: nothing longer
		 * than the limits is gathered. */
		if (r->hlen >= 3 && get16(r->head + 1) > r->lim.path_bytes)
			return cs_fail(r, e, -ENAMETOOLONG, "a path longer than a box's change set may have", NULL);
		size_t need = cs_head_need(r);
		if (need > sizeof(r->head))
			return cs_fail(r, e, -EPROTO, "a record longer than any the stream has", NULL);
		if (r->hlen < need) {
			size_t take = MIN(n, need - r->hlen);
			memcpy(r->head + r->hlen, b, take);
			r->hlen += take;
			b += take;
			n -= take;
			/* The head's lengths may say it needs more now. */
			if (r->hlen < cs_head_need(r))
				continue;
		}
		if (r->hlen < cs_head_need(r))
			continue;
		int k = cs_record(r, e);
		r->hlen = 0;
		if (k < 0)
			return k;
		/* A file of no bytes is whole at once. */
		if (r->fd >= 0 && !r->left && (k = cs_file_done(r, e)) < 0)
			return k;
	}
	return 0;
}

int changeset_reader_finish(struct changeset_reader *r, struct changeset_stats *ret, struct err *e)
{
	if (r->failed)
		return err_set(e, -EPROTO, "the box's change set was refused already");
	if (!r->ended || r->fd >= 0 || r->hlen)
		return cs_fail(r, e, -EPROTO, "it ended before its end record (truncated)", NULL);
	/* Deepest first: a directory's mode and time are set after what is in
	 * it was made. */
	for (size_t i = r->ndirs; i-- > 0;) {
		const struct cs_dirmode *d = &r->dirs[i];
		_cleanup_close_ int fd = changeset_open_beneath(r->dirfd, d->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
		if (fd < 0 || fchmod(fd, d->mode) < 0)
			return cs_fail(r, e, fd < 0 ? fd : -errno, "cannot set a directory's mode", d->path);
		cs_times(fd, d->mtime_ns);
	}
	if (ret)
		*ret = r->st;
	return 0;
}
