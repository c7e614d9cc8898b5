#include "sandbox/wsdiff.h"
#include "base/cleanup.h"
#include "base/fdio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

extern char **environ;

const char *ws_kind_name(enum ws_kind k)
{
	return k == WS_ADDED ? "added" : k == WS_MODIFIED ? "modified" : "deleted";
}

void ws_changes_free(struct ws_changes *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i].path);
	free(c->v);
	*c = (struct ws_changes){ 0 };
}

static int push(struct ws_changes *c, const char *path, enum ws_kind k, bool dir)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct ws_change *nv = realloc(c->v, cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		c->v = nv;
		c->cap = cap;
	}
	char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	c->v[c->n++] = (struct ws_change){ .path = p, .kind = k, .dir = dir };
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names in a directory, without . and .. */
static int list_dir(const char *path, char ***ret, size_t *n)
{
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	char **v = NULL;
	size_t k = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (k == cap) {
			cap = cap ? cap * 2 : 32;
			char **nv = realloc(v, cap * sizeof(*nv));
			if (!nv)
				break;
			v = nv;
		}
		v[k++] = strdup(de->d_name);
	}
	closedir(d);
	if (k)
		qsort(v, k, sizeof(*v), name_cmp);
	*ret = v;
	*n = k;
	return 0;
}

static void free_list(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static bool opaque(const char *dir)
{
	char v[4];
	ssize_t n = getxattr(dir, "user.overlay.opaque", v, sizeof(v));
	if (n <= 0)
		n = getxattr(dir, "trusted.overlay.opaque", v, sizeof(v));
	return n == 1 && v[0] == 'y';
}

static bool same_file(const char *a, const char *b, const struct stat *sa, const struct stat *sb)
{
	if ((sa->st_mode & S_IFMT) != (sb->st_mode & S_IFMT) || sa->st_size != sb->st_size ||
	    (sa->st_mode & 07777) != (sb->st_mode & 07777))
		return false;
	if (S_ISLNK(sa->st_mode)) {
		char ta[PATH_MAX], tb[PATH_MAX];
		ssize_t na = readlink(a, ta, sizeof(ta)), nb = readlink(b, tb, sizeof(tb));
		return na == nb && na >= 0 && !memcmp(ta, tb, (size_t)na);
	}
	_cleanup_close_ int fa = open(a, O_RDONLY | O_CLOEXEC);
	_cleanup_close_ int fb = open(b, O_RDONLY | O_CLOEXEC);
	if (fa < 0 || fb < 0)
		return false;
	char x[65536], y[65536];
	for (;;) {
		ssize_t n = fdio_read_some(fa, x, sizeof(x));
		if (n < 0)
			return false;
		if (n == 0)
			return true;
		if (fdio_read_full(fb, y, (size_t)n) < 0 || memcmp(x, y, (size_t)n))
			return false;
	}
}

static int walk(const char *lower, const char *upper, const char *rel, struct ws_changes *c)
{
	char ud[PATH_MAX], ld[PATH_MAX];
	snprintf(ud, sizeof(ud), "%s%s%s", upper, rel[0] ? "/" : "", rel);
	snprintf(ld, sizeof(ld), "%s%s%s", lower, rel[0] ? "/" : "", rel);
	char **names;
	size_t n;
	int r = list_dir(ud, &names, &n);
	if (r < 0)
		return r;
	/* Under an opaque directory, what the lower tree had and the upper
	 * does not have is gone. */
	if (rel[0] && opaque(ud)) {
		char **lnames;
		size_t ln;
		if (list_dir(ld, &lnames, &ln) == 0) {
			for (size_t i = 0; i < ln && r >= 0; i++) {
				if (bsearch(&lnames[i], names, n, sizeof(*names), name_cmp))
					continue;
				char p[PATH_MAX], lp[PATH_MAX];
				snprintf(p, sizeof(p), "%s/%s", rel, lnames[i]);
				snprintf(lp, sizeof(lp), "%s/%s", ld, lnames[i]);
				struct stat st;
				if (lstat(lp, &st) == 0)
					r = push(c, p, WS_DELETED, S_ISDIR(st.st_mode));
			}
			free_list(lnames, ln);
		}
	}
	for (size_t i = 0; i < n && r >= 0; i++) {
		char p[PATH_MAX], up[PATH_MAX], lp[PATH_MAX];
		snprintf(p, sizeof(p), "%s%s%s", rel, rel[0] ? "/" : "", names[i]);
		snprintf(up, sizeof(up), "%s/%s", upper, p);
		snprintf(lp, sizeof(lp), "%s/%s", lower, p);
		struct stat us, ls;
		if (lstat(up, &us) < 0)
			continue;
		bool has_lower = lstat(lp, &ls) == 0;
		if (S_ISCHR(us.st_mode) && us.st_rdev == makedev(0, 0)) {
			if (has_lower)
				r = push(c, p, WS_DELETED, S_ISDIR(ls.st_mode));
		} else if (S_ISDIR(us.st_mode)) {
			if (has_lower && !S_ISDIR(ls.st_mode))
				r = push(c, p, WS_DELETED, false);
			if (r >= 0 && (!has_lower || !S_ISDIR(ls.st_mode)))
				r = push(c, p, WS_ADDED, true);
			if (r >= 0)
				r = walk(lower, upper, p, c);
		} else if (S_ISREG(us.st_mode) || S_ISLNK(us.st_mode)) {
			if (has_lower && S_ISDIR(ls.st_mode))
				r = push(c, p, WS_DELETED, true);
			if (r >= 0 && (!has_lower || S_ISDIR(ls.st_mode)))
				r = push(c, p, WS_ADDED, false);
			else if (r >= 0 && !same_file(lp, up, &ls, &us))
				r = push(c, p, WS_MODIFIED, false);
		}
		/* Sockets, FIFOs, devices: not part of a patch. */
	}
	free_list(names, n);
	return r;
}

int ws_changes_read(const char *lower, const char *upper, struct ws_changes *ret, struct err *e)
{
	*ret = (struct ws_changes){ 0 };
	int r = walk(lower, upper, "", ret);
	if (r < 0) {
		ws_changes_free(ret);
		return err_setc(e, r, "cannot read the workspace changes in %s", upper);
	}
	return 0;
}

static int run_diff(FILE *out, const char *la, const char *lb, const char *a, const char *b)
{
	fflush(out);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fileno(out), 1);
	char *argv[] = { "diff", "-u", "--label", (char *)la, "--label", (char *)lb, (char *)a, (char *)b, NULL };
	pid_t pid;
	int r = posix_spawnp(&pid, "diff", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0)
		return -r;
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	/* 0 same, 1 different, 2 trouble. */
	return WIFEXITED(st) && WEXITSTATUS(st) <= 1 ? 0 : -EIO;
}

