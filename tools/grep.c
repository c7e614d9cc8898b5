/* grep: PCRE2 with JIT over a tree. A pattern that would backtrack without
 * end hits PCRE2's match and depth limits (the JIT's stack limit) and is
 * reported as too expensive.
 *
 * The walk (on the calling worker) feeds files to helper threads, one per
 * spare CPU, each with its own io_uring ring and match data; every file's
 * results go to a buffer of its own and are merged in walk order, so the
 * output is the same as a one-thread run. The run stops once the files done
 * in walk order hold more than the limit or the text cap. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tools/fsutil.h"
#include "base/array.h"
#include "tools/glob.h"
#include "tools/walk.h"
#include "tools/uio.h"
#include "base/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pcre2.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define GREP_DEFAULT_LIMIT 200
#define GREP_FILE_MAX (64u << 20)
/* Steps of backtracking per match attempt; a normal pattern on a normal
 * line uses a few hundred. */
#define GREP_MATCH_LIMIT 1000000
#define GREP_DEPTH_LIMIT 10000
#define GREP_MAX_LINE 500
#define GREP_HELPERS_MAX 3
/* Helpers start once the walk has found this many files. */
#define GREP_PARALLEL_FILES 16
/* Room kept in the text for the closing notes. */
#define GREP_NOTES_ROOM 300

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

struct gfile {
	char *rel;		/* as shown: relative to the walk's root */
	off_t size;
	bool done, binary, too_big, text_full;
	size_t results;		/* results in out (at most limit + 1) */
	struct buf out;
	size_t *ends;		/* out's offset after each result */
};

/* One per thread: PCRE2 match state and an io_uring ring. */
struct gthread {
	struct grep *g;
	pcre2_match_data *md;
	pcre2_match_context *mc;
	pcre2_jit_stack *js;
	struct uio *uio;
	bool own_uio;
};

struct grep {
	struct tool_ctx *ctx;
	pcre2_code *re;
	enum grep_mode mode;
	const char *glob;
	int context;
	int64_t limit;
	int rootfd;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct gfile **files;
	size_t nfiles, cap, next;
	size_t prefix, prefix_results, prefix_bytes;	/* files done in walk order */
	bool walk_done, stop;
	int err;		/* -ECANCELED, -E2BIG (too expensive) or -ENOMEM */
	pthread_t helpers[GREP_HELPERS_MAX];
	int nhelpers;
	bool helpers_started;
};

static int gthread_init(struct gthread *t, struct grep *g, struct uio *uio)
{
	*t = (struct gthread){ .g = g, .uio = uio };
	t->md = pcre2_match_data_create_from_pattern(g->re, NULL);
	t->mc = pcre2_match_context_create(NULL);
	if (!t->md || !t->mc)
		return -ENOMEM;
	pcre2_set_match_limit(t->mc, GREP_MATCH_LIMIT);
	pcre2_set_depth_limit(t->mc, GREP_DEPTH_LIMIT);
	t->js = pcre2_jit_stack_create(32 * 1024, 512 * 1024, NULL);
	if (t->js)
		pcre2_jit_stack_assign(t->mc, NULL, t->js);
	if (!t->uio) {
		int r = uio_new(&t->uio, g->ctx->cancel->efd);
		if (r < 0)
			return r;
		t->own_uio = true;
	}
	return 0;
}

static void gthread_free(struct gthread *t)
{
	pcre2_jit_stack_free(t->js);
	pcre2_match_context_free(t->mc);
	pcre2_match_data_free(t->md);
	if (t->own_uio)
		uio_free(t->uio);
}

static bool grep_glob_ok(struct grep *g, const char *rel, const char *name)
{
	if (!g->glob)
		return true;
	return strchr(g->glob, '/') ? glob_match(g->glob, rel) : glob_match(g->glob, name);
}

static void grep_emit_line(struct gfile *f, size_t lineno, const char *p, size_t l, char sep)
{
	if (l && p[l - 1] == '\r')
		l--;
	bool cut = l > GREP_MAX_LINE;
	if (buf_printf(&f->out, "%s%c%zu%c%.*s%s\n", f->rel, sep, lineno, sep, (int)(cut ? GREP_MAX_LINE : l), p,
		       cut ? " [line cut]" : "") < 0)
		f->text_full = true;
}

