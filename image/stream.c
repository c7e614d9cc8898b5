#include "image/stream.h"
#include "base/fdio.h"
#include "base/cleanup.h"
#include "base/hash.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#define IN_BUF (256u << 10)

enum kind { K_NONE, K_GZIP, K_ZSTD };

struct image_stream {
	int fd;
	enum kind kind;
	unsigned max_ratio;
	bool eof;		/* the file has no more bytes */
	bool done;		/* the compressed stream ended (a frame, a member) with nothing after it */
	bool frame_open;	/* zstd: inside a frame; gzip: inside a member */
	unsigned char *in;
	size_t in_pos, in_len;
	uint64_t nin, nout;
	struct hash_sha256 hin, hout;
	z_stream z;
	bool z_init;
	ZSTD_DStream *zs;
};

/* More of the file into the input buffer (what was not consumed moves to
 * its start). 0, or <0. */
static int stream_fill(struct image_stream *s, struct err *e)
{
	if (s->in_pos) {
		memmove(s->in, s->in + s->in_pos, s->in_len - s->in_pos);
		s->in_len -= s->in_pos;
		s->in_pos = 0;
	}
	if (s->eof || s->in_len == IN_BUF)
		return 0;
	ssize_t k = fdio_read_some(s->fd, s->in + s->in_len, IN_BUF - s->in_len);
	if (k < 0)
		return err_setc(e, (int)k, "cannot read the blob");
	if (k == 0)
		s->eof = true;
	hash_sha256_update(&s->hin, s->in + s->in_len, (size_t)k);
	s->in_len += (size_t)k;
	s->nin += (uint64_t)k;
	return 0;
}

int image_stream_open(int fd, unsigned max_ratio, struct image_stream **ret, struct err *e)
{
	struct image_stream *s = calloc(1, sizeof(*s));
	if (!s || !(s->in = malloc(IN_BUF))) {
		free(s);
		return err_set(e, -ENOMEM, "out of memory");
	}
	s->fd = fd;
	s->max_ratio = max_ratio;
	hash_sha256_init(&s->hin);
	hash_sha256_init(&s->hout);
	int r = 0;
	while (s->in_len < 4 && !s->eof && (r = stream_fill(s, e)) == 0)
		;
	if (r < 0) {
		image_stream_free(s);
		return r;
	}
	if (s->in_len >= 2 && s->in[0] == 0x1f && s->in[1] == 0x8b) {
		s->kind = K_GZIP;
		/* 16 + 15: a gzip header and trailer, the largest window. */
		if (inflateInit2(&s->z, 16 + MAX_WBITS) != Z_OK) {
			image_stream_free(s);
			return err_set(e, -ENOMEM, "zlib could not start");
		}
		s->z_init = true;
	} else if (s->in_len >= 4 && !memcmp(s->in, "\x28\xb5\x2f\xfd", 4)) {
		s->kind = K_ZSTD;
		if (!(s->zs = ZSTD_createDStream()) || ZSTD_isError(ZSTD_initDStream(s->zs))) {
			image_stream_free(s);
			return err_set(e, -ENOMEM, "zstd could not start");
		}
	}
	*ret = s;
	return 0;
}

void image_stream_free(struct image_stream *s)
{
	if (!s)
		return;
	if (s->z_init)
		inflateEnd(&s->z);
	ZSTD_freeDStream(s->zs);
	free(s->in);
	free(s);
}

const char *image_stream_kind(const struct image_stream *s)
{
	return s->kind == K_GZIP ? "gzip" : s->kind == K_ZSTD ? "zstd" : "none";
}

uint64_t image_stream_in(const struct image_stream *s)
{
	return s->nin;
}

uint64_t image_stream_out(const struct image_stream *s)
{
	return s->nout;
}

