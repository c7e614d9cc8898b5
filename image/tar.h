/* A tar reader for image layers and archives: ustar, pax (path, linkpath,
 * size, uid, gid) and GNU long names and links, from a stream of bytes.
 * It only reads: what an entry may do is image/unpack.c's to decide. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"

/* A pax header or a GNU long name, at most. */
#define IMAGE_TAR_META_MAX (1u << 20)

/* Up to n bytes into buf: how many (0 at the end), or <0 with e set. */
typedef ssize_t image_tar_read_fn(void *ud, void *buf, size_t n, struct err *e);

enum image_tar_type {
	IMAGE_TAR_FILE = '0',	/* also '\0' and '7' (contiguous) */
	IMAGE_TAR_HARDLINK = '1',
	IMAGE_TAR_SYMLINK = '2',
	IMAGE_TAR_CHAR = '3',
	IMAGE_TAR_BLOCK = '4',
	IMAGE_TAR_DIR = '5',
	IMAGE_TAR_FIFO = '6',
};

struct image_tar_entry {
	char *path;		/* as the archive writes it: pax, GNU long name, or ustar prefix/name */
	char *link;		/* the link's target ("" for none) */
	enum image_tar_type type;
	uint32_t mode;		/* the permission bits, 07777 */
	uint64_t uid, gid;
	uint64_t size;		/* of the content that follows (a regular file's) */
	uint32_t devmajor, devminor;
	bool xattrs;		/* pax records carried extended attributes (never applied) */
};

struct image_tar {
	image_tar_read_fn *read;
	void *ud;
	uint64_t left, pad;	/* the current entry's content not read yet, and its padding */
	struct image_tar_entry ent;
	uint64_t entries;	/* headers read (pax and long names included) */
};

void image_tar_init(struct image_tar *t, image_tar_read_fn *read, void *ud);
/* The next entry (its content not read yet; what is left of the previous
 * one is skipped): 1 with *ret (the reader's, valid until the next call),
 * 0 at the end of the archive, or <0 with e set (a damaged or unsupported
 * header: GNU sparse files, multi-volume archives). */
int image_tar_next(struct image_tar *t, const struct image_tar_entry **ret, struct err *e);
/* The current entry's content: up to n bytes, 0 at its end, <0 (the
 * archive ends before it does). */
ssize_t image_tar_data(struct image_tar *t, void *buf, size_t n, struct err *e);
void image_tar_free(struct image_tar *t);
