#include "image/unpack.h"
#include "base/cleanup.h"
#include "base/fdio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ENTRY_PATH_MAX 4096	/* an entry's path, as written */
#define NAME_MAX_ 255		/* one component */
#define COPY_BUF (128u << 10)
/* A file this big or bigger is checked against the free disk first. */
#define DISK_CHECK_AT (1u << 20)
/* Lines for entries not made, at most; then a count at the end. */
#define SAY_MAX 5

/* A set of strings, by open addressing; each maps to an index. */
struct smap {
	char **keys;
	uint32_t *vals;
	size_t cap, n;
};

static uint64_t smap_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static void smap_clear(struct smap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->keys[i]);
	free(m->keys);
	free(m->vals);
	*m = (struct smap){ 0 };
}

/* The slot of key, or of where it would go. */
static size_t smap_slot(const struct smap *m, const char *key)
{
	size_t i = (size_t)smap_hash(key) & (m->cap - 1);
	while (m->keys[i] && strcmp(m->keys[i], key))
		i = (i + 1) & (m->cap - 1);
	return i;
}

static bool smap_get(const struct smap *m, const char *key, uint32_t *ret)
{
	if (!m->cap)
		return false;
	size_t i = smap_slot(m, key);
	if (!m->keys[i])
		return false;
	if (ret)
		*ret = m->vals[i];
	return true;
}

static int smap_put(struct smap *m, const char *key, uint32_t val)
{
	if ((m->n + 1) * 10 > m->cap * 7) {
		struct smap g = { .cap = m->cap ? m->cap * 2 : 1024 };
		g.keys = calloc(g.cap, sizeof(*g.keys));
		g.vals = calloc(g.cap, sizeof(*g.vals));
		if (!g.keys || !g.vals) {
			free(g.keys);
			free(g.vals);
			return -ENOMEM;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->keys[i]) {
				size_t j = smap_slot(&g, m->keys[i]);
				g.keys[j] = m->keys[i];
				g.vals[j] = m->vals[i];
			}
		g.n = m->n;
		free(m->keys);
		free(m->vals);
		*m = g;
	}
	size_t i = smap_slot(m, key);
	if (!m->keys[i]) {
		if (!(m->keys[i] = strdup(key)))
			return -ENOMEM;
		m->n++;
	}
	m->vals[i] = val;
	return 0;
}

struct dirmode {
	uint32_t mode;
	uid_t uid;
	gid_t gid;
	bool own;		/* chown it */
};

struct image_unpack {
	int root_fd;
	struct image_limits lim;
	bool chown;
	bool openat2;		/* the kernel has it (else: no symbolic link on the way) */
	const struct image_say *say;
	const char *what;	/* the layer, for messages */
	struct image_unpack_stats st;
	struct smap layer;	/* the paths the current layer made */
	struct smap dirs;	/* every directory: its mode, for the end */
	struct dirmode *dm;
	size_t ndm, cap_dm;
	unsigned said;
	char notmade[400];	/* the first of them, for the line that says so */
	char *buf;
};

