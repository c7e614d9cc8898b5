/* JSON-RPC 2.0 over a pair of fds, one message a line (ACP's stdio
 * transport): lines read with a ceiling and each checked as a message
 * before it is handed on; messages written whole, each on its line. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/buf.h"

/* JSON-RPC's error codes. */
enum {
	RPC_PARSE = -32700,
	RPC_INVALID = -32600,
	RPC_NO_METHOD = -32601,
	RPC_PARAMS = -32602,
	RPC_INTERNAL = -32603,
};

/* A message that passed the envelope's checks: a request (id and
 * method), a notification (method, no id) or a response (id, no method,
 * a result or an error). params: an object, or NULL. */
struct rpc_msg {
	const cJSON *m, *id, *params;
	const char *method;
};

struct rpc {
	int in, out;		/* out < 0: the reader is gone */
	struct buf line;	/* in's bytes not yet a whole line */
	bool skipping;		/* in a line past the ceiling */
	bool eof;		/* in closed, or out broken */
	int64_t next_id;	/* of the requests this side sends */
	/* What the connection has to say (an error it answered, the reader
	 * gone), for the owner's log; NULL: nothing said. */
	void (*log)(void *ud, const char *line);
	void *log_ud;
};

void rpc_init(struct rpc *r, int in, int out, size_t line_max);
void rpc_free(struct rpc *r);
/* One read of in (readable, or the call waits), and each whole line taken
 * off the buffer and handled: a malformed one answered with an error, a
 * message passed to on_msg (which may read in again: a line is taken off
 * before it is handled). r->eof after EOF or a read error. */
void rpc_read(struct rpc *r, void (*on_msg)(void *ud, const struct rpc_msg *m), void *ud);
/* Each takes msg/result/params (may be NULL: an empty object). */
void rpc_reply(struct rpc *r, const cJSON *id, cJSON *result);
void rpc_error(struct rpc *r, const cJSON *id, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void rpc_notify(struct rpc *r, const char *method, cJSON *params);
/* A request of this side's: its id, for the response. */
int64_t rpc_request(struct rpc *r, const char *method, cJSON *params);
/* Whether m is the response to request id. */
bool rpc_is_response(const struct rpc_msg *m, int64_t id);
