/* The store's directories, names and locks (image/image.h says what lives
 * where). Nothing outside image/ includes this. */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "image/image.h"

struct image_store {
	char dir[PATH_MAX - 200];	/* .../ward/images */
	int fd;			/* it, open */
};

/* $XDG_DATA_HOME/ward/images, else ~/.local/share/ward/images, made (0700,
 * with trees, locks and tmp) and checked to be the user's. */
int image_store_open(struct image_store *s, struct err *e);
void image_store_close(struct image_store *s);
/* locks/NAME (a digest's hex, or "ref-..." for a pull), flock'ed with op
 * (LOCK_SH or LOCK_EX, | LOCK_NB): the fd (CLOEXEC), or <0 (-EWOULDBLOCK:
 * held). The file is the one the path names once it is held (a prune that
 * removed it meanwhile is seen, and the lock taken again). */
int image_store_lock(struct image_store *s, const char *name, int op, struct err *e);
/* locks/NAME removed: only while holding it exclusively. */
void image_store_lock_drop(struct image_store *s, const char *name);
/* names.json: {"names": {KEY: {"digest", "at"}}}. Read it (*ret the
 * caller's; {} when there is none). */
int image_store_names(struct image_store *s, cJSON **ret, struct err *e);
/* Change it: fn(names object, ud) under the names lock, then written
 * back (atomically) when fn returns 1; 0 leaves it as it was. */
int image_store_names_edit(struct image_store *s, int (*fn)(cJSON *names, void *ud), void *ud, struct err *e);
/* Whether trees/HEX is a whole unpacked image (its info.json is there). */
bool image_store_has(struct image_store *s, const char *hex);
/* A new directory under tmp/ for a pull or an unpack (named after this
 * process, so a prune knows one whose ward is gone): its path into out. */
int image_store_tmp(struct image_store *s, const char *what, char *out, size_t n, struct err *e);
/* Remove a directory of the store and everything under it. */
int image_store_rm(struct image_store *s, const char *rel);
