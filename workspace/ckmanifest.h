/* A checkpoint's manifest (workspace/checkpoint.h): one JSON object a line,
 * an entry of the layer each, in the order of the walk (a directory before
 * what is in it). Numbers that may pass 2^53 (inodes, nanoseconds) are
 * strings; the overlay's xattrs are hex. Internal to checkpoint.c. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "workspace/checkpoint.h"

/* One entry of a manifest. */
struct ckmanifest_entry {
	char *path;
	char type;		/* f file, d directory, l symlink, w whiteout */
	mode_t mode;
	uid_t uid;
	gid_t gid;
	int64_t mtime_ns;
	struct checkpoint_stamp stamp;	/* f: the live file's, when it was kept */
	char *obj;		/* f: its copy, DIR/objects/OBJ (shared by the checkpoints that keep it) */
	size_t copy;		/* f without obj: its copy in N/files/COPY (a checkpoint made before objects were shared) */
	char *target;		/* l */
	cJSON *xattrs;		/* {name: hex value}, or NULL */
};

struct ckmanifest {
	struct ckmanifest_entry *v;
	size_t n, cap;
};

void ckmanifest_free(struct ckmanifest *l);
/* Append x (its strings and xattrs now the list's): 0 or -ENOMEM. */
int ckmanifest_push(struct ckmanifest *l, const struct ckmanifest_entry *x);
/* By path, for qsort and bsearch. */
int ckmanifest_path_cmp(const void *a, const void *b);
/* The manifest at path, whole, every entry checked (a relative path with
 * no "..", a known type): 0, or -errno with e set. */
int ckmanifest_read(const char *path, struct ckmanifest *ret, struct err *e);
/* Written beside path and renamed over it: whole or not at all. */
int ckmanifest_write(const char *path, const struct ckmanifest *l);
/* The overlay's xattrs on fd ({name: hex}), or NULL when it has none. */
cJSON *ckmanifest_xattrs_read(int fd);
/* Set them on fd: 0 or -errno (-EBADMSG: not an overlay xattr, or bad hex). */
int ckmanifest_xattrs_write(int fd, const cJSON *xa);
/* An object's name as a manifest may carry it: hex digits and '-', at most
 * CKMANIFEST_OBJ_MAX bytes (so never a path). */
#define CKMANIFEST_OBJ_MAX 40
bool ckmanifest_obj_ok(const char *name);
