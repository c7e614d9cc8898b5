/* Shared by the file tools: paths, globs, .gitignore, tree walks, atomic
 * replacement. */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "tools/tool.h"

/* A tool path made absolute against ctx->root. -EINVAL for an empty path. */
int fs_path(const struct tool_ctx *ctx, const char *in, char *out, size_t n);
/* NUL in the first 8 KiB: binary. */
bool fs_looks_binary(const char *p, size_t n);

/* Glob with *, ?, [...] and ** (any number of path segments). */
bool glob_match(const char *pat, const char *text);

/* .gitignore rules of one directory level. */
struct ignore;
struct ignore *ignore_load(int dirfd, const char *reldir, struct ignore *parent);
void ignore_free(struct ignore *ig);
/* relpath is relative to the walk's root. */
bool ignore_match(const struct ignore *ig, const char *relpath, bool is_dir);

/* Walk a tree, skipping .git and what .gitignore excludes, never following
 * symlinks. cb returns <0 to stop (returned), 0 to go on. */
typedef int walk_cb(const char *relpath, int dirfd, const char *name, const struct stat *st, void *ud);
int walk_tree(const struct tool_ctx *ctx, const char *root, walk_cb *cb, void *ud);

/* Replace path with content through a temporary file beside it and one
 * rename; the old mode is kept. A cancel before the rename leaves the old
 * file untouched. Returns 0, -ECANCELED or -errno. */
int fs_replace(const struct tool_ctx *ctx, const char *path, const char *content, size_t len, bool *ret_created);