static void unpack_say(struct image_unpack *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void unpack_say(struct image_unpack *u, const char *fmt, ...)
{
	if (!u->say || !u->say->say)
		return;
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	u->say->say(u->say->ud, line);
}

/* An entry's path in a message: printable ASCII, cut. */
static const char *shown(const char *s, char *out, size_t n)
{
	size_t o = 0;
	for (; *s && o + 4 < n; s++) {
		if (o >= 160) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		out[o++] = (unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f ? *s : '?';
	}
	out[o] = 0;
	return out;
}

static int refuse(struct image_unpack *u, const char *path, int code, struct err *e, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int refuse(struct image_unpack *u, const char *path, int code, struct err *e, const char *fmt, ...)
{
	char why[400], p[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return err_set(e, code, "%s: entry \"%s\": %s", u->what, shown(path, p, sizeof(p)), why);
}

int image_unpack_new(int root_fd, const struct image_limits *lim, bool chown, const struct image_say *say,
		     struct image_unpack **ret, struct err *e)
{
	struct image_unpack *u = calloc(1, sizeof(*u));
	if (!u || !(u->buf = malloc(COPY_BUF))) {
		free(u);
		return err_set(e, -ENOMEM, "out of memory");
	}
	u->root_fd = root_fd;
	if (lim)
		u->lim = *lim;
	else
		image_limits_default(&u->lim);
	u->chown = chown;
	u->say = say;
	struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT };
	int fd = (int)syscall(SYS_openat2, root_fd, ".", &how, sizeof(how));
	u->openat2 = fd >= 0;
	if (fd >= 0)
		close(fd);
	*ret = u;
	return 0;
}

void image_unpack_free(struct image_unpack *u)
{
	if (!u)
		return;
	smap_clear(&u->layer);
	smap_clear(&u->dirs);
	free(u->dm);
	free(u->buf);
	free(u);
}

void image_unpack_stats(const struct image_unpack *u, struct image_unpack_stats *ret)
{
	*ret = u->st;
}

/* dir (a path inside the tree, "" for its root) opened, resolved beneath
 * the root: an O_PATH descriptor, or -errno (-ENOENT, -ENOTDIR, -ELOOP;
 * -EXDEV: through a link, on a kernel without openat2). */
static int resolve_dir(struct image_unpack *u, const char *dir, int flags)
{
	if (!*dir) {
		int fd = fcntl(u->root_fd, F_DUPFD_CLOEXEC, 3);
		return fd < 0 ? -errno : fd;
	}
	if (u->openat2) {
		struct open_how how = { .flags = (uint64_t)(flags | O_DIRECTORY | O_CLOEXEC),
					.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV };
		int fd = (int)syscall(SYS_openat2, u->root_fd, dir, &how, sizeof(how));
		return fd < 0 ? -errno : fd;
	}
	/* One component at a time, none of them a link. */
	int cur = fcntl(u->root_fd, F_DUPFD_CLOEXEC, 3);
	if (cur < 0)
		return -errno;
	for (const char *p = dir;;) {
		size_t l = strcspn(p, "/");
		char comp[NAME_MAX_ + 1];
		snprintf(comp, sizeof(comp), "%.*s", (int)l, p);
		bool last = !p[l];
		int fd = openat(cur, comp, (last ? flags : O_PATH) | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int err = errno;
		if (fd < 0 && (err == ELOOP || err == ENOTDIR)) {
			struct stat st;
			if (fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
				err = EXDEV;
		}
		close(cur);
		if (fd < 0)
			return -err;
		if (last)
			return fd;
		cur = fd;
		p += l + 1;
	}
}

static int dir_record(struct image_unpack *u, const char *path, uint32_t mode, uid_t uid, gid_t gid, bool own)
{
	uint32_t i;
	if (!smap_get(&u->dirs, path, &i)) {
		if (u->ndm == u->cap_dm) {
			size_t c = u->cap_dm ? u->cap_dm * 2 : 256;
			struct dirmode *g = realloc(u->dm, c * sizeof(*g));
			if (!g)
				return -ENOMEM;
			u->dm = g;
			u->cap_dm = c;
		}
		i = (uint32_t)u->ndm++;
		if (smap_put(&u->dirs, path, i) < 0)
			return -ENOMEM;
	}
	u->dm[i] = (struct dirmode){ mode, uid, gid, own };
	return 0;
}

/* The directory at path, made with the directories on its way that are
 * missing (0755, root's, as docker makes them): an O_PATH descriptor. */
static int mkdir_p(struct image_unpack *u, const char *path, const char *entry, struct err *e)
{
	int fd = resolve_dir(u, path, O_PATH);
	if (fd != -ENOENT)
		goto out;
	char pre[ENTRY_PATH_MAX + 1];
	for (const char *p = path;;) {
		size_t l = strcspn(p, "/");
		size_t at = (size_t)(p - path);
		snprintf(pre, sizeof(pre), "%.*s", (int)(at + l), path);
		fd = resolve_dir(u, pre, O_PATH);
		if (fd == -ENOENT) {
			char parent[ENTRY_PATH_MAX + 1];
			snprintf(parent, sizeof(parent), "%.*s", at ? (int)at - 1 : 0, path);
			_cleanup_close_ int pfd = resolve_dir(u, parent, O_PATH);
			if (pfd < 0) {
				fd = pfd;
				goto out;
			}
			char comp[NAME_MAX_ + 1];
			snprintf(comp, sizeof(comp), "%.*s", (int)l, p);
			if (mkdirat(pfd, comp, 0700) < 0 && errno != EEXIST) {
				fd = -errno;
				goto out;
			}
			if (dir_record(u, pre, 0755, 0, 0, u->chown) < 0 || smap_put(&u->layer, pre, 0) < 0)
				return err_set(e, -ENOMEM, "out of memory");
			fd = resolve_dir(u, pre, O_PATH);
		}
		if (fd < 0 || !p[l])
			break;
		close(fd);
		p += l + 1;
	}
out:
	if (fd >= 0)
		return fd;
	if (fd == -ENOTDIR)
		return refuse(u, entry, fd, e, "a path on its way is not a directory");
	if (fd == -EXDEV)
		return refuse(u, entry, fd, e, "its way goes through a symbolic link, which this kernel (no openat2) cannot "
				    "resolve inside the tree");
	if (fd == -ELOOP)
		return refuse(u, entry, fd, e, "too many symbolic links on its way");
	return refuse(u, entry, fd, e, "cannot make its directory (%s)", strerror(-fd));
}

static int rm_at(int dfd, const char *name, int depth)
{
	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM && errno != EACCES)
		return -errno;
	if (depth > 2048)
		return -ELOOP;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == EACCES && fchmodat(dfd, name, 0700, AT_SYMLINK_NOFOLLOW) == 0)
		fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == EACCES) {
		/* fchmodat cannot refuse to follow on every kernel: open it O_PATH,
		 * then chmod what that opened through /proc. */
		int pfd = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (pfd >= 0) {
			char p[64];
			snprintf(p, sizeof(p), "/proc/self/fd/%d", pfd);
			chmod(p, 0700);
			close(pfd);
			fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
	}
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) == 0 && (st.st_mode & 0700) != 0700)
		fchmod(fd, 0700);
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	int r = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			int k = rm_at(dirfd(d), de->d_name, depth + 1);
			if (k < 0 && !r)
				r = k;
		}
	closedir(d);
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT && !r)
		r = -errno;
	return r;
}

