#include "image/store.h"
#include "image/unpack.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/jsonprint.h"
#include "base/jsonstrict.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define NAMES_MAX (16u << 20)

/* mkdir -p, each directory made 0700. */
static int store_mkdir_p(const char *path)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, 0700) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	return mkdir(p, 0700) < 0 && errno != EEXIST ? -errno : 0;
}

int image_store_where(char *out, size_t n, struct err *e)
{
	const char *x = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
	if (x && x[0] == '/') {
		snprintf(out, n, "%s/ward/images", x);
		return 0;
	}
	if (!home || home[0] != '/') {
		struct passwd *pw = getpwuid(getuid());
		home = pw ? pw->pw_dir : NULL;
	}
	if (!home)
		return err_set(e, -ENOENT, "no home directory for the image store: set HOME or XDG_DATA_HOME");
	snprintf(out, n, "%s/.local/share/ward/images", home);
	return 0;
}

int image_store_open(struct image_store *s, struct err *e)
{
	s->fd = -1;
	int r = image_store_where(s->dir, sizeof(s->dir), e);
	if (r < 0)
		return r;
	r = store_mkdir_p(s->dir);
	if (r < 0)
		return err_setc(e, r, "cannot create the image store %s", s->dir);
	s->fd = open(s->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (s->fd < 0 || fstat(s->fd, &st) < 0)
		return err_setc(e, -errno, "cannot open the image store %s", s->dir);
	if (st.st_uid != getuid()) {
		image_store_close(s);
		return err_set(e, -EPERM, "the image store %s is not yours; remove it or set XDG_DATA_HOME", s->dir);
	}
	/* No other user of the host reaches an image's tree. */
	if ((st.st_mode & 0077) && fchmod(s->fd, 0700) < 0) {
		r = -errno;
		image_store_close(s);
		return err_setc(e, r, "cannot make the image store %s private", s->dir);
	}
	const char *subs[] = { "trees", "locks", "tmp" };
	for (size_t i = 0; i < ARRAY_SIZE(subs); i++)
		if (mkdirat(s->fd, subs[i], 0700) < 0 && errno != EEXIST) {
			r = -errno;
			image_store_close(s);
			return err_setc(e, r, "cannot create %s/%s", s->dir, subs[i]);
		}
	return 0;
}

void image_store_close(struct image_store *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

int image_store_lock(struct image_store *s, const char *name, int op, struct err *e)
{
	char p[300];
	snprintf(p, sizeof(p), "locks/%s", name);
	for (int tries = 0; tries < 100; tries++) {
		int fd = openat(s->fd, p, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return err_setc(e, -errno, "cannot open the lock %s/%s", s->dir, p);
		int r;
		while ((r = flock(fd, op)) < 0 && errno == EINTR)
			;
		if (r < 0) {
			r = -errno;
			close(fd);
			return r == -EWOULDBLOCK ? r : err_setc(e, r, "cannot lock %s/%s", s->dir, p);
		}
		/* Still the file the path names (a prune removes a lock it
		 * held, after the tree). */
		struct stat a, b;
		if (fstat(fd, &a) == 0 && fstatat(s->fd, p, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_ino == b.st_ino &&
		    a.st_dev == b.st_dev)
			return fd;
		close(fd);
	}
	return err_set(e, -EAGAIN, "the lock %s/%s keeps changing", s->dir, p);
}

void image_store_lock_drop(struct image_store *s, const char *name)
{
	char p[300];
	snprintf(p, sizeof(p), "locks/%s", name);
	unlinkat(s->fd, p, 0);
}

static int names_read(struct image_store *s, cJSON **ret, struct err *e)
{
	_cleanup_free_ char *text = NULL;
	size_t n;
	int r = fdio_read_file(s->fd, "names.json", NAMES_MAX, &text, &n);
	if (r == -ENOENT) {
		*ret = cJSON_CreateObject();
		return *ret ? 0 : err_set(e, -ENOMEM, "out of memory");
	}
	if (r < 0)
		return err_setc(e, r, "cannot read %s/names.json", s->dir);
	cJSON *j = NULL;
	struct err pe = { 0 };
	if (jsonstrict_parse(text, n, &j, &pe) < 0 || !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(j, "names"))) {
		cJSON_Delete(j);
		return err_set(e, -EINVAL, "%s/names.json is damaged (%s); move it away to start again", s->dir,
			       pe.msg[0] ? pe.msg : "no \"names\" object");
	}
	*ret = j;
	return 0;
}

int image_store_names(struct image_store *s, cJSON **ret, struct err *e)
{
	_cleanup_close_ int fd = image_store_lock(s, "names", LOCK_SH, e);
	if (fd < 0)
		return fd;
	cJSON *j = NULL;
	int r = names_read(s, &j, e);
	if (r < 0)
		return r;
	if (!cJSON_GetObjectItemCaseSensitive(j, "names"))
		cJSON_AddObjectToObject(j, "names");
	*ret = j;
	return 0;
}

int image_store_names_edit(struct image_store *s, int (*fn)(cJSON *names, void *ud), void *ud, struct err *e)
{
	_cleanup_close_ int fd = image_store_lock(s, "names", LOCK_EX, e);
	if (fd < 0)
		return fd;
	cJSON *j = NULL;
	int r = names_read(s, &j, e);
	if (r < 0)
		return r;
	cJSON *names = cJSON_GetObjectItemCaseSensitive(j, "names");
	if (!names)
		names = cJSON_AddObjectToObject(j, "names");
	r = names ? fn(names, ud) : -ENOMEM;
	if (r == 1) {
		_cleanup_free_ char *text = jsonprint_text(j);
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/names.json", s->dir);
		r = text ? fdio_write_atomic(p, text, strlen(text), 0600) : -ENOMEM;
		if (r < 0)
			err_setc(e, r, "cannot write %s", p);
	} else if (r < 0) {
		err_setc(e, r, "cannot change the image names");
	}
	cJSON_Delete(j);
	return r < 0 ? r : 0;
}

bool image_store_has(struct image_store *s, const char *hex)
{
	char p[128];
	snprintf(p, sizeof(p), "trees/%s/info.json", hex);
	struct stat st;
	return fstatat(s->fd, p, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

int image_store_tmp(struct image_store *s, const char *what, char *out, size_t n, struct err *e)
{
	snprintf(out, n, "%s/tmp/%d-%s-XXXXXX", s->dir, (int)getpid(), what);
	if (!mkdtemp(out))
		return err_setc(e, -errno, "cannot make a directory in %s/tmp", s->dir);
	return 0;
}

int image_store_rm(struct image_store *s, const char *rel)
{
	return image_unpack_rm(s->fd, rel);
}
