/* A subagent's changes merged back into its parent's workspace layer.
 * Each child's layer (the overlay's upper directory) starts as a copy of
 * the parent's (a box fork); its base is a manifest of that copy taken
 * before the child ran. At the merge, a path is the child's change where
 * its entry differs from the base; it is taken into the parent's layer
 * only when the parent's entry is still the base's and no other child of
 * the same merge changed it otherwise. Anything else is a conflict: not
 * applied, both versions reported. Everything is reached beneath its
 * layer's root without following a symlink (wsfs.h); no setuid or setgid
 * bit is taken. Directories are not entries of their own (a directory a
 * child made comes with its files); an opaque directory's mark is not
 * merged.
 *
 * A manifest holds each entry's identity (inode, ctime, mtime, size,
 * mode). Against its base, a tree's entry of the same identity is the
 * base's version unread: nothing can set a ctime, and any change moves
 * it past the fork (this takes a clock that is not set back across the
 * fork). Where a fork copied its parent's image whole (layers_copy_image),
 * the parent's layer shares the base's identities too, so the base is a
 * walk of stats and no file is read; where the layer was copied file by
 * file, the base holds each file's hash, taken at the fork. Other
 * versions are compared by their bytes' SHA-256, read only where an
 * entry differs. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "base/err.h"

/* At most this many entries in a layer's manifest. */
#define WSMERGE_ENTRIES_MAX 200000
/* A version shown in a conflict: its first bytes, at most this many. */
#define WSMERGE_SHOW_MAX 2000

struct wsmerge_manifest;

/* upper's manifest, as a base: each file, symlink and whiteout; with
 * hash, each file's content hash too (a base whose tree's identities the
 * parent does not share). A missing upper is empty. */
int wsmerge_manifest(const char *upper, bool hash, struct wsmerge_manifest **ret, struct err *e);
void wsmerge_manifest_free(struct wsmerge_manifest *m);
size_t wsmerge_manifest_count(const struct wsmerge_manifest *m);
/* p's kind in m: 'f' file, 'l' symlink, 'w' whiteout, 0 none. */
char wsmerge_manifest_kind(const struct wsmerge_manifest *m, const char *p);

struct wsmerge_child {
	const char *upper;		/* the child's layer */
	struct wsmerge_manifest *base;	/* its manifest when it was forked (the merge reads through it) */
	bool image;			/* its layer is a copy of the parent's image (identities shared) */
	cJSON *out;			/* set: {merged: [{path, change}], conflicts: [{path, why, yours, theirs}]} */
};

/* Merge n children (those of one round, together) into parent_upper;
 * lower: the tree under it (the parent's version of a file its layer does
 * not hold). 0, or -errno (e set) when a layer cannot be read; a file
 * that cannot be written is a conflict of its own (why says so). */
int wsmerge_apply(const char *parent_upper, const char *lower, struct wsmerge_child *c, size_t n, struct err *e);
