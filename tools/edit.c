#include "tools/fsutil.h"
#include "tools/uio.h"
#include "base/cleanup.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EDIT_FILE_MAX (16u << 20)
#define EDIT_CONTEXT_LINES 3

static const struct arg_spec edit_args[] = {
	{ .name = "path", .type = ARG_STRING, .required = true },
	{ .name = "old_string", .type = ARG_STRING, .required = true },
	{ .name = "new_string", .type = ARG_STRING, .required = true },
	{ .name = "replace_all", .type = ARG_BOOL },
	{ .name = NULL },
};

static size_t count_occ(const char *hay, size_t hl, const char *needle, size_t nl)
{
	size_t n = 0;
	for (const char *p = hay; (p = memmem(p, hl - (size_t)(p - hay), needle, nl)); p += nl)
		n++;
	return n;
}

/* "\n" -> "\r\n", for files with CRLF line ends edited with LF strings. */
static char *to_crlf(const char *s)
{
	size_t n = strlen(s), extra = 0;
	for (size_t i = 0; i < n; i++)
		extra += s[i] == '\n' && (i == 0 || s[i - 1] != '\r');
	char *o = malloc(n + extra + 1), *q = o;
	if (!o)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\n' && (i == 0 || s[i - 1] != '\r'))
			*q++ = '\r';
		*q++ = s[i];
	}
	*q = 0;
	return o;
}

static void edit_snippet(struct buf *out, const char *data, size_t len, size_t at, size_t newlen)
{
	/* Line numbers of the changed region, then a few lines either side. */
	size_t line = 1;
	for (size_t i = 0; i < at; i++)
		line += data[i] == '\n';
	size_t first = line > EDIT_CONTEXT_LINES ? line - EDIT_CONTEXT_LINES : 1;
	size_t last = line + EDIT_CONTEXT_LINES;
	for (size_t i = at; i < at + newlen && i < len; i++)
		last += data[i] == '\n';
	size_t ln = 1;
	const char *p = data, *end = data + len;
	while (p < end && ln <= last) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		if (ln >= first) {
			size_t l = (size_t)(le - p);
			if (l && p[l - 1] == '\r')
				l--;
			if (l > 300)
				l = 300;
			buf_printf(out, "%6zu\t%.*s\n", ln, (int)l, p);
		}
		ln++;
		p = nl ? nl + 1 : end;
	}
}

static int edit_run(struct tool_ctx *ctx, struct tool_result *res)
{
	char path[PATH_MAX];
	if (fs_path(ctx, tool_arg_str(ctx->args, "path", ""), path, sizeof(path)) < 0)
		return tool_result_set(res, OUTCOME_BAD_INPUT, "edit: path is empty or too long");
	const char *olds = tool_arg_str(ctx->args, "old_string", "");
	const char *news = tool_arg_str(ctx->args, "new_string", "");
	bool all = tool_arg_bool(ctx->args, "replace_all", false);
	if (!*olds)
		return tool_result_set(res, OUTCOME_BAD_INPUT, "edit: old_string is empty; use write to create a file");
	if (!strcmp(olds, news))
		return tool_result_set(res, OUTCOME_BAD_INPUT, "edit: old_string and new_string are the same; nothing to change");
	_cleanup_close_ int fd = fs_open(ctx, path, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0);
	if (fd < 0)
		return fs_open_error(res, "edit", path, -fd);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return tool_result_set(res, OUTCOME_FAILED, "edit: %s is not a regular file", path);
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r = uio_read_file(ctx->uio, fd, EDIT_FILE_MAX, &data, &len);
	if (r == -EFBIG)
		return tool_result_set(res, OUTCOME_FAILED, "edit: %s is over 16 MiB; edit it with bash", path);
	if (r < 0)
		return fs_open_error(res, "edit", path, -r);
	if (fs_looks_binary(data, len))
		return tool_result_set(res, OUTCOME_FAILED, "edit: %s looks binary; edit it with bash", path);
	_cleanup_free_ char *o2 = NULL, *n2 = NULL;
	size_t ol = strlen(olds);
	size_t n = count_occ(data, len, olds, ol);
	if (n == 0 && strchr(olds, '\n') && memmem(data, len, "\r\n", 2)) {
		o2 = to_crlf(olds);
		n2 = to_crlf(news);
		if (o2 && n2 && (n = count_occ(data, len, o2, strlen(o2))) > 0) {
			olds = o2;
			news = n2;
			ol = strlen(olds);
		}
	}
	if (n == 0)
		return tool_result_set(res, OUTCOME_FAILED,
				       "edit: old_string was not found in %s; it must match exactly, whitespace and "
				       "indentation included (read the file again to copy it)", path);
	if (n > 1 && !all)
		return tool_result_set(res, OUTCOME_FAILED,
				       "edit: old_string occurs %zu times in %s; add surrounding lines to make it unique, "
				       "or set replace_all to change every one", n, path);
	size_t nl = strlen(news);
	size_t outlen = len + n * nl - n * ol;
	_cleanup_free_ char *out = malloc(outlen + 1);
	if (!out)
		return tool_result_set(res, OUTCOME_FAILED, "edit: out of memory");
	char *q = out;
	const char *p = data;
	size_t first_at = SIZE_MAX;
	for (const char *m; (m = memmem(p, len - (size_t)(p - data), olds, ol));) {
		memcpy(q, p, (size_t)(m - p));
		q += m - p;
		if (first_at == SIZE_MAX)
			first_at = (size_t)(q - out);
		memcpy(q, news, nl);
		q += nl;
		p = m + ol;
		if (!all)
			break;
	}
	memcpy(q, p, len - (size_t)(p - data));
	q += len - (size_t)(p - data);
	*q = 0;
	r = fs_replace(ctx, path, out, (size_t)(q - out), NULL);
	if (r == -ECANCELED)
		return tool_result_set(res, OUTCOME_CANCELLED, "edit: cancelled before the file was replaced; %s is unchanged", path);
	if (r < 0)
		return fs_open_error(res, "edit", path, -r);
	tool_result_set(res, OUTCOME_OK, "edited %s: %zu replacement%s\n", path, all ? n : 1, (all ? n : 1) == 1 ? "" : "s");
	edit_snippet(&res->text, out, (size_t)(q - out), first_at, nl);
	return 0;
}

const struct tool tool_edit = {
	.name = "edit",
	.description =
		"Replace old_string with new_string in a file. old_string must match exactly "
		"(whitespace included) and exactly once, unless replace_all is true. The file is "
		"replaced atomically. Returns the changed lines with a few lines of context.",
	.args = edit_args,
	.inproc = true,
	.readonly = false,
	.run = edit_run,
};
