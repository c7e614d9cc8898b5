#include "tools/fsutil.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct arg_spec write_args[] = {
	{ .name = "path", .type = ARG_STRING, .required = true },
	{ .name = "content", .type = ARG_STRING, .required = true },
	{ .name = NULL },
};

static int write_run(struct tool_ctx *ctx, struct tool_result *res)
{
	char path[PATH_MAX];
	if (fs_path(ctx, tool_arg_str(ctx->args, "path", ""), path, sizeof(path)) < 0)
		return tool_result_set(res, OUTCOME_BAD_INPUT, "write: path is empty or too long");
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(ctx->args, "content");
	const char *content = c->valuestring;
	size_t len = strlen(content);
	char name[NAME_MAX + 1];
	int r = fs_open_parent(ctx, path, true, name);
	if (r == -EISDIR)
		return tool_result_set(res, OUTCOME_FAILED, "write: %s is a directory", path);
	if (r < 0)
		return fs_open_error(res, "write", path, -r);
	close(r);
	bool created = false;
	r = fs_replace(ctx, path, content, len, &created);
	if (r == -EISDIR)
		return tool_result_set(res, OUTCOME_FAILED, "write: %s is a directory", path);
	if (r == -EINVAL)
		return tool_result_set(res, OUTCOME_FAILED, "write: %s is not a regular file", path);
	if (r == -ECANCELED)
		return tool_result_set(res, OUTCOME_CANCELLED, "write: cancelled before the file was replaced; %s is unchanged", path);
	if (r < 0)
		return fs_open_error(res, "write", path, -r);
	return tool_result_set(res, OUTCOME_OK, "%s %s (%zu bytes)\n", created ? "created" : "replaced", path, len);
}

const struct tool tool_write = {
	.name = "write",
	.description =
		"Create or replace a file with the given content, atomically (a temporary file "
		"and one rename: readers see the old file or the new one, never half). Missing "
		"parent directories are created. Relative paths start at /workspace.",
	.args = write_args,
	.inproc = true,
	.readonly = false,
	.run = write_run,
};