int image_unpack_rm(int dfd, const char *name)
{
	return rm_at(dfd, name, 0);
}

/* Whatever is at name goes: a later layer's entry replaces it. */
static int clear_at(struct image_unpack *u, int pfd, const char *name, const char *entry, struct err *e)
{
	int r = rm_at(pfd, name, 0);
	return r < 0 ? refuse(u, entry, r, e, "cannot replace what a lower layer put there (%s)", strerror(-r)) : 0;
}

/* "a/b/c" -> "a/b" and "c" (no '/': "" and the path). */
static const char *split(const char *path, char *dir, size_t n)
{
	const char *slash = strrchr(path, '/');
	snprintf(dir, n, "%.*s", slash ? (int)(slash - path) : 0, path);
	return slash ? slash + 1 : path;
}

static void join(char *out, size_t n, const char *dir, const char *name)
{
	snprintf(out, n, "%s%s%s", dir, *dir ? "/" : "", name);
}

/* An entry's path as the tree's: a leading "/" and "./" dropped (an
 * absolute name is the tree's own path, as docker reads it), "."
 * components and doubled slashes dropped; ".." refused. 0, or <0. */
static int normalise(struct image_unpack *u, const char *raw, char *out, size_t n, struct err *e)
{
	if (strlen(raw) > ENTRY_PATH_MAX)
		return refuse(u, raw, -ENAMETOOLONG, e, "a path of %zu bytes (at most %d)", strlen(raw), ENTRY_PATH_MAX);
	size_t o = 0;
	for (const char *p = raw; *p;) {
		size_t l = strcspn(p, "/");
		if (l == 2 && !memcmp(p, "..", 2))
			return refuse(u, raw, -EPERM, e, "a \"..\" component: an image's entries stay inside its tree");
		if (l > NAME_MAX_)
			return refuse(u, raw, -ENAMETOOLONG, e, "a name of %zu bytes (at most %d)", l, NAME_MAX_);
		if (l && !(l == 1 && p[0] == '.')) {
			if (o + l + 2 > n)
				return refuse(u, raw, -ENAMETOOLONG, e, "too long a path");
			if (o)
				out[o++] = '/';
			memcpy(out + o, p, l);
			o += l;
		}
		p += l;
		if (*p == '/')
			p++;
	}
	out[o] = 0;
	return 0;
}

static int own_at(struct image_unpack *u, int dfd, const char *name, int fd, const struct image_tar_entry *en)
{
	if (!u->chown)
		return 0;
	int r = fd >= 0 ? fchown(fd, (uid_t)en->uid, (gid_t)en->gid)
			: fchownat(dfd, name, (uid_t)en->uid, (gid_t)en->gid, AT_SYMLINK_NOFOLLOW);
	if (r < 0) {
		if (!u->st.owners_lost++)
			unpack_say(u, "%s: could not keep owner %llu:%llu (%s); files whose owner cannot be kept are ward's", u->what,
				   (unsigned long long)en->uid, (unsigned long long)en->gid, strerror(errno));
	}
	return 0;
}

