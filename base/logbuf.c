#include "base/logbuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int logbuf_init(struct logbuf *l, size_t head, size_t tail)
{
	*l = (struct logbuf){ .head_cap = head, .ring_cap = tail };
	l->head = malloc(head ? head : 1);
	return l->head ? 0 : -ENOMEM;
}

void logbuf_free(struct logbuf *l)
{
	free(l->head);
	free(l->ring);
	*l = (struct logbuf){ 0 };
}

/* Offset o (>= head_cap) lives at ring[(o - head_cap) % ring_cap]. */
void logbuf_add(struct logbuf *l, const char *p, size_t n)
{
	if (l->head_len < l->head_cap) {
		size_t k = l->head_cap - l->head_len;
		if (k > n)
			k = n;
		memcpy(l->head + l->head_len, p, k);
		l->head_len += k;
		l->total += k;
		p += k;
		n -= k;
	}
	if (!n)
		return;
	if (!l->ring && l->ring_cap)
		l->ring = malloc(l->ring_cap);
	if (!l->ring) {
		l->total += n;
		return;
	}
	/* Only the last ring_cap bytes of this write can stay. */
	if (n > l->ring_cap) {
		l->total += n - l->ring_cap;
		p += n - l->ring_cap;
		n = l->ring_cap;
	}
	while (n) {
		size_t pos = (size_t)((l->total - l->head_cap) % l->ring_cap);
		size_t k = l->ring_cap - pos;
		if (k > n)
			k = n;
		memcpy(l->ring + pos, p, k);
		l->total += k;
		p += k;
		n -= k;
	}
}

uint64_t logbuf_tail_start(const struct logbuf *l)
{
	uint64_t held = l->ring ? l->ring_cap : 0;
	uint64_t past = l->total - l->head_len;
	return past > held ? l->total - held : l->head_len;
}

uint64_t logbuf_dropped(const struct logbuf *l)
{
	return logbuf_tail_start(l) - l->head_len;
}

size_t logbuf_read(const struct logbuf *l, uint64_t off, char *out, size_t max, uint64_t *ret_from)
{
	if (off > l->total)
		off = l->total;
	if (off >= l->head_len && off < logbuf_tail_start(l))
		off = logbuf_tail_start(l);
	*ret_from = off;
	size_t got = 0;
	uint64_t tail = logbuf_tail_start(l);
	while (got < max && off < l->total) {
		size_t k;
		/* A read stops where bytes were dropped: the next says so. */
		if (off >= l->head_len && off < tail)
			break;
		if (off < l->head_len) {
			k = (size_t)(l->head_len - off);
			if (k > max - got)
				k = max - got;
			memcpy(out + got, l->head + off, k);
		} else {
			size_t pos = (size_t)((off - l->head_cap) % l->ring_cap);
			k = l->ring_cap - pos;
			if (k > l->total - off)
				k = (size_t)(l->total - off);
			if (k > max - got)
				k = max - got;
			memcpy(out + got, l->ring + pos, k);
		}
		got += k;
		off += k;
	}
	return got;
}
