/* Shared by the file tools: paths resolved inside the box, atomic
 * replacement. Globs are tools/glob.h, .gitignore tools/ignore.h, tree
 * walks tools/walk.h. */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "tools/tool.h"

/* A tool's path made absolute against ctx->cwd, as the model will see it
 * in messages. -EINVAL for an empty path. */
int fs_path(const struct tool_ctx *ctx, const char *in, char *out, size_t n);
/* Every path a tool names is resolved by the kernel beneath the box's root
 * (ctx->root_fd) with openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS):
 * ".." stops at the root, an absolute symlink starts from it, and the magic
 * links of /proc (fd/N, cwd, root, exe, map_files) are refused, whatever
 * descriptors the process holds. Never by string. Returns an fd or -errno. */
int fs_open(const struct tool_ctx *ctx, const char *path, int flags, mode_t mode);
/* The directory holding path's last component (an O_PATH fd, resolved as
 * fs_open does) and that component in ret_name. With mkdirs, missing
 * directories on the way are made (0755). -EISDIR when path names no file
 * ("/", ".", ".."). */
int fs_open_parent(const struct tool_ctx *ctx, const char *path, bool mkdirs, char ret_name[NAME_MAX + 1]);
/* The one message for a failed open (or read) of path. */
int fs_open_error(struct tool_result *res, const char *tool, const char *path, int err);
/* NUL in the first 8 KiB: binary. */
bool fs_looks_binary(const char *p, size_t n);

/* Replace path with content through a temporary file beside it and one
 * rename. A symlink at path is followed, inside the box's root, as an editor
 * would; the old mode is kept without its setuid and setgid bits. A cancel
 * before the rename leaves the old file untouched. Returns 0, -ECANCELED or
 * -errno. */
int fs_replace(const struct tool_ctx *ctx, const char *path, const char *content, size_t len, bool *ret_created);
