/* OpenAI's Responses API, streaming and stateless (store: false). The
 * conversation goes as input items: messages, function_call and
 * function_call_output items, and reasoning items sent back with the
 * encrypted content they came with (include reasoning.encrypted_content),
 * which a reasoning model needs to carry on after its tool calls.
 *
 * A reasoning item is kept in the conversation as a block
 * {"type":"reasoning","id","encrypted_content","summary"}; the other request
 * builders skip it. It is sent back without its id: with store false an id
 * names an item the server never kept, and the API answers "Item ... not
 * found"; the encrypted content carries it alone. One without encrypted
 * content is not sent at all, for the same reason.
 *
 * The stream is assembled by output_index. A function call runs only if
 * its output_item.done arrived (status completed); one cut by
 * max_output_tokens or by the end of the stream gets _ward_error. */
#include "turn/provider.h"
#include "base/json.h"
#include "base/buf.h"
#include "base/jsonprint.h"
#include "base/cleanup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RESP_TEXT_MAX (16u << 20)
#define RESP_ITEMS_MAX 1024

/* Models that refuse include reasoning.encrypted_content ("Encrypted
 * content is not supported with this model"): the ones that do not reason. */
static bool model_reasons(const char *m)
{
	static const char *const plain[] = { "gpt-4", "gpt-3", "chatgpt-" };
	for (size_t i = 0; i < ARRAY_SIZE(plain); i++)
		if (!strncmp(m, plain[i], strlen(plain[i])))
			return false;
	return !strstr(m, "-chat");
}

static cJSON *message_item(const char *role, const char *part_type, const char *text)
{
	cJSON *it = cJSON_CreateObject();
	cJSON_AddStringToObject(it, "type", "message");
	cJSON_AddStringToObject(it, "role", role);
	cJSON *parts = cJSON_AddArrayToObject(it, "content");
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "type", part_type);
	cJSON_AddStringToObject(p, "text", text);
	cJSON_AddItemToArray(parts, p);
	return it;
}

/* The items of one message of the conversation, in its blocks' order
 * (a reasoning item must come before the calls it led to). */
static void message_items(cJSON *input, const cJSON *m)
{
	const char *role = json_str(m, "role");
	bool assistant = role && !strcmp(role, "assistant");
	const cJSON *blk;
	cJSON_ArrayForEach(blk, cJSON_GetObjectItemCaseSensitive(m, "content")) {
		const char *bt = json_str(blk, "type");
		if (!bt)
			continue;
		if (!strcmp(bt, "text") && json_str(blk, "text")) {
			cJSON_AddItemToArray(input, message_item(assistant ? "assistant" : "user",
								 assistant ? "output_text" : "input_text",
								 json_str(blk, "text")));
		} else if (!strcmp(bt, "tool_use")) {
			cJSON *it = cJSON_CreateObject();
			cJSON_AddStringToObject(it, "type", "function_call");
			cJSON_AddStringToObject(it, "call_id", json_str(blk, "id") ? json_str(blk, "id") : "");
			cJSON_AddStringToObject(it, "name", json_str(blk, "name") ? json_str(blk, "name") : "");
			char *args = jsonprint_text(cJSON_GetObjectItemCaseSensitive(blk, "input"));
			cJSON_AddStringToObject(it, "arguments", args ? args : "{}");
			free(args);
			cJSON_AddItemToArray(input, it);
		} else if (!strcmp(bt, "tool_result")) {
			cJSON *it = cJSON_CreateObject();
			cJSON_AddStringToObject(it, "type", "function_call_output");
			cJSON_AddStringToObject(it, "call_id",
						json_str(blk, "tool_use_id") ? json_str(blk, "tool_use_id") : "");
			char *rt = provider_result_text(blk);
			cJSON_AddStringToObject(it, "output", rt ? rt : "");
			free(rt);
			cJSON_AddItemToArray(input, it);
		} else if (!strcmp(bt, "reasoning") && json_str(blk, "encrypted_content")) {
			cJSON *it = cJSON_CreateObject();
			cJSON_AddStringToObject(it, "type", "reasoning");
			const cJSON *sum = cJSON_GetObjectItemCaseSensitive(blk, "summary");
			cJSON_AddItemToObject(it, "summary",
					      cJSON_IsArray(sum) ? cJSON_Duplicate(sum, 1) : cJSON_CreateArray());
			cJSON_AddStringToObject(it, "encrypted_content", json_str(blk, "encrypted_content"));
			cJSON_AddItemToArray(input, it);
		}
		/* thinking and redacted_thinking are Anthropic's: not sent. */
	}
}

