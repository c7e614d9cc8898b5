#include "turn/provider.h"
#include "base/json.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/jsonprint.h"
#include "base/jsonstrict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *stop_reason_name(enum stop_reason s)
{
	static const char *const names[] = {
		[STOP_NONE] = "none", [STOP_END_TURN] = "end_turn", [STOP_TOOL_USE] = "tool_use",
		[STOP_MAX_TOKENS] = "max_tokens", [STOP_STOP_SEQUENCE] = "stop_sequence",
		[STOP_PAUSE_TURN] = "pause_turn", [STOP_REFUSAL] = "refusal", [STOP_OTHER] = "other",
	};
	return (unsigned)s < ARRAY_SIZE(names) ? names[s] : "?";
}

void reply_free(struct reply *r)
{
	cJSON_Delete(r->content);
	r->content = NULL;
}

void http_call_free(struct http_call *c)
{
	for (size_t i = 0; i < ARRAY_SIZE(c->headers); i++) {
		free(c->headers[i]);
		c->headers[i] = NULL;
	}
	free(c->body);
	c->body = NULL;
}

const struct provider *provider_find(const char *name)
{
	if (!name)
		return NULL;
	if (!strcmp(name, "anthropic"))
		return &provider_anthropic;
	if (!strcmp(name, "openai"))
		return &provider_openai;
	if (!strcmp(name, "openai-responses"))
		return &provider_openai_responses;
	return NULL;
}

void provider_url(struct http_call *out, const char *base, const char *path)
{
	size_t bl = strlen(base);
	while (bl && base[bl - 1] == '/')
		bl--;
	snprintf(out->url, sizeof(out->url), "%.*s%s", (int)bl, base, path);
}

int provider_headers_ok(const struct http_call *out, int n, struct err *e)
{
	for (int i = 0; i < n; i++)
		if (!out->headers[i])
			return err_set(e, -ENOMEM, "out of memory");
	return 0;
}

char *provider_header(const char *name, const char *value)
{
	size_t n = strlen(name) + strlen(value) + 3;
	char *h = malloc(n);
	if (h)
		snprintf(h, n, "%s: %s", name, value);
	return h;
}

cJSON *provider_clean_block(const cJSON *b)
{
	cJSON *c = cJSON_Duplicate(b, 1);
	if (!c)
		return NULL;
	for (cJSON *it = c->child, *next; it; it = next) {
		next = it->next;
		if (it->string && !strncmp(it->string, "_ward", 5))
			cJSON_Delete(cJSON_DetachItemViaPointer(c, it));
	}
	return c;
}

cJSON *provider_parse_input(const char *json, size_t n, char *why, size_t cap)
{
	size_t i = 0;
	while (i < n && (json[i] == ' ' || json[i] == '\n' || json[i] == '\r' || json[i] == '\t'))
		i++;
	if (i == n)
		return cJSON_CreateObject();
	/* Parsed here once, strictly; everything downstream (the gate, the
	 * tool, hooks, --approve-cmd, --json, the journal, the box) reads this
	 * one tree, printed one way (base/jsonprint.h), never the text. */
	struct err e = { 0 };
	cJSON *j = NULL;
	if (jsonstrict_parse(json, n, &j, &e) < 0) {
		snprintf(why, cap, "the tool input is not one unambiguous JSON value: %s", e.msg);
		return NULL;
	}
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		snprintf(why, cap, "the call's arguments must be a JSON object");
		return NULL;
	}
	return j;
}

#define RESULT_TEXT_MAX (16u << 20)

char *provider_result_text(const cJSON *blk)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(blk, "content");
	if (cJSON_IsString(c))
		return strdup(c->valuestring);
	struct buf b;
	buf_init(&b, RESULT_TEXT_MAX);
	buf_append(&b, "", 0);
	const cJSON *it;
	cJSON_ArrayForEach(it, c) {
		const char *t = json_str(it, "text");
		if (t)
			buf_append(&b, t, strlen(t));
	}
	return b.data;
}

/* {"error":{"type":..,"message":..}} or {"error":"..."} or {"message":..}. */
void provider_error_json(const char *body, size_t n, char *out, size_t cap)
{
	cJSON *j = cJSON_ParseWithLength(body, n);
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(j, "error");
	const cJSON *msg = cJSON_IsObject(err) ? cJSON_GetObjectItemCaseSensitive(err, "message")
					       : cJSON_IsString(err) ? err
								     : cJSON_GetObjectItemCaseSensitive(j, "message");
	const cJSON *type = cJSON_IsObject(err) ? cJSON_GetObjectItemCaseSensitive(err, "type") : NULL;
	if (cJSON_IsString(msg) && cJSON_IsString(type))
		snprintf(out, cap, "%s: %s", type->valuestring, msg->valuestring);
	else if (cJSON_IsString(msg))
		snprintf(out, cap, "%s", msg->valuestring);
	else {
		/* Not JSON: the first line of the body, control bytes dropped. */
		size_t k = 0;
		for (size_t i = 0; i < n && k + 1 < cap && body[i] != '\n'; i++)
			if ((unsigned char)body[i] >= 0x20)
				out[k++] = body[i];
		out[k] = 0;
	}
	cJSON_Delete(j);
}

cJSON *provider_user_text(const char *text)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "role", "user");
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "type", "text");
	cJSON_AddStringToObject(b, "text", text);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(m, "content"), b);
	return m;
}

int provider_json_body(struct http_call *out, cJSON *b, struct err *e)
{
	out->body = jsonprint_text(b);
	cJSON_Delete(b);
	if (!out->body)
		return err_set(e, -ENOMEM, "out of memory");
	out->body_len = strlen(out->body);
	out->headers[0] = provider_header("content-type", "application/json");
	out->headers[1] = provider_header("accept", "text/event-stream");
	return 2;
}

int provider_bearer_request(struct http_call *out, cJSON *b, const char *api_key, struct err *e)
{
	int h = provider_json_body(out, b, e);
	if (h < 0)
		return h;
	if (api_key) {
		size_t n = strlen(api_key) + 8;
		char *v = malloc(n);
		if (v)
			snprintf(v, n, "Bearer %s", api_key);
		out->headers[h++] = v ? provider_header("authorization", v) : NULL;
		free(v);
	}
	return provider_headers_ok(out, h, e);
}

void provider_reply_meta(struct reply *r, const cJSON *o)
{
	const char *id = json_str(o, "id"), *model = json_str(o, "model");
	if (id && !r->id[0])
		snprintf(r->id, sizeof(r->id), "%s", id);
	if (model && !r->model[0])
		snprintf(r->model, sizeof(r->model), "%s", model);
}

void provider_openai_usage(struct usage *u, const cJSON *o, const char *in, const char *out, const char *details)
{
	if (!cJSON_IsObject(o))
		return;
	u->output = json_int(o, out, u->output);
	int64_t all = json_int(o, in, -1);
	if (all < 0)
		return;
	int64_t cached = json_int(cJSON_GetObjectItemCaseSensitive(o, details), "cached_tokens", 0);
	u->cache_read = cached < all ? cached : all;
	u->input = all - u->cache_read;
}
