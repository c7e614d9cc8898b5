/* The replay provider: a recorded script of model turns in a file, for
 * demos, tests and CI without a key. It streams like a real provider (the
 * turn's bytes are Anthropic SSE, parsed and assembled by the same code as
 * a live stream) and fails loudly when the conversation diverges from the
 * script.
 *
 * Script: {"turns": [{"expect": "...", "text": "...", "thinking": "...",
 *          "tools": [{"name": "...", "input": {...}}], "stop": "..."}]}
 * A tool may give "input_json" instead of "input": the input as the text a
 * model would stream, sent as it is (it need not be JSON at all), to show
 * what ward does with arguments that are not one unambiguous JSON object.
 * Turn N answers the conversation's Nth assistant message. "expect", when
 * given, must appear in the last user message (its text and tool results);
 * "stop" defaults to tool_use when there are tools, else end_turn. */
#include "turn/turn.h"
#include "base/json.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/jsonprint.h"
#include "base/jsonstrict.h"
#include "base/fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPLAY_MAX (16u << 20)

static int sse_add(struct buf *b, const char *type, cJSON *data)
{
	_cleanup_free_ char *s = cJSON_PrintUnformatted(data);
	cJSON_Delete(data);
	if (!s)
		return -ENOMEM;
	return buf_printf(b, "event: %s\ndata: %s\n\n", type, s);
}

static cJSON *obj(const char *json)
{
	return cJSON_Parse(json);
}

/* The last user message's words: its text and tool results. */
static void last_user_text(const cJSON *messages, struct buf *out)
{
	const cJSON *last = NULL, *m;
	cJSON_ArrayForEach(m, messages) {
		const char *role = json_str(m, "role");
		if (role && !strcmp(role, "user"))
			last = m;
	}
	const cJSON *b;
	cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(last, "content")) {
		const char *t = json_str(b, "text");
		if (!t)
			t = json_str(b, "content");
		if (t) {
			buf_append(out, t, strlen(t));
			buf_append(out, "\n", 1);
		}
	}
}

static void block_text(struct buf *b, int idx, const char *type, const char *field, const char *delta_type,
		       const char *text)
{
	cJSON *start = obj("{\"type\":\"content_block_start\"}");
	cJSON_AddNumberToObject(start, "index", idx);
	cJSON *cb = cJSON_AddObjectToObject(start, "content_block");
	cJSON_AddStringToObject(cb, "type", type);
	cJSON_AddStringToObject(cb, field, "");
	sse_add(b, "content_block_start", start);
	/* In pieces, as a model streams. */
	size_t n = strlen(text);
	for (size_t i = 0; i < n;) {
		size_t k = n - i < 24 ? n - i : 24;
		/* Do not split a UTF-8 sequence: JSON strings must stay valid. */
		while (i + k < n && ((unsigned char)text[i + k] & 0xC0) == 0x80)
			k++;
		char piece[64];
		snprintf(piece, sizeof(piece), "%.*s", (int)k, text + i);
		cJSON *d = obj("{\"type\":\"content_block_delta\"}");
		cJSON_AddNumberToObject(d, "index", idx);
		cJSON *dd = cJSON_AddObjectToObject(d, "delta");
		cJSON_AddStringToObject(dd, "type", delta_type);
		cJSON_AddStringToObject(dd, field, piece);
		sse_add(b, "content_block_delta", d);
		i += k;
	}
	cJSON *stop = obj("{\"type\":\"content_block_stop\"}");
	cJSON_AddNumberToObject(stop, "index", idx);
	sse_add(b, "content_block_stop", stop);
}

cJSON *replay_load(const char *path, struct err *e)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r = fdio_read_file(AT_FDCWD, path, REPLAY_MAX, &data, &len);
	if (r < 0) {
		err_setc(e, r, "cannot read the replay script %s", path);
		return NULL;
	}
	cJSON *script = NULL;
	struct err pe = { 0 };
	if (jsonstrict_parse(data, len, &script, &pe) < 0) {
		err_set(e, pe.code, "%s is not valid JSON: %s", path, pe.msg);
		return NULL;
	}
	if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(script, "turns"))) {
		cJSON_Delete(script);
		err_set(e, -EINVAL, "%s is not a replay script: it needs {\"turns\": [...]}", path);
		return NULL;
	}
	return script;
}

