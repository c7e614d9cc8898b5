/* Fuzz target for the streaming SigV4 re-signer (net/sigv4-stream.h):
 * whatever aws-chunked bytes a box sends, in pieces of every size the
 * input's first byte chooses (its low two bits the payload's kind), the
 * stream takes them all, answers one of its documented results, puts out
 * exactly as many bytes as it took (a signature is as long as the one it
 * replaces), holds no more than one chunk, takes nothing after its end,
 * and, re-signing with the key it checks with, puts out the bytes it was
 * given. The chain is AWS's streaming example's (its seed and key), so the
 * corpus's valid streams are that example's. Built with libFuzzer when
 * -Dfuzz=true (clang); otherwise main() replays the corpus as a test. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/sigv4-stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define SEED "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"

static const enum net_sigv4_payload kinds[] = { NET_SIGV4_STREAM_SIGNED, NET_SIGV4_STREAM_SIGNED_TRAILER,
						NET_SIGV4_STREAM_UNSIGNED_TRAILER, NET_SIGV4_STREAM_SIGNED };

/* The input through a stream whose real key is real: its result; what
 * came out into *ret. */
static int run(const char *p, size_t size, size_t piece, enum net_sigv4_payload kind, const char *real,
	       struct buf *ret)
{
	struct net_sigv4_seed sd = { .kind = kind, .amzdate = "20130524T000000Z",
				     .scope = "20130524/us-east-1/s3/aws4_request", .sig_ph = SEED, .sig = SEED };
	if (net_sigv4_signing_key(SECRET, "20130524", "us-east-1", "s3", sd.key_ph) < 0 ||
	    net_sigv4_signing_key(real, "20130524", "us-east-1", "s3", sd.key) < 0)
		abort();
	struct net_sigv4_stream s;
	struct buf out;
	buf_init(&out, NET_SIGV4_STREAM_ROOM(piece));
	buf_init(ret, size + 1);
	if (net_sigv4_stream_init(&s, &sd) < 0)
		abort();
	char why[320];
	int r = 0;
	size_t off = 0;
	while (off < size && r >= 0) {	/* (after its end, a byte more is refused) */
		size_t k = size - off < piece ? size - off : piece;
		r = net_sigv4_stream_feed(&s, p + off, k, &out, why, sizeof(why));
		if (r != 0 && r != 1 && r != -EBADMSG && r != -EMSGSIZE)
			abort();
		if (r < 0)
			break;
		off += k;
		if (s.ready > out.len || buf_append(ret, out.data, s.ready) < 0)
			abort();
		net_sigv4_stream_sent(&s, &out);
		/* What stays is one chunk held: its line, its data, its CRLF. */
		if (out.len > NET_SIGV4_CHUNK_MAX + NET_SIGV4_CHUNK_LINE_MAX + 2 || (out.len && !s.holding))
			abort();
		if (ret->len + out.len + s.line_len != off)
			abort();	/* a byte out for each byte in (a line's once it is whole) */
	}
	if (r == 1 && (out.len || s.line_len || off != size))
		abort();
	if (r == 1 && net_sigv4_stream_feed(&s, "x", 1, &out, why, sizeof(why)) != -EBADMSG)
		abort();	/* nothing after the end */
	net_sigv4_stream_free(&s);
	buf_free(&out);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	enum net_sigv4_payload kind = kinds[data[0] & 3];
	size_t piece = data[0] >> 2 ? (size_t)(data[0] >> 2) * (data[0] & 0x80 ? 997 : 1) : 1;
	data++, size--;
	char *p = malloc(size ? size : 1);
	memcpy(p, data, size);
	struct buf same, other;
	int r = run(p, size, piece, kind, SECRET, &same);
	/* The key it checks with, again: the bytes come out as they went in. */
	if (r >= 0 && (same.len > size || (same.len && memcmp(same.data, p, same.len))))
		abort();
	/* Another real key: the same verdict (the placeholder's chain decides)
	 * and as many bytes. */
	int r2 = run(p, size, piece, kind, "another/secret", &other);
	if (r2 != r || (r >= 0 && other.len != same.len))
		abort();
	if (kind == NET_SIGV4_STREAM_UNSIGNED_TRAILER && r >= 0 && memcmp(other.data, p, other.len))
		abort();	/* nothing re-signed in an unsigned stream */
	buf_free(&same);
	buf_free(&other);
	free(p);
	return 0;
}

#include "replay.h"
