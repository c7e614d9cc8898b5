/* Anthropic's Messages API, streaming. tool_use input arrives as
 * input_json_delta pieces, assembled and parsed once at the block's stop (an
 * empty input is {}); thinking and redacted_thinking blocks are kept as they
 * came, signature included, to be sent back unmodified.
 *
 * Prompt caching (cache_ttl set): three breakpoints of the four the API
 * allows: after the tools, after the system prompt, and a rolling one on
 * the last block of the last message, so each request reads the prefix the
 * one before it wrote and writes the new rounds once. */
#include "turn/provider.h"
#include "base/json.h"
#include "base/buf.h"
#include "base/cleanup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ANTHROPIC_VERSION "2023-06-01"
#define BLOCK_TEXT_MAX (16u << 20)

/* Mark a block as a cache breakpoint. */
static void cache_mark(cJSON *block, const char *ttl)
{
	cJSON *cc = cJSON_CreateObject();
	cJSON_AddStringToObject(cc, "type", "ephemeral");
	if (!strcmp(ttl, "1h"))
		cJSON_AddStringToObject(cc, "ttl", "1h");
	cJSON_AddItemToObject(block, "cache_control", cc);
}

/* The rolling breakpoint: the last block of the last message that can
 * carry one (not thinking, nor an empty text). */
static void cache_mark_last(cJSON *msgs, const char *ttl)
{
	cJSON *content = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1),
							  "content");
	for (int i = cJSON_GetArraySize(content) - 1; i >= 0; i--) {
		cJSON *b = cJSON_GetArrayItem(content, i);
		const char *type = json_str(b, "type");
		const char *text = json_str(b, "text");
		if (!type || !strcmp(type, "thinking") || !strcmp(type, "redacted_thinking") ||
		    (!strcmp(type, "text") && (!text || !*text)))
			continue;
		cache_mark(b, ttl);
		return;
	}
}

/* The block types the Messages API takes; others (openai-responses'
 * reasoning) are another provider's and are not sent. */
static bool block_known(const cJSON *b)
{
	static const char *const known[] = {
		"text", "image", "document", "search_result", "thinking", "redacted_thinking", "tool_use",
		"tool_result", "server_tool_use", "web_search_tool_result",
	};
	const char *t = json_str(b, "type");
	for (size_t i = 0; t && i < ARRAY_SIZE(known); i++)
		if (!strcmp(t, known[i]))
			return true;
	return false;
}

static int anthropic_request(const struct provider_cfg *c, const struct provider_req *q, struct http_call *out,
			     struct err *e)
{
	const char *ttl = c->cache_ttl;
	/* A base URL given with its /v1 (as OpenAI-style ones are) or without
	 * it: the same endpoint, never /v1/v1/messages. */
	const char *base = c->base_url ? c->base_url : provider_anthropic.default_base;
	size_t bl = strlen(base);
	while (bl && base[bl - 1] == '/')
		bl--;
	bool has_v1 = bl >= 3 && !strncmp(base + bl - 3, "/v1", 3);
	provider_url(out, base, has_v1 ? "/messages" : "/v1/messages");
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "model", c->model);
	cJSON_AddNumberToObject(b, "max_tokens", q->max_tokens > 0 ? q->max_tokens : c->max_tokens > 0 ? c->max_tokens : 8192);
	cJSON_AddBoolToObject(b, "stream", 1);
	if (q->system && *q->system) {
		cJSON *sys = cJSON_AddArrayToObject(b, "system");
		cJSON *t = cJSON_CreateObject();
		cJSON_AddStringToObject(t, "type", "text");
		cJSON_AddStringToObject(t, "text", q->system);
		if (ttl)
			cache_mark(t, ttl);
		cJSON_AddItemToArray(sys, t);
	}
	if (cJSON_GetArraySize(q->tools) > 0) {
		cJSON *tools = cJSON_Duplicate(q->tools, 1);
		/* One breakpoint after the last tool caches them all. */
		cJSON *last = cJSON_GetArrayItem(tools, cJSON_GetArraySize(tools) - 1);
		if (ttl)
			cache_mark(last, ttl);
		cJSON_AddItemToObject(b, "tools", tools);
	}
	cJSON *msgs = cJSON_AddArrayToObject(b, "messages");
	const cJSON *m;
	cJSON_ArrayForEach(m, q->messages) {
		cJSON *nm = cJSON_CreateObject();
		cJSON_AddItemToObject(nm, "role", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(m, "role"), 1));
		cJSON *content = cJSON_AddArrayToObject(nm, "content");
		const cJSON *blk;
		cJSON_ArrayForEach(blk, cJSON_GetObjectItemCaseSensitive(m, "content"))
			if (block_known(blk))
				cJSON_AddItemToArray(content, provider_clean_block(blk));
		/* A message left empty (only another provider's blocks) is
		 * dropped: the API takes no empty content, and joins the
		 * consecutive turns of one role this may leave. */
		if (cJSON_GetArraySize(content) == 0)
			cJSON_Delete(nm);
		else
			cJSON_AddItemToArray(msgs, nm);
	}
	if (ttl)
		cache_mark_last(msgs, ttl);
	int h = provider_json_body(out, b, e);
	if (h < 0)
		return h;
	out->headers[h++] = provider_header("anthropic-version", ANTHROPIC_VERSION);
	if (c->api_key)
		out->headers[h++] = provider_header("x-api-key", c->api_key);
	return provider_headers_ok(out, h, e);
}

