/* Fuzz target for the request-head parser and the chunked body reader:
 * whatever a client sends, the parse stays within its bytes; a head taken
 * is within the caps, its upstream head has exactly one Host and one
 * Connection: close, and no CR or LF outside line ends; a body read ends at
 * or before the input's end. Built with libFuzzer when -Dfuzz=true (clang);
 * otherwise main() replays the corpus as a test. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/chunked.h"
#include "net/reqhead.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t count(const char *s, const char *sub)
{
	size_t n = 0;
	for (const char *p = s; (p = strstr(p, sub)); p += strlen(sub))
		n++;
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size heap copy, so a sanitizer sees any overread. */
	char *p = malloc(size ? size : 1);
	memcpy(p, data, size);
	struct net_reqhead h;
	struct err e = { 0 };
	int r = net_reqhead_parse(p, size, &h, &e);
	if (r == 0) {
		if (h.head_len > size || h.head_len > NET_REQHEAD_MAX)
			abort();
		if (h.kind == NET_REQ_FORWARD) {
			const char *u = h.upstream.data;
			if (!u || count(u, "\r\nHost: ") != 1 || count(u, "\r\nConnection: close\r\n\r\n") != 1)
				abort();
			for (size_t i = 0; i < h.upstream.len; i++)
				if ((u[i] == '\r' && u[i + 1] != '\n') || (u[i] == '\n' && (!i || u[i - 1] != '\r')) || !u[i])
					abort();
		}
		if (h.body == NET_BODY_CHUNKED) {
			struct net_chunked c;
			struct buf out;
			buf_init(&out, 1 << 20);
			net_chunked_init(&c);
			size_t used = 0;
			int cr = net_chunked_feed(&c, p + h.head_len, size - h.head_len, &out, &used);
			if (used > size - h.head_len || (cr == 1 && out.len < 5))
				abort();
			buf_free(&out);
		}
		net_reqhead_free(&h);
	} else if (r != -EAGAIN && r != -EBADMSG && r != -EMSGSIZE) {
		abort();
	}
	free(p);
	return 0;
}

#include "replay.h"