char *replay_stream(const cJSON *script, const char *path, const cJSON *messages, struct err *e)
{
	const cJSON *turns = cJSON_GetObjectItemCaseSensitive(script, "turns");
	int n = 0;
	const cJSON *m;
	cJSON_ArrayForEach(m, messages) {
		const char *role = json_str(m, "role");
		n += role && !strcmp(role, "assistant");
	}
	const cJSON *turn = cJSON_GetArrayItem(turns, n);
	if (!turn) {
		err_set(e, -ERANGE, "replay diverged: %s has %d turns and the conversation asks for turn %d",
			path, cJSON_GetArraySize(turns), n + 1);
		return NULL;
	}
	const char *expect = json_str(turn, "expect");
	if (expect) {
		struct buf last;
		buf_init(&last, 1 << 22);
		buf_append(&last, "", 0);
		last_user_text(messages, &last);
		bool found = strstr(last.data, expect) != NULL;
		if (!found) {
			char seen[160];
			size_t k = 0;
			for (size_t i = 0; i < last.len && k + 1 < sizeof(seen); i++)
				seen[k++] = last.data[i] == '\n' ? ' ' : last.data[i];
			seen[k] = 0;
			err_set(e, -EBADMSG, "replay diverged at turn %d of %s: expected \"%s\" in the last message, got \"%s\"",
				n + 1, path, expect, seen);
		}
		buf_free(&last);
		if (!found)
			return NULL;
	}
	struct buf b;
	buf_init(&b, REPLAY_MAX);
	cJSON *start = obj("{\"type\":\"message_start\",\"message\":{\"model\":\"replay\",\"usage\":{\"input_tokens\":0,\"output_tokens\":0}}}");
	char id[32];
	snprintf(id, sizeof(id), "msg_replay_%d", n + 1);
	cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(start, "message"), "id", id);
	sse_add(&b, "message_start", start);
	int idx = 0;
	const char *thinking = json_str(turn, "thinking"), *text = json_str(turn, "text");
	if (thinking)
		block_text(&b, idx++, "thinking", "thinking", "thinking_delta", thinking);
	if (text)
		block_text(&b, idx++, "text", "text", "text_delta", text);
	const cJSON *tools = cJSON_GetObjectItemCaseSensitive(turn, "tools");
	int k = 0;
	const cJSON *t;
	cJSON_ArrayForEach(t, tools) {
		cJSON *st = obj("{\"type\":\"content_block_start\"}");
		cJSON_AddNumberToObject(st, "index", idx);
		cJSON *cb = cJSON_AddObjectToObject(st, "content_block");
		cJSON_AddStringToObject(cb, "type", "tool_use");
		char tid[48];
		snprintf(tid, sizeof(tid), "toolu_replay_%d_%d", n + 1, ++k);
		cJSON_AddStringToObject(cb, "id", tid);
		cJSON_AddStringToObject(cb, "name", json_str(t, "name") ? json_str(t, "name") : "");
		cJSON_AddItemToObject(cb, "input", cJSON_CreateObject());
		sse_add(&b, "content_block_start", st);
		_cleanup_free_ char *input = jsonprint_text(cJSON_GetObjectItemCaseSensitive(t, "input"));
		const char *raw = json_str(t, "input_json");
		const char *in = raw ? raw : input ? input : "{}";
		size_t il = strlen(in);
		/* The input in small pieces, as input_json_delta arrives. */
		for (size_t i = 0; i < il; i += 7) {
			char piece[8];
			snprintf(piece, sizeof(piece), "%.*s", (int)(il - i < 7 ? il - i : 7), in + i);
			cJSON *d = obj("{\"type\":\"content_block_delta\"}");
			cJSON_AddNumberToObject(d, "index", idx);
			cJSON *dd = cJSON_AddObjectToObject(d, "delta");
			cJSON_AddStringToObject(dd, "type", "input_json_delta");
			cJSON_AddStringToObject(dd, "partial_json", piece);
			sse_add(&b, "content_block_delta", d);
		}
		cJSON *sp = obj("{\"type\":\"content_block_stop\"}");
		cJSON_AddNumberToObject(sp, "index", idx);
		sse_add(&b, "content_block_stop", sp);
		idx++;
	}
	const char *stop = json_str(turn, "stop");
	if (!stop)
		stop = k ? "tool_use" : "end_turn";
	cJSON *md = obj("{\"type\":\"message_delta\",\"delta\":{},\"usage\":{\"output_tokens\":0}}");
	cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(md, "delta"), "stop_reason", stop);
	sse_add(&b, "message_delta", md);
	sse_add(&b, "message_stop", obj("{\"type\":\"message_stop\"}"));
	return b.data;
}