struct ablock {
	cJSON *block;		/* as started */
	struct buf text;	/* text, thinking or the input JSON */
	struct buf sig;		/* thinking's signature */
	bool stopped;
};

struct stream {
	struct stream_sink sink;
	struct ablock *blocks;
	size_t n;
	struct reply r;
};

static struct stream *anthropic_stream_new(const struct stream_sink *sink)
{
	struct stream *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	if (sink)
		s->sink = *sink;
	return s;
}

static void usage_from(struct usage *u, const cJSON *j)
{
	if (!cJSON_IsObject(j))
		return;
	u->input = json_int(j, "input_tokens", u->input);
	u->output = json_int(j, "output_tokens", u->output);
	u->cache_read = json_int(j, "cache_read_input_tokens", u->cache_read);
	u->cache_write = json_int(j, "cache_creation_input_tokens", u->cache_write);
	/* How much of the write is kept for an hour (priced higher). */
	u->cache_write_1h = json_int(cJSON_GetObjectItemCaseSensitive(j, "cache_creation"), "ephemeral_1h_input_tokens",
				     u->cache_write_1h);
}

static enum stop_reason stop_from(const char *s)
{
	if (!s)
		return STOP_NONE;
	static const struct {
		const char *n;
		enum stop_reason r;
	} map[] = {
		{ "end_turn", STOP_END_TURN }, { "tool_use", STOP_TOOL_USE }, { "max_tokens", STOP_MAX_TOKENS },
		{ "stop_sequence", STOP_STOP_SEQUENCE }, { "pause_turn", STOP_PAUSE_TURN }, { "refusal", STOP_REFUSAL },
	};
	for (size_t i = 0; i < ARRAY_SIZE(map); i++)
		if (!strcmp(s, map[i].n))
			return map[i].r;
	return STOP_OTHER;
}

static struct ablock *block_at(struct stream *s, const cJSON *ev, struct err *e)
{
	int64_t i = json_int(ev, "index", -1);
	if (i < 0 || (size_t)i >= s->n || !s->blocks[i].block) {
		err_set(e, -EPROTO, "the stream named content block %lld before starting it", (long long)i);
		return NULL;
	}
	return &s->blocks[i];
}

