#include "tools/fsutil.h"
#include "tools/uio.h"
#include "base/cleanup.h"
#include "base/fdio.h"

#include "base/timeutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

int fs_path(const struct tool_ctx *ctx, const char *in, char *out, size_t n)
{
	if (!in || !*in)
		return -EINVAL;
	int k = in[0] == '/' ? snprintf(out, n, "%s", in)
			     : snprintf(out, n, "%s%s%s", ctx->cwd, strcmp(ctx->cwd, "/") ? "/" : "", in);
	if (k < 0 || (size_t)k >= n)
		return -ENAMETOOLONG;
	/* Tidy trailing slashes for messages; "." and ".." are left to the
	 * kernel, which resolves them inside the box's root. */
	size_t l = strlen(out);
	while (l > 1 && out[l - 1] == '/')
		out[--l] = 0;
	return 0;
}

int fs_open(const struct tool_ctx *ctx, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(unsigned)(flags | O_CLOEXEC),
		.mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? mode : 0,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int fd = (int)syscall(SYS_openat2, ctx->root_fd, path, &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}

/* path's directory part into dir, its last component into name. */
static int fs_split(const char *path, char *dir, size_t dn, char name[NAME_MAX + 1])
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return -EISDIR;
	if (strlen(base) > NAME_MAX)
		return -ENAMETOOLONG;
	snprintf(name, NAME_MAX + 1, "%s", base);
	size_t l = slash ? (size_t)(slash - path) : 0;
	if (slash == path)
		l = 1;	/* "/x": the root */
	if (!slash) {
		snprintf(dir, dn, ".");
		return 0;
	}
	if (l >= dn)
		return -ENAMETOOLONG;
	memcpy(dir, path, l);
	dir[l] = 0;
	return 0;
}

/* Make every missing directory of dir, one component at a time, each
 * resolved from the root as fs_open does. */
static int fs_mkdirs(const struct tool_ctx *ctx, const char *dir)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s", dir);
	size_t l = strlen(p);
	for (size_t i = 1; i <= l; i++) {
		if (p[i] != '/' && p[i] != 0)
			continue;
		char saved = p[i];
		p[i] = 0;
		int fd = fs_open(ctx, p, O_PATH | O_DIRECTORY, 0);
		if (fd >= 0) {
			close(fd);
		} else if (fd == -ENOENT) {
			char parent[PATH_MAX], name[NAME_MAX + 1];
			int r = fs_split(p, parent, sizeof(parent), name);
			if (r < 0)
				return r;
			_cleanup_close_ int pfd = fs_open(ctx, parent, O_PATH | O_DIRECTORY, 0);
			if (pfd < 0)
				return pfd;
			if (mkdirat(pfd, name, 0755) < 0 && errno != EEXIST)
				return -errno;
		} else {
			return fd;
		}
		p[i] = saved;
	}
	return 0;
}

int fs_open_parent(const struct tool_ctx *ctx, const char *path, bool mkdirs, char ret_name[NAME_MAX + 1])
{
	char dir[PATH_MAX], name[NAME_MAX + 1];
	int r = fs_split(path, dir, sizeof(dir), name);
	if (r < 0)
		return r;
	int fd = fs_open(ctx, dir, O_PATH | O_DIRECTORY, 0);
	if (fd == -ENOENT && mkdirs) {
		r = fs_mkdirs(ctx, dir);
		if (r < 0)
			return r;
		fd = fs_open(ctx, dir, O_PATH | O_DIRECTORY, 0);
	}
	if (fd >= 0)
		memcpy(ret_name, name, sizeof(name));
	return fd;
}

int fs_open_error(struct tool_result *res, const char *tool, const char *path, int err)
{
	switch (err) {
	case ENOENT:
		return tool_result_set(res, OUTCOME_FAILED, "%s: %s does not exist", tool, path);
	case EACCES:
	case EPERM:
		return tool_result_set(res, OUTCOME_FAILED, "%s: permission denied: %s", tool, path);
	case ENOTDIR:
		return tool_result_set(res, OUTCOME_FAILED, "%s: a part of %s is not a directory", tool, path);
	case ELOOP:
		return tool_result_set(res, OUTCOME_FAILED,
				       "%s: %s goes through too many symlinks, or through a /proc link to a process's "
				       "files (fd, cwd, root, exe), which tools do not follow", tool, path);
	case EXDEV:
		return tool_result_set(res, OUTCOME_FAILED, "%s: %s leads outside the box's root", tool, path);
	case EROFS:
		return tool_result_set(res, OUTCOME_FAILED, "%s: %s is on a read-only file system; only /workspace and /tmp are writable", tool, path);
	case ENOSPC:
	case EDQUOT:
		return tool_result_set(res, OUTCOME_FAILED, "%s: no space left for %s: the box's disk is full", tool, path);
	case ECANCELED:
		return tool_result_set(res, OUTCOME_CANCELLED, "%s: cancelled", tool);
	default:
		return tool_result_set(res, OUTCOME_FAILED, "%s: %s: %s", tool, path, strerror(err));
	}
}

