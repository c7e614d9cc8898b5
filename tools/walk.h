/* A tree walk for the file tools. */
#pragma once
#include <sys/stat.h>

#include "tools/tool.h"

/* cb returns <0 to stop (walk_tree returns it), 0 to go on. */
typedef int walk_cb(const char *relpath, int dirfd, const char *name, const struct stat *st, void *ud);
/* Walk the tree under dirfd (a directory opened for reading, borrowed) in
 * name order, skipping .git and what .gitignore excludes, never following
 * symlinks, 64 levels deep at most. ctx's cancel is polled as each
 * directory entry is read, before and after each is matched against the
 * .gitignore rules (and between those rules): -ECANCELED. */
int walk_tree(const struct tool_ctx *ctx, int dirfd, walk_cb *cb, void *ud);
