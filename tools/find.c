#include "tools/fsutil.h"
#include "base/array.h"
#include "tools/glob.h"
#include "tools/walk.h"
#include "base/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FIND_MAX 1000
#define FIND_COLLECT_MAX 100000

static const struct arg_spec find_args[] = {
	{ .name = "pattern", .type = ARG_STRING, .required = true },
	{ .name = "path", .type = ARG_STRING },
	{ .name = NULL },
};

struct find_hit {
	char *rel;
	struct timespec mtime;
};

struct find_state {
	const char *pattern;
	bool basename_only;
	struct find_hit *hits;
	size_t n, cap, total;
};

static int find_cb(const char *rel, int dirfd, const char *name, const struct stat *st, void *ud)
{
	struct find_state *s = ud;
	if (!glob_match(s->pattern, s->basename_only ? name : rel))
		return 0;
	s->total++;
	if (s->n >= FIND_COLLECT_MAX)
		return 0;
	if (array_grow(&s->hits, &s->cap, s->n, sizeof(*s->hits), 256) < 0)
		return -ENOMEM;
	char *r = strdup(rel);
	if (!r)
		return -ENOMEM;
	s->hits[s->n++] = (struct find_hit){ .rel = r, .mtime = st->st_mtim };
	return 0;
}

static int find_cmp(const void *a, const void *b)
{
	const struct find_hit *x = a, *y = b;
	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? 1 : -1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? 1 : -1;
	return strcmp(x->rel, y->rel);
}

static int find_run(struct tool_ctx *ctx, struct tool_result *res)
{
	char path[PATH_MAX];
	if (fs_path(ctx, tool_arg_str(ctx->args, "path", "."), path, sizeof(path)) < 0)
		return tool_result_set(res, OUTCOME_BAD_INPUT, "find: path is too long");
	struct find_state s = { .pattern = tool_arg_str(ctx->args, "pattern", "*") };
	if (strlen(s.pattern) > GLOB_PATTERN_MAX)
		return tool_result_set(res, OUTCOME_BAD_INPUT, "find: the pattern is longer than %d bytes", GLOB_PATTERN_MAX);
	s.basename_only = !strchr(s.pattern, '/');
	int dfd = fs_open(ctx, path, O_RDONLY | O_DIRECTORY, 0);
	int r = dfd < 0 ? dfd : walk_tree(ctx, dfd, find_cb, &s);
	if (dfd >= 0)
		close(dfd);
	if (r == -ECANCELED || r == -ENOTDIR || (r < 0 && !s.n)) {
		for (size_t i = 0; i < s.n; i++)
			free(s.hits[i].rel);
		free(s.hits);
		if (r == -ENOTDIR)
			return tool_result_set(res, OUTCOME_FAILED, "find: %s is not a directory", path);
		return fs_open_error(res, "find", path, -r);
	}
	qsort(s.hits, s.n, sizeof(*s.hits), find_cmp);
	res->outcome = OUTCOME_OK;
	if (!s.total)
		buf_printf(&res->text, "no files match %s under %s\n", s.pattern, path);
	size_t shown = MIN(s.n, FIND_MAX);
	for (size_t i = 0; i < s.n; i++) {
		if (i < shown && buf_printf(&res->text, "%s\n", s.hits[i].rel) < 0)
			shown = i;
		free(s.hits[i].rel);
	}
	free(s.hits);
	if (s.total > shown) {
		res->text.len = MIN(res->text.len, res->text.cap - 200);
		buf_printf(&res->text, "[%zu of %zu matches shown, newest first; narrow the pattern or path]\n",
			   shown, s.total);
	}
	return 0;
}

const struct tool tool_find = {
	.name = "find",
	.description =
		"Find files by glob pattern (*, ?, [...] within one path segment; ** for any "
		"number of segments) under path (default /workspace). A pattern without '/' "
		"matches file names at any depth. Newest first, "
		"at most 1,000; .git and what .gitignore excludes are skipped.",
	.args = find_args,
	.inproc = true,
	.readonly = true,
	.run = find_run,
};