bool fs_looks_binary(const char *p, size_t n)
{
	return memchr(p, 0, MIN(n, 8192)) != NULL;
}

static bool glob_class(const char **pp, char c)
{
	const char *p = *pp + 1;
	bool neg = *p == '!' || *p == '^', ok = false;
	if (neg)
		p++;
	const char *start = p;
	while (*p && (*p != ']' || p == start)) {
		if (p[1] == '-' && p[2] && p[2] != ']') {
			if (c >= p[0] && c <= p[2])
				ok = true;
			p += 3;
		} else {
			if (c == *p)
				ok = true;
			p++;
		}
	}
	*pp = *p ? p + 1 : p;
	return ok != neg;
}

bool glob_match(const char *pat, const char *text)
{
	for (;;) {
		if (pat[0] == '*' && pat[1] == '*') {
			const char *rest = pat + 2;
			if (*rest == '/')
				rest++;
			/* ** matches zero or more whole segments (or anything at the end). */
			if (!*rest)
				return true;
			for (const char *t = text;; t++) {
				if ((t == text || t[-1] == '/') && glob_match(rest, t))
					return true;
				if (!*t)
					return false;
			}
		}
		switch (*pat) {
		case 0:
			return !*text;
		case '*':
			for (const char *t = text;; t++) {
				if (glob_match(pat + 1, t))
					return true;
				if (!*t || *t == '/')
					return false;
			}
		case '?':
			if (!*text || *text == '/')
				return false;
			pat++, text++;
			break;
		case '[': {
			if (!*text || *text == '/')
				return false;
			const char *p = pat;
			if (!glob_class(&p, *text))
				return false;
			pat = p, text++;
			break;
		}
		case '\\':
			if (pat[1])
				pat++;
			/* fallthrough */
		default:
			if (*pat != *text)
				return false;
			pat++, text++;
		}
	}
}

struct ignore_rule {
	char *pat;
	bool neg, dir_only, anchored;
};

struct ignore {
	char *base;		/* dir of the .gitignore, relative to the walk root ("" = root) */
	struct ignore_rule *rules;
	size_t n;
	struct ignore *parent;
};

struct ignore *ignore_load(int dirfd, const char *reldir, struct ignore *parent)
{
	_cleanup_free_ char *txt = NULL;
	if (fdio_read_file(dirfd, ".gitignore", 1 << 20, &txt, NULL) < 0)
		return parent;
	struct ignore *ig = calloc(1, sizeof(*ig));
	if (!ig)
		return parent;
	ig->base = strdup(reldir);
	ig->parent = parent;
	for (char *line = txt, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		size_t l = strlen(line);
		if (l && line[l - 1] == '\r')
			line[--l] = 0;
		while (l && line[l - 1] == ' ' && (l < 2 || line[l - 2] != '\\'))
			line[--l] = 0;
		if (!l || line[0] == '#')
			continue;
		struct ignore_rule r = { 0 };
		if (line[0] == '!') {
			r.neg = true;
			line++, l--;
		}
		if (l && line[l - 1] == '/') {
			r.dir_only = true;
			line[--l] = 0;
		}
		if (line[0] == '/') {
			r.anchored = true;
			line++;
		} else if (strchr(line, '/')) {
			r.anchored = true;
		}
		if (!*line)
			continue;
		struct ignore_rule *nr = realloc(ig->rules, (ig->n + 1) * sizeof(*nr));
		if (!nr)
			break;
		ig->rules = nr;
		r.pat = strdup(line);
		ig->rules[ig->n++] = r;
	}
	return ig;
}

void ignore_free(struct ignore *ig)
{
	if (!ig)
		return;
	for (size_t i = 0; i < ig->n; i++)
		free(ig->rules[i].pat);
	free(ig->rules);
	free(ig->base);
	free(ig);
}

/* git's rule: the last matching pattern wins, deeper files override. */
bool ignore_match(const struct ignore *ig, const char *relpath, bool is_dir)
{
	for (; ig; ig = ig->parent) {
		size_t bl = strlen(ig->base);
		const char *rel = relpath;
		if (bl) {
			if (strncmp(relpath, ig->base, bl) || relpath[bl] != '/')
				continue;
			rel = relpath + bl + 1;
		}
		const char *name = strrchr(rel, '/');
		name = name ? name + 1 : rel;
		for (size_t i = ig->n; i-- > 0;) {
			const struct ignore_rule *r = &ig->rules[i];
			if (r->dir_only && !is_dir)
				continue;
			if (r->anchored ? glob_match(r->pat, rel) : glob_match(r->pat, name))
				return !r->neg;
		}
	}
	return false;
}

struct walk {
	const struct tool_ctx *ctx;
	walk_cb *cb;
	void *ud;
	char rel[PATH_MAX];
	int depth;
};

