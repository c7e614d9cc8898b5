/* A chunked request body (RFC 9112 7.1), read incrementally and framed
 * afresh on the way out: each piece of data becomes a chunk of its own,
 * chunk extensions and trailer fields are dropped, and the last chunk is
 * written as "0\r\n\r\n". What reaches the server is therefore framed one
 * way only, whatever spelling of sizes, extensions or line ends a client
 * tried; and where the body ends is decided here, so bytes after it (a
 * second, pipelined request) are left to the caller to drop. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

#define NET_CHUNKED_MAX_LINE 1024	/* a chunk-size line with its extensions */
#define NET_CHUNKED_MAX_TRAILERS (16 * 1024)

struct net_chunked {
	int state;
	uint64_t size;		/* of the chunk being read: digits so far, then bytes left */
	unsigned digits;
	size_t line;		/* bytes of the current size or trailer line */
	size_t trailers;	/* bytes of trailer fields so far */
	/* Set after net_chunked_init: the data alone is appended, unframed
	 * (for a caller that changes it and frames it afresh itself). */
	bool raw;
};

void net_chunked_init(struct net_chunked *c);
/* Take body bytes from in[0..n) and append them, framed, to out. *ret_used:
 * bytes of in taken (fewer than n when out is nearly full or the body ended).
 * 1: the body has ended; 0: more is wanted; -EBADMSG: not chunked framing. */
int net_chunked_feed(struct net_chunked *c, const char *in, size_t n, struct buf *out, size_t *ret_used);
