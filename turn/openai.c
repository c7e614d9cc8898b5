/* OpenAI Chat Completions, streaming, and the servers that speak it
 * (llama.cpp, Ollama, vLLM). Tool calls are assembled by index and id,
 * tolerating what those servers do: a whole call in one delta, every call at
 * index 0 with a new id each, no ids at all, no index. finish_reason
 * "length" means no call of that message runs. */
#include "turn/provider.h"
#include "base/json.h"
#include "base/buf.h"
#include "base/jsonprint.h"
#include "base/cleanup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPENAI_TEXT_MAX (16u << 20)
#define OPENAI_CALLS_MAX 256

static int openai_request(const struct provider_cfg *c, const struct provider_req *q, struct http_call *out,
			  struct err *e)
{
	provider_url(out, c->base_url ? c->base_url : provider_openai.default_base, "/chat/completions");
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "model", c->model);
	cJSON_AddBoolToObject(b, "stream", 1);
	cJSON_AddItemToObject(b, "stream_options", cJSON_Parse("{\"include_usage\":true}"));
	int mt = q->max_tokens > 0 ? q->max_tokens : c->max_tokens;
	if (mt > 0)
		cJSON_AddNumberToObject(b, "max_tokens", mt);
	cJSON *msgs = cJSON_AddArrayToObject(b, "messages");
	if (q->system && *q->system) {
		cJSON *s = cJSON_CreateObject();
		cJSON_AddStringToObject(s, "role", "system");
		cJSON_AddStringToObject(s, "content", q->system);
		cJSON_AddItemToArray(msgs, s);
	}
	const cJSON *m;
	cJSON_ArrayForEach(m, q->messages) {
		const char *role = json_str(m, "role");
		const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
		struct buf text;
		buf_init(&text, OPENAI_TEXT_MAX);
		buf_append(&text, "", 0);
		cJSON *calls = NULL;
		const cJSON *blk;
		cJSON_ArrayForEach(blk, content) {
			const char *bt = json_str(blk, "type");
			if (!bt)
				continue;
			if (!strcmp(bt, "text") && json_str(blk, "text")) {
				if (text.len)
					buf_append(&text, "\n", 1);
				buf_append(&text, json_str(blk, "text"), strlen(json_str(blk, "text")));
			} else if (!strcmp(bt, "tool_result")) {
				/* Tool results go first, right after the calls. */
				cJSON *t = cJSON_CreateObject();
				cJSON_AddStringToObject(t, "role", "tool");
				cJSON_AddStringToObject(t, "tool_call_id", json_str(blk, "tool_use_id") ? json_str(blk, "tool_use_id") : "");
				char *rt = provider_result_text(blk);
				cJSON_AddStringToObject(t, "content", rt ? rt : "");
				free(rt);
				cJSON_AddItemToArray(msgs, t);
			} else if (!strcmp(bt, "tool_use")) {
				if (!calls)
					calls = cJSON_CreateArray();
				cJSON *tc = cJSON_CreateObject();
				cJSON_AddStringToObject(tc, "id", json_str(blk, "id") ? json_str(blk, "id") : "");
				cJSON_AddStringToObject(tc, "type", "function");
				cJSON *fn = cJSON_AddObjectToObject(tc, "function");
				cJSON_AddStringToObject(fn, "name", json_str(blk, "name") ? json_str(blk, "name") : "");
				char *args = jsonprint_text(cJSON_GetObjectItemCaseSensitive(blk, "input"));
				cJSON_AddStringToObject(fn, "arguments", args ? args : "{}");
				free(args);
				cJSON_AddItemToArray(calls, tc);
			}
			/* thinking and reasoning blocks have no place in this API. */
		}
		if (role && !strcmp(role, "assistant") && (text.len || calls)) {
			/* One of only thinking or reasoning blocks has nothing
			 * to send here. */
			cJSON *a = cJSON_CreateObject();
			cJSON_AddStringToObject(a, "role", "assistant");
			if (text.len)
				cJSON_AddStringToObject(a, "content", text.data);
			else
				cJSON_AddNullToObject(a, "content");
			if (calls)
				cJSON_AddItemToObject(a, "tool_calls", calls);
			cJSON_AddItemToArray(msgs, a);
		} else if (text.len) {
			cJSON *u = cJSON_CreateObject();
			cJSON_AddStringToObject(u, "role", "user");
			cJSON_AddStringToObject(u, "content", text.data);
			cJSON_AddItemToArray(msgs, u);
			cJSON_Delete(calls);
		} else {
			cJSON_Delete(calls);
		}
		buf_free(&text);
	}
	if (cJSON_GetArraySize(q->tools) > 0) {
		cJSON *tools = cJSON_AddArrayToObject(b, "tools");
		const cJSON *t;
		cJSON_ArrayForEach(t, q->tools) {
			cJSON *ft = cJSON_CreateObject();
			cJSON_AddStringToObject(ft, "type", "function");
			cJSON *fn = cJSON_AddObjectToObject(ft, "function");
			cJSON_AddStringToObject(fn, "name", json_str(t, "name") ? json_str(t, "name") : "");
			cJSON_AddStringToObject(fn, "description", json_str(t, "description") ? json_str(t, "description") : "");
			cJSON_AddItemToObject(fn, "parameters",
					      cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(t, "input_schema"), 1));
			cJSON_AddItemToArray(tools, ft);
		}
	}
	return provider_bearer_request(out, b, c->api_key, e);
}

