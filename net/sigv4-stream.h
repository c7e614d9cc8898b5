/* S3's streaming SigV4 payloads (Content-Encoding: aws-chunked; AWS's
 * "Signature Calculations for the Authorization Header: Transferring
 * Payload in Multiple Chunks" and "... Including Trailing Headers"),
 * re-signed as they pass the egress proxy. Each chunk of a signed stream,
 * "HEX;chunk-signature=SIG\r\nDATA\r\n", carries a signature chained from
 * the one before it (the request's own, the seed, to start): it is checked
 * with the placeholder's signing key and written again with the real
 * key's chain, as long as it was, so the body's length stays what the box
 * said. A signed trailer's x-amz-trailer-signature likewise. An unsigned
 * stream with a trailer (STREAMING-UNSIGNED-PAYLOAD-TRAILER) has nothing
 * to re-sign: its framing is checked and it passes as it is.
 *
 * A signed chunk's signature comes before its data, so the chunk is held
 * until its data is in: NET_SIGV4_CHUNK_MAX data bytes at most (AWS's
 * SDKs send 64 or 128 KiB), a larger chunk refused. Nothing else is held:
 * memory per stream is one chunk and one line. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "net/sigv4.h"

#define NET_SIGV4_CHUNK_MAX (1u << 20)
/* A chunk's size line, or a trailer's line, at most. */
#define NET_SIGV4_CHUNK_LINE_MAX 256
/* A trailer's lines at most, all together. */
#define NET_SIGV4_TRAILER_MAX 4096
/* The cap of an out buffer fed n bytes at a time (its ready bytes sent
 * before each feed): a chunk held and n bytes more. */
#define NET_SIGV4_STREAM_ROOM(n) (NET_SIGV4_CHUNK_MAX + 2 * NET_SIGV4_CHUNK_LINE_MAX + (n))

struct net_sigv4_stream {
	struct net_sigv4_seed seed;	/* its sig_ph and sig: the chains' last links */
	int state;
	uint64_t left;		/* the chunk's data bytes still to come */
	bool last;		/* the chunk of no data was read */
	char line[NET_SIGV4_CHUNK_LINE_MAX];
	size_t line_len;
	char sig_in[65];	/* the chunk's signature as the box made it */
	bool holding;		/* out's bytes after ready are a chunk held */
	size_t sig_at;		/* where in out the held chunk's signature is */
	void *md;		/* the held chunk's data's SHA-256 (an EVP_MD_CTX) */
	char trailer[NET_SIGV4_TRAILER_MAX];	/* the trailer as signed: "name:value\n" each */
	size_t trailer_len;
	bool trailer_signed;
	uint64_t data;		/* data bytes so far */
	unsigned nchunk;	/* chunks so far */
	size_t ready;		/* out[0..ready) may go on */
};

/* A stream for the body of a request net_sigv4_resign re-signed with this
 * seed (its kind one of the three taken): 0, or -ENOMEM. */
int net_sigv4_stream_init(struct net_sigv4_stream *s, const struct net_sigv4_seed *seed);
/* Its keys wiped, its hash freed. */
void net_sigv4_stream_free(struct net_sigv4_stream *s);
/* The body's next bytes in[0..n), all taken, appended to out re-signed
 * (out's cap NET_SIGV4_STREAM_ROOM(n)); out[0..s->ready) may then go
 * on, the rest is a chunk held. 1: the payload has ended; 0: more is
 * wanted; -EBADMSG: not aws-chunked framing, a signature that does not
 * hold with the placeholder's key, bytes after the end; -EMSGSIZE: a
 * signed chunk over NET_SIGV4_CHUNK_MAX; -ENOBUFS: out's room. why[wn]
 * says which; out is then not to be sent on. */
int net_sigv4_stream_feed(struct net_sigv4_stream *s, const char *in, size_t n, struct buf *out, char *why,
			  size_t wn);
/* out[0..s->ready) was sent: dropped from out. */
void net_sigv4_stream_sent(struct net_sigv4_stream *s, struct buf *out);