/* The content: zeros skipped over (a sparse file stays sparse). */
static int write_file(struct image_unpack *u, struct image_tar *t, int fd, uint64_t size, const char *entry,
		      struct err *e)
{
	ssize_t k;
	uint64_t done = 0;
	while ((k = image_tar_data(t, u->buf, COPY_BUF, e)) > 0) {
		bool zero = k >= 4096 && u->buf[0] == 0 && !memcmp(u->buf, u->buf + 1, (size_t)k - 1);
		if (zero) {
			if (lseek(fd, k, SEEK_CUR) < 0)
				return refuse(u, entry, -errno, e, "cannot write it (%s)", strerror(errno));
		} else {
			int r = fdio_write_full(fd, u->buf, (size_t)k);
			if (r < 0)
				return refuse(u, entry, r, e, "cannot write it (%s)", strerror(-r));
		}
		done += (uint64_t)k;
	}
	if (k < 0)
		return refuse(u, entry, (int)k, e, "%s", e->msg);
	if (ftruncate(fd, (off_t)size) < 0)
		return refuse(u, entry, -errno, e, "cannot write it (%s)", strerror(errno));
	(void)done;
	return 0;
}

static int entry_file(struct image_unpack *u, struct image_tar *t, const struct image_tar_entry *en, int pfd,
		      const char *name, const char *path, struct err *e)
{
	if (en->size > u->lim.max_bytes || u->st.bytes + en->size > u->lim.max_bytes)
		return refuse(u, path, -EFBIG, e,
			      "%llu bytes: the image's files would be more than %llu bytes, the most an image may "
			      "hold (ward image import --max-size raises it)",
			      (unsigned long long)en->size, (unsigned long long)u->lim.max_bytes);
	if (en->size >= DISK_CHECK_AT) {
		struct statvfs sv;
		if (fstatvfs(u->root_fd, &sv) == 0) {
			uint64_t avail = (uint64_t)sv.f_bavail * sv.f_frsize;
			if (avail < IMAGE_UNPACK_RESERVE || avail - IMAGE_UNPACK_RESERVE < en->size)
				return refuse(u, path, -ENOSPC, e, "%llu bytes, and the disk has %llu free",
					      (unsigned long long)en->size, (unsigned long long)avail);
		}
	}
	u->st.bytes += en->size;
	int r = clear_at(u, pfd, name, path, e);
	if (r < 0)
		return r;
	_cleanup_close_ int fd = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return refuse(u, path, -errno, e, "cannot make it (%s)", strerror(errno));
	if ((r = write_file(u, t, fd, en->size, path, e)) < 0)
		return r;
	own_at(u, -1, NULL, fd, en);
	if (en->mode & 06000)
		u->st.setid++;
	if (fchmod(fd, en->mode & 01777) < 0)
		return refuse(u, path, -errno, e, "cannot set its mode (%s)", strerror(errno));
	return 0;
}

static int entry_hardlink(struct image_unpack *u, const struct image_tar_entry *en, int pfd, const char *name,
			  const char *path, struct err *e)
{
	char target[ENTRY_PATH_MAX + 1], tdir[ENTRY_PATH_MAX + 1];
	int r = normalise(u, en->link, target, sizeof(target), e);
	if (r < 0)
		return refuse(u, path, r, e, "a hard link to \"%s\", which is outside the tree", en->link);
	if (!*target)
		return refuse(u, path, -EPERM, e, "a hard link to the tree's root");
	if (!strcmp(target, path))
		return 0;
	const char *tname = split(target, tdir, sizeof(tdir));
	_cleanup_close_ int tfd = resolve_dir(u, tdir, O_PATH);
	struct stat st;
	if (tfd < 0 || fstatat(tfd, tname, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return refuse(u, path, -ENOENT, e, "a hard link to \"%s\", which no layer made", en->link);
	if (S_ISDIR(st.st_mode))
		return refuse(u, path, -EPERM, e, "a hard link to a directory");
	if ((r = clear_at(u, pfd, name, path, e)) < 0)
		return r;
	if (linkat(tfd, tname, pfd, name, 0) < 0)
		return refuse(u, path, -errno, e, "cannot link it (%s)", strerror(errno));
	return 0;
}

/* .wh..wh..opq: what the layers below put in dir goes; this layer's stays. */
static int opaque(struct image_unpack *u, const char *dir, const char *entry, struct err *e)
{
	int fd = resolve_dir(u, dir, O_RDONLY);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return refuse(u, entry, fd, e, "an opaque directory that cannot be opened (%s)", strerror(-fd));
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return err_set(e, -ENOMEM, "out of memory");
	}
	int r = 0;
	struct dirent *de;
	char key[ENTRY_PATH_MAX + NAME_MAX_ + 2];
	while ((de = readdir(d)) && r >= 0) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		join(key, sizeof(key), dir, de->d_name);
		if (smap_get(&u->layer, key, NULL))
			continue;
		r = clear_at(u, dirfd(d), de->d_name, entry, e);
	}
	closedir(d);
	return r;
}

