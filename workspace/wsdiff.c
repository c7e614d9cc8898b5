#include "workspace/wsdiff.h"
#include "base/array.h"
#include "workspace/wsexec.h"
#include "workspace/wsfs.h"
#include "workspace/wslayer.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/child.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

/* The modes ward applies: never setuid or setgid. */
#define WS_MODE_MASK 01777
/* A file larger than this is named in the diff, not shown. */
#define WS_DIFF_MAX (8 << 20)

const char *ws_kind_name(enum ws_kind k)
{
	return k == WS_ADDED ? "added" : k == WS_MODIFIED ? "modified" : "deleted";
}

void ws_changes_free(struct ws_changes *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i].path);
	free(c->v);
	ws_free_list(c->same, c->nsame);
	*c = (struct ws_changes){ 0 };
}


static int push(struct ws_changes *c, const char *path, enum ws_kind k, bool dir)
{
	if (array_grow(&c->v, &c->cap, c->n, sizeof(*c->v), 16) < 0)
		return -ENOMEM;
	char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	c->v[c->n++] = (struct ws_change){ .path = p, .kind = k, .dir = dir };
	return 0;
}



static bool same_file(int lroot, int uroot, const char *p, const struct stat *sa, const struct stat *sb)
{
	if ((sa->st_mode & S_IFMT) != (sb->st_mode & S_IFMT) || sa->st_size != sb->st_size ||
	    (sa->st_mode & WS_MODE_MASK) != (sb->st_mode & WS_MODE_MASK))
		return false;
	if (S_ISLNK(sa->st_mode)) {
		char ta[PATH_MAX], tb[PATH_MAX];
		int na = ws_readlink(lroot, p, ta, sizeof(ta)), nb = ws_readlink(uroot, p, tb, sizeof(tb));
		return na == nb && na >= 0 && !memcmp(ta, tb, (size_t)na);
	}
	_cleanup_close_ int fa = ws_open_reg(lroot, p, NULL);
	_cleanup_close_ int fb = ws_open_reg(uroot, p, NULL);
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

static int walk(enum wslayer_writer w, int lroot, int uroot, const char *rel, struct ws_changes *c)
{
	struct wslayer_name *names;
	size_t n;
	int r = wslayer_list(w, uroot, rel, &names, &n);
	if (r < 0)
		return r;
	/* Under an opaque directory, what the lower tree had and the upper
	 * does not have is gone: only where the lower tree has a directory
	 * there (never what a symlink of the tree points at). */
	struct stat lds;
	if (rel[0] && wslayer_opaque(w, uroot, rel) && ws_lstat(lroot, rel, &lds) == 0 && S_ISDIR(lds.st_mode)) {
		char **lnames;
		size_t ln;
		if (ws_list_dir(lroot, rel, &lnames, &ln) == 0) {
			for (size_t i = 0; i < ln && r >= 0; i++) {
				struct wslayer_name key = { .name = lnames[i] };
				if (n && bsearch(&key, names, n, sizeof(*names), wslayer_name_cmp))
					continue;
				char p[PATH_MAX];
				snprintf(p, sizeof(p), "%s/%s", rel, lnames[i]);
				struct stat st;
				if (ws_lstat(lroot, p, &st) == 0)
					r = push(c, p, WS_DELETED, S_ISDIR(st.st_mode));
			}
			ws_free_list(lnames, ln);
		}
	}
	for (size_t i = 0; i < n && r >= 0; i++) {
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s%s%s", rel, rel[0] ? "/" : "", names[i].name);
		struct stat us, ls;
		bool has_lower = ws_lstat(lroot, p, &ls) == 0;
		if (names[i].whiteout) {
			if (has_lower)
				r = push(c, p, WS_DELETED, S_ISDIR(ls.st_mode));
			continue;
		}
		if (ws_lstat(uroot, p, &us) < 0)
			continue;
		if (S_ISDIR(us.st_mode)) {
			if (has_lower && !S_ISDIR(ls.st_mode))
				r = push(c, p, WS_DELETED, false);
			if (r >= 0 && (!has_lower || !S_ISDIR(ls.st_mode)))
				r = push(c, p, WS_ADDED, true);
			if (r >= 0)
				r = walk(w, lroot, uroot, p, c);
		} else if (S_ISREG(us.st_mode) || S_ISLNK(us.st_mode)) {
			if (has_lower && S_ISDIR(ls.st_mode))
				r = push(c, p, WS_DELETED, true);
			if (r >= 0 && (!has_lower || S_ISDIR(ls.st_mode)))
				r = push(c, p, WS_ADDED, false);
			else if (r >= 0 && !same_file(lroot, uroot, p, &ls, &us))
				r = push(c, p, WS_MODIFIED, false);
			else {
				if (r >= 0)
					r = ws_strv_add(&c->same, &c->nsame, &c->capsame, p);
				continue;
			}
			if (r >= 0 && S_ISREG(us.st_mode) && (us.st_mode & (S_ISUID | S_ISGID)))
				c->v[c->n - 1].setid_dropped = true;
		}
		/* Sockets, FIFOs, devices: not part of a patch. */
	}
	wslayer_list_free(names, n);
	return r;
}


bool ws_change_left_out(const struct ws_changes *c, const struct ws_change *ch)
{
	return ch->git && !c->apply_git;
}

size_t ws_changes_left_out(const struct ws_changes *c)
{
	size_t n = 0;
	for (size_t i = 0; i < c->n; i++)
		n += ws_change_left_out(c, &c->v[i]);
	return n;
}

int ws_changes_read(const char *lower, const char *upper, struct ws_changes *ret, struct err *e)
{
	*ret = (struct ws_changes){ 0 };
	_cleanup_close_ int lroot = -1, uroot = -1;
	int r = ws_roots(lower, upper, &lroot, &uroot, e);
	if (r < 0)
		return r;
	r = walk(wslayer_writer_of(uroot), lroot, uroot, "", ret);
	if (r >= 0)
		wsexec_mark(lroot, uroot, ret);
	if (r < 0) {
		ws_changes_free(ret);
		return err_setc(e, r, "cannot read the workspace changes in %s", upper);
	}
	return 0;
}



static int diff_one(FILE *out, int lroot, int uroot, const char *p, enum ws_kind k, bool setid_dropped)
{
	char la[PATH_MAX + 4], lb[PATH_MAX + 4];
	snprintf(la, sizeof(la), "a/%s", p);
	snprintf(lb, sizeof(lb), "b/%s", p);
	struct stat st;
	bool link = (k != WS_ADDED && ws_lstat(lroot, p, &st) == 0 && S_ISLNK(st.st_mode)) ||
		    (k != WS_DELETED && ws_lstat(uroot, p, &st) == 0 && S_ISLNK(st.st_mode));
	if (link) {
		char t[PATH_MAX] = "";
		if (k != WS_DELETED && ws_readlink(uroot, p, t, sizeof(t)) < 0)
			t[0] = 0;
		return ws_put(out, "symlink %s %s%s%s\n", p, ws_kind_name(k), k == WS_DELETED ? "" : " -> ",
				k == WS_DELETED ? "" : t);
	}
	struct stat sa = { 0 }, sb = { 0 };
	_cleanup_close_ int fa = k == WS_ADDED ? -1 : ws_open_reg(lroot, p, &sa);
	_cleanup_close_ int fb = k == WS_DELETED ? -1 : ws_open_reg(uroot, p, &sb);
	if ((k != WS_ADDED && fa == -EINVAL) || (k != WS_DELETED && fb == -EINVAL))
		return ws_put(out, "%s %s: not a regular file (a FIFO, socket or device): not shown\n", p,
				ws_kind_name(k));
	if ((k != WS_ADDED && fa < 0) || (k != WS_DELETED && fb < 0))
		return ws_put(out, "%s %s: cannot be read (%s)\n", p, ws_kind_name(k),
				strerror(-(k != WS_ADDED && fa < 0 ? fa : fb)));
	if (sa.st_size > WS_DIFF_MAX || sb.st_size > WS_DIFF_MAX)
		return ws_put(out, "%s %s: %lld bytes -> %lld bytes: over %d MiB, not shown\n", p, ws_kind_name(k),
				(long long)sa.st_size, (long long)sb.st_size, WS_DIFF_MAX >> 20);
	int r = ws_run_diff(out, k == WS_ADDED ? "/dev/null" : la, k == WS_DELETED ? "/dev/null" : lb, fa, fb, false);
	if (r >= 0 && setid_dropped)
		r = ws_put(out, "note: %s: the box set a setuid/setgid bit; ward does not apply it\n", p);
	return r;
}

/* Every file under a deleted lower directory, as deleted. */
static int diff_deleted_dir(FILE *out, int lroot, const char *rel)
{
	char **names;
	size_t n;
	if (ws_list_dir(lroot, rel, &names, &n) < 0)
		return 0;
	int r = 0;
	for (size_t i = 0; i < n && r >= 0; i++) {
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/%s", rel, names[i]);
		struct stat st;
		if (ws_lstat(lroot, p, &st) < 0)
			continue;
		r = S_ISDIR(st.st_mode) ? diff_deleted_dir(out, lroot, p) : diff_one(out, lroot, -1, p, WS_DELETED, false);
	}
	ws_free_list(names, n);
	return r;
}

/* After the diff, apart: the changes in git directories (a directory
 * added whole is one line; up to a bound), and the files the user's tools
 * run. */
#define WS_NAMED_MAX 50
static int diff_named(FILE *out, const struct ws_changes *c)
{
	size_t git = 0, runs = 0;
	for (size_t i = 0; i < c->n; i++) {
		git += c->v[i].git;
		runs += c->v[i].runs != NULL;
	}
	int r = 0;
	if (git)
		r = ws_put(out, "changes under .git, %s (%zu):\n", c->apply_git ? "allowed" : "not applied", git);
	size_t lines = 0, named = 0;
	for (size_t i = 0; i < c->n && r >= 0; i++) {
		const struct ws_change *ch = &c->v[i];
		if (!ch->git)
			continue;
		if (lines++ == WS_NAMED_MAX) {
			r = ws_put(out, "  ... and %zu more\n", git - named);
			break;
		}
		/* The walk's order: what an added directory holds comes next. */
		size_t below = 0, l = strlen(ch->path);
		while (ch->dir && ch->kind == WS_ADDED && i + below + 1 < c->n &&
		       !strncmp(c->v[i + below + 1].path, ch->path, l) && c->v[i + below + 1].path[l] == '/')
			below++;
		if (below)
			r = ws_put(out, "  %-8s %s/ and the %zu entr%s below it\n", ws_kind_name(ch->kind), ch->path, below,
				   below == 1 ? "y" : "ies");
		else
			r = ws_put(out, "  %-8s %s%s\n", ws_kind_name(ch->kind), ch->path, ch->dir ? "/" : "");
		i += below;
		named += below + 1;
	}
	if (runs && r >= 0)
		r = ws_put(out, "flagged: files your tools run by themselves; read them before you use those tools (%zu):\n",
			   runs);
	for (size_t i = 0, k = 0; i < c->n && r >= 0; i++) {
		const struct ws_change *ch = &c->v[i];
		if (!ch->runs)
			continue;
		if (k++ == WS_NAMED_MAX) {
			r = ws_put(out, "  ... and %zu more\n", runs - WS_NAMED_MAX);
			break;
		}
		r = ws_put(out, "  %-8s %s: %s\n", ws_kind_name(ch->kind), ch->path, ch->runs);
	}
	return r;
}

int ws_diff(const char *lower, const char *upper, const struct ws_changes *c, FILE *out, struct err *e)
{
	_cleanup_close_ int lroot = -1, uroot = -1;
	int r = ws_roots(lower, upper, &lroot, &uroot, e);
	if (r < 0)
		return r;
	for (size_t i = 0; i < c->n; i++) {
		const struct ws_change *ch = &c->v[i];
		r = 0;
		if (ws_change_left_out(c, ch))
			continue;
		if (ch->dir && ch->kind == WS_DELETED)
			r = diff_deleted_dir(out, lroot, ch->path);
		else if (!ch->dir)
			r = diff_one(out, lroot, uroot, ch->path, ch->kind, ch->setid_dropped);
		if (r == -EPIPE)
			return r;
		if (r < 0)
			return err_setc(e, r, "diff of %s failed (is diffutils installed?)", ch->path);
	}
	r = diff_named(out, c);
	if (r < 0)
		return r == -EPIPE ? r : err_setc(e, r, "writing the diff");
	if (fflush(out) == EOF)
		return errno == EPIPE ? -EPIPE : err_setc(e, -errno, "writing the diff");
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

/* Files of the box's layer with more than one link, by inode: the first
 * one applied, so the others become links to it, not copies. */
struct ws_links {
	struct {
		ino_t ino;
		char *path;
	} *v;
	size_t n;
};

static const char *ws_links_find(const struct ws_links *l, ino_t ino)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].ino == ino)
			return l->v[i].path;
	return NULL;
}

