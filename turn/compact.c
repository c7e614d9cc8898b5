#include "turn/compact.h"
#include "base/json.h"
#include "turn/provider.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/jsonprint.h"
#include "base/utf8.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The transcript's own ceiling, whatever max_bytes says. */
#define COMPACT_TRANSCRIPT_MAX (64u << 20)
/* Long blocks are cut to this first, then to halves of it, down to the
 * floor, before whole lines go. */
#define COMPACT_BLOCK_CAP 16384
#define COMPACT_BLOCK_FLOOR 256

const char compact_instruction[] =
	"You write the summary that replaces the earlier part of a coding agent's conversation, which has grown "
	"too long for the model's context window. The agent continues from your summary alone, so keep "
	"everything it needs: the task and the person's instructions and preferences; what was done, "
	"step by step (files read, written and changed, with their paths; commands run and what they showed); "
	"decisions and why; errors met and how they were fixed or not; and what is left to do. Be exact with "
	"names, paths, commands and numbers. Write plain prose and lists, no preamble; do not call tools.";

const char *compact_reason_name(enum compact_reason r)
{
	static const char *const names[] = {
		[COMPACT_THRESHOLD] = "threshold", [COMPACT_CONTEXT] = "context_length", [COMPACT_MANUAL] = "manual",
	};
	return (unsigned)r < ARRAY_SIZE(names) ? names[r] : "?";
}

static bool role_is(const cJSON *m, const char *role)
{
	const char *r = json_str(m, "role");
	return r && !strcmp(r, role);
}

static bool has_block(const cJSON *m, const char *type)
{
	const cJSON *b;
	cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(m, "content")) {
		const char *t = json_str(b, "type");
		if (t && !strcmp(t, type))
			return true;
	}
	return false;
}

/* About the bytes a value takes in a request: its strings and numbers. */
static size_t json_bytes(const cJSON *v)
{
	size_t n = 4;
	if (cJSON_IsString(v))
		n += strlen(v->valuestring);
	for (const cJSON *c = v->child; c; c = c->next)
		n += json_bytes(c) + (c->string ? strlen(c->string) + 4 : 1);
	return n;
}

int compact_split(const cJSON *messages, const struct compact_opts *o, struct compact_split *ret, struct err *e)
{
	int n = cJSON_GetArraySize(messages);
	int keep = o && o->keep_rounds > 0 ? o->keep_rounds : COMPACT_KEEP_ROUNDS;
	size_t tail_max = o ? o->tail_bytes : 0;
	/* The first message stays where it is a person's (the task). */
	const cJSON *m0 = cJSON_GetArrayItem(messages, 0);
	int first = m0 && role_is(m0, "user") && !has_block(m0, "tool_result") ? 1 : 0;
	int total = 0;
	for (const cJSON *m = messages ? messages->child : NULL; m; m = m->next)
		total += role_is(m, "assistant");
	/* From the end back: the longest tail within the bounds whose first
	 * message is not a tool_result (whose tool_use would be cut off). */
	int best = -1, best_rounds = 0, rounds = 0;
	size_t bytes = 0;
	const cJSON *m = cJSON_GetArrayItem(messages, n - 1);
	for (int k = n - 1; k >= first + 1 && m; k--, m = m->prev) {
		rounds += role_is(m, "assistant");
		bytes += json_bytes(m);
		if (rounds > keep || (rounds > 1 && tail_max && bytes > tail_max))
			break;
		if (rounds >= 1 && !(role_is(m, "user") && has_block(m, "tool_result"))) {
			best = k;
			best_rounds = rounds;
		}
	}
	int replaced = 0;
	for (int k = first; best > first && k < best; k++)
		replaced += role_is(cJSON_GetArrayItem(messages, k), "assistant");
	if (best < 0 || replaced < 1)
		return err_set(e, -EAGAIN,
			       "too few rounds to compact: the conversation has %d round%s and the most recent are kept "
			       "verbatim; nothing was changed",
			       total, total == 1 ? "" : "s");
	*ret = (struct compact_split){ .from = first, .to = best, .rounds_replaced = replaced, .rounds_kept = best_rounds };
	return 0;
}

/* A block's text, cut in its middle to cap bytes (0: whole), the cut
 * marked; the pieces end on UTF-8 boundaries. */
