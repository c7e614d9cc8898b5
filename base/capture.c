#include "base/capture.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int capture_init(struct capture *c, size_t head, size_t tail)
{
	*c = (struct capture){ 0 };
	buf_init(&c->head, head);
	c->ring = malloc(tail ? tail : 1);
	if (!c->ring)
		return -ENOMEM;
	c->ring_cap = tail;
	return 0;
}

void capture_free(struct capture *c)
{
	buf_free(&c->head);
	free(c->ring);
	c->ring = NULL;
}

void capture_add(struct capture *c, const char *p, size_t n)
{
	c->total += n;
	size_t room = c->head.cap - c->head.len;
	size_t h = n < room ? n : room;
	if (h) {
		buf_append(&c->head, p, h);
		p += h;
		n -= h;
	}
	if (!c->ring_cap)
		return;
	if (n > c->ring_cap) {
		p += n - c->ring_cap;
		n = c->ring_cap;
	}
	while (n) {
		size_t chunk = c->ring_cap - c->ring_pos;
		if (chunk > n)
			chunk = n;
		memcpy(c->ring + c->ring_pos, p, chunk);
		c->ring_pos = (c->ring_pos + chunk) % c->ring_cap;
		c->ring_len = c->ring_len + chunk > c->ring_cap ? c->ring_cap : c->ring_len + chunk;
		p += chunk;
		n -= chunk;
	}
}

size_t capture_tail(const struct capture *c, char *out, size_t n)
{
	/* The tail of the whole stream: ring bytes, preceded by head bytes
	 * when the ring has not filled. */
	size_t have = c->ring_len + c->head.len;
	if (n > have)
		n = have;
	size_t from_ring = n < c->ring_len ? n : c->ring_len;
	size_t from_head = n - from_ring;
	if (from_head)
		memcpy(out, c->head.data + c->head.len - from_head, from_head);
	size_t start = (c->ring_pos + c->ring_cap - from_ring) % (c->ring_cap ? c->ring_cap : 1);
	for (size_t i = 0; i < from_ring; i++)
		out[from_head + i] = c->ring[(start + i) % c->ring_cap];
	return n;
}

bool capture_cut(const struct capture *c)
{
	return c->total > c->head.len + c->ring_len;
}