/* A result is complete: remember where it ends. */
static void grep_end_result(struct grep *g, struct gfile *f)
{
	if (f->text_full)
		return;
	if (!f->ends) {
		size_t n = g->mode == GREP_CONTENT ? (size_t)g->limit + 1 : 1;
		f->ends = malloc(n * sizeof(*f->ends));
		if (!f->ends) {
			f->text_full = true;
			return;
		}
	}
	f->ends[f->results++] = f->out.len;
}

static int grep_buffer(struct gthread *t, struct gfile *f, const char *data, size_t len)
{
	struct grep *g = t->g;
	size_t start = 0, count = 0, last_emitted_line = 0, lineno = 1, lineno_at = 0;
	while (start <= len) {
		int rc = pcre2_match(g->re, (PCRE2_SPTR)data, len, start, 0, t->md, t->mc);
		if (rc == PCRE2_ERROR_NOMATCH)
			break;
		if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_JIT_STACKLIMIT ||
		    rc == PCRE2_ERROR_HEAPLIMIT)
			return -E2BIG;
		if (rc < 0)
			break;	/* e.g. a UTF error in this file: treat as no more matches */
		PCRE2_SIZE *ov = pcre2_get_ovector_pointer(t->md);
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
						grep_emit_line(f, ln, data + p, pe - p, '-');
					p = pe + 1;
				}
			}
			if (lineno > last_emitted_line)
				grep_emit_line(f, lineno, data + ls, le - ls, ':');
			last_emitted_line = lineno;
			if (g->context) {
				size_t p = le + 1, ln = lineno + 1;
				for (int k = 0; k < g->context && p < len; k++, ln++) {
					const char *e = memchr(data + p, '\n', len - p);
					size_t pe = e ? (size_t)(e - data) : len;
					grep_emit_line(f, ln, data + p, pe - p, '-');
					last_emitted_line = ln;
					p = pe + 1;
				}
				if (buf_append(&f->out, "--\n", 3) < 0)
					f->text_full = true;
			}
			grep_end_result(g, f);
			/* One past the limit says there is more. */
			if (f->text_full || f->results > (size_t)g->limit)
				return 0;
		}
		/* Next search starts after this line (one hit per line), or after
		 * an empty match. */
		start = (le < len ? le + 1 : len + 1);
		if (me > start)
			start = me;
	}
	if (count && g->mode == GREP_FILES) {
		if (buf_printf(&f->out, "%s\n", f->rel) < 0)
			f->text_full = true;
		grep_end_result(g, f);
	} else if (count && g->mode == GREP_COUNT) {
		if (buf_printf(&f->out, "%s:%zu\n", f->rel, count) < 0)
			f->text_full = true;
		grep_end_result(g, f);
	}
	return 0;
}

static int grep_open(int dirfd, const char *path)
{
	/* The walk never follows a symlink; neither does the open of what it
	 * found, in any component. */
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
	};
	int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS)
		fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
	return fd;
}

static int grep_file(struct gthread *t, struct gfile *f, int dirfd, const char *path)
{
	if (cancel_is_set(t->g->ctx->cancel))
		return -ECANCELED;
	if ((size_t)f->size > GREP_FILE_MAX) {
		f->too_big = true;
		return 0;
	}
	if (f->size == 0)
		return 0;
	/* No path: dirfd is the file itself (a grep of one file). */
	_cleanup_close_ int fd = path ? grep_open(dirfd, path) : fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return 0;
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r = uio_read_file(t->uio, fd, GREP_FILE_MAX, &data, &len);
	if (r == -ECANCELED)
		return r;
	if (r < 0)
		return 0;
	if (fs_looks_binary(data, len)) {
		f->binary = true;
		return 0;
	}
	return grep_buffer(t, f, data, len);
}

/* Called with the lock held after a file is done. */
static void grep_advance(struct grep *g)
{
	while (g->prefix < g->nfiles && g->files[g->prefix]->done) {
		struct gfile *f = g->files[g->prefix++];
		g->prefix_results += f->results;
		g->prefix_bytes += f->out.len;
		if (g->prefix_results > (size_t)g->limit || f->text_full ||
		    g->prefix_bytes > TOOL_TEXT_MAX - GREP_NOTES_ROOM) {
			g->stop = true;
			pthread_cond_broadcast(&g->cond);
			break;
		}
	}
}