static int anthropic_stream_event(struct stream *s, const struct sse_event *ev, struct err *e)
{
	cJSON *j = cJSON_ParseWithLength(ev->data, ev->data_len);
	if (!j)
		return err_set(e, -EPROTO, "a stream event (%.*s) is not JSON", (int)MIN(ev->type_len, 64), ev->type);
	const char *type = json_str(j, "type");
	if (!type)
		type = ev->type;
	int r = 0;
	if (!strcmp(type, "message_start")) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "message");
		const char *id = json_str(m, "id"), *model = json_str(m, "model");
		snprintf(s->r.id, sizeof(s->r.id), "%s", id ? id : "");
		snprintf(s->r.model, sizeof(s->r.model), "%s", model ? model : "");
		usage_from(&s->r.usage, cJSON_GetObjectItemCaseSensitive(m, "usage"));
	} else if (!strcmp(type, "content_block_start")) {
		int64_t i = json_int(j, "index", -1);
		const cJSON *cb = cJSON_GetObjectItemCaseSensitive(j, "content_block");
		if (i < 0 || i > 4096 || !cJSON_IsObject(cb)) {
			r = err_set(e, -EPROTO, "a content block start without an index or a block");
		} else {
			if ((size_t)i >= s->n) {
				struct ablock *nb = realloc(s->blocks, (size_t)(i + 1) * sizeof(*nb));
				if (!nb) {
					cJSON_Delete(j);
					return err_set(e, -ENOMEM, "out of memory");
				}
				memset(nb + s->n, 0, ((size_t)i + 1 - s->n) * sizeof(*nb));
				s->blocks = nb;
				s->n = (size_t)i + 1;
			}
			struct ablock *b = &s->blocks[i];
			cJSON_Delete(b->block);
			buf_free(&b->text);
			buf_free(&b->sig);
			b->block = cJSON_Duplicate(cb, 1);
			b->stopped = false;
			buf_init(&b->text, BLOCK_TEXT_MAX);
			buf_init(&b->sig, 1 << 16);
			buf_append(&b->text, "", 0);
			buf_append(&b->sig, "", 0);
			const char *bt = json_str(cb, "type");
			/* A start may carry text already (it usually is ""). */
			const char *t0 = bt && !strcmp(bt, "text") ? json_str(cb, "text") : bt && !strcmp(bt, "thinking") ? json_str(cb, "thinking") : NULL;
			if (t0 && *t0) {
				buf_append(&b->text, t0, strlen(t0));
				if (!strcmp(bt, "text") && s->sink.text)
					s->sink.text(s->sink.ud, t0, strlen(t0));
			}
			if (bt && !strcmp(bt, "tool_use") && s->sink.tool_begin)
				s->sink.tool_begin(s->sink.ud, json_str(cb, "id") ? json_str(cb, "id") : "", json_str(cb, "name") ? json_str(cb, "name") : "");
		}
	} else if (!strcmp(type, "content_block_delta")) {
		struct ablock *b = block_at(s, j, e);
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(j, "delta");
		const char *dt = json_str(d, "type");
		if (!b) {
			r = -EPROTO;
		} else if (!dt) {
			r = err_set(e, -EPROTO, "a content block delta without a type");
		} else if (!strcmp(dt, "text_delta") && json_str(d, "text")) {
			const char *t = json_str(d, "text");
			if (buf_append(&b->text, t, strlen(t)) < 0)
				r = err_set(e, -EMSGSIZE, "a text block passed %u MiB", BLOCK_TEXT_MAX >> 20);
			else if (s->sink.text)
				s->sink.text(s->sink.ud, t, strlen(t));
		} else if (!strcmp(dt, "thinking_delta") && json_str(d, "thinking")) {
			const char *t = json_str(d, "thinking");
			if (buf_append(&b->text, t, strlen(t)) < 0)
				r = err_set(e, -EMSGSIZE, "a thinking block passed %u MiB", BLOCK_TEXT_MAX >> 20);
			else if (s->sink.thinking)
				s->sink.thinking(s->sink.ud, t, strlen(t));
		} else if (!strcmp(dt, "signature_delta") && json_str(d, "signature")) {
			const char *t = json_str(d, "signature");
			if (buf_append(&b->sig, t, strlen(t)) < 0)
				r = err_set(e, -EMSGSIZE, "a thinking signature is too long");
		} else if (!strcmp(dt, "input_json_delta") && json_str(d, "partial_json")) {
			const char *t = json_str(d, "partial_json");
			if (buf_append(&b->text, t, strlen(t)) < 0)
				r = err_set(e, -EMSGSIZE, "a tool call's input passed %u MiB", BLOCK_TEXT_MAX >> 20);
		}
		/* Other deltas (citations, ...) are kept by the block as started. */
	} else if (!strcmp(type, "content_block_stop")) {
		struct ablock *b = block_at(s, j, e);
		if (!b)
			r = -EPROTO;
		else
			b->stopped = true;
	} else if (!strcmp(type, "message_delta")) {
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(j, "delta");
		const char *sr = json_str(d, "stop_reason");
		if (sr) {
			s->r.stop = stop_from(sr);
			snprintf(s->r.stop_raw, sizeof(s->r.stop_raw), "%s", sr);
		}
		usage_from(&s->r.usage, cJSON_GetObjectItemCaseSensitive(j, "usage"));
	} else if (!strcmp(type, "message_stop")) {
		s->r.complete = true;
	} else if (!strcmp(type, "error")) {
		const cJSON *er = cJSON_GetObjectItemCaseSensitive(j, "error");
		const char *et = json_str(er, "type"), *em = json_str(er, "message");
		s->r.error = true;
		snprintf(s->r.error_type, sizeof(s->r.error_type), "%s", et ? et : "error");
		snprintf(s->r.error_msg, sizeof(s->r.error_msg), "%s", em ? em : "the stream reported an error");
	}
	/* ping and unknown events: nothing to do. */
	cJSON_Delete(j);
	return r;
}

