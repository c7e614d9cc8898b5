/* One HTTP client over libcurl's multi interface, driven by the caller's
 * event loop: curl's sockets are registered in the loop, its timers become
 * the deadline the loop waits for. Limits: connect, idle (no bytes for a
 * while), total, response size. Redirects are off. Header values are never
 * logged (the API key travels in one). A request may go through an HTTP
 * proxy that the caller dials (a box's egress proxy). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct loop;
struct http;
struct http_req;

struct http_opts {
	int64_t connect_ms;	/* 0: 10 s */
	int64_t idle_ms;	/* no byte for this long ends it; 0: none */
	int64_t total_ms;	/* 0: none */
	size_t max_body;	/* 0: 64 MiB */
	const char *method;	/* NULL: GET, or POST with a body */
	/* Through an HTTP proxy on the stream socket dial returns (connected;
	 * or -errno, and why in msg): a CONNECT tunnel for https, a proxied
	 * request for http. The proxy's refusal of a CONNECT ends the request
	 * HTTP_CONNECT with the proxy's status line in msg. NULL: direct. */
	int (*dial)(void *ud, char *msg, size_t cap);
	void *dial_ud;
};

enum http_fail {
	HTTP_OK,		/* a whole response (any status) */
	HTTP_CONNECT,		/* could not connect (refused, DNS, connect limit) */
	HTTP_IDLE,		/* the idle limit fired */
	HTTP_TIMEOUT,		/* the total limit fired */
	HTTP_TOO_BIG,		/* the response passed max_body */
	HTTP_STOPPED,		/* a callback asked to stop */
	HTTP_NET,		/* cut mid-response or another transfer error */
};
const char *http_fail_name(enum http_fail f);

struct http_result {
	enum http_fail fail;
	long status;		/* 0 when none arrived */
	char reason[320];	/* the status line's reason phrase */
	char content_type[128];
	int64_t retry_after_ms;	/* from retry-after-ms or retry-after; -1 none */
	int should_retry;	/* x-should-retry: 1 true, 0 false, -1 absent */
	char request_id[128];
	size_t body_bytes;
	char msg[256];		/* what went wrong, for a person */
};

struct http_cbs {
	/* Status and headers are in; before the first body byte (or at the
	 * end of an empty body). Return <0 to stop the transfer. */
	int (*on_head)(void *ud, const struct http_result *head);
	/* Each header of the response (the value trimmed), before on_head;
	 * NULL: not wanted. */
	void (*on_header)(void *ud, const char *name, size_t name_len, const char *value, size_t value_len);
	/* Body bytes as they arrive. Return <0 to stop. */
	int (*on_data)(void *ud, const char *p, size_t n);
	/* Always called once, unless the request is aborted first. */
	void (*on_done)(void *ud, const struct http_result *r);
};

int http_new(struct http **ret, struct loop *l);
void http_free(struct http *h);
/* headers: NULL-terminated "Name: value" strings. body may be NULL (GET). */
int http_start(struct http *h, const char *url, const char *const *headers, const char *body, size_t len,
	       const struct http_opts *o, const struct http_cbs *cbs, void *ud, struct http_req **ret);
/* Stop a transfer at once; its on_done is not called. Not from the
 * transfer's own callbacks: return <0 there instead. */
void http_abort(struct http_req *r);
/* When the loop must call http_tick next (monotonic ms), or -1. */
int64_t http_deadline(struct http *h);
/* Run curl's timers and the idle and total limits. */
void http_tick(struct http *h);
