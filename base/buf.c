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