static int responses_request(const struct provider_cfg *c, const struct provider_req *q, struct http_call *out,
			     struct err *e)
{
	provider_url(out, c->base_url ? c->base_url : provider_openai_responses.default_base, "/responses");
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "model", c->model);
	if (q->system && *q->system)
		cJSON_AddStringToObject(b, "instructions", q->system);
	cJSON *input = cJSON_AddArrayToObject(b, "input");
	const cJSON *m;
	cJSON_ArrayForEach(m, q->messages)
		message_items(input, m);
	if (cJSON_GetArraySize(q->tools) > 0) {
		cJSON *tools = cJSON_AddArrayToObject(b, "tools");
		const cJSON *t;
		cJSON_ArrayForEach(t, q->tools) {
			cJSON *ft = cJSON_CreateObject();
			cJSON_AddStringToObject(ft, "type", "function");
			cJSON_AddStringToObject(ft, "name", json_str(t, "name") ? json_str(t, "name") : "");
			cJSON_AddStringToObject(ft, "description", json_str(t, "description") ? json_str(t, "description") : "");
			cJSON_AddItemToObject(ft, "parameters",
					      cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(t, "input_schema"), 1));
			cJSON_AddItemToArray(tools, ft);
		}
	}
	cJSON_AddBoolToObject(b, "stream", 1);
	int mt = q->max_tokens > 0 ? q->max_tokens : c->max_tokens;
	if (mt > 0)
		cJSON_AddNumberToObject(b, "max_output_tokens", mt);
	cJSON_AddBoolToObject(b, "store", 0);
	if (model_reasons(c->model ? c->model : ""))
		cJSON_AddItemToObject(b, "include", cJSON_Parse("[\"reasoning.encrypted_content\"]"));
	return provider_bearer_request(out, b, c->api_key, e);
}

/* One output item as it streams. */
struct ritem {
	char *type, *id;	/* NULL: no output_item.added yet */
	cJSON *item;		/* as added, then as output_item.done gave it */
	bool done;
	struct buf text;	/* a message's text or a call's arguments */
	int64_t summary_index;	/* the reasoning summary part being shown */
	bool streamed;		/* text came as deltas */
};

struct stream {
	struct stream_sink sink;
	struct ritem *items;
	size_t n;
	bool incomplete;	/* response.incomplete arrived */
	bool refused;		/* a refusal part arrived */
	struct reply r;
};

static struct stream *responses_stream_new(const struct stream_sink *sink)
{
	struct stream *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	if (sink)
		s->sink = *sink;
	return s;
}

/* The item at the event's output_index (made if new), or the one with its
 * item_id; NULL with e set if neither. */
static struct ritem *item_at(struct stream *s, const cJSON *j, struct err *e)
{
	int64_t i = json_int(j, "output_index", -1);
	const char *id = json_str(j, "item_id");
	if (i < 0 && id)
		for (size_t k = 0; k < s->n; k++)
			if (s->items[k].id && !strcmp(s->items[k].id, id))
				return &s->items[k];
	if (i < 0 || i >= RESP_ITEMS_MAX) {
		err_set(e, -EPROTO, "a stream event without a usable output_index (%lld)", (long long)i);
		return NULL;
	}
	if ((size_t)i >= s->n) {
		struct ritem *ni = realloc(s->items, (size_t)(i + 1) * sizeof(*ni));
		if (!ni) {
			err_set(e, -ENOMEM, "out of memory");
			return NULL;
		}
		memset(ni + s->n, 0, ((size_t)i + 1 - s->n) * sizeof(*ni));
		for (size_t k = s->n; k <= (size_t)i; k++) {
			buf_init(&ni[k].text, RESP_TEXT_MAX);
			buf_append(&ni[k].text, "", 0);
			ni[k].summary_index = -1;
		}
		s->items = ni;
		s->n = (size_t)i + 1;
	}
	return &s->items[i];
}

