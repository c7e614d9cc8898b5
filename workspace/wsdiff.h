/* The changes a box made to a copy-on-write workspace: read from the
 * overlay's upper layer (a whiteout, a character device 0/0, is a deleted
 * file; an opaque directory hides everything below it in the lower tree),
 * shown as a unified diff, and applied to the user's tree. Nothing here
 * follows a symlink, on either side: every path is resolved beneath its
 * tree's root with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), so a
 * symlink in the tree or one the box made can steer neither a read (the
 * diff) nor a write (apply) outside it. A symlink is shown and applied as a
 * symlink. No setuid or setgid bit is ever applied.
 *
 * A change in a git directory (base/gitdir.h: below a .git, in a directory
 * git takes for a repository, or the deletion of a directory holding one)
 * is code git runs on the host (hooks, config): it is applied, put in a
 * patch and shown only when the caller allows it (apply_git); else it is
 * named apart, at the end of the diff and in the patch's notes. A file
 * the user's tools run by themselves (workspace/wsexec.h) is applied as any
 * other and named at the end of the diff. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "base/err.h"

enum ws_kind { WS_ADDED, WS_MODIFIED, WS_DELETED };

struct ws_change {
	char *path;		/* relative to the workspace */
	enum ws_kind kind;
	bool dir;		/* a directory added or deleted as a whole */
	bool setid_dropped;	/* the box's file had setuid/setgid bits: not applied */
	const char *conflict;	/* ws_base_check: why applying it would lose an edit of the tree */
	bool git;		/* in a git directory: only with apply_git */
	const char *runs;	/* the user's tools run it: why (wsexec.h); NULL: not one */
};

struct ws_changes {
	struct ws_change *v;
	size_t n, cap;
	/* Files the box has its own copy of, the same as the tree's (copied
	 * up and not changed): no change, but the box no longer sees the
	 * tree's file there (wsbase.h). */
	char **same;
	size_t nsame, capsame;
	/* The user allows changes in git directories (--allow-git-changes):
	 * false, the default, and ws_apply and ws_patch leave them out and
	 * ws_diff only names them. */
	bool apply_git;
};

const char *ws_kind_name(enum ws_kind k);
int ws_changes_read(const char *lower, const char *upper, struct ws_changes *ret, struct err *e);
void ws_changes_free(struct ws_changes *c);
/* Whether ch is left out of an apply or a patch of c (a change in a git
 * directory, not allowed), and how many of c's are. */
bool ws_change_left_out(const struct ws_changes *c, const struct ws_change *ch);
size_t ws_changes_left_out(const struct ws_changes *c);
/* A unified diff of every change, written to out (diff(1) per file).
 * -EPIPE (no message) when out's reader has gone. */
int ws_diff(const char *lower, const char *upper, const struct ws_changes *c, FILE *out, struct err *e);
/* Make lower look like the box's view (but for what is left out). */
int ws_apply(const char *lower, const char *upper, const struct ws_changes *c, struct err *e);