struct ocall {
	int64_t index;		/* -1: none given */
	char *id, *name;
	struct buf args;
};

struct stream {
	struct stream_sink sink;
	struct buf text, thinking;
	struct ocall calls[OPENAI_CALLS_MAX];
	size_t n;
	bool finished;		/* a finish_reason arrived */
	struct reply r;
};

static struct stream *openai_stream_new(const struct stream_sink *sink)
{
	struct stream *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	if (sink)
		s->sink = *sink;
	buf_init(&s->text, OPENAI_TEXT_MAX);
	buf_init(&s->thinking, OPENAI_TEXT_MAX);
	return s;
}

static struct ocall *call_new(struct stream *s, int64_t index)
{
	if (s->n >= OPENAI_CALLS_MAX)
		return NULL;
	struct ocall *c = &s->calls[s->n++];
	c->index = index;
	buf_init(&c->args, OPENAI_TEXT_MAX);
	buf_append(&c->args, "", 0);
	return c;
}

/* Which call a tool_calls delta continues, or a new one. */
static struct ocall *call_for(struct stream *s, int64_t index, const char *id)
{
	if (id && *id) {
		for (size_t i = 0; i < s->n; i++)
			if (s->calls[i].id && !strcmp(s->calls[i].id, id))
				return &s->calls[i];
		/* The latest call at this index, if it has no id yet, gets it;
		 * one with another id means a new call at a reused index. */
		for (size_t i = s->n; i-- > 0;)
			if (index >= 0 && s->calls[i].index == index) {
				if (!s->calls[i].id)
					return &s->calls[i];
				break;
			}
		return call_new(s, index);
	}
	if (index >= 0) {
		for (size_t i = s->n; i-- > 0;)
			if (s->calls[i].index == index)
				return &s->calls[i];
		return call_new(s, index);
	}
	return s->n ? &s->calls[s->n - 1] : call_new(s, index);
}

static enum stop_reason finish_from(const char *f)
{
	if (!strcmp(f, "stop"))
		return STOP_END_TURN;
	if (!strcmp(f, "tool_calls") || !strcmp(f, "function_call"))
		return STOP_TOOL_USE;
	if (!strcmp(f, "length"))
		return STOP_MAX_TOKENS;
	if (!strcmp(f, "content_filter"))
		return STOP_REFUSAL;
	return STOP_OTHER;
}

