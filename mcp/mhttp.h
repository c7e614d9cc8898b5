/* The MCP client's streamable HTTP transport (mhttp.c). Not for callers:
 * they see mcp.h. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A hub is one event loop and
 * one HTTP client for all of a run's HTTP servers; its fd is watched by the
 * run's loop (mhub_io when readable, mhub_tick at mhub_deadline). Every
 * callback comes from mhub_drain (called by both), never from inside curl,
 * so a callback may send, drop and reset freely. */
struct err;
struct mhub;
struct mhttp;

struct mhttp_cbs {
	/* A connection to the proxy every request goes through (the box's
	 * egress proxy): a connected stream socket, or -errno with why. */
	int (*dial)(void *ud, char *msg, size_t cap);
	/* One message's JSON text as it came (an object or a batch). */
	void (*message)(void *ud, const char *p, size_t n);
	/* The POST of request rpc ended without its answer, and why. */
	void (*failed)(void *ud, int64_t rpc, const char *why);
	/* The server answered 404 to the session: it is gone. */
	void (*expired)(void *ud);
	/* A line for the person. */
	void (*note)(void *ud, const char *line);
};

int mhub_new(struct mhub **ret, struct err *e);
void mhub_free(struct mhub *b);
int mhub_fd(const struct mhub *b);
void mhub_io(struct mhub *b);
void mhub_drain(struct mhub *b);
int64_t mhub_deadline(const struct mhub *b);
void mhub_tick(struct mhub *b);
/* Drive it until nothing of it is going (the sessions' DELETEs) or until
 * (monotonic ms), whichever is first. */
void mhub_close(struct mhub *b, int64_t until);

/* headers: the server's own ("Name: value", NULL-terminated; they must
 * outlive it). */
int mhttp_new(struct mhub *b, const char *url, char *const *headers, const struct mhttp_cbs *c, void *ud,
	      struct mhttp **ret);
/* rpc: the id of the request json is, or 0 (a notification, an answer).
 * then (or NULL): called (with the server's ud) when the POST has ended,
 * for what must not overtake it: each POST is a request of its own, and a
 * server may take two in either order. */
int mhttp_post(struct mhttp *h, const char *json, size_t n, int64_t rpc, void (*then)(void *ud));
/* initialize is done: later requests carry the protocol version, and the
 * GET stream is opened. */
void mhttp_ready(struct mhttp *h, const char *proto);
/* The POST carrying rpc is closed (after its cancel). */
void mhttp_drop(struct mhttp *h, int64_t rpc);
/* Everything of the session ends (the server gets a DELETE for it); the
 * next POST starts afresh. */
void mhttp_reset(struct mhttp *h);
void mhttp_free(struct mhttp *h);
