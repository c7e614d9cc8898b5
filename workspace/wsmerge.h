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
 * merged. */
#pragma once
#include <stddef.h>

#include <cjson/cJSON.h>

#include "base/err.h"

/* At most this many entries in a layer's manifest. */
#define WSMERGE_ENTRIES_MAX 200000
/* A version shown in a conflict: its first bytes, at most this many. */
#define WSMERGE_SHOW_MAX 2000

/* upper's manifest: {path: signature} for each file, symlink and
 * whiteout ("f MODE SHA256", "l TARGET", "w"); a missing upper is
 * empty. */
int wsmerge_manifest(const char *upper, cJSON **ret, struct err *e);

struct wsmerge_child {
	const char *upper;	/* the child's layer */
	const cJSON *base;	/* its manifest when it was forked */
	cJSON *out;		/* set: {merged: [{path, change}], conflicts: [{path, why, yours, theirs}]} */
};

/* Merge n children (those of one round, together) into parent_upper;
 * lower: the tree under it (the parent's version of a file its layer does
 * not hold). 0, or -errno (e set) when a layer cannot be read; a file
 * that cannot be written is a conflict of its own (why says so). */
int wsmerge_apply(const char *parent_upper, const char *lower, struct wsmerge_child *c, size_t n, struct err *e);
