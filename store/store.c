/* store_open and the verbs: the spec picks a backend, keys are checked
 * here once for all of them, and a fetched object reaches its path whole
 * or not at all. */
#include "store/store.h"
#include "store/backend.h"
#include "base/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY_MAX 512
/* Each part a file name, with room for dir.c's "~PID" and a ".tmp". */
#define KEY_PART_MAX 200

struct store {
	const struct store_backend *b;
	void *impl;
	char desc[1200];
};

int store_open(const char *spec, struct store **ret, struct err *e)
{
	if (!spec || !*spec)
		return err_set(e, -EINVAL, "no store given: give a directory or s3://BUCKET/PREFIX");
	_cleanup_free_ struct store *s = calloc(1, sizeof(*s));
	if (!s)
		return err_set(e, -ENOMEM, "out of memory");
	int r;
	if (!strncmp(spec, "s3://", 5)) {
		s->b = &s3_backend;
		r = s3_open(spec + 5, &s->impl, s->desc, sizeof(s->desc), e);
	} else {
		s->b = &dir_backend;
		r = dir_open(spec, &s->impl, s->desc, sizeof(s->desc), e);
	}
	if (r < 0)
		return r;
	*ret = TAKE_PTR(s);
	return 0;
}

void store_free(struct store *s)
{
	if (!s)
		return;
	s->b->free(s->impl);
	free(s);
}

const char *store_describe(const struct store *s)
{
	return s->desc;
}

static bool key_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-' || c == '/';
}

/* A key is a relative path that means the same to a file system and to
 * S3's signed URLs (libcurl 7.88 signs the path as it is, unencoded). */
int store_key_check(const char *key, struct err *e)
{
	size_t n = key ? strlen(key) : 0;
	if (n == 0 || n > KEY_MAX)
		return err_set(e, -EINVAL, "store key of %zu characters: give 1 to %d", n, KEY_MAX);
	for (size_t i = 0; i < n; i++)
		if (!key_char(key[i]))
			return err_set(e, -EINVAL,
				       "store key with byte 0x%02x at %zu: only letters, digits and "
				       ". _ - / are allowed",
				       (unsigned char)key[i], i);
	for (const char *p = key; *p;) {
		size_t part = strcspn(p, "/");
		if (part > KEY_PART_MAX)
			return err_set(e, -EINVAL,
				       "store key \"%.80s...\": give parts between '/' of at most %d "
				       "characters",
				       key, KEY_PART_MAX);
		p += part + (p[part] == '/');
	}
	if (key[0] == '/' || key[n - 1] == '/' || strstr(key, "//") || strstr(key, "..") ||
	    !strcmp(key, ".") || !strncmp(key, "./", 2) || strstr(key, "/./") ||
	    (n >= 2 && !strcmp(key + n - 2, "/.")))
		return err_set(e, -EINVAL,
			       "store key \"%.80s\": give a relative path without \"..\", \".\" or "
			       "empty parts",
			       key);
	return 0;
}

int store_put(struct store *s, const char *key, const char *path, struct err *e)
{
	int r = store_key_check(key, e);
	if (r < 0)
		return r;
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_setc(e, -errno, "%s", path);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return err_setc(e, -errno, "%s", path);
	if (!S_ISREG(st.st_mode))
		return err_set(e, -EINVAL, "%s: not a regular file: only files are stored", path);
	return s->b->put(s->impl, key, fd, (uint64_t)st.st_size, e);
}

int store_commit(int dirfd, int fd, const char *tmp, const char *name, const char *what,
		 struct err *e)
{
	int r = 0;
	if (fsync(fd) < 0)
		r = err_setc(e, -errno, "%s: flushing it to disk", what);
	else if (renameat(dirfd, tmp, dirfd, name) < 0)
		r = err_setc(e, -errno, "%s: renaming it into place", what);
	if (r < 0) {
		unlinkat(dirfd, tmp, 0);
		return r;
	}
	/* The rename itself, durable. */
	if (fsync(dirfd) < 0)
		return err_setc(e, -errno, "%s: flushing its directory to disk", what);
	return 0;
}

int store_get(struct store *s, const char *key, const char *path, struct err *e)
{
	int r = store_key_check(key, e);
	if (r < 0)
		return r;
	char dir[PATH_MAX], tmp[PATH_MAX];
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	int dn = slash == path ? 1 : slash ? (int)(slash - path) : 0;
	if (!*name || (size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", name) >= sizeof(tmp) ||
	    (size_t)snprintf(dir, sizeof(dir), "%.*s", dn, dn ? path : ".") >= sizeof(dir))
		return err_set(e, -EINVAL, "%s: give the path of a file", path);
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return err_setc(e, -errno, "%s", dir);
	_cleanup_close_ int fd =
		openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return err_setc(e, -errno, "%s.tmp", path);
	r = s->b->get(s->impl, key, fd, e);
	if (r < 0) {
		unlinkat(dfd, tmp, 0);
		return r;
	}
	return store_commit(dfd, fd, tmp, name, path, e);
}

int store_del(struct store *s, const char *key, struct err *e)
{
	int r = store_key_check(key, e);
	if (r < 0)
		return r;
	return s->b->del(s->impl, key, e);
}
