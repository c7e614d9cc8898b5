#include "base/buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(struct buf *b, size_t cap)
{
	*b = (struct buf){ .cap = cap };
}

void buf_free(struct buf *b)
{
	free(b->data);
	*b = (struct buf){ .cap = b->cap };
}

static int buf_reserve(struct buf *b, size_t n)
{
	if (n > b->cap || b->len + n > b->cap)
		return -ENOBUFS;
	size_t need = b->len + n + 1;
	if (need <= b->alloc)
		return 0;
	size_t a = b->alloc ? b->alloc : 256;
	while (a < need)
		a *= 2;
	if (a > b->cap + 1)
		a = b->cap + 1;
	char *d = realloc(b->data, a);
	if (!d)
		return -ENOMEM;
	b->data = d;
	b->alloc = a;
	return 0;
}

int buf_append(struct buf *b, const void *p, size_t n)
{
	int r = buf_reserve(b, n);
	if (r < 0)
		return r;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = 0;
	return 0;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	int r = buf_reserve(b, (size_t)n);
	if (r < 0)
		return r;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void buf_consume(struct buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
}

int buf_cstr(struct buf *b)
{
	int r = buf_reserve(b, 0);
	if (r < 0)
		return r;
	b->data[b->len] = 0;
	return 0;
}

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