static void ws_links_add(struct ws_links *l, ino_t ino, const char *path)
{
	void *nv = realloc(l->v, (l->n + 1) * sizeof(*l->v));
	if (!nv)
		return;
	l->v = nv;
	l->v[l->n].ino = ino;
	if ((l->v[l->n].path = strdup(path)))
		l->n++;
}

static void ws_links_free(struct ws_links *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].path);
	free(l->v);
}

static int apply_file(int root, int uroot, const char *p, struct ws_links *links)
{
	struct stat st;
	int r = ws_lstat(uroot, p, &st);
	if (r < 0)
		return r;
	const char *base;
	_cleanup_close_ int dir = open_parent(root, p, true, &base);
	if (dir < 0)
		return dir;
	char tmp[NAME_MAX + 1];
	snprintf(tmp, sizeof(tmp), ".ward-apply-%d", getpid());
	unlinkat(dir, tmp, 0);
	const char *first = S_ISREG(st.st_mode) && st.st_nlink > 1 ? ws_links_find(links, st.st_ino) : NULL;
	if (first) {
		/* Another name of a file already applied: a link to it. */
		const char *fbase;
		_cleanup_close_ int fdir = open_parent(root, first, false, &fbase);
		if (fdir < 0)
			return fdir;
		if (linkat(fdir, fbase, dir, tmp, 0) < 0)
			return -errno;
	} else if (S_ISLNK(st.st_mode)) {
		char t[PATH_MAX];
		r = ws_readlink(uroot, p, t, sizeof(t));
		if (r < 0)
			return r;
		if (symlinkat(t, dir, tmp) < 0)
			return -errno;
	} else {
		_cleanup_close_ int src = ws_open_reg(uroot, p, NULL);
		if (src < 0)
			return src;
		mode_t mode = st.st_mode & WS_MODE_MASK;
		_cleanup_close_ int dst = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (dst < 0)
			return -errno;
		r = ws_copy_sparse(src, dst, st.st_size);
		if (r < 0) {
			unlinkat(dir, tmp, 0);
			return r;
		}
		/* The mode as the box left it (open's is cut by the umask), less
		 * any setuid or setgid bit. */
		fchmod(dst, mode);
		if (st.st_nlink > 1)
			ws_links_add(links, st.st_ino, p);
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
	_cleanup_close_ int root = -1, uroot = -1;
	int rr = ws_roots(lower, upper, &root, &uroot, e);
	if (rr < 0)
		return rr;
	struct ws_links links = { 0 };
	/* Deletions first, then directories, then files. */
	for (int pass = 0; pass < 3; pass++)
		for (size_t i = 0; i < c->n; i++) {
			const struct ws_change *ch = &c->v[i];
			int r = 0;
			if (ws_change_left_out(c, ch))
				continue;
			if (pass == 0 && ch->kind == WS_DELETED) {
				const char *base;
				_cleanup_close_ int dir = open_parent(root, ch->path, false, &base);
				r = dir < 0 ? (dir == -ENOENT ? 0 : dir) : rm_rf_at(dir, base);
			} else if (pass == 1 && ch->kind == WS_ADDED && ch->dir) {
				const char *base;
				_cleanup_close_ int dir = open_parent(root, ch->path, true, &base);
				r = dir < 0 ? dir : mkdirat(dir, base, 0755) < 0 && errno != EEXIST ? -errno : 0;
			} else if (pass == 2 && ch->kind != WS_DELETED && !ch->dir) {
				r = apply_file(root, uroot, ch->path, &links);
			}
			if (r < 0) {
				ws_links_free(&links);
				return err_setc(e, r, "cannot apply the change to %s (%s)", ch->path, ws_kind_name(ch->kind));
			}
		}
	ws_links_free(&links);
	return 0;
}
