#include "tools/read.h"
#include "tools/fsutil.h"
#include "tools/uio.h"
#include "base/cleanup.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READ_MAX_LINE 2000
/* Past this size the model must say which part it wants. */
#define READ_WHOLE_MAX (16u << 20)
#define READ_FILE_MAX (256u << 20)

static const struct arg_spec read_args[] = {
	{ .name = "path", .type = ARG_STRING, .required = true },
	{ .name = "offset", .type = ARG_INT, .min = 1, .max = 1LL << 40 },
	{ .name = "limit", .type = ARG_INT, .min = 1, .max = 100000 },
	{ .name = NULL },
};

static int read_run(struct tool_ctx *ctx, struct tool_result *res)
{
	char path[PATH_MAX];
	const char *arg = tool_arg_str(ctx->args, "path", "");
	if (fs_path(ctx, arg, path, sizeof(path)) < 0)
		return tool_result_set(res, OUTCOME_BAD_INPUT, "read: path is empty or too long");
	int64_t offset = tool_arg_int(ctx->args, "offset", 1);
	int64_t limit = tool_arg_int(ctx->args, "limit", READ_DEFAULT_LINES);
	bool ranged = cJSON_GetObjectItemCaseSensitive(ctx->args, "offset") ||
		      cJSON_GetObjectItemCaseSensitive(ctx->args, "limit");
	/* O_NONBLOCK: opening a FIFO must not wait for a writer. */
	_cleanup_close_ int fd = fs_open(ctx, path, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0);
	if (fd < 0)
		return fs_open_error(res, "read", path, -fd);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return fs_open_error(res, "read", path, errno);
	if (S_ISDIR(st.st_mode))
		return tool_result_set(res, OUTCOME_FAILED, "read: %s is a directory; use ls to list it", path);
	if (!S_ISREG(st.st_mode))
		return tool_result_set(res, OUTCOME_FAILED, "read: %s is not a regular file (a device, FIFO or socket); use bash if you must", path);
	if ((size_t)st.st_size > READ_FILE_MAX || ((size_t)st.st_size > READ_WHOLE_MAX && !ranged))
		return tool_result_set(res, OUTCOME_FAILED,
				       "read: %s is %lld bytes, too large to read whole; pass offset and limit, or use grep",
				       path, (long long)st.st_size);
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r = uio_read_file(ctx->uio, fd, READ_FILE_MAX, &data, &len);
	if (r < 0)
		return fs_open_error(res, "read", path, -r);
	return read_lines(path, data, len, offset, limit, ctx->cancel, res);
}

int read_lines(const char *path, const char *data, size_t len, int64_t offset, int64_t limit, struct cancel *cancel,
	       struct tool_result *res)
{
	if (len == 0)
		return tool_result_set(res, OUTCOME_OK, "(%s is empty)\n", path);
	if (fs_looks_binary(data, len))
		return tool_result_set(res, OUTCOME_FAILED,
				       "read: %s looks binary (%zu bytes, NUL bytes in it); inspect it with bash (file, xxd, hexdump)",
				       path, len);
	res->outcome = OUTCOME_OK;
	int64_t line = 1, shown = 0;
	const char *p = data, *end = data + len;
	bool full = false;
	while (p < end) {
		if ((line & 4095) == 0 && cancel && cancel_is_set(cancel))
			return tool_result_set(res, OUTCOME_CANCELLED, "read: cancelled");
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		if (line >= offset && shown < limit) {
			size_t l = (size_t)(le - p);
			if (l && p[l - 1] == '\r')
				l--;
			char num[32];
			int k = snprintf(num, sizeof(num), "%6lld\t", (long long)line);
			bool cut = l > READ_MAX_LINE;
			if (buf_append(&res->text, num, (size_t)k) < 0 ||
			    buf_append(&res->text, p, cut ? READ_MAX_LINE : l) < 0 ||
			    (cut && buf_printf(&res->text, " [line cut: %zu characters in all]", l) < 0) ||
			    buf_append(&res->text, "\n", 1) < 0) {
				full = true;
				break;
			}
			shown++;
		}
		line++;
		p = nl ? nl + 1 : end;
		if (shown >= limit && line > offset)
			break;
	}
	int64_t total_known = p >= end ? line - 1 : -1;
	if (shown == 0)
		return tool_result_set(res, OUTCOME_FAILED, "read: %s has %lld lines; offset %lld is past the end",
				       path, (long long)(line - 1), (long long)offset);
	if (full || p < end) {
		res->text.len = MIN(res->text.len, res->text.cap - 200);
		buf_printf(&res->text, "[showing lines %lld-%lld of %s; pass offset=%lld to read on]\n",
			   (long long)offset, (long long)(offset + shown - 1),
			   total_known > 0 ? "more" : "more", (long long)(offset + shown));
	}
	return 0;
}

const struct tool tool_read = {
	.name = "read",
	.description =
		"Read a text file. Lines come numbered (cat -n style), 2,000 by default; use "
		"offset (first line, 1-based) and limit (number of lines) for other parts. Lines "
		"over 2,000 characters are cut and marked. Binary files are refused. Relative "
		"paths start at /workspace.",
	.args = read_args,
	.inproc = true,
	.readonly = true,
	.run = read_run,
};
