#include "workspace/wslayer.h"
#include "workspace/wsfs.h"
#include "base/array.h"
#include "base/cleanup.h"
#include "base/fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#define WSLAYER_RECORD_MAX 64

static const char *const wslayer_names[] = {
	[WSLAYER_OVERLAYFS] = "overlayfs",
	[WSLAYER_FUSE_OVERLAYFS] = "fuse-overlayfs",
};

const char *wslayer_writer_name(enum wslayer_writer w)
{
	return (size_t)w < ARRAY_SIZE(wslayer_names) ? wslayer_names[w] : "overlayfs";
}

/* The record at dirfd/path: the writer it names, or -errno (-ENOENT: none). */
static int wslayer_record_read(int dirfd, const char *path)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	char v[WSLAYER_RECORD_MAX + 1];
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > WSLAYER_RECORD_MAX)
		return -EINVAL;
	ssize_t n = fdio_read_some(fd, v, WSLAYER_RECORD_MAX);
	if (n < 0)
		return (int)n;
	v[n] = 0;
	v[strcspn(v, "\n")] = 0;
	for (size_t i = 0; i < ARRAY_SIZE(wslayer_names); i++)
		if (!strcmp(v, wslayer_names[i]))
			return (int)i;
	return -EINVAL;
}

enum wslayer_writer wslayer_writer_of(int uroot)
{
	int r = wslayer_record_read(uroot, "../" WSLAYER_RECORD);
	return r < 0 ? WSLAYER_OVERLAYFS : (enum wslayer_writer)r;
}

static bool wslayer_dir_empty(const char *dir)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/upper", dir);
	_cleanup_close_ int root = open(p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (root < 0)
		return errno == ENOENT;
	char **names;
	size_t n;
	if (ws_list_dir(root, "", &names, &n) < 0)
		return false;
	ws_free_list(names, n);
	return n == 0;
}

int wslayer_writer_claim(const char *dir, enum wslayer_writer w, struct err *e)
{
	_cleanup_close_ int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return err_setc(e, -errno, "cannot open the workspace layers %s", dir);
	int had = wslayer_record_read(dfd, WSLAYER_RECORD);
	if (had == (int)w)
		return 0;
	if (!wslayer_dir_empty(dir))
		return err_set(e, -EXDEV,
			       "the workspace layers %s were written by %s, which this box (%s) would not read "
			       "alike: apply or drop them first",
			       dir, wslayer_writer_name(had < 0 ? WSLAYER_OVERLAYFS : (enum wslayer_writer)had),
			       wslayer_writer_name(w));
	char tmp[PATH_MAX], rec[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s/.%s.new", dir, WSLAYER_RECORD);
	snprintf(rec, sizeof(rec), "%s/%s", dir, WSLAYER_RECORD);
	char line[WSLAYER_RECORD_MAX];
	snprintf(line, sizeof(line), "%s\n", wslayer_writer_name(w));
	_cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || fdio_write_full(fd, line, strlen(line)) < 0 || rename(tmp, rec) < 0) {
		int r = -errno;
		unlink(tmp);
		return err_setc(e, r, "cannot record the writer of the workspace layers %s", dir);
	}
	return 0;
}

static bool wslayer_whiteout_dev(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && st->st_rdev == makedev(0, 0);
}

enum wslayer_kind wslayer_entry(enum wslayer_writer w, const char *name, const struct stat *st, const char **target)
{
	*target = name;
	if (st && wslayer_whiteout_dev(st))
		return WSLAYER_WHITEOUT;
	if (w != WSLAYER_FUSE_OVERLAYFS || strncmp(name, WSLAYER_WH_PREFIX, strlen(WSLAYER_WH_PREFIX)))
		return WSLAYER_ENTRY;
	const char *t = name + strlen(WSLAYER_WH_PREFIX);
	if (!strcmp(name, WSLAYER_WH_OPAQUE) || !*t || !strcmp(t, ".") || !strcmp(t, ".."))
		return WSLAYER_MARK;
	*target = t;
	return WSLAYER_WHITEOUT;
}

