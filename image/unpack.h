/* Layers applied to a tree, in order, as OCI's layer format says
 * (whiteouts .wh.NAME, opaque directories .wh..wh..opq, hard links to
 * what the layers below made), with every path resolved by the kernel
 * beneath the tree's root (openat2 RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
 * never by string), so a symbolic link an earlier layer made, absolute or
 * by "..", leads a later entry to a place inside the tree and never out of
 * it. What a layer may not do is refused with one line naming the layer
 * and the entry: a ".." component, a hard link out of the tree or to a
 * directory, more entries or bytes than struct image_limits allows, an
 * entry type that is not a file, directory or link. What the tree never
 * holds: device nodes and FIFOs (not made: said in a line), setuid and
 * setgid bits (cleared), extended attributes (not applied: file
 * capabilities among them). Owners are kept where ward runs as root;
 * otherwise every file is the user's. Directories are 0700 while the
 * layers are applied and get their own modes at the end. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "image/image.h"
#include "image/tar.h"

/* Free disk an unpack leaves, at least. */
#define IMAGE_UNPACK_RESERVE (256ULL << 20)

struct image_unpack_stats {
	uint64_t files, bytes;		/* entries (whiteouts, directories included), the files' contents */
	uint64_t devices, fifos;	/* not made */
	uint64_t setid;			/* setuid and setgid bits cleared */
	uint64_t xattrs;		/* entries whose extended attributes were not applied */
	uint64_t owners_lost;		/* owners that could not be kept (not root, or unmapped) */
};

struct image_unpack;
/* Into the empty directory root_fd (the caller's). chown: keep the
 * layers' owners (ward runs as root). */
int image_unpack_new(int root_fd, const struct image_limits *lim, bool chown, const struct image_say *say,
		     struct image_unpack **ret, struct err *e);
/* One layer's tar, read through rd; what names it in messages ("layer 2
 * of 3 (sha256:...)"). */
int image_unpack_layer(struct image_unpack *u, const char *what, image_tar_read_fn *rd, void *ud, struct err *e);
/* After the last layer: the directories get their modes. */
int image_unpack_finish(struct image_unpack *u, struct err *e);
void image_unpack_stats(const struct image_unpack *u, struct image_unpack_stats *ret);
void image_unpack_free(struct image_unpack *u);
/* Remove name below dfd and everything under it, by descriptors, opening
 * up directories a tree made unreadable, never following a link. */
int image_unpack_rm(int dfd, const char *name);
