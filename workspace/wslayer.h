/* What an entry of a box's upper layer is, in one place: a file or
 * directory of the box's view, a deletion of a name of the tree (a
 * whiteout), or a mark of the writer's own (an opaque directory's); and
 * whether a directory of the layer hides the tree's below it (opaque).
 *
 * Two writers make these layers, and each writes deletions its own way:
 *   - overlayfs (the kernel's): a whiteout is a character device 0/0 named
 *     as what it deletes; an opaque directory carries user.overlay.opaque
 *     (userxattr) or trusted.overlay.opaque = "y".
 *   - fuse-overlayfs (a box's copy-on-write over a FUSE upper, without
 *     root): the same where it can make them, else a whiteout is a file
 *     .wh.NAME, and an opaque directory holds a file .wh..wh..opq or
 *     carries user.fuseoverlayfs.opaque = "y".
 * Which writer made a layer is recorded in the layers directory above its
 * upper (WSLAYER_RECORD), where the box cannot reach, by whoever set the
 * box up; without a record it is overlayfs. So a file a box makes named
 * .wh.foo in a layer of overlayfs's is that file (overlayfs writes it as
 * any other), never a deletion of foo; fuse-overlayfs refuses to make such
 * a name in its view (EINVAL), so in a layer of its own every .wh. name is
 * its mark. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "base/err.h"

enum wslayer_writer {
	WSLAYER_OVERLAYFS,
	WSLAYER_FUSE_OVERLAYFS,
};

/* The record's name in the layers directory (beside upper/ and work/). */
#define WSLAYER_RECORD "writer"
/* fuse-overlayfs's names (its main.c). */
#define WSLAYER_WH_PREFIX ".wh."
#define WSLAYER_WH_OPAQUE ".wh..wh..opq"
#define WSLAYER_FUSE_OPAQUE_XATTR "user.fuseoverlayfs.opaque"

const char *wslayer_writer_name(enum wslayer_writer w);
/* The writer of the layer whose upper is open at uroot: the record in the
 * directory above it; overlayfs when there is none. A record that names
 * neither writer is overlayfs too (a .wh. name is then only a name). */
enum wslayer_writer wslayer_writer_of(int uroot);
/* Record w as the writer of the layers in dir (the directory holding
 * upper/), where the layer is empty or already w's: -EXDEV (with why)
 * when its upper holds entries another writer made, which w would read
 * otherwise. */
int wslayer_writer_claim(const char *dir, enum wslayer_writer w, struct err *e);

enum wslayer_kind {
	WSLAYER_ENTRY,		/* a file, directory or symlink of the box's view */
	WSLAYER_WHITEOUT,	/* the tree's entry *target is deleted */
	WSLAYER_MARK,		/* the writer's own (an opaque directory's marker): no name of the view */
};

/* What name (lstat st) in a directory of a layer written by w is; *target
 * is the name of the tree it stands for (name itself but for .wh.NAME). */
enum wslayer_kind wslayer_entry(enum wslayer_writer w, const char *name, const struct stat *st, const char **target);
/* Whether the layer's directory rel (beneath uroot, "" the top) hides
 * what the tree has below it. */
bool wslayer_opaque(enum wslayer_writer w, int uroot, const char *rel);
/* The tree's path rel in the layer: WSLAYER_ENTRY (with its lstat in st),
 * WSLAYER_WHITEOUT, or -ENOENT when the layer has nothing there. */
int wslayer_lookup(enum wslayer_writer w, int uroot, const char *rel, struct stat *st);

struct wslayer_name {
	char *name;		/* the tree's name */
	bool whiteout;		/* deleted in the box's view */
};
/* The names of the box's view in the layer's directory rel, sorted, marks
 * left out: 0 or -errno. Where a name is both in the layer and whited out
 * (not made so by either writer), the entry stands. */
int wslayer_list(enum wslayer_writer w, int uroot, const char *rel, struct wslayer_name **ret, size_t *n);
void wslayer_list_free(struct wslayer_name *v, size_t n);
/* By name: for bsearch in what wslayer_list gave. */
int wslayer_name_cmp(const void *a, const void *b);
