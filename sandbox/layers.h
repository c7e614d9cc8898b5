/* A copy-on-write workspace's layers: the overlay's upper and work
 * directories, under the state dir ($XDG_STATE_HOME/ward/workspaces/NAME),
 * kept across boxes until the changes are applied or dropped. Where the
 * kernel can enforce a size (ward runs as root and has loop devices), the
 * layers live on an ext4 image of that size (NAME.img beside the
 * directory, sparse), loop-mounted nosuid and nodev over the directory:
 * a box that fills it gets ENOSPC, and the host's disk keeps the rest.
 * Elsewhere nothing caps them, and disk_by says so. */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

struct layers {
	char dir[PATH_MAX - 16];
	char upper[PATH_MAX], work[PATH_MAX];
	uint64_t disk;		/* the size the kernel enforces, 0 = none */
	char disk_by[160];	/* what enforces it, or why nothing does */
};

/* Make (or find) NAME's layers, capped at disk bytes where the kernel can
 * do it. An image made before keeps its size. */
int layers_open(const char *name, uint64_t disk, struct layers *ret, struct err *e);
/* NAME's upper directory, mounting its image if it has one: 1, 0 when
 * NAME has no layers, or -errno. */
int layers_find(const char *name, char *upper, size_t n, struct err *e);
/* Remove NAME's layers: the mount, the directory and the image. */
void layers_drop(const char *name);
/* Can this process cap a workspace's disk here? why says how, or why not. */
bool layers_disk_capable(char *why, size_t n);