static int walk_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int walk_dir(struct walk *w, int dfd, struct ignore *ig)
{
	if (cancel_is_set(w->ctx->cancel))
		return -ECANCELED;
	if (++w->depth > 64)
		return 0;
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return 0;
	}
	struct ignore *mine = ignore_load(dfd, w->rel, ig);
	struct dirent *de;
	int r = 0;
	size_t base = strlen(w->rel);
	/* Collect names first, then sort them, so results are stable and read
	 * like a listing rather than in the file system's hash order. */
	char **names = NULL;
	size_t n = 0, cap = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || !strcmp(de->d_name, ".git"))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			char **nn = realloc(names, cap * sizeof(*nn));
			if (!nn)
				break;
			names = nn;
		}
		names[n++] = strdup(de->d_name);
	}
	if (n > 1)
		qsort(names, n, sizeof(*names), walk_name_cmp);
	for (size_t i = 0; i < n && r >= 0; i++) {
		const char *name = names[i];
		if (cancel_is_set(w->ctx->cancel)) {
			r = -ECANCELED;
			break;
		}
		struct stat st;
		if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (base + strlen(name) + 2 >= sizeof(w->rel))
			continue;
		snprintf(w->rel + base, sizeof(w->rel) - base, "%s%s", base ? "/" : "", name);
		bool is_dir = S_ISDIR(st.st_mode);
		if (!ignore_match(mine, w->rel, is_dir)) {
			if (is_dir) {
				int sub = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
				if (sub >= 0)
					r = walk_dir(w, sub, mine);
			} else {
				r = w->cb(w->rel, dirfd(d), name, &st, w->ud);
			}
		}
		w->rel[base] = 0;
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	for (struct ignore *x = mine; x != ig;) {
		struct ignore *p = x->parent;
		ignore_free(x);
		x = p;
	}
	closedir(d);
	w->depth--;
	return r;
}

int walk_tree(const struct tool_ctx *ctx, int dirfd, walk_cb *cb, void *ud)
{
	struct walk w = { .ctx = ctx, .cb = cb, .ud = ud };
	int dfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	if (dfd < 0)
		return -errno;
	/* A duplicate shares the offset: start the listing from the top. */
	lseek(dfd, 0, SEEK_SET);
	return walk_dir(&w, dfd, NULL);
}

/* A new file beside the target, named .ward-tmp-XXXXXX. */
static int fs_tmpfile(int dfd, char name[32])
{
	for (int i = 0; i < 16; i++) {
		uint32_t rnd;
		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			rnd = (uint32_t)now_ms() ^ (uint32_t)i * 2654435761u;
		snprintf(name, 32, ".ward-tmp-%08x", rnd);
		int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			return fd < 0 ? -errno : fd;
	}
	return -EEXIST;
}

int fs_replace(const struct tool_ctx *ctx, const char *path, const char *content, size_t len, bool *ret_created)
{
	char cur[PATH_MAX], name[NAME_MAX + 1];
	snprintf(cur, sizeof(cur), "%s", path);
	_cleanup_close_ int dfd = -1;
	struct stat st;
	bool exists = false;
	/* Writing through a symlink replaces the file it names, as an editor
	 * would; each hop is resolved again beneath the box's root. */
	for (int hops = 0;; hops++) {
		if (hops > 40)
			return -ELOOP;
		if (dfd >= 0)
			close(dfd);
		dfd = fs_open_parent(ctx, cur, false, name);
		if (dfd < 0)
			return dfd;
		struct statfs sf;
		if (fstatfs(dfd, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC)
			return -EACCES;	/* /proc: its links are the kernel's, not files */
		exists = fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
		if (!exists) {
			if (errno != ENOENT)
				return -errno;
			break;
		}
		if (!S_ISLNK(st.st_mode))
			break;
		char t[PATH_MAX];
		ssize_t n = readlinkat(dfd, name, t, sizeof(t) - 1);
		if (n <= 0)
			return n < 0 ? -errno : -ENOENT;
		t[n] = 0;
		if (t[0] == '/') {
			snprintf(cur, sizeof(cur), "%s", t);
		} else {
			char *slash = strrchr(cur, '/');
			size_t keep = slash ? (size_t)(slash - cur) + 1 : 0;
			if (keep + (size_t)n >= sizeof(cur))
				return -ENAMETOOLONG;
			memcpy(cur + keep, t, (size_t)n + 1);
		}
	}
	if (exists && !S_ISREG(st.st_mode))
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	char tmp[32];
	_cleanup_close_ int fd = fs_tmpfile(dfd, tmp);
	if (fd < 0)
		return fd;
	int r = uio_write_all(ctx->uio, fd, content, len);
	if (r >= 0 && cancel_is_set(ctx->cancel))
		r = -ECANCELED;
	/* Never a setuid or setgid bit: nothing the box writes carries
	 * privilege out of it. */
	if (r >= 0 && fchmod(fd, exists ? st.st_mode & 01777 : 0644) < 0)
		r = -errno;
	/* The last point of no return: after the rename the new file is whole. */
	if (r >= 0 && cancel_is_set(ctx->cancel))
		r = -ECANCELED;
	if (r >= 0 && renameat(dfd, tmp, dfd, name) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(dfd, tmp, 0);
	else if (ret_created)
		*ret_created = !exists;
	return r;
}
