/* An image's tree as erofs (image/erofs.c): the read-only block device a
 * vm box's root is built on. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

/* The erofs image of the unpacked tree at root: ROOT.erofs beside it, made
 * with Debian's mkfs.erofs the first time it is asked for (under a lock:
 * two callers never make it twice, and a second waits for the first),
 * written to a temporary file and renamed into place (nobody attaches
 * half of one). Its path into out; 0 or -errno, e set. */
int image_erofs_tree(const char *root, char *out, size_t n, struct err *e);
/* The erofs image of any tree at root (a vm box's workspace), made into
 * path (through path.tmp, renamed: nobody sees half of one). 0 or -errno,
 * e set (mkfs.erofs's last line). */
int image_erofs_make(const char *root, const char *path, struct err *e);
/* Whether vm boxes can have an image's root here (mkfs.erofs is there);
 * why says how, or what to install. */
bool image_erofs_capable(char *why, size_t n);
