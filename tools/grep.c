/* grep: PCRE2 with JIT over a tree. A pattern that would backtrack without
 * end hits PCRE2's match and depth limits (the JIT's stack limit) and is
 * reported as too expensive. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tools/fsutil.h"
#include "tools/uio.h"
#include "base/cleanup.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GREP_DEFAULT_LIMIT 200
#define GREP_FILE_MAX (64u << 20)
/* Steps of backtracking per match attempt; a normal pattern on a normal
 * line uses a few hundred. */
#define GREP_MATCH_LIMIT 1000000
#define GREP_DEPTH_LIMIT 10000
#define GREP_MAX_LINE 500

int fs_open_error(struct tool_result *res, const char *tool, const char *path, int err);

static const char *const grep_modes[] = { "content", "files", "count", NULL };

static const struct arg_spec grep_args[] = {
	{ .name = "pattern", .type = ARG_STRING, .required = true },
	{ .name = "path", .type = ARG_STRING },
	{ .name = "glob", .type = ARG_STRING },
	{ .name = "ignore_case", .type = ARG_BOOL },
	{ .name = "mode", .type = ARG_STRING, .choices = grep_modes },
	{ .name = "context", .type = ARG_INT, .min = 0, .max = 20 },
	{ .name = "limit", .type = ARG_INT, .min = 1, .max = 10000 },
	{ .name = NULL },
};

enum grep_mode { GREP_CONTENT, GREP_FILES, GREP_COUNT };

struct grep {
	struct tool_ctx *ctx;
	struct tool_result *res;
	pcre2_code *re;
	pcre2_match_data *md;
	pcre2_match_context *mc;
	pcre2_jit_stack *js;
	enum grep_mode mode;
	const char *glob;
	int context;
	int64_t limit, emitted;
	size_t files, matched_files, binary, too_big;
	bool full, expensive;
	const char *display_root;
};

static bool grep_glob_ok(struct grep *g, const char *rel, const char *name)
{
	if (!g->glob)
		return true;
	return strchr(g->glob, '/') ? glob_match(g->glob, rel) : glob_match(g->glob, name);
}

static void grep_emit_line(struct grep *g, const char *rel, size_t lineno, const char *p, size_t l, char sep)
{
	if (l && p[l - 1] == '\r')
		l--;
	bool cut = l > GREP_MAX_LINE;
	if (buf_printf(&g->res->text, "%s%c%zu%c%.*s%s\n", rel, sep, lineno, sep, (int)(cut ? GREP_MAX_LINE : l), p,
		       cut ? " [line cut]" : "") < 0)
		g->full = true;
}

static int grep_buffer(struct grep *g, const char *rel, const char *data, size_t len)
{
	size_t start = 0, count = 0, last_emitted_line = 0, lineno = 1, lineno_at = 0;
	while (start <= len) {
		int rc = pcre2_match(g->re, (PCRE2_SPTR)data, len, start, 0, g->md, g->mc);
		if (rc == PCRE2_ERROR_NOMATCH)
			break;
		if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_JIT_STACKLIMIT ||
		    rc == PCRE2_ERROR_HEAPLIMIT) {
			g->expensive = true;
			return -E2BIG;
		}
		if (rc < 0)
			break;	/* e.g. a UTF error in this file: treat as no more matches */
		PCRE2_SIZE *ov = pcre2_get_ovector_pointer(g->md);
		size_t ms = ov[0], me = ov[1];
		/* The line holding the match start. */
		size_t ls = ms;
		while (ls > 0 && data[ls - 1] != '\n')
			ls--;
		const char *nl = memchr(data + ms, '\n', len - ms);
		size_t le = nl ? (size_t)(nl - data) : len;
		for (; lineno_at < ls; lineno_at++)
			lineno += data[lineno_at] == '\n';
		count++;
		if (g->mode == GREP_FILES)
			break;
		if (g->mode == GREP_CONTENT) {
			if (g->emitted >= g->limit) {
				g->full = true;
				return 0;
			}
			if (g->context) {
				/* Lines before, skipping ones already shown. */
				size_t want = (size_t)g->context, s = ls;
				while (want && s > 0) {
					size_t ps = s - 1;
					while (ps > 0 && data[ps - 1] != '\n')
						ps--;
					s = ps;
					want--;
				}
				size_t ln = lineno - ((size_t)g->context - want);
				for (size_t p = s; p < ls; ln++) {
					const char *e = memchr(data + p, '\n', ls - p);
					size_t pe = e ? (size_t)(e - data) : ls;
					if (ln > last_emitted_line)
						grep_emit_line(g, rel, ln, data + p, pe - p, '-');
					p = pe + 1;
				}
			}
			if (lineno > last_emitted_line)
				grep_emit_line(g, rel, lineno, data + ls, le - ls, ':');
			last_emitted_line = lineno;
			g->emitted++;
			if (g->context) {
				size_t p = le + 1, ln = lineno + 1;
				for (int k = 0; k < g->context && p < len; k++, ln++) {
					const char *e = memchr(data + p, '\n', len - p);
					size_t pe = e ? (size_t)(e - data) : len;
					grep_emit_line(g, rel, ln, data + p, pe - p, '-');
					last_emitted_line = ln;
					p = pe + 1;
				}
				if (g->context)
					buf_append(&g->res->text, "--\n", 3);
			}
			if (g->full)
				return 0;
		}
		/* Next search starts after this line (one hit per line), or after
		 * an empty match. */
		start = (le < len ? le + 1 : len + 1);
		if (me > start)
			start = me;
	}
	if (count) {
		g->matched_files++;
		if (g->mode == GREP_FILES) {
			if (g->emitted++ >= g->limit)
				g->full = true;
			else if (buf_printf(&g->res->text, "%s\n", rel) < 0)
				g->full = true;
		} else if (g->mode == GREP_COUNT) {
			if (g->emitted++ >= g->limit)
				g->full = true;
			else if (buf_printf(&g->res->text, "%s:%zu\n", rel, count) < 0)
				g->full = true;
		}
	}
	return 0;
}