static int whiteout(struct image_unpack *u, const char *dir, const char *name, const char *entry, struct err *e)
{
	if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
		return refuse(u, entry, -EINVAL, e, "a whiteout of nothing");
	char key[ENTRY_PATH_MAX + NAME_MAX_ + 2];
	join(key, sizeof(key), dir, name);
	/* Only what the layers below made: a layer's own entries stay. */
	if (smap_get(&u->layer, key, NULL))
		return 0;
	_cleanup_close_ int fd = resolve_dir(u, dir, O_PATH);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return refuse(u, entry, fd, e, "a whiteout in a directory that cannot be opened (%s)", strerror(-fd));
	return clear_at(u, fd, name, entry, e);
}

static int entry(struct image_unpack *u, struct image_tar *t, const struct image_tar_entry *en, struct err *e)
{
	char path[ENTRY_PATH_MAX + 1], dir[ENTRY_PATH_MAX + 1];
	int r = normalise(u, en->path, path, sizeof(path), e);
	if (r < 0)
		return r;
	if (++u->st.files > u->lim.max_files)
		return refuse(u, en->path, -EFBIG, e,
			      "more than %llu entries, the most an image may have (ward image import --max-files raises it)",
			      (unsigned long long)u->lim.max_files);
	if (en->uid >= UINT32_MAX || en->gid >= UINT32_MAX)
		return refuse(u, en->path, -EINVAL, e, "an owner that is no uid or gid");
	if (en->xattrs)
		u->st.xattrs++;
	const char *name = split(path, dir, sizeof(dir));
	if (!strncmp(name, ".wh.", 4)) {
		if (!strcmp(name, ".wh..wh..opq"))
			return opaque(u, dir, en->path, e);
		if (!strncmp(name, ".wh..wh.", 8))
			return 0;	/* aufs's own (.wh..wh.plnk, .wh..wh.aufs): nothing of the image */
		return whiteout(u, dir, name + 4, en->path, e);
	}
	if (!*path) {
		/* The tree's root itself: its mode and owner. */
		if (en->type != IMAGE_TAR_DIR)
			return refuse(u, en->path, -EINVAL, e, "the tree's root as something other than a directory");
		return dir_record(u, "", en->mode & 01777, (uid_t)en->uid, (gid_t)en->gid, u->chown) < 0
			       ? err_set(e, -ENOMEM, "out of memory") : 0;
	}
	_cleanup_close_ int pfd = mkdir_p(u, dir, en->path, e);
	if (pfd < 0)
		return pfd;
	if (smap_put(&u->layer, path, 0) < 0)
		return err_set(e, -ENOMEM, "out of memory");
	struct stat st;
	switch (en->type) {
	case IMAGE_TAR_DIR:
		if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode) &&
		    (r = clear_at(u, pfd, name, en->path, e)) < 0)
			return r;
		if (mkdirat(pfd, name, 0700) < 0 && errno != EEXIST)
			return refuse(u, en->path, -errno, e, "cannot make it (%s)", strerror(errno));
		if (en->mode & 06000)
			u->st.setid++;
		if (dir_record(u, path, en->mode & 01777, (uid_t)en->uid, (gid_t)en->gid, u->chown) < 0)
			return err_set(e, -ENOMEM, "out of memory");
		return 0;
	case IMAGE_TAR_FILE:
		return entry_file(u, t, en, pfd, name, en->path, e);
	case IMAGE_TAR_SYMLINK:
		if (strlen(en->link) >= ENTRY_PATH_MAX || !*en->link)
			return refuse(u, en->path, -ENAMETOOLONG, e, "a symbolic link's target is empty or over %d bytes",
				      ENTRY_PATH_MAX - 1);
		if ((r = clear_at(u, pfd, name, en->path, e)) < 0)
			return r;
		if (symlinkat(en->link, pfd, name) < 0)
			return refuse(u, en->path, -errno, e, "cannot make it (%s)", strerror(errno));
		own_at(u, pfd, name, -1, en);
		return 0;
	case IMAGE_TAR_HARDLINK:
		return entry_hardlink(u, en, pfd, name, en->path, e);
	case IMAGE_TAR_CHAR:
	case IMAGE_TAR_BLOCK:
	case IMAGE_TAR_FIFO: {
		/* Not made: a box has its own /dev. What was there goes, as the
		 * layer says. */
		if ((r = clear_at(u, pfd, name, en->path, e)) < 0)
			return r;
		bool fifo = en->type == IMAGE_TAR_FIFO;
		*(fifo ? &u->st.fifos : &u->st.devices) += 1;
		if (u->said++ < SAY_MAX) {
			char p[200];
			size_t k = strlen(u->notmade);
			snprintf(u->notmade + k, sizeof(u->notmade) - k, "%s%s", k ? ", " : "", shown(path, p, sizeof(p)));
		}
		return 0;
	}
	}
	return refuse(u, en->path, -EOPNOTSUPP, e, "an entry type ward does not know");
}