static int diff_one(FILE *out, const char *lower, const char *upper, const char *p, enum ws_kind k)
{
	char la[PATH_MAX + 4], lb[PATH_MAX + 4], lp[PATH_MAX], up[PATH_MAX];
	snprintf(la, sizeof(la), "a/%s", p);
	snprintf(lb, sizeof(lb), "b/%s", p);
	snprintf(lp, sizeof(lp), "%s/%s", lower, p);
	snprintf(up, sizeof(up), "%s/%s", upper, p);
	const char *src = k == WS_ADDED ? "/dev/null" : lp, *dst = k == WS_DELETED ? "/dev/null" : up;
	struct stat st;
	bool link = (k != WS_ADDED && lstat(lp, &st) == 0 && S_ISLNK(st.st_mode)) ||
		    (k != WS_DELETED && lstat(up, &st) == 0 && S_ISLNK(st.st_mode));
	if (link) {
		char t[PATH_MAX] = "";
		ssize_t n = readlink(k == WS_DELETED ? lp : up, t, sizeof(t) - 1);
		t[n > 0 ? n : 0] = 0;
		fprintf(out, "symlink %s %s%s%s\n", p, ws_kind_name(k), k == WS_DELETED ? "" : " -> ", k == WS_DELETED ? "" : t);
		return 0;
	}
	return run_diff(out, k == WS_ADDED ? "/dev/null" : la, k == WS_DELETED ? "/dev/null" : lb, src, dst);
}

/* Every file under a deleted lower directory, as deleted. */
static int diff_deleted_dir(FILE *out, const char *lower, const char *rel)
{
	char ld[PATH_MAX];
	snprintf(ld, sizeof(ld), "%s/%s", lower, rel);
	char **names;
	size_t n;
	int r = list_dir(ld, &names, &n);
	if (r < 0)
		return 0;
	for (size_t i = 0; i < n && r >= 0; i++) {
		char p[PATH_MAX], lp[PATH_MAX];
		snprintf(p, sizeof(p), "%s/%s", rel, names[i]);
		snprintf(lp, sizeof(lp), "%s/%s", lower, p);
		struct stat st;
		if (lstat(lp, &st) < 0)
			continue;
		r = S_ISDIR(st.st_mode) ? diff_deleted_dir(out, lower, p) : diff_one(out, lower, "", p, WS_DELETED);
	}
	free_list(names, n);
	return r;
}

int ws_diff(const char *lower, const char *upper, const struct ws_changes *c, FILE *out, struct err *e)
{
	for (size_t i = 0; i < c->n; i++) {
		const struct ws_change *ch = &c->v[i];
		int r = 0;
		if (ch->dir && ch->kind == WS_DELETED)
			r = diff_deleted_dir(out, lower, ch->path);
		else if (!ch->dir)
			r = diff_one(out, lower, upper, ch->path, ch->kind);
		if (r < 0)
			return err_setc(e, r, "diff of %s failed (is diffutils installed?)", ch->path);
	}
	fflush(out);
	return 0;
}