/* Decompressed bytes into buf: how many (0: the stream's end), or <0. */
static ssize_t stream_gzip(struct image_stream *s, void *buf, size_t n, struct err *e)
{
	for (;;) {
		if (s->in_pos == s->in_len) {
			int r = stream_fill(s, e);
			if (r < 0)
				return r;
			if (s->in_len == 0) {
				if (s->frame_open)
					return err_set(e, -EPIPE, "the gzip stream is cut short");
				return 0;
			}
		}
		if (!s->frame_open) {
			/* A member ended (or none began): another may follow, as
			 * pigz and concatenated files write them. */
			if (s->in_len - s->in_pos < 2 && !s->eof) {
				int r = stream_fill(s, e);
				if (r < 0)
					return r;
				continue;
			}
			if (s->in_len - s->in_pos < 2 || s->in[s->in_pos] != 0x1f || s->in[s->in_pos + 1] != 0x8b)
				return err_set(e, -EINVAL, "bytes after the end of the gzip stream");
			if (inflateReset(&s->z) != Z_OK)
				return err_set(e, -EINVAL, "zlib could not restart");
			s->frame_open = true;
		}
		s->z.next_in = s->in + s->in_pos;
		s->z.avail_in = (uInt)(s->in_len - s->in_pos);
		s->z.next_out = buf;
		s->z.avail_out = (uInt)MIN(n, (size_t)1 << 30);
		uInt before = s->z.avail_out;
		int zr = inflate(&s->z, Z_NO_FLUSH);
		s->in_pos = s->in_len - s->z.avail_in;
		size_t got = before - s->z.avail_out;
		if (zr == Z_STREAM_END)
			s->frame_open = false;
		else if (zr != Z_OK && zr != Z_BUF_ERROR)
			return err_set(e, -EINVAL, "the gzip stream is damaged (%s)", s->z.msg ? s->z.msg : "zlib error");
		if (got)
			return (ssize_t)got;
	}
}

static ssize_t stream_zstd(struct image_stream *s, void *buf, size_t n, struct err *e)
{
	for (;;) {
		if (s->in_pos == s->in_len) {
			int r = stream_fill(s, e);
			if (r < 0)
				return r;
			if (s->in_len == 0) {
				if (s->frame_open)
					return err_set(e, -EPIPE, "the zstd stream is cut short");
				return 0;
			}
		}
		ZSTD_inBuffer in = { s->in, s->in_len, s->in_pos };
		ZSTD_outBuffer out = { buf, n, 0 };
		size_t zr = ZSTD_decompressStream(s->zs, &out, &in);
		s->in_pos = in.pos;
		if (ZSTD_isError(zr))
			return err_set(e, -EINVAL, "the zstd stream is damaged (%s)", ZSTD_getErrorName(zr));
		s->frame_open = zr != 0;
		if (out.pos)
			return (ssize_t)out.pos;
	}
}

ssize_t image_stream_read(void *ud, void *buf, size_t n, struct err *e)
{
	struct image_stream *s = ud;
	ssize_t k;
	if (s->done || !n)
		return 0;
	switch (s->kind) {
	case K_GZIP:
		k = stream_gzip(s, buf, n, e);
		break;
	case K_ZSTD:
		k = stream_zstd(s, buf, n, e);
		break;
	default:
		if (s->in_pos == s->in_len) {
			int r = stream_fill(s, e);
			if (r < 0)
				return r;
		}
		k = (ssize_t)MIN(n, s->in_len - s->in_pos);
		memcpy(buf, s->in + s->in_pos, (size_t)k);
		s->in_pos += (size_t)k;
		break;
	}
	if (k <= 0) {
		if (k == 0)
			s->done = true;
		return k;
	}
	hash_sha256_update(&s->hout, buf, (size_t)k);
	s->nout += (uint64_t)k;
	if (s->max_ratio && s->nout > IMAGE_RATIO_FREE && s->nout / s->max_ratio > s->nin)
		return err_set(e, -EFBIG, "it expands more than %u times its compressed size (a decompression bomb)",
			       s->max_ratio);
	return k;
}

int image_stream_end(struct image_stream *s, char digest[IMAGE_DIGEST_MAX], char diff_id[IMAGE_DIGEST_MAX],
		     struct err *e)
{
	char buf[65536];
	ssize_t k;
	while ((k = image_stream_read(s, buf, sizeof(buf), e)) > 0)
		;
	if (k < 0)
		return (int)k;
	uint8_t d[HASH_SHA256_LEN];
	hash_sha256_final(&s->hin, d);
	memcpy(digest, "sha256:", 7);
	hash_hex(d, sizeof(d), digest + 7);
	hash_sha256_final(&s->hout, d);
	memcpy(diff_id, "sha256:", 7);
	hash_hex(d, sizeof(d), diff_id + 7);
	return 0;
}