int image_unpack_layer(struct image_unpack *u, const char *what, image_tar_read_fn *rd, void *ud, struct err *e)
{
	u->what = what;
	smap_clear(&u->layer);
	struct image_tar t;
	image_tar_init(&t, rd, ud);
	const struct image_tar_entry *en;
	int r;
	while ((r = image_tar_next(&t, &en, e)) > 0)
		if ((r = entry(u, &t, en, e)) < 0)
			break;
	image_tar_free(&t);
	if (r < 0 && !strstr(e->msg, what))
		err_wrap(e, "%s", what);
	return r;
}

static int depth_cmp(const void *a, const void *b, void *ud)
{
	const struct smap *m = ud;
	const char *ka = m->keys[*(const size_t *)a], *kb = m->keys[*(const size_t *)b];
	size_t da = 0, db = 0;
	for (const char *p = ka; *p; p++)
		da += *p == '/';
	for (const char *p = kb; *p; p++)
		db += *p == '/';
	da += *ka != 0;
	db += *kb != 0;
	return da < db ? 1 : da > db ? -1 : 0;
}

int image_unpack_finish(struct image_unpack *u, struct err *e)
{
	/* Deepest first: a directory that takes away its own search
	 * permission does not stand in the way of those below it. */
	size_t n = 0;
	_cleanup_free_ size_t *slot = malloc((u->dirs.n + 1) * sizeof(*slot));
	if (!slot)
		return err_set(e, -ENOMEM, "out of memory");
	for (size_t i = 0; i < u->dirs.cap; i++)
		if (u->dirs.keys[i])
			slot[n++] = i;
	qsort_r(slot, n, sizeof(*slot), depth_cmp, &u->dirs);
	for (size_t i = 0; i < n; i++) {
		const char *path = u->dirs.keys[slot[i]];
		const struct dirmode *d = &u->dm[u->dirs.vals[slot[i]]];
		int fd;
		if (!*path) {
			fd = fcntl(u->root_fd, F_DUPFD_CLOEXEC, 3);
		} else {
			/* The directory itself, never a link a later layer put in
			 * its place. */
			char dir[ENTRY_PATH_MAX + 1];
			const char *name = split(path, dir, sizeof(dir));
			_cleanup_close_ int pfd = resolve_dir(u, dir, O_PATH);
			fd = pfd < 0 ? -1 : openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (fd < 0)
			continue;	/* a later layer removed it, or made it something else */
		if (d->own && fchown(fd, d->uid, d->gid) < 0 && !u->st.owners_lost++)
			unpack_say(u, "could not keep a directory's owner %u:%u (%s)", d->uid, d->gid, strerror(errno));
		int r = fchmod(fd, d->mode);
		int err = errno;
		close(fd);
		if (r < 0)
			return err_set(e, -err, "cannot set the mode of %s in the tree: %s", path, strerror(err));
	}
	if (u->st.devices + u->st.fifos)
		unpack_say(u, "%llu device nodes and %llu FIFOs not made (a box has its own /dev): %s%s",
			   (unsigned long long)u->st.devices, (unsigned long long)u->st.fifos, u->notmade,
			   u->st.devices + u->st.fifos > SAY_MAX ? ", ..." : "");
	return 0;
}