static void anthropic_stream_end(struct stream *s, struct reply *out)
{
	cJSON *content = cJSON_CreateArray();
	bool cut_by_limit = s->r.stop == STOP_MAX_TOKENS;
	for (size_t i = 0; i < s->n; i++) {
		struct ablock *b = &s->blocks[i];
		if (!b->block)
			continue;
		cJSON *blk = TAKE_PTR(b->block);
		const char *bt = json_str(blk, "type");
		if (bt && !strcmp(bt, "text")) {
			cJSON_DeleteItemFromObject(blk, "text");
			cJSON_AddStringToObject(blk, "text", b->text.data ? b->text.data : "");
		} else if (bt && !strcmp(bt, "thinking")) {
			cJSON_DeleteItemFromObject(blk, "thinking");
			cJSON_AddStringToObject(blk, "thinking", b->text.data ? b->text.data : "");
			if (b->sig.len) {
				cJSON_DeleteItemFromObject(blk, "signature");
				cJSON_AddStringToObject(blk, "signature", b->sig.data);
			}
		} else if (bt && !strcmp(bt, "tool_use")) {
			char why[PROVIDER_WHY_MAX] = "";
			cJSON *input = NULL;
			if (!b->stopped)
				snprintf(why, sizeof(why), "the stream ended while this call was being written");
			else
				input = provider_parse_input(b->text.data ? b->text.data : "", b->text.len, why, sizeof(why));
			if (!input)
				input = cJSON_CreateObject();
			if (cut_by_limit && !why[0])
				snprintf(why, sizeof(why), "the response hit max_tokens; this call may be incomplete");
			/* A block of its own, not the stream's object: that one was
			 * read leniently and could hold a key twice ("name"), which
			 * ward would read first and a reader of the journal last. */
			cJSON *own = cJSON_CreateObject();
			cJSON_AddStringToObject(own, "type", "tool_use");
			cJSON_AddStringToObject(own, "id", json_str(blk, "id") ? json_str(blk, "id") : "");
			cJSON_AddStringToObject(own, "name", json_str(blk, "name") ? json_str(blk, "name") : "");
			cJSON_Delete(blk);
			blk = own;
			cJSON_AddItemToObject(blk, "input", input);
			if (why[0])
				cJSON_AddStringToObject(blk, "_ward_error", why);
		}
		cJSON_AddItemToArray(content, blk);
	}
	*out = s->r;
	out->content = content;
	s->r = (struct reply){ 0 };
}

static void anthropic_stream_free(struct stream *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		cJSON_Delete(s->blocks[i].block);
		buf_free(&s->blocks[i].text);
		buf_free(&s->blocks[i].sig);
	}
	free(s->blocks);
	reply_free(&s->r);
	free(s);
}

const struct provider provider_anthropic = {
	.name = "anthropic",
	.key_env = "ANTHROPIC_API_KEY",
	.default_base = "https://api.anthropic.com",
	.request = anthropic_request,
	.stream_new = anthropic_stream_new,
	.stream_event = anthropic_stream_event,
	.stream_end = anthropic_stream_end,
	.stream_free = anthropic_stream_free,
	.error_text = provider_error_json,
};