static int openai_stream_event(struct stream *s, const struct sse_event *ev, struct err *e)
{
	if (ev->data_len == 6 && !memcmp(ev->data, "[DONE]", 6)) {
		s->r.complete = true;
		return 0;
	}
	cJSON *j = cJSON_ParseWithLength(ev->data, ev->data_len);
	if (!j)
		return err_set(e, -EPROTO, "a stream event is not JSON");
	int r = 0;
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(j, "error");
	if (err) {
		s->r.error = true;
		const char *t = json_str(err, "type"), *m = cJSON_IsString(err) ? err->valuestring : json_str(err, "message");
		snprintf(s->r.error_type, sizeof(s->r.error_type), "%s", t ? t : "error");
		snprintf(s->r.error_msg, sizeof(s->r.error_msg), "%s", m ? m : "the stream reported an error");
		cJSON_Delete(j);
		return 0;
	}
	provider_reply_meta(&s->r, j);
	provider_openai_usage(&s->r.usage, cJSON_GetObjectItemCaseSensitive(j, "usage"), "prompt_tokens",
			      "completion_tokens", "prompt_tokens_details");
	const cJSON *ch = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "choices"), 0);
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(ch, "delta");
	if (!d)
		d = cJSON_GetObjectItemCaseSensitive(ch, "message");	/* some servers */
	const char *t = json_str(d, "content");
	if (t && *t) {
		if (buf_append(&s->text, t, strlen(t)) < 0)
			r = err_set(e, -EMSGSIZE, "the text passed %u MiB", OPENAI_TEXT_MAX >> 20);
		else if (s->sink.text)
			s->sink.text(s->sink.ud, t, strlen(t));
	}
	const char *th = json_str(d, "reasoning_content");
	if (!th)
		th = json_str(d, "reasoning");
	if (th && *th && r == 0) {
		if (buf_append(&s->thinking, th, strlen(th)) < 0)
			r = err_set(e, -EMSGSIZE, "the reasoning passed %u MiB", OPENAI_TEXT_MAX >> 20);
		else if (s->sink.thinking)
			s->sink.thinking(s->sink.ud, th, strlen(th));
	}
	const cJSON *tc;
	cJSON_ArrayForEach(tc, cJSON_GetObjectItemCaseSensitive(d, "tool_calls")) {
		if (r < 0)
			break;
		const char *cid = json_str(tc, "id");
		struct ocall *c = call_for(s, json_int(tc, "index", -1), cid);
		if (!c) {
			r = err_set(e, -E2BIG, "more than %d tool calls in one message", OPENAI_CALLS_MAX);
			break;
		}
		if (cid && *cid && !c->id)
			c->id = strdup(cid);
		const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
		const char *name = json_str(fn, "name");
		if (name && *name && !c->name) {
			c->name = strdup(name);
			if (s->sink.tool_begin)
				s->sink.tool_begin(s->sink.ud, c->id ? c->id : "", name);
		}
		const cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
		if (cJSON_IsString(args)) {
			if (buf_append(&c->args, args->valuestring, strlen(args->valuestring)) < 0)
				r = err_set(e, -EMSGSIZE, "a tool call's arguments passed %u MiB", OPENAI_TEXT_MAX >> 20);
		} else if (cJSON_IsObject(args)) {
			/* Some servers send the arguments as an object. */
			char *a = cJSON_PrintUnformatted(args);
			if (a)
				buf_append(&c->args, a, strlen(a));
			free(a);
		}
	}
	const char *fin = json_str(ch, "finish_reason");
	if (fin && r == 0) {
		s->r.stop = finish_from(fin);
		snprintf(s->r.stop_raw, sizeof(s->r.stop_raw), "%s", fin);
		s->finished = true;
	}
	cJSON_Delete(j);
	return r;
}

static void openai_stream_end(struct stream *s, struct reply *out)
{
	cJSON *content = cJSON_CreateArray();
	if (s->thinking.len) {
		cJSON *b = cJSON_CreateObject();
		cJSON_AddStringToObject(b, "type", "thinking");
		cJSON_AddStringToObject(b, "thinking", s->thinking.data);
		cJSON_AddItemToArray(content, b);
	}
	if (s->text.len) {
		cJSON *b = cJSON_CreateObject();
		cJSON_AddStringToObject(b, "type", "text");
		cJSON_AddStringToObject(b, "text", s->text.data);
		cJSON_AddItemToArray(content, b);
	}
	for (size_t i = 0; i < s->n; i++) {
		struct ocall *c = &s->calls[i];
		cJSON *b = cJSON_CreateObject();
		char gen[32];
		snprintf(gen, sizeof(gen), "call_ward_%zu", i + 1);
		cJSON_AddStringToObject(b, "type", "tool_use");
		cJSON_AddStringToObject(b, "id", c->id ? c->id : gen);
		cJSON_AddStringToObject(b, "name", c->name ? c->name : "");
		char why[PROVIDER_WHY_MAX] = "";
		cJSON *input = provider_parse_input(c->args.data ? c->args.data : "", c->args.len, why, sizeof(why));
		if (!input)
			input = cJSON_CreateObject();
		if (s->r.stop == STOP_MAX_TOKENS)
			snprintf(why, sizeof(why), "the response hit the length limit; this call may be incomplete");
		else if (!s->finished && !s->r.complete && !why[0])
			snprintf(why, sizeof(why), "the stream ended while this call was being written");
		else if (!c->name && !why[0])
			snprintf(why, sizeof(why), "the call has no tool name");
		cJSON_AddItemToObject(b, "input", input);
		if (why[0])
			cJSON_AddStringToObject(b, "_ward_error", why);
		cJSON_AddItemToArray(content, b);
	}
	if (s->finished)
		s->r.complete = true;
	*out = s->r;
	out->content = content;
	s->r = (struct reply){ 0 };
}

static void openai_stream_free(struct stream *s)
{
	if (!s)
		return;
	buf_free(&s->text);
	buf_free(&s->thinking);
	for (size_t i = 0; i < s->n; i++) {
		free(s->calls[i].id);
		free(s->calls[i].name);
		buf_free(&s->calls[i].args);
	}
	reply_free(&s->r);
	free(s);
}

const struct provider provider_openai = {
	.name = "openai",
	.key_env = "OPENAI_API_KEY",
	.default_base = "https://api.openai.com/v1",
	.request = openai_request,
	.stream_new = openai_stream_new,
	.stream_event = openai_stream_event,
	.stream_end = openai_stream_end,
	.stream_free = openai_stream_free,
	.error_text = provider_error_json,
};
