/* What the MCP client's files share. Not for callers: they see mcp.h. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/capture.h"
#include "mcp/mcp.h"
#include "mcp/mhttp.h"

/* The client's state, shared by mcp.c (the API), mcp-srv.c (each server's
 * life, what is written to it, the calls) and mcp-read.c (what a server
 * says). */

/* A server's call lives as long as the box: it is bounded by the box's TTL
 * and the task's end, not by a limit of its own. */
#define MCP_SERVER_LIMIT_MS (30LL * 24 * 3600 * 1000)
#define MCP_TOOL_NAME_MAX 64
#define MCP_DESC_MAX 4096
/* How long answered calls wait for a list asked again after list_changed. */
#define MCP_RELIST_MS 5000

enum srv_state {
	ST_OFF,		/* not running: between an exit and the restart */
	ST_INIT,	/* initialize sent */
	ST_LIST,	/* initialized; listing the tools */
	ST_READY,
	ST_KILLING,	/* stopped on purpose, to be started again */
	ST_DOWN,	/* given up: its tools are unavailable */
};

enum rpc_kind { RPC_INIT, RPC_LIST, RPC_CALL, RPC_PING };

struct mcall {
	uint32_t id;
	struct srv *s;
	char name[MCP_TOOL_NAME_MAX + 1];	/* the model's */
	char tool[256];				/* the server's */
	cJSON *input;
	int64_t rpc;		/* 0: waiting for the server to be ready */
	/* Answered while the server's tools were being listed again: held
	 * until the list is in, so that the model's next request offers what
	 * the call made available (a tool's list_changed comes before its
	 * answer). */
	cJSON *held;
	int64_t limit_ms, start_ms, deadline_ms;
	mcp_done_fn *done;
	void *ud;
	struct mcall *next;
};

struct rpc {
	int64_t id;
	enum rpc_kind kind;
	int64_t deadline_ms;	/* 0: none of its own */
	struct rpc *next;
};

struct mtool {
	char name[MCP_TOOL_NAME_MAX + 1];
	const cJSON *def;	/* in srv.tools */
	bool readonly;
};

struct srv {
	struct mcp *m;
	struct mcp_server_cfg cfg;
	enum srv_state state;
	char why[600];
	bool live;		/* its box call is running (HTTP: a session is being made or held) */
	struct mhttp *http;	/* HTTP: its transport */
	uint32_t box_id;
	int restarts;
	int64_t next_id;
	int64_t ready_by;	/* start-up deadline */
	struct rpc *rpcs;
	char proto[32];
	char info[160];		/* serverInfo name and version */
	cJSON *tools;		/* the last complete list */
	struct mtool *mt;
	size_t nmt;
	cJSON *acc;		/* pages of the list in progress */
	int pages;
	bool relist;		/* list_changed came while listing */
	struct buf line;
	bool overlong;
	unsigned garbage;
	char garbage_first[120];
	struct capture err;	/* the tail of its stderr */
	int64_t ping_rpc, ping_by;	/* after a cancel: the server must answer by then */
};

struct mcp {
	struct box_conn *c;
	struct srv *v;
	size_t n;
	mcp_note_fn *note;
	void *ud;
	unsigned gen;
	uint32_t next_call;
	struct mcall *calls;
	bool freeing;
	struct mhub *hub;	/* the HTTP servers' loop and client, or NULL */
};

/* A line for the person (the callback mcp_new was given). */
void mcp_note(struct mcp *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* mcp-srv.c: a server's life. Start it (a box call, or an HTTP session);
 * stop its process; give up on it (its tools unavailable, why said);
 * restart it on purpose (its calls in flight fail with why; waiting ones
 * wait); it went away on its own (lost: the box's connection with it). */
void mcp_srv_start(struct srv *s);
void mcp_srv_kill(struct srv *s);
void mcp_srv_down(struct srv *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mcp_srv_restart(struct srv *s, const char *why);
void mcp_srv_lost(struct srv *s, const char *how, bool lost);
/* Its requests in flight, forgotten. */
void mcp_srv_clear_rpcs(struct srv *s);
/* What the server's stderr said last, as one short clause. */
void mcp_srv_err_tail(const struct srv *s, char *out, size_t cap);
/* Write msg (taken) to the server: rpc is the id when msg is a request of
 * ours (HTTP carries its answer on the POST's response), else 0; then (may
 * be NULL) runs once it is sent. */
int mcp_srv_send_then(struct srv *s, cJSON *msg, int64_t rpc, void (*then)(void *ud));
int mcp_srv_send(struct srv *s, cJSON *msg, int64_t rpc);
/* A request (params taken), answered by deadline (0: none of its own):
 * its id, or -1. */
int64_t mcp_srv_request(struct srv *s, enum rpc_kind kind, const char *method, cJSON *params, int64_t deadline);
void mcp_srv_notify(struct srv *s, const char *method, cJSON *params);
/* The request of ours that id answers, taken off the list; NULL none. */
struct rpc *mcp_srv_rpc_take(struct srv *s, int64_t id);
/* Calls: freed; sent to the server; ended with result (taken) through
 * their owner's callback; the held ones delivered (the list is in); the
 * waiting ones sent (the server is ready). */
void mcp_srv_call_free(struct mcall *c);
void mcp_srv_call_send(struct mcall *c);
void mcp_srv_call_end(struct mcp *m, struct mcall *c, cJSON *result);
void mcp_srv_deliver_held(struct srv *s);
void mcp_srv_send_waiting(struct srv *s);

/* mcp-read.c: what a server says, from its box call's stdout and stderr,
 * and over HTTP (mhttp.c's callbacks). */
void mcp_read_out(void *ud, uint32_t id, const char *p, size_t n);
void mcp_read_err(void *ud, uint32_t id, const char *p, size_t n);
extern const struct mhttp_cbs mcp_read_http;

/* A tools/call result as a box call's result: {outcome ("ok", or "failed"
 * for isError), text (every content block as text, images described,
 * structuredContent as JSON where no text came; capped at MCP_TEXT_HEAD
 * and MCP_TEXT_TAIL with the cap named), images? [{media_type, data}],
 * structured?, output_bytes, truncated, elapsed_ms}. */
cJSON *mcp_result(const cJSON *res, const char *server, int64_t elapsed_ms);
