/* A layer's or an archive's bytes as the tar reader takes them: read from
 * a file, the compressed bytes hashed (the blob's digest), decompressed
 * (gzip through zlib, zstd through libzstd, or none: by the first bytes,
 * whatever the media type says), the tar's bytes hashed (the diff_id),
 * and the expansion watched (IMAGE_MAX_RATIO). */
#pragma once
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "image/image.h"

struct image_stream;
/* Over fd (the caller's, not closed). max_ratio 0: not watched. */
int image_stream_open(int fd, unsigned max_ratio, struct image_stream **ret, struct err *e);
/* An image_tar_read_fn: up to n decompressed bytes, 0 at the end. */
ssize_t image_stream_read(void *s, void *buf, size_t n, struct err *e);
/* Read what is left (a tar's end is not the stream's), then its digests:
 * of the bytes read (the blob) and of the bytes they decompressed to. */
int image_stream_end(struct image_stream *s, char digest[IMAGE_DIGEST_MAX], char diff_id[IMAGE_DIGEST_MAX],
		     struct err *e);
/* "gzip", "zstd" or "none". */
const char *image_stream_kind(const struct image_stream *s);
uint64_t image_stream_in(const struct image_stream *s);
uint64_t image_stream_out(const struct image_stream *s);
void image_stream_free(struct image_stream *s);
