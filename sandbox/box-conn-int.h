/* What ward's side of a box's keeper shares between its files
 * (box-conn.c: the connection and its calls; box-request.c: the requests
 * answered once: info, hibernate, wake, claim, destroy). */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "proto/budget.h"
#include "proto/proto.h"
#include "sandbox/box.h"

/* Frames waiting for the keeper: a few calls' worth (a CALL is at most
 * PROTO_MAX_PAYLOAD). Past it a call is refused, not queued. */
#define BOX_CONN_QUEUE (8u * PROTO_MAX_PAYLOAD)

struct box_pending {
	uint32_t id;
	struct budget b;
	int64_t start_ms, cancel_ms, deadline;
	struct box_call_cbs cbs;
	void *ud;
	bool input, in_closed;
	struct box_pending *next;
};

struct box_conn {
	int fd;
	char name[BOX_NAME_MAX + 1];
	char boxdir[PATH_MAX];
	struct proto_reader rd;
	struct proto_writer wr;
	int64_t wr_progress_ms;	/* when the queue last shrank (or filled from empty) */
	uint32_t next_id;
	int64_t grace_ms;	/* the box's, from the keeper's hello */
	struct box_pending *pending;
	/* A request waiting for its reply (box_info): the frame is kept here. */
	uint8_t want_type;
	uint32_t want_id;
	cJSON *reply;
	bool dead;
	/* The keeper is busy waking, hibernating or moving the box to the
	 * store: since when (0: not). Its clocks for the calls start after,
	 * so theirs wait too. */
	int64_t busy_since;
	void (*ev_cb)(void *ud, cJSON *ev);
	void *ev_ud;
};

/* Another descriptor the wait watches for input, with what to do then. */
struct box_also {
	int fd;
	void (*on)(void *ud);
	void *ud;
};

/* Write what the queue holds that the socket takes now. */
void box_conn_flush(struct box_conn *c);
/* box-request.c: a request answered {ok, ...} or {error, code}, bounded
 * by ms; the error is the keeper's one line. */
int box_request_ok(struct box_conn *c, uint8_t type, const char *payload, int64_t ms, cJSON **ret, struct err *e);
/* Queue a frame for the keeper and write what goes now: 0, -ENOBUFS
 * past BOX_CONN_QUEUE, or -EMSGSIZE over a frame's maximum. */
int box_conn_queue(struct box_conn *c, uint8_t type, uint32_t id, const void *p, size_t n);
/* Drive the connection until done() or the deadline (<0: none; the calls'
 * own deadlines always apply). cancel_fd readable: cancel call id once;
 * also (may be NULL): another descriptor to watch. */
int box_conn_drive(struct box_conn *c, bool (*done)(void *), void *ud, int64_t until, int cancel_fd,
		   uint32_t cancel_id, const struct box_also *also);
