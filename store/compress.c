/* store_compress, store_decompress: zstd streams, file to file, through
 * fixed buffers whatever the size of the file. */
#include "store/store.h"
#include "base/cleanup.h"
#include "base/fdio.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <zstd.h>

/* Reads and writes of 1 MiB: fewer syscalls than zstd's own 128 KiB
 * suggestion, and still a bounded amount of memory. */
#define IO_BUF (1u << 20)
#define LEVEL_MAX 19
/* 2^27 = 128 MiB: zstd's own default limit, set so it is a decision here. */
#define WINDOW_LOG_MAX 27

struct bufs {
	void *in, *out;
};

static void bufs_free(struct bufs *b)
{
	free(b->in);
	free(b->out);
}

/* The buffers, and a check that zstd's context (ctx) was made too. */
static int bufs_alloc(struct bufs *b, const void *ctx, struct err *e)
{
	b->in = malloc(IO_BUF);
	b->out = malloc(IO_BUF);
	if (!ctx || !b->in || !b->out)
		return err_set(e, -ENOMEM, "out of memory for a zstd stream");
	return 0;
}

static void cctx_freep(ZSTD_CCtx **c) { ZSTD_freeCCtx(*c); }
static void dctx_freep(ZSTD_DCtx **d) { ZSTD_freeDCtx(*d); }

int store_compress(int in_fd, int out_fd, int level, uint64_t *ret_in, uint64_t *ret_out,
		   struct err *e)
{
	if (level < 0 || level > LEVEL_MAX)
		return err_set(e, -EINVAL, "zstd level %d: give 1 to %d (0: the default, 3)", level,
			       LEVEL_MAX);
	__attribute__((cleanup(cctx_freep))) ZSTD_CCtx *cc = ZSTD_createCCtx();
	__attribute__((cleanup(bufs_free))) struct bufs b = { 0 };
	int r = bufs_alloc(&b, cc, e);
	if (r < 0)
		return r;
	if (ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel,
						level ? level : ZSTD_CLEVEL_DEFAULT)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1)))
		return err_set(e, -EIO, "zstd refused its parameters");
	uint64_t nin = 0, nout = 0;
	bool eof = false;
	while (!eof) {
		ssize_t n = fdio_read_some(in_fd, b.in, IO_BUF);
		if (n < 0)
			return err_setc(e, (int)n, "reading the file to compress");
		eof = n == 0;
		nin += (uint64_t)n;
		ZSTD_inBuffer in = { b.in, (size_t)n, 0 };
		ZSTD_EndDirective mode = eof ? ZSTD_e_end : ZSTD_e_continue;
		/* Until zstd has taken all of this read (and, at the end, has
		 * closed the frame: 0 left to flush). */
		for (;;) {
			ZSTD_outBuffer out = { b.out, IO_BUF, 0 };
			size_t left = ZSTD_compressStream2(cc, &out, &in, mode);
			if (ZSTD_isError(left))
				return err_set(e, -EIO, "zstd: %s", ZSTD_getErrorName(left));
			r = fdio_write_full(out_fd, b.out, out.pos);
			if (r < 0)
				return err_setc(e, r, "writing the compressed file");
			nout += out.pos;
			if (eof ? left == 0 : in.pos == in.size)
				break;
		}
	}
	if (ret_in)
		*ret_in = nin;
	if (ret_out)
		*ret_out = nout;
	return 0;
}

int store_decompress(int in_fd, int out_fd, uint64_t *ret_out, struct err *e)
{
	__attribute__((cleanup(dctx_freep))) ZSTD_DCtx *dc = ZSTD_createDCtx();
	__attribute__((cleanup(bufs_free))) struct bufs b = { 0 };
	int r = bufs_alloc(&b, dc, e);
	if (r < 0)
		return r;
	if (ZSTD_isError(ZSTD_DCtx_setParameter(dc, ZSTD_d_windowLogMax, WINDOW_LOG_MAX)))
		return err_set(e, -EIO, "zstd refused its parameters");
	uint64_t nin = 0, nout = 0;
	/* What zstd still wants of the frame it is in: 0 between frames. */
	size_t want = 1;
	for (;;) {
		ssize_t n = fdio_read_some(in_fd, b.in, IO_BUF);
		if (n < 0)
			return err_setc(e, (int)n, "reading the compressed file");
		if (n == 0)
			break;
		nin += (uint64_t)n;
		ZSTD_inBuffer in = { b.in, (size_t)n, 0 };
		while (in.pos < in.size) {
			ZSTD_outBuffer out = { b.out, IO_BUF, 0 };
			want = ZSTD_decompressStream(dc, &out, &in);
			if (ZSTD_isError(want))
				return err_set(e, -EBADMSG,
					       "compressed state corrupt at about byte %llu: zstd: %s",
					       (unsigned long long)(nin - (in.size - in.pos)),
					       ZSTD_getErrorName(want));
			r = fdio_write_full(out_fd, b.out, out.pos);
			if (r < 0)
				return err_setc(e, r, "writing the decompressed file");
			nout += out.pos;
		}
		/* The last input may sit in zstd with output still to come. */
		while (want != 0) {
			ZSTD_outBuffer out = { b.out, IO_BUF, 0 };
			ZSTD_inBuffer none = { b.in, 0, 0 };
			want = ZSTD_decompressStream(dc, &out, &none);
			if (ZSTD_isError(want))
				return err_set(e, -EBADMSG, "compressed state corrupt: zstd: %s",
					       ZSTD_getErrorName(want));
			if (out.pos == 0)
				break;
			r = fdio_write_full(out_fd, b.out, out.pos);
			if (r < 0)
				return err_setc(e, r, "writing the decompressed file");
			nout += out.pos;
		}
	}
	if (nin == 0)
		return err_set(e, -EBADMSG, "compressed state is empty: no zstd frame in it");
	if (want != 0)
		return err_set(e, -EBADMSG,
			       "compressed state truncated after %llu bytes: its zstd frame is "
			       "incomplete (a cut copy or upload?)",
			       (unsigned long long)nin);
	if (ret_out)
		*ret_out = nout;
	return 0;
}