static int grep_file(struct grep *g, int dirfd, const char *name, const char *rel, const struct stat *st)
{
	if (!S_ISREG(st->st_mode))
		return 0;
	g->files++;
	if ((size_t)st->st_size > GREP_FILE_MAX) {
		g->too_big++;
		return 0;
	}
	if (st->st_size == 0)
		return 0;
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r = uio_read_file(g->ctx->uio, fd, GREP_FILE_MAX, &data, &len);
	if (r == -ECANCELED)
		return r;
	if (r < 0)
		return 0;
	if (fs_looks_binary(data, len)) {
		g->binary++;
		return 0;
	}
	return grep_buffer(g, rel, data, len);
}

static int grep_cb(const char *rel, int dirfd, const char *name, const struct stat *st, void *ud)
{
	struct grep *g = ud;
	if (g->full)
		return -ENOBUFS;
	if (!grep_glob_ok(g, rel, name))
		return 0;
	return grep_file(g, dirfd, name, rel, st);
}

static int grep_run(struct tool_ctx *ctx, struct tool_result *res)
{
	char path[PATH_MAX];
	if (fs_path(ctx, tool_arg_str(ctx->args, "path", "."), path, sizeof(path)) < 0)
		return tool_result_set(res, OUTCOME_BAD_INPUT, "grep: path is too long");
	const char *pat = tool_arg_str(ctx->args, "pattern", "");
	const char *mode = tool_arg_str(ctx->args, "mode", "files");
	struct grep g = {
		.ctx = ctx, .res = res,
		.mode = !strcmp(mode, "content") ? GREP_CONTENT : !strcmp(mode, "count") ? GREP_COUNT : GREP_FILES,
		.glob = tool_arg_str(ctx->args, "glob", NULL),
		.context = (int)tool_arg_int(ctx->args, "context", 0),
		.limit = tool_arg_int(ctx->args, "limit", GREP_DEFAULT_LIMIT),
	};
	uint32_t opts = PCRE2_MULTILINE | PCRE2_UTF | PCRE2_MATCH_INVALID_UTF;
	if (tool_arg_bool(ctx->args, "ignore_case", false))
		opts |= PCRE2_CASELESS;
	int errc;
	PCRE2_SIZE erroff;
	g.re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, opts, &errc, &erroff, NULL);
	if (!g.re) {
		PCRE2_UCHAR msg[256];
		pcre2_get_error_message(errc, msg, sizeof(msg));
		return tool_result_set(res, OUTCOME_BAD_INPUT, "grep: invalid pattern at offset %zu: %s", (size_t)erroff, msg);
	}
	pcre2_jit_compile(g.re, PCRE2_JIT_COMPLETE);
	g.md = pcre2_match_data_create_from_pattern(g.re, NULL);
	g.mc = pcre2_match_context_create(NULL);
	pcre2_set_match_limit(g.mc, GREP_MATCH_LIMIT);
	pcre2_set_depth_limit(g.mc, GREP_DEPTH_LIMIT);
	g.js = pcre2_jit_stack_create(32 * 1024, 512 * 1024, NULL);
	if (g.js)
		pcre2_jit_stack_assign(g.mc, NULL, g.js);
	res->outcome = OUTCOME_OK;

	struct stat st;
	int r;
	if (stat(path, &st) < 0) {
		r = -errno;
	} else if (S_ISDIR(st.st_mode)) {
		r = walk_tree(ctx, path, grep_cb, &g);
	} else {
		r = grep_file(&g, AT_FDCWD, path, path, &st);
	}
	if (r == -ENOBUFS)
		r = 0;
	if (g.expensive) {
		tool_result_set(res, OUTCOME_FAILED,
				"grep: pattern too expensive: it hit the regex engine's backtracking limit "
				"(nested quantifiers such as (a+)+ backtrack without end); simplify the pattern");
	} else if (r == -ECANCELED) {
		tool_result_set(res, OUTCOME_CANCELLED, "grep: cancelled after %zu files", g.files);
	} else if (r < 0) {
		fs_open_error(res, "grep", path, -r);
	} else {
		if (!g.matched_files)
			buf_printf(&res->text, "no matches in %zu file%s\n", g.files, g.files == 1 ? "" : "s");
		if (g.full) {
			res->text.len = MIN(res->text.len, res->text.cap - 300);
			buf_printf(&res->text, "[stopped at %lld results; narrow the pattern, path or glob, or raise limit]\n",
				   (long long)g.limit);
		}
		if (g.binary || g.too_big)
			buf_printf(&res->text, "[skipped: %zu binary file%s, %zu over 64 MiB]\n", g.binary,
				   g.binary == 1 ? "" : "s", g.too_big);
	}
	pcre2_jit_stack_free(g.js);
	pcre2_match_context_free(g.mc);
	pcre2_match_data_free(g.md);
	pcre2_code_free(g.re);
	return 0;
}

const struct tool tool_grep = {
	.name = "grep",
	.description =
		"Search file contents with a Perl-compatible regular expression under path "
		"(a file or directory, default /workspace). mode: \"files\" (default; names of "
		"files with a match), \"content\" (matching lines as path:line:text, with "
		"`context` lines around), or \"count\". glob filters file names (e.g. \"*.c\"). "
		".git, what .gitignore excludes, and binary files are skipped.",
	.args = grep_args,
	.inproc = true,
	.readonly = true,
	.run = grep_run,
};
