#include "tools/fsutil.h"
#include "base/array.h"
#include "base/cleanup.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LS_MAX 1000

static const struct arg_spec ls_args[] = {
	{ .name = "path", .type = ARG_STRING },
	{ .name = NULL },
};

static int ls_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int ls_run(struct tool_ctx *ctx, struct tool_result *res)
{
	char path[PATH_MAX];
	if (fs_path(ctx, tool_arg_str(ctx->args, "path", "."), path, sizeof(path)) < 0)
		return tool_result_set(res, OUTCOME_BAD_INPUT, "ls: path is too long");
	int dfd = fs_open(ctx, path, O_RDONLY | O_DIRECTORY, 0);
	if (dfd < 0) {
		if (dfd == -ENOTDIR)
			return tool_result_set(res, OUTCOME_FAILED, "ls: %s is a file, not a directory; use read", path);
		return fs_open_error(res, "ls", path, -dfd);
	}
	_cleanup_closedir_ DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return fs_open_error(res, "ls", path, errno);
	}
	char **names = NULL;
	size_t n = 0, cap = 0, total = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		total++;
		if (n >= LS_MAX)
			continue;
		if (array_grow(&names, &cap, n, sizeof(*names), 64) < 0 || !(names[n] = strdup(de->d_name)))
			break;
		n++;
	}
	qsort(names, n, sizeof(*names), ls_cmp);
	res->outcome = OUTCOME_OK;
	buf_printf(&res->text, "%s: %zu entr%s\n", path, total, total == 1 ? "y" : "ies");
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		if (fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
			buf_printf(&res->text, "?     %10s  %s\n", "-", names[i]);
		} else if (S_ISDIR(st.st_mode)) {
			buf_printf(&res->text, "dir   %10s  %s/\n", "-", names[i]);
		} else if (S_ISLNK(st.st_mode)) {
			char t[PATH_MAX];
			ssize_t l = readlinkat(dirfd(d), names[i], t, sizeof(t) - 1);
			t[l > 0 ? l : 0] = 0;
			buf_printf(&res->text, "link  %10s  %s -> %s\n", "-", names[i], t);
		} else if (S_ISREG(st.st_mode)) {
			buf_printf(&res->text, "file  %10lld  %s\n", (long long)st.st_size, names[i]);
		} else {
			buf_printf(&res->text, "other %10s  %s\n", "-", names[i]);
		}
		free(names[i]);
	}
	free(names);
	if (total > n)
		buf_printf(&res->text, "[%zu more entries not shown]\n", total - n);
	return 0;
}

const struct tool tool_ls = {
	.name = "ls",
	.description = "List a directory: each entry with its type (file, dir, link, other) and size in bytes, "
		       "sorted by name. Relative paths start at /workspace; the default is /workspace.",
	.args = ls_args,
	.inproc = true,
	.readonly = true,
	.run = ls_run,
};