static void item_set(struct ritem *it, const cJSON *item)
{
	const char *t = json_str(item, "type"), *id = json_str(item, "id");
	if (t && !it->type)
		it->type = strdup(t);
	if (id && !it->id)
		it->id = strdup(id);
	cJSON_Delete(it->item);
	it->item = cJSON_Duplicate(item, 1);
}

static int text_add(struct stream *s, struct buf *b, const char *t, bool show, struct err *e)
{
	if (!t || !*t)
		return 0;
	if (buf_append(b, t, strlen(t)) < 0)
		return err_set(e, -EMSGSIZE, "an output item passed %u MiB", RESP_TEXT_MAX >> 20);
	if (show && s->sink.text)
		s->sink.text(s->sink.ud, t, strlen(t));
	return 0;
}

static void response_meta(struct stream *s, const cJSON *resp)
{
	provider_reply_meta(&s->r, resp);
	provider_openai_usage(&s->r.usage, cJSON_GetObjectItemCaseSensitive(resp, "usage"), "input_tokens",
			      "output_tokens", "input_tokens_details");
}

static void set_error(struct stream *s, const cJSON *err, const char *dflt_type)
{
	const char *t = json_str(err, "code");
	if (!t)
		t = json_str(err, "type");
	const char *m = json_str(err, "message");
	s->r.error = true;
	snprintf(s->r.error_type, sizeof(s->r.error_type), "%s", t && strcmp(t, "error") ? t : dflt_type);
	snprintf(s->r.error_msg, sizeof(s->r.error_msg), "%s", m ? m : "the stream reported an error");
}

/* An output_item.done: the item whole. A message's text not streamed as
 * deltas is taken (and shown) from it. */
static int item_done(struct stream *s, struct ritem *it, const cJSON *item, struct err *e)
{
	item_set(it, item);
	it->done = true;
	const cJSON *p;
	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(item, "content")) {
		const char *pt = json_str(p, "type");
		s->refused |= pt && !strcmp(pt, "refusal");
		if (it->type && !strcmp(it->type, "message") && !it->streamed) {
			const char *t = json_str(p, "text") ? json_str(p, "text") : json_str(p, "refusal");
			if (text_add(s, &it->text, t, true, e) < 0)
				return -EMSGSIZE;
		}
	}
	const char *args = json_str(item, "arguments");
	if (it->type && !strcmp(it->type, "function_call") && args) {
		it->text.len = 0;
		if (text_add(s, &it->text, args, false, e) < 0)
			return -EMSGSIZE;
	}
	return 0;
}