static bool wslayer_xattr_y(int fd, const char *name)
{
	char v[4];
	return fgetxattr(fd, name, v, sizeof(v)) == 1 && v[0] == 'y';
}

bool wslayer_opaque(enum wslayer_writer w, int uroot, const char *rel)
{
	_cleanup_close_ int fd = ws_open(uroot, rel, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return false;
	if (wslayer_xattr_y(fd, "user.overlay.opaque") || wslayer_xattr_y(fd, "trusted.overlay.opaque"))
		return true;
	if (w != WSLAYER_FUSE_OVERLAYFS)
		return false;	/* user.fuseoverlayfs.* is a name the box may set under overlayfs */
	struct stat st;
	return wslayer_xattr_y(fd, WSLAYER_FUSE_OPAQUE_XATTR) ||
	       fstatat(fd, WSLAYER_WH_OPAQUE, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

int wslayer_lookup(enum wslayer_writer w, int uroot, const char *rel, struct stat *st)
{
	const char *slash = strrchr(rel, '/');
	const char *base = slash ? slash + 1 : rel;
	if (ws_lstat(uroot, rel, st) == 0) {
		const char *t;
		enum wslayer_kind k = wslayer_entry(w, base, st, &t);
		return k == WSLAYER_MARK || (k == WSLAYER_WHITEOUT && t != base) ? -ENOENT : (int)k;
	}
	if (w != WSLAYER_FUSE_OVERLAYFS || !*base)
		return -ENOENT;
	char wh[PATH_MAX];
	struct stat ws;
	if ((size_t)snprintf(wh, sizeof(wh), "%.*s" WSLAYER_WH_PREFIX "%s", (int)(base - rel), rel, base) >= sizeof(wh))
		return -ENOENT;
	return ws_lstat(uroot, wh, &ws) == 0 ? WSLAYER_WHITEOUT : -ENOENT;
}

void wslayer_list_free(struct wslayer_name *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

int wslayer_name_cmp(const void *a, const void *b)
{
	const struct wslayer_name *x = a, *y = b;
	return strcmp(x->name, y->name);
}

static int wslayer_sort_cmp(const void *a, const void *b)
{
	const struct wslayer_name *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : (int)x->whiteout - (int)y->whiteout;	/* the entry first */
}

int wslayer_list(enum wslayer_writer w, int uroot, const char *rel, struct wslayer_name **ret, size_t *n)
{
	*ret = NULL;
	*n = 0;
	_cleanup_close_ int dfd = ws_open(uroot, rel, O_PATH | O_DIRECTORY);
	if (dfd < 0)
		return dfd;
	char **names;
	size_t k;
	int r = ws_list_dir(uroot, rel, &names, &k);
	if (r < 0)
		return r;
	struct wslayer_name *v = NULL;
	size_t m = 0, cap = 0;
	for (size_t i = 0; i < k && r >= 0; i++) {
		struct stat st;
		const char *t;
		bool have = fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0;
		enum wslayer_kind kind = wslayer_entry(w, names[i], have ? &st : NULL, &t);
		if (kind == WSLAYER_MARK)
			continue;
		if ((r = array_grow(&v, &cap, m, sizeof(*v), 16)) < 0)
			break;
		if (!(v[m].name = strdup(t))) {
			r = -ENOMEM;
			break;
		}
		v[m++].whiteout = kind == WSLAYER_WHITEOUT;
	}
	ws_free_list(names, k);
	if (r < 0) {
		wslayer_list_free(v, m);
		return r;
	}
	if (m > 1)
		qsort(v, m, sizeof(*v), wslayer_sort_cmp);
	/* One per name: an entry hides a whiteout of the same name. */
	size_t o = 0;
	for (size_t i = 0; i < m; i++) {
		if (o && !strcmp(v[o - 1].name, v[i].name)) {
			free(v[i].name);
			continue;
		}
		v[o++] = v[i];
	}
	*ret = v;
	*n = o;
	return 0;
}
