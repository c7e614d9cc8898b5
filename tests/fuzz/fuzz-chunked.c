/* Fuzz target for the chunked body reader on its own, fed in pieces of
 * every size the input's first byte chooses: whatever a client sends, the
 * reader never takes more than it was given, what it writes is chunked
 * framing of its own (hex size, CRLF, data, CRLF; "0\r\n\r\n" last, and
 * nothing after it), and its end and the framing's end agree. Built with libFuzzer when -Dfuzz=true
 * (clang); otherwise main() replays the corpus as a test. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/chunked.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Check that out[0..n) is well-formed chunked framing; the data it
 * carries is appended to *dec. 1: it ended with the last chunk. */
static int well_framed(const char *o, size_t n, struct buf *dec)
{
	size_t i = 0;
	while (i < n) {
		uint64_t sz = 0;
		size_t d = 0;
		while (i < n && ((o[i] >= '0' && o[i] <= '9') || (o[i] >= 'a' && o[i] <= 'f') || (o[i] >= 'A' && o[i] <= 'F'))) {
			sz = sz * 16 + (uint64_t)(o[i] <= '9' ? o[i] - '0' : (o[i] | 0x20) - 'a' + 10);
			i++, d++;
		}
		if (!d || d > 16 || i + 2 > n || o[i] != '\r' || o[i + 1] != '\n')
			abort();
		i += 2;
		if (sz == 0) {
			if (i + 2 != n || o[i] != '\r' || o[i + 1] != '\n')
				abort();	/* the last chunk, and nothing after it */
			return 1;
		}
		if (sz > n - i || n - i - sz < 2 || o[i + sz] != '\r' || o[i + sz + 1] != '\n')
			abort();
		if (buf_append(dec, o + i, sz) < 0)
			abort();
		i += sz + 2;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	size_t piece = data[0] ? data[0] : 1;
	data++, size--;
	/* An exact-size heap copy, so a sanitizer sees any overread. */
	char *p = malloc(size ? size : 1);
	memcpy(p, data, size);
	struct net_chunked c;
	net_chunked_init(&c);
	struct buf out, dec;
	buf_init(&out, 1 << 20);
	buf_init(&dec, 1 << 20);
	size_t off = 0;
	int r = 0;
	while (off < size && r == 0) {
		size_t n = size - off < piece ? size - off : piece;
		size_t used = 0;
		size_t before = out.len;
		r = net_chunked_feed(&c, p + off, n, &out, &used);
		if (used > n || out.len < before)
			abort();
		if (r != 0 && r != 1 && r != -EBADMSG)
			abort();
		if (r == 0 && !used && out.len == before)
			break;	/* out is full: nothing more can be taken */
		off += used;
	}
	if (r >= 0 && well_framed(out.data, out.len, &dec) != r)
		abort();	/* the reader's end and its framing's end agree */
	buf_free(&out);
	buf_free(&dec);
	free(p);
	return 0;
}

#include "replay.h"
