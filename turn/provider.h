/* Model providers. The conversation is kept in one shape, Anthropic's
 * content blocks (text, thinking, redacted_thinking, tool_use, tool_result),
 * and each provider translates it into its request and assembles its stream
 * back into one assistant message of the same shape. A provider may keep
 * blocks of its own (openai-responses: reasoning); every request builder
 * skips the block types it does not know, so a conversation stays sendable
 * by any provider.
 *
 * A block may carry "_ward_error" (a string) set by an assembler: that
 * tool_use must not run (its input was cut or was not JSON); request
 * builders never send keys that start with "_ward". */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "http/sse.h"
#include "turn/usage.h"

enum stop_reason {
	STOP_NONE,		/* the stream ended without saying */
	STOP_END_TURN,
	STOP_TOOL_USE,
	STOP_MAX_TOKENS,
	STOP_STOP_SEQUENCE,
	STOP_PAUSE_TURN,
	STOP_REFUSAL,
	STOP_OTHER,
};
const char *stop_reason_name(enum stop_reason s);


/* What the assembler reports while the stream runs. Any may be NULL. */
struct stream_sink {
	void *ud;
	void (*text)(void *ud, const char *p, size_t n);
	void (*thinking)(void *ud, const char *p, size_t n);
	void (*tool_begin)(void *ud, const char *id, const char *name);
};

/* One assembled assistant message. */
struct reply {
	cJSON *content;		/* array of blocks; owned */
	enum stop_reason stop;
	char stop_raw[64];
	struct usage usage;
	bool complete;		/* the stream said it was done */
	bool error;		/* an error event arrived */
	char error_type[64];
	char error_msg[512];
	char id[128], model[128];
};
void reply_free(struct reply *r);

struct provider_cfg {
	const char *base_url;	/* NULL: the provider's */
	const char *api_key;	/* may be NULL (replay, local servers) */
	const char *model;
	int max_tokens;
	/* Prompt caching (Anthropic): "5m", "1h", or NULL for none. */
	const char *cache_ttl;
};

struct provider_req {
	const char *system;
	const cJSON *tools;	/* array of {name, description, input_schema} */
	const cJSON *messages;	/* the conversation */
	int max_tokens;
};

#define PROVIDER_HEADERS_MAX 8
struct http_call {
	char url[1024];
	char *headers[PROVIDER_HEADERS_MAX + 1];	/* NULL-terminated; owned */
	char *body;		/* owned */
	size_t body_len;
};
void http_call_free(struct http_call *c);

struct stream;

struct provider {
	const char *name;
	const char *key_env;		/* the variable the key comes from; NULL: none needed */
	const char *default_base;
	int (*request)(const struct provider_cfg *c, const struct provider_req *q, struct http_call *out,
		       struct err *e);
	struct stream *(*stream_new)(const struct stream_sink *sink);
	/* One SSE event. <0 with e set: the stream is not what it should be. */
	int (*stream_event)(struct stream *s, const struct sse_event *ev, struct err *e);
	/* The stream ended (or was cut): hand over the message so far. */
	void (*stream_end)(struct stream *s, struct reply *out);
	void (*stream_free)(struct stream *s);
	/* A non-2xx body: the provider's error message, one line. */
	void (*error_text)(const char *body, size_t n, char *out, size_t cap);
};

extern const struct provider provider_anthropic, provider_openai, provider_openai_responses;
const struct provider *provider_find(const char *name);

/* Helpers shared by the providers (provider.c). */
char *provider_header(const char *name, const char *value);
/* base (trailing slashes dropped) + path. */
void provider_url(struct http_call *out, const char *base, const char *path);
/* The reply's id and model, from the first object that names them. */
void provider_reply_meta(struct reply *r, const cJSON *o);
/* An OpenAI-style usage object (NULL: nothing): its prompt count (key
 * in) holds the cached tokens too (details.cached_tokens), so input is the
 * rest (turn/usage.h). */
void provider_openai_usage(struct usage *u, const cJSON *o, const char *in, const char *out, const char *details);
/* A user message of one text block: {"role": "user", "content": [{"type":
 * "text", "text": text}]} (a new object, the caller's). */
cJSON *provider_user_text(const char *text);
/* Body b (JSON, consumed) and the first headers (content-type, accept
 * text/event-stream): how many were set, or <0 with e. */
int provider_json_body(struct http_call *out, cJSON *b, struct err *e);
/* An OpenAI-style request: body b (JSON, consumed), content-type, accept
 * text/event-stream, and the key (NULL: none) as a Bearer token. */
int provider_bearer_request(struct http_call *out, cJSON *b, const char *api_key, struct err *e);
/* The first n headers were all allocated. */
int provider_headers_ok(const struct http_call *out, int n, struct err *e);
/* A copy of a block without "_ward" keys. */
cJSON *provider_clean_block(const cJSON *b);
/* Parse a tool call's accumulated arguments: empty means {}; text that is
 * not one unambiguous JSON object (base/jsonstrict.h: a key twice, bytes
 * that are not UTF-8, a number a double does not hold, ...) gives NULL and
 * a message saying what and where. why needs PROVIDER_WHY_MAX bytes. */
#define PROVIDER_WHY_MAX 600
cJSON *provider_parse_input(const char *json, size_t n, char *why, size_t cap);
/* A tool_result's content as one string: a string, or its text blocks
 * joined; NULL if out of memory. */
char *provider_result_text(const cJSON *blk);
void provider_error_json(const char *body, size_t n, char *out, size_t cap);