static void put_cut(struct buf *b, const char *s, size_t cap)
{
	size_t n = strlen(s);
	if (!cap || n <= cap) {
		buf_append(b, s, n);
		return;
	}
	size_t head = cap / 2, tail = cap - head;
	while (head && ((unsigned char)s[head] & 0xc0) == 0x80)
		head--;
	size_t at = n - tail;
	while (at < n && ((unsigned char)s[at] & 0xc0) == 0x80)
		at++;
	buf_append(b, s, head);
	buf_printf(b, " [… %zu bytes cut …] ", at - head);
	buf_append(b, s + at, n - at);
}

static void put_result(struct buf *b, const cJSON *blk, size_t cap)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(blk, "content");
	if (cJSON_IsString(c)) {
		put_cut(b, c->valuestring, cap);
		return;
	}
	const cJSON *it;
	cJSON_ArrayForEach(it, c) {
		const char *t = json_str(it, "text");
		if (t)
			put_cut(b, t, cap);
	}
}

static void put_message(struct buf *b, const cJSON *m, size_t cap)
{
	const char *role = json_str(m, "role");
	role = role ? role : "?";
	const cJSON *blk;
	cJSON_ArrayForEach(blk, cJSON_GetObjectItemCaseSensitive(m, "content")) {
		const char *type = json_str(blk, "type");
		if (!type)
			continue;
		if (!strcmp(type, "text") && json_str(blk, "text")) {
			buf_printf(b, "[%s] ", role);
			put_cut(b, json_str(blk, "text"), cap);
		} else if (!strcmp(type, "tool_use")) {
			_cleanup_free_ char *in = jsonprint_text(cJSON_GetObjectItemCaseSensitive(blk, "input"));
			buf_printf(b, "[%s called %s, id %s] ", role, json_str(blk, "name") ? json_str(blk, "name") : "?",
				   json_str(blk, "id") ? json_str(blk, "id") : "?");
			put_cut(b, in ? in : "{}", cap);
		} else if (!strcmp(type, "tool_result")) {
			buf_printf(b, "[result of %s%s] ", json_str(blk, "tool_use_id") ? json_str(blk, "tool_use_id") : "?",
				   cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(blk, "is_error")) ? ", an error" : "");
			put_result(b, blk, cap);
		} else {
			continue;	/* thinking is the model's own; it is not carried */
		}
		buf_append(b, "\n", 1);
	}
}

static void render(struct buf *b, const cJSON *messages, const struct compact_split *sp, size_t cap)
{
	b->len = 0;
	for (int k = sp->from; k < sp->to; k++)
		put_message(b, cJSON_GetArrayItem(messages, k), cap);
}

cJSON *compact_summary_request(const cJSON *messages, const struct compact_split *sp, size_t max_bytes)
{
	struct buf first, body, all;
	buf_init(&first, COMPACT_TRANSCRIPT_MAX);
	buf_init(&body, COMPACT_TRANSCRIPT_MAX);
	buf_init(&all, COMPACT_TRANSCRIPT_MAX);
	if (sp->from > 0)
		put_message(&first, cJSON_GetArrayItem(messages, 0), COMPACT_BLOCK_CAP);
	size_t room = max_bytes > first.len + 1024 ? max_bytes - first.len - 1024 : 1024;
	render(&body, messages, sp, 0);
	for (size_t cap = COMPACT_BLOCK_CAP; body.len > room && cap >= COMPACT_BLOCK_FLOOR; cap /= 2)
		render(&body, messages, sp, cap);
	size_t skip = 0;
	if (body.len > room) {
		/* Still too big: the oldest lines go. */
		skip = body.len - room;
		while (skip < body.len && body.data[skip - 1] != '\n')
			skip++;
	}
	buf_printf(&all, "Here is the earlier part of the conversation, which your summary replaces.\n\n");
	if (first.len) {
		buf_printf(&all, "<first-message>\n");
		buf_append(&all, first.data, first.len);
		buf_printf(&all, "</first-message>\n(The first message is kept as it is; summarise what follows it.)\n\n");
	}
	buf_printf(&all, "<conversation>\n");
	if (skip)
		buf_printf(&all, "[… the oldest %zu bytes of the conversation were cut to fit …]\n", skip);
	buf_append(&all, body.data + skip, body.len - skip);
	buf_printf(&all, "</conversation>\n\nWrite the summary now.");
	_cleanup_free_ char *text = utf8_dup(all.data ? all.data : "", all.len);
	buf_free(&first);
	buf_free(&body);
	buf_free(&all);
	if (!text)
		return NULL;
	cJSON *msgs = cJSON_CreateArray();
	cJSON_AddItemToArray(msgs, provider_user_text(text));
	return msgs;
}

