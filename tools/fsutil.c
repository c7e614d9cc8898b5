#include "tools/fsutil.h"
#include "tools/uio.h"
#include "base/cleanup.h"
#include "base/fdio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int fs_path(const struct tool_ctx *ctx, const char *in, char *out, size_t n)
{
	if (!in || !*in)
		return -EINVAL;
	int k = in[0] == '/' ? snprintf(out, n, "%s", in) : snprintf(out, n, "%s/%s", ctx->root, in);
	if (k < 0 || (size_t)k >= n)
		return -ENAMETOOLONG;
	/* Tidy "a/./b" and trailing slashes for messages; ".." is left to the
	 * kernel, which resolves it inside the box's root. */
	size_t l = strlen(out);
	while (l > 1 && out[l - 1] == '/')
		out[--l] = 0;
	return 0;
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

int walk_tree(const struct tool_ctx *ctx, const char *root, walk_cb *cb, void *ud)
{
	struct walk w = { .ctx = ctx, .cb = cb, .ud = ud };
	int dfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	return walk_dir(&w, dfd, NULL);
}

int fs_replace(const struct tool_ctx *ctx, const char *path, const char *content, size_t len, bool *ret_created)
{
	char target[PATH_MAX], dir[PATH_MAX], tmp[PATH_MAX + 32];
	/* Writing through a symlink replaces the file it names, as an editor would. */
	if (!realpath(path, target)) {
		if (errno != ENOENT)
			return -errno;
		snprintf(target, sizeof(target), "%s", path);
	}
	struct stat st;
	bool exists = stat(target, &st) == 0;
	if (exists && !S_ISREG(st.st_mode))
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	snprintf(dir, sizeof(dir), "%s", target);
	char *slash = strrchr(dir, '/');
	if (slash == dir)
		dir[1] = 0;
	else if (slash)
		*slash = 0;
	snprintf(tmp, sizeof(tmp), "%s/.ward-tmp-XXXXXX", dir);
	_cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = uio_write_all(ctx->uio, fd, content, len);
	if (r >= 0 && cancel_is_set(ctx->cancel))
		r = -ECANCELED;
	if (r >= 0 && fchmod(fd, exists ? st.st_mode & 07777 : 0644) < 0)
		r = -errno;
	/* The last point of no return: after the rename the new file is whole. */
	if (r >= 0 && cancel_is_set(ctx->cancel))
		r = -ECANCELED;
	if (r >= 0 && rename(tmp, target) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	else if (ret_created)
		*ret_created = !exists;
	return r;
}
