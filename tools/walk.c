#include "tools/walk.h"
#include "base/array.h"
#include "tools/ignore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WALK_DEPTH_MAX 64

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

/* d's names but . .. and .git into ret_names, sorted, so results are stable
 * and read like a listing rather than in the file system's hash order. */
static int walk_names(struct walk *w, DIR *d, char ***ret_names, size_t *ret_n)
{
	char **names = NULL;
	size_t n = 0, cap = 0;
	int r = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (cancel_is_set(w->ctx->cancel)) {
			r = -ECANCELED;
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || !strcmp(de->d_name, ".git"))
			continue;
		if (array_grow(&names, &cap, n, sizeof(*names), 64) < 0 || !(names[n] = strdup(de->d_name)))
			break;
		n++;
	}
	if (n > 1)
		qsort(names, n, sizeof(*names), walk_name_cmp);
	*ret_names = names;
	*ret_n = n;
	return r;
}

static int walk_dir(struct walk *w, int dfd, struct ignore *ig)
{
	if (cancel_is_set(w->ctx->cancel)) {
		close(dfd);
		return -ECANCELED;
	}
	if (w->depth >= WALK_DEPTH_MAX) {
		close(dfd);
		return 0;
	}
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return 0;
	}
	w->depth++;
	struct ignore *mine = ignore_load(dfd, w->rel, ig);
	size_t base = strlen(w->rel);
	char **names;
	size_t n;
	int r = walk_names(w, d, &names, &n);
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
		bool ignored = ignore_match(mine, w->rel, is_dir, w->ctx->cancel);
		if (cancel_is_set(w->ctx->cancel)) {
			r = -ECANCELED;
		} else if (!ignored && is_dir) {
			int sub = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
			if (sub >= 0)
				r = walk_dir(w, sub, mine);
		} else if (!ignored) {
			r = w->cb(w->rel, dirfd(d), name, &st, w->ud);
		}
		w->rel[base] = 0;
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (mine != ig)
		ignore_free(mine);
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
