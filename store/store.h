/* Cold storage of a hibernated box's state: a zstd stream to shrink it and
 * a store (a local directory or an S3 bucket) to keep it. Every call here
 * blocks until its bytes are moved: call it where blocking is allowed. */
#pragma once
#include <stdint.h>

#include "base/err.h"

/* Compress in_fd (read to its end) into out_fd as one zstd frame with a
 * content checksum. level 1..19; 0 is zstd's default, 3. Memory is bounded
 * by the level, not the input: under 100 MiB at 19, a few MiB at 3. On
 * success *ret_in and *ret_out (either may be NULL) are the bytes read and
 * written. 0, -EINVAL (level), -EIO (zstd failed), or the read's or
 * write's -errno; out_fd then holds part of a frame, for the caller to
 * drop. */
int store_compress(int in_fd, int out_fd, int level, uint64_t *ret_in, uint64_t *ret_out,
		   struct err *e);
/* Decompress in_fd (zstd frames, read to its end) into out_fd. A frame cut
 * short, a corrupted byte (caught by the frame's checksum at the latest),
 * or an input that is not zstd is -EBADMSG, with what was wrong; out_fd
 * then holds unchecked bytes, for the caller to drop. Memory: at most a
 * 128 MiB window (frames asking for more are -EBADMSG). *ret_out (may be
 * NULL): the bytes written. */
int store_decompress(int in_fd, int out_fd, uint64_t *ret_out, struct err *e);

struct store;

/* Open a store from a spec: "s3://BUCKET" or "s3://BUCKET/PREFIX", else a
 * directory path (made 0700 if missing; its parent must exist). For S3 the
 * environment gives AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (both
 * needed), AWS_SESSION_TOKEN, AWS_REGION or AWS_DEFAULT_REGION (default
 * us-east-1) and WARD_S3_ENDPOINT (default https://s3.REGION.amazonaws.com;
 * path-style URLs either way); nothing is sent until the first put, get or
 * del. -EINVAL (a bad spec or a missing variable), -EACCES (a directory
 * this user cannot read and write), -ENOENT (no libcurl), or -errno. */
int store_open(const char *spec, struct store **ret, struct err *e);
void store_free(struct store *s);

/* Keys: 1 to 512 characters of [A-Za-z0-9._/-], parts between '/' of 1 to
 * 200, no leading or trailing '/', no "." part and no ".." anywhere.
 * A bad key is -EINVAL before anything is touched. */

/* The file at path becomes object key, whole or not at all: a directory
 * store writes a temporary file beside the object, fsyncs it, renames it
 * over and fsyncs the directory; S3 is one PUT (at most 5 GiB: larger is
 * -EFBIG). Worst case for S3: a connect is cut after 10 s, and a whole
 * transfer once, from its 20th second on, it has averaged under 256 KiB/s
 * since it began (-ETIMEDOUT, saying so): a dead or trickling server
 * costs 20 s, and an object of N bytes at most max(20 s, N / 256 KiB/s). */
int store_put(struct store *s, const char *key, const char *path, struct err *e);
/* Object key becomes the file at path: written to "path.tmp", fsynced and
 * renamed over path; on failure path is untouched and path.tmp removed.
 * -ENOENT when there is no such object. Same time bounds as put. */
int store_get(struct store *s, const char *key, const char *path, struct err *e);
/* Remove object key; a missing one is 0. */
int store_del(struct store *s, const char *key, struct err *e);
/* "dir DIR" or "s3 BUCKET/PREFIX at ENDPOINT": where the bytes are, for
 * `ward box info`. Lives as long as s. */
const char *store_describe(const struct store *s);
