/* Server-sent events, byte-oriented (the WHATWG event-stream rules): lines
 * end in CR, LF or CRLF, and any of them may be split across reads (a CR at
 * the end of one read and an LF at the start of the next are one line end);
 * a leading BOM is dropped; comments (":...") are skipped; "data" lines join
 * with LF; an event without data is not dispatched; an event left without
 * its blank line at the end of the stream is discarded (sse_finish says so).
 * Bytes pass through unchanged, so UTF-8 split across reads arrives whole. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

struct sse_event {
	const char *type;	/* "message" when the stream named none */
	size_t type_len;
	const char *data;	/* NUL-terminated; may hold NULs of its own */
	size_t data_len;
	const char *id;		/* last event id seen so far ("" if none) */
};

/* Return <0 to stop the parse; sse_feed returns it. */
typedef int sse_event_cb(void *ud, const struct sse_event *ev);

struct sse {
	sse_event_cb *cb;
	void *ud;
	struct buf line;	/* a line split across reads */
	struct buf data;
	struct buf type;
	char id[256];
	int64_t retry_ms;	/* -1 until the stream sets one */
	size_t seen;		/* bytes fed */
	bool cr;		/* the last byte fed was a CR */
	bool pending;		/* fields seen since the last dispatch */
	uint8_t bom;		/* bytes of a leading BOM matched so far; 3 = done */
	char bom_held[3];
};

/* max_event: the most bytes one event (or one line) may hold. */
void sse_init(struct sse *p, size_t max_event, sse_event_cb *cb, void *ud);
void sse_free(struct sse *p);
/* 0, a callback's negative return, or -EMSGSIZE past max_event. */
int sse_feed(struct sse *p, const void *bytes, size_t n);
/* End of stream: 0, or -ENODATA when an event was begun and never ended
 * (the stream was cut mid-event; that event is dropped). */
int sse_finish(struct sse *p);