char *compact_reply_text(const cJSON *content)
{
	struct buf b;
	buf_init(&b, COMPACT_TRANSCRIPT_MAX);
	const cJSON *blk;
	cJSON_ArrayForEach(blk, content) {
		const char *type = json_str(blk, "type"), *t = json_str(blk, "text");
		if (type && !strcmp(type, "text") && t) {
			if (b.len)
				buf_append(&b, "\n", 1);
			buf_append(&b, t, strlen(t));
		}
	}
	size_t sp = 0;
	while (sp < b.len && strchr(" \t\r\n", b.data[sp]))
		sp++;
	if (sp == b.len || buf_cstr(&b) < 0) {
		buf_free(&b);
		return NULL;
	}
	return b.data;
}

cJSON *compact_summary_message(const char *summary, const struct compact_split *sp)
{
	struct buf b;
	buf_init(&b, COMPACT_TRANSCRIPT_MAX);
	buf_printf(&b,
		   "[This is a summary of the earlier conversation, written by the model when the conversation neared "
		   "its context window: it replaces %d message%s (%d round%s). The most recent rounds follow as they "
		   "were.]\n\n",
		   sp->to - sp->from, sp->to - sp->from == 1 ? "" : "s", sp->rounds_replaced,
		   sp->rounds_replaced == 1 ? "" : "s");
	buf_append(&b, summary, strlen(summary));
	buf_cstr(&b);
	cJSON *m = provider_user_text(b.data ? b.data : "");
	buf_free(&b);
	return m;
}

int compact_splice(cJSON *messages, const struct compact_split *sp, cJSON *summary, cJSON **ret_replaced)
{
	int n = cJSON_GetArraySize(messages);
	if (!cJSON_IsArray(messages) || sp->from < 0 || sp->from >= sp->to || sp->to > n) {
		cJSON_Delete(summary);
		return -EINVAL;
	}
	cJSON *replaced = cJSON_CreateArray();
	cJSON *it = cJSON_GetArrayItem(messages, sp->from);
	for (int k = sp->from; k < sp->to; k++) {
		cJSON *next = it->next;
		cJSON_AddItemToArray(replaced, cJSON_DetachItemViaPointer(messages, it));
		it = next;
	}
	/* In before it by hand: cJSON 1.7.15's cJSON_InsertItemInArray
	 * refuses an array that items were detached from. The first item's
	 * prev is the last one (cJSON's own invariant). */
	if (!it) {
		cJSON_AddItemToArray(messages, summary);
	} else {
		summary->next = it;
		summary->prev = it->prev;
		if (it == messages->child)
			messages->child = summary;
		else
			it->prev->next = summary;
		it->prev = summary;
	}
	if (ret_replaced)
		*ret_replaced = replaced;
	else
		cJSON_Delete(replaced);
	return 0;
}

bool compact_context_error(long status, const char *body, size_t n)
{
	if (status != 400 && status != 413)
		return false;
	/* Anthropic: "prompt is too long: 208310 tokens > 200000 maximum",
	 * "input length and `max_tokens` exceed context limit"; OpenAI: code
	 * "context_length_exceeded", "This model's maximum context length is
	 * 128000 tokens"; llama.cpp and vLLM say much the same. */
	static const char *const words[] = {
		"prompt is too long", "context_length_exceeded", "maximum context length", "exceed context limit",
		"exceeds the context window", "context window", "too many tokens",
	};
	_cleanup_free_ char *low = malloc(n + 1);
	if (!low)
		return false;
	for (size_t i = 0; i < n; i++)
		low[i] = (char)(body[i] >= 'A' && body[i] <= 'Z' ? body[i] + 32 : body[i]);
	low[n] = 0;
	for (size_t i = 0; i < ARRAY_SIZE(words); i++)
		if (memmem(low, n, words[i], strlen(words[i])))
			return true;
	return false;
}