/* The directory holding rel's last component, beneath root, no symlinks
 * anywhere on the way; missing directories are made (mkdirs). */
static int open_parent(int root, const char *rel, bool mkdirs, const char **base)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s", rel);
	char *slash = strrchr(tmp, '/');
	*base = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
	if (!slash)
		return fcntl(root, F_DUPFD_CLOEXEC, 3);
	*slash = 0;
	int fd = fcntl(root, F_DUPFD_CLOEXEC, 3);
	for (char *part = tmp, *next; part && fd >= 0; part = next) {
		next = strchr(part, '/');
		if (next)
			*next++ = 0;
		if (!*part || !strcmp(part, ".") || !strcmp(part, ".."))
			continue;
		struct open_how how = {
			.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
			.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
		};
		int sub = (int)syscall(SYS_openat2, fd, part, &how, sizeof(how));
		if (sub < 0 && errno == ENOENT && mkdirs) {
			if (mkdirat(fd, part, 0755) < 0 && errno != EEXIST) {
				int r = -errno;
				close(fd);
				return r;
			}
			sub = (int)syscall(SYS_openat2, fd, part, &how, sizeof(how));
		}
		int r = -errno;
		close(fd);
		if (sub < 0)
			return r;
		fd = sub;
	}
	return fd;
}

static int rm_rf_at(int pfd, const char *name)
{
	if (unlinkat(pfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	struct dirent *de;
	int r = 0;
	while (r >= 0 && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			r = rm_rf_at(dirfd(d), de->d_name);
	closedir(d);
	if (r >= 0 && unlinkat(pfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		r = -errno;
	return r;
}

static int apply_file(int root, const char *upper, const char *p)
{
	char up[PATH_MAX];
	snprintf(up, sizeof(up), "%s/%s", upper, p);
	struct stat st;
	if (lstat(up, &st) < 0)
		return -errno;
	const char *base;
	_cleanup_close_ int dir = open_parent(root, p, true, &base);
	if (dir < 0)
		return dir;
	char tmp[NAME_MAX + 1];
	snprintf(tmp, sizeof(tmp), ".ward-apply-%d", getpid());
	unlinkat(dir, tmp, 0);
	if (S_ISLNK(st.st_mode)) {
		char t[PATH_MAX];
		ssize_t n = readlink(up, t, sizeof(t) - 1);
		if (n < 0)
			return -errno;
		t[n] = 0;
		if (symlinkat(t, dir, tmp) < 0)
			return -errno;
	} else {
		_cleanup_close_ int src = open(up, O_RDONLY | O_CLOEXEC);
		if (src < 0)
			return -errno;
		_cleanup_close_ int dst = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, st.st_mode & 07777);
		if (dst < 0)
			return -errno;
		char b[65536];
		for (;;) {
			ssize_t n = fdio_read_some(src, b, sizeof(b));
			if (n < 0 || (n > 0 && fdio_write_full(dst, b, (size_t)n) < 0)) {
				unlinkat(dir, tmp, 0);
				return n < 0 ? (int)n : -EIO;
			}
			if (n == 0)
				break;
		}
		fchmod(dst, st.st_mode & 07777);
	}
	/* A directory in the way (a dir replaced by a file) was deleted first. */
	if (renameat(dir, tmp, dir, base) < 0) {
		int r = -errno;
		unlinkat(dir, tmp, 0);
		return r;
	}
	return 0;
}

int ws_apply(const char *lower, const char *upper, const struct ws_changes *c, struct err *e)
{
	_cleanup_close_ int root = open(lower, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return err_setc(e, -errno, "cannot open %s", lower);
	/* Deletions first, then directories, then files. */
	for (int pass = 0; pass < 3; pass++)
		for (size_t i = 0; i < c->n; i++) {
			const struct ws_change *ch = &c->v[i];
			int r = 0;
			if (pass == 0 && ch->kind == WS_DELETED) {
				const char *base;
				_cleanup_close_ int dir = open_parent(root, ch->path, false, &base);
				r = dir < 0 ? (dir == -ENOENT ? 0 : dir) : rm_rf_at(dir, base);
			} else if (pass == 1 && ch->kind == WS_ADDED && ch->dir) {
				const char *base;
				_cleanup_close_ int dir = open_parent(root, ch->path, true, &base);
				r = dir < 0 ? dir : mkdirat(dir, base, 0755) < 0 && errno != EEXIST ? -errno : 0;
			} else if (pass == 2 && ch->kind != WS_DELETED && !ch->dir) {
				r = apply_file(root, upper, ch->path);
			}
			if (r < 0)
				return err_setc(e, r, "cannot apply the change to %s (%s)", ch->path, ws_kind_name(ch->kind));
		}
	return 0;
}
