#pragma once
#include "base/buf.h"

#include <stdbool.h>
#include <stddef.h>

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