/* Take files until there are none left (or the run stops). */
static void grep_consume(struct gthread *t)
{
	struct grep *g = t->g;
	pthread_mutex_lock(&g->lock);
	for (;;) {
		while (!g->stop && g->next >= g->nfiles && !g->walk_done)
			pthread_cond_wait(&g->cond, &g->lock);
		if (g->stop || g->next >= g->nfiles)
			break;
		struct gfile *f = g->files[g->next++];
		pthread_mutex_unlock(&g->lock);
		int r = grep_file(t, f, g->rootfd, f->rel);
		pthread_mutex_lock(&g->lock);
		f->done = true;
		if (r < 0 && !g->err) {
			g->err = r;
			g->stop = true;
			pthread_cond_broadcast(&g->cond);
		}
		grep_advance(g);
	}
	pthread_mutex_unlock(&g->lock);
}

static void *grep_helper(void *arg)
{
	struct gthread t;
	struct grep *g = arg;
	int r = gthread_init(&t, g, NULL);
	if (r < 0) {
		/* The others (and the walker) do the work. */
		gthread_free(&t);
		return NULL;
	}
	grep_consume(&t);
	gthread_free(&t);
	return NULL;
}

static void grep_start_helpers(struct grep *g)
{
	g->helpers_started = true;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int want = (int)MIN(MAX(cpus - 1, 0), GREP_HELPERS_MAX);
	for (int i = 0; i < want; i++)
		if (pthread_create(&g->helpers[g->nhelpers], NULL, grep_helper, g) == 0)
			g->nhelpers++;
}

static int grep_add(struct grep *g, const char *rel, off_t size)
{
	struct gfile *f = calloc(1, sizeof(*f));
	if (!f || !(f->rel = strdup(rel))) {
		free(f);
		return -ENOMEM;
	}
	f->size = size;
	buf_init(&f->out, TOOL_TEXT_MAX);
	pthread_mutex_lock(&g->lock);
	if (array_grow(&g->files, &g->cap, g->nfiles, sizeof(*g->files), 256) < 0) {
		pthread_mutex_unlock(&g->lock);
		free(f->rel);
		free(f);
		return -ENOMEM;
	}
	g->files[g->nfiles++] = f;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
	return 0;
}

static int grep_cb(const char *rel, int dirfd, const char *name, const struct stat *st, void *ud)
{
	struct grep *g = ud;
	if (__atomic_load_n(&g->stop, __ATOMIC_RELAXED))
		return -ENOBUFS;
	if (!S_ISREG(st->st_mode) || !grep_glob_ok(g, rel, name))
		return 0;
	int r = grep_add(g, rel, st->st_size);
	if (r < 0)
		return r;
	if (!g->helpers_started && g->nfiles >= GREP_PARALLEL_FILES)
		grep_start_helpers(g);
	return 0;
}

/* Files done in walk order, merged into the result. */
static void grep_merge(struct grep *g, struct tool_result *res)
{
	size_t files = 0, matched = 0, binary = 0, too_big = 0, emitted = 0;
	bool full = false, text_full = false;
	for (size_t i = 0; i < g->prefix && !full; i++) {
		struct gfile *f = g->files[i];
		files++;
		binary += f->binary;
		too_big += f->too_big;
		matched += f->results > 0 || f->text_full;
		size_t from = 0;
		for (size_t k = 0; k < f->results; k++) {
			size_t to = f->ends[k];
			if (emitted >= (size_t)g->limit) {
				full = true;
				break;
			}
			if (res->text.len + (to - from) > TOOL_TEXT_MAX - GREP_NOTES_ROOM ||
			    buf_append(&res->text, f->out.data + from, to - from) < 0) {
				full = text_full = true;
				break;
			}
			emitted++;
			from = to;
		}
		if (f->text_full)
			full = text_full = true;
	}
	if (!matched)
		buf_printf(&res->text, "no matches in %zu file%s\n", files, files == 1 ? "" : "s");
	if (full) {
		size_t lines = 0;
		for (size_t i = 0; i < res->text.len; i++)
			lines += res->text.data[i] == '\n';
		if (text_full)
			buf_printf(&res->text,
				   "[output cut at %u KiB after %zu lines, before the limit of %lld results; "
				   "narrow the pattern, path or glob, or use mode count]\n",
				   TOOL_TEXT_MAX / 1024, lines, (long long)g->limit);
		else
			buf_printf(&res->text,
				   "[stopped at %lld results; narrow the pattern, path or glob, or raise limit]\n",
				   (long long)g->limit);
	}
	if (binary || too_big)
		buf_printf(&res->text, "[skipped: %zu binary file%s, %zu over 64 MiB]\n", binary,
			   binary == 1 ? "" : "s", too_big);
}