static int responses_stream_event(struct stream *s, const struct sse_event *ev, struct err *e)
{
	cJSON *j = cJSON_ParseWithLength(ev->data, ev->data_len);
	if (!j)
		return err_set(e, -EPROTO, "a stream event (%.*s) is not JSON", (int)MIN(ev->type_len, 64), ev->type);
	const char *type = json_str(j, "type");
	if (!type)
		type = ev->type;
	const cJSON *resp = cJSON_GetObjectItemCaseSensitive(j, "response");
	int r = 0;
	struct ritem *it = NULL;
	if (!strcmp(type, "response.created") || !strcmp(type, "response.in_progress")) {
		response_meta(s, resp);
	} else if (!strcmp(type, "response.output_item.added")) {
		const cJSON *item = cJSON_GetObjectItemCaseSensitive(j, "item");
		if (!(it = item_at(s, j, e))) {
			r = -EPROTO;
		} else {
			item_set(it, item);
			const char *t = json_str(item, "type");
			if (t && !strcmp(t, "function_call") && s->sink.tool_begin)
				s->sink.tool_begin(s->sink.ud, json_str(item, "call_id") ? json_str(item, "call_id") : "",
						   json_str(item, "name") ? json_str(item, "name") : "");
		}
	} else if (!strcmp(type, "response.output_text.delta") || !strcmp(type, "response.refusal.delta")) {
		if (!(it = item_at(s, j, e))) {
			r = -EPROTO;
		} else {
			it->streamed = true;
			r = text_add(s, &it->text, json_str(j, "delta"), true, e);
		}
		s->refused |= !strcmp(type, "response.refusal.delta");
	} else if (!strcmp(type, "response.function_call_arguments.delta")) {
		if (!(it = item_at(s, j, e)))
			r = -EPROTO;
		else
			r = text_add(s, &it->text, json_str(j, "delta"), false, e);
	} else if (!strcmp(type, "response.function_call_arguments.done")) {
		const char *args = json_str(j, "arguments");
		if (!(it = item_at(s, j, e))) {
			r = -EPROTO;
		} else if (args) {
			it->text.len = 0;
			r = text_add(s, &it->text, args, false, e);
		}
	} else if (!strcmp(type, "response.reasoning_summary_text.delta") ||
		   !strcmp(type, "response.reasoning_text.delta")) {
		const char *d = json_str(j, "delta");
		int64_t si = json_int(j, "summary_index", 0);
		if (!(it = item_at(s, j, e))) {
			r = -EPROTO;
		} else if (d && *d && s->sink.thinking) {
			/* Summary parts are paragraphs of their own. */
			if (it->summary_index >= 0 && si != it->summary_index)
				s->sink.thinking(s->sink.ud, "\n\n", 2);
			it->summary_index = si;
			s->sink.thinking(s->sink.ud, d, strlen(d));
		}
	} else if (!strcmp(type, "response.output_item.done")) {
		const cJSON *item = cJSON_GetObjectItemCaseSensitive(j, "item");
		if (!cJSON_IsObject(item) || !(it = item_at(s, j, e)))
			r = err_set(e, -EPROTO, "an output_item.done without an item or an output_index");
		else
			r = item_done(s, it, item, e);
	} else if (!strcmp(type, "response.completed")) {
		response_meta(s, resp);
		s->r.complete = true;
		snprintf(s->r.stop_raw, sizeof(s->r.stop_raw), "completed");
	} else if (!strcmp(type, "response.incomplete")) {
		response_meta(s, resp);
		s->r.complete = true;
		s->incomplete = true;
		const char *why = json_str(cJSON_GetObjectItemCaseSensitive(resp, "incomplete_details"), "reason");
		snprintf(s->r.stop_raw, sizeof(s->r.stop_raw), "%s", why ? why : "incomplete");
		s->r.stop = !why ? STOP_OTHER
			  : !strcmp(why, "max_output_tokens") ? STOP_MAX_TOKENS
			  : !strcmp(why, "content_filter") ? STOP_REFUSAL
							   : STOP_OTHER;
	} else if (!strcmp(type, "response.failed")) {
		response_meta(s, resp);
		set_error(s, cJSON_GetObjectItemCaseSensitive(resp, "error"), "response.failed");
	} else if (!strcmp(type, "error")) {
		/* {"type":"error","code","message"}, or the same under "error". */
		const cJSON *er = cJSON_GetObjectItemCaseSensitive(j, "error");
		set_error(s, cJSON_IsObject(er) ? er : j, "error");
	}
	/* content_part, output_text.done, summary parts and unknown events:
	 * what they say arrives in the deltas and output_item.done. */
	cJSON_Delete(j);
	return r;
}

