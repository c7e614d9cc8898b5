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

/* Head-and-tail capture of an unbounded stream: the first head bytes and the
 * last tail bytes are kept, and the total is counted. */
struct capture {
	struct buf head;
	char *ring;
	size_t ring_cap, ring_pos, ring_len;
	unsigned long long total;
};
int capture_init(struct capture *c, size_t head, size_t tail);
void capture_free(struct capture *c);
void capture_add(struct capture *c, const char *p, size_t n);
/* The last n bytes seen (at most the tail size), copied into out. Returns length. */
size_t capture_tail(const struct capture *c, char *out, size_t n);
bool capture_cut(const struct capture *c);