static int grep_run(struct tool_ctx *ctx, struct tool_result *res)
{
	char path[PATH_MAX];
	if (fs_path(ctx, tool_arg_str(ctx->args, "path", "."), path, sizeof(path)) < 0)
		return tool_result_set(res, OUTCOME_BAD_INPUT, "grep: path is too long");
	const char *pat = tool_arg_str(ctx->args, "pattern", "");
	const char *mode = tool_arg_str(ctx->args, "mode", "files");
	struct grep g = {
		.ctx = ctx,
		.mode = !strcmp(mode, "content") ? GREP_CONTENT : !strcmp(mode, "count") ? GREP_COUNT : GREP_FILES,
		.glob = tool_arg_str(ctx->args, "glob", NULL),
		.context = (int)tool_arg_int(ctx->args, "context", 0),
		.limit = tool_arg_int(ctx->args, "limit", GREP_DEFAULT_LIMIT),
		.rootfd = -1,
	};
	if (g.glob && strlen(g.glob) > GLOB_PATTERN_MAX)
		return tool_result_set(res, OUTCOME_BAD_INPUT, "grep: the glob is longer than %d bytes", GLOB_PATTERN_MAX);
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
	pthread_mutex_init(&g.lock, NULL);
	pthread_cond_init(&g.cond, NULL);
	struct gthread me;
	int r = gthread_init(&me, &g, ctx->uio);

	struct stat st;
	if (r < 0) {
		/* below */
	} else if ((g.rootfd = fs_open(ctx, path, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0)) < 0) {
		r = g.rootfd;
	} else if (fstat(g.rootfd, &st) < 0) {
		r = -errno;
	} else if (S_ISDIR(st.st_mode)) {
		r = walk_tree(ctx, g.rootfd, grep_cb, &g);
		pthread_mutex_lock(&g.lock);
		g.walk_done = true;
		if (r < 0 && r != -ENOBUFS && !g.err) {
			g.err = r;
			g.stop = true;
		}
		pthread_cond_broadcast(&g.cond);
		pthread_mutex_unlock(&g.lock);
		/* The walker helps with what is left. */
		grep_consume(&me);
		for (int i = 0; i < g.nhelpers; i++)
			pthread_join(g.helpers[i], NULL);
		r = g.err;
	} else {
		r = grep_add(&g, path, st.st_size);
		if (r >= 0) {
			r = grep_file(&me, g.files[0], g.rootfd, NULL);
			g.files[0]->done = true;
			grep_advance(&g);
		}
	}
	res->outcome = OUTCOME_OK;
	if (r == -E2BIG) {
		tool_result_set(res, OUTCOME_FAILED,
				"grep: pattern too expensive: it hit the regex engine's backtracking limit "
				"(nested quantifiers such as (a+)+ backtrack without end); simplify the pattern");
	} else if (r == -ECANCELED) {
		tool_result_set(res, OUTCOME_CANCELLED, "grep: cancelled after %zu of %zu files found so far",
				g.prefix, g.nfiles);
	} else if (r < 0) {
		fs_open_error(res, "grep", path, -r);
	} else {
		grep_merge(&g, res);
	}
	for (size_t i = 0; i < g.nfiles; i++) {
		buf_free(&g.files[i]->out);
		free(g.files[i]->ends);
		free(g.files[i]->rel);
		free(g.files[i]);
	}
	free(g.files);
	if (g.rootfd >= 0)
		close(g.rootfd);
	gthread_free(&me);
	pthread_cond_destroy(&g.cond);
	pthread_mutex_destroy(&g.lock);
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
