/* A bounded log of an unbounded stream, read by offset: the first head
 * bytes and the last tail bytes are kept, what falls between is dropped and
 * counted. Offsets are of the whole stream, so a reader that comes back
 * with the offset it stopped at gets what came since, or is told how much
 * it missed. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct logbuf {
	char *head, *ring;
	size_t head_cap, ring_cap, head_len;
	uint64_t total;		/* bytes written, all of them */
};
/* The tail's ring is allocated when the head is full. */
int logbuf_init(struct logbuf *l, size_t head, size_t tail);
void logbuf_free(struct logbuf *l);
/* Past what memory allows the tail loses bytes, never the counts. */
void logbuf_add(struct logbuf *l, const char *p, size_t n);
/* The first offset past the head still held (== head_len when nothing
 * was dropped). */
uint64_t logbuf_tail_start(const struct logbuf *l);
/* Bytes dropped between the head and the tail. */
uint64_t logbuf_dropped(const struct logbuf *l);
/* Copy at most max bytes from offset off into out. *ret_from is where the
 * copy began: off, or the tail's start when off fell in what was dropped
 * (off past the end: the end). Returns the bytes copied. */
size_t logbuf_read(const struct logbuf *l, uint64_t off, char *out, size_t max, uint64_t *ret_from);