/* A reasoning item as a block of the conversation. */
static cJSON *reasoning_block(const struct ritem *it)
{
	const char *enc = json_str(it->item, "encrypted_content");
	const cJSON *sum = cJSON_GetObjectItemCaseSensitive(it->item, "summary");
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "type", "reasoning");
	if (it->id)
		cJSON_AddStringToObject(b, "id", it->id);
	if (enc)
		cJSON_AddStringToObject(b, "encrypted_content", enc);
	cJSON_AddItemToObject(b, "summary", cJSON_IsArray(sum) ? cJSON_Duplicate(sum, 1) : cJSON_CreateArray());
	return b;
}

static cJSON *call_block(const struct stream *s, const struct ritem *it)
{
	const char *call_id = json_str(it->item, "call_id"), *name = json_str(it->item, "name");
	const char *status = json_str(it->item, "status");
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "type", "tool_use");
	cJSON_AddStringToObject(b, "id", call_id ? call_id : it->id ? it->id : "");
	cJSON_AddStringToObject(b, "name", name ? name : "");
	char why[PROVIDER_WHY_MAX] = "";
	cJSON *input = NULL;
	if (!it->done && s->r.stop == STOP_MAX_TOKENS)
		snprintf(why, sizeof(why), "the response hit max_output_tokens while this call was being written");
	else if (!it->done)
		snprintf(why, sizeof(why), "the stream ended while this call was being written");
	else if (status && strcmp(status, "completed"))
		snprintf(why, sizeof(why), "the call's status is \"%.40s\", not completed", status);
	else if (!name || !*name)
		snprintf(why, sizeof(why), "the call has no tool name");
	else
		input = provider_parse_input(it->text.data ? it->text.data : "", it->text.len, why, sizeof(why));
	cJSON_AddItemToObject(b, "input", input ? input : cJSON_CreateObject());
	if (why[0])
		cJSON_AddStringToObject(b, "_ward_error", why);
	return b;
}

static void responses_stream_end(struct stream *s, struct reply *out)
{
	cJSON *content = cJSON_CreateArray();
	bool calls = false;
	for (size_t i = 0; i < s->n; i++) {
		struct ritem *it = &s->items[i];
		if (!it->type)
			continue;
		if (!strcmp(it->type, "reasoning")) {
			/* Only a finished one can be sent back. */
			if (it->done)
				cJSON_AddItemToArray(content, reasoning_block(it));
		} else if (!strcmp(it->type, "message")) {
			if (it->text.len) {
				cJSON *b = cJSON_CreateObject();
				cJSON_AddStringToObject(b, "type", "text");
				cJSON_AddStringToObject(b, "text", it->text.data);
				cJSON_AddItemToArray(content, b);
			}
		} else if (!strcmp(it->type, "function_call")) {
			cJSON_AddItemToArray(content, call_block(s, it));
			calls = true;
		}
		/* Other item types (web_search_call, ...) are not asked for. */
	}
	if (s->r.complete && !s->incomplete)
		s->r.stop = calls ? STOP_TOOL_USE : STOP_END_TURN;
	if (s->refused && !calls) {
		s->r.stop = STOP_REFUSAL;
		snprintf(s->r.stop_raw, sizeof(s->r.stop_raw), "refusal");
	}
	*out = s->r;
	out->content = content;
	s->r = (struct reply){ 0 };
}

static void responses_stream_free(struct stream *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->items[i].type);
		free(s->items[i].id);
		cJSON_Delete(s->items[i].item);
		buf_free(&s->items[i].text);
	}
	free(s->items);
	reply_free(&s->r);
	free(s);
}

const struct provider provider_openai_responses = {
	.name = "openai-responses",
	.key_env = "OPENAI_API_KEY",
	.default_base = "https://api.openai.com/v1",
	.request = responses_request,
	.stream_new = responses_stream_new,
	.stream_event = responses_stream_event,
	.stream_end = responses_stream_end,
	.stream_free = responses_stream_free,
	.error_text = provider_error_json,
};
