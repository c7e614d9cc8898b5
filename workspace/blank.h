/* Blank ext4 images, made by copying: mkfs.ext4 runs once per size and
 * label, into the cache (state_cache_dir "blanks"), and each image a box
 * needs (the ns layers image, a vm box's own disk) is a copy of that
 * blank, extent by extent (a clone where the file system can), so a
 * create costs a few extents' copy, not an exec of mkfs. The blanks are
 * never mounted; a copy shares its blank's UUID, which ext4 does not
 * mind. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"

/* mkfs.ext4's path, or NULL where e2fsprogs is not installed. */
const char *blank_mkfs(void);

/* The blank of size bytes labelled label (its root directory root's,
 * lazy inode tables and journal: a few MiB of the host's disk for any
 * size), made once under a lock: its path in out. */
int blank_ext4(uint64_t size, const char *label, char *out, size_t n, struct err *e);

/* src's bytes into dst, holes kept: a clone where the file system can,
 * else each extent of data (SEEK_DATA, SEEK_HOLE) by copy_file_range;
 * dst is size bytes after. 0 or -errno. */
int blank_copy(int src, int dst, off_t size);

/* The blank of size and label copied into the open, empty file dst. */
int blank_copy_into(int dst, uint64_t size, const char *label, struct err *e);

/* A file at path made once: by make(tmp, arg) and renamed into place, so
 * that nobody sees half of it; with lock, under an exclusive lock beside
 * it, so that two processes never make it twice. */
int blank_once(const char *path, bool lock, int (*make)(const char *tmp, const void *arg, struct err *e),
	       const void *arg, struct err *e);
