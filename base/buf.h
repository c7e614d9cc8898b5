/* A growable byte buffer with a ceiling; growing past it is an error. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

struct buf {
	char *data;
	size_t len, alloc, cap;
};

void buf_init(struct buf *b, size_t cap);
void buf_free(struct buf *b);
/* Append; -ENOBUFS if the ceiling would be passed (nothing is appended). */
int buf_append(struct buf *b, const void *p, size_t n);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Drop n bytes from the front. */
void buf_consume(struct buf *b, size_t n);
/* NUL-terminate (not counted in len). */
int buf_cstr(struct buf *b);
