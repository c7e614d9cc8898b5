/* What wsdiff.c, wspatch.c and wsbase.c share: a tree's files, reached
 * beneath its root with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), so
 * no symlink is followed anywhere on the way; and diff(1) run over
 * descriptors. Internal to the workspace-changes modules. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>

#include "base/err.h"

/* rel beneath root: an fd, or -errno. With O_PATH | O_NOFOLLOW a symlink
 * as the last component is opened as itself. "" is the root. */
int ws_open(int root, const char *rel, int flags);
/* A regular file, opened for reading without waiting (a FIFO or a device
 * is never opened for real): -EINVAL for anything else. */
int ws_open_reg(int root, const char *rel, struct stat *ret_st);
int ws_lstat(int root, const char *rel, struct stat *st);
/* A symlink's target into buf (NUL-terminated): its length, or -errno. */
int ws_readlink(int root, const char *rel, char *buf, size_t n);
/* Append a copy of s to a growable list of strings: 0 or -ENOMEM. */
int ws_strv_add(char ***v, size_t *n, size_t *cap, const char *s);
/* Sorted names in a directory, without . and .. */
int ws_list_dir(int root, const char *rel, char ***ret, size_t *n);
void ws_free_list(char **v, size_t n);
int ws_name_cmp(const void *a, const void *b);
/* Copy src to dst (both open, dst empty) keeping src's holes: a sparse
 * file costs its copy what it cost the original, not its apparent size.
 * 0 or -errno. */
int ws_copy_sparse(int src, int dst, off_t size);
/* The same, sharing src's extents (FICLONE) where the file system can:
 * 1 cloned, 0 copied, or -errno. Either way a later change to one file is
 * never seen in the other. */
int ws_clone_or_copy(int src, int dst, off_t size);
/* The two roots, opened once (O_PATH). */
int ws_roots(const char *lower, const char *upper, int *lroot, int *uroot, struct err *e);

/* diff -u of fa and fb (-1: /dev/null) as /dev/fd/3 and /dev/fd/4, with
 * labels la and lb, its output copied to out; text: diff -a (never
 * "Binary files differ"). -EPIPE when out's reader has gone. */
int ws_run_diff(FILE *out, const char *la, const char *lb, int fa, int fb, bool text);
/* One formatted write to out, flushed: 0, -EPIPE or -EIO. */
int ws_put(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
