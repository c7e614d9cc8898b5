/* Compaction's choices: where the conversation is cut (a tool_use never
 * parted from its tool_result, the first message and the recent rounds
 * kept), the summary request, the splice, a context-length error; and the
 * context windows ward knows. */
#include "turn/compact.h"
#include "turn/window.h"
#include "base/cleanup.h"
#include "tap.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

static cJSON *text_msg(const char *role, const char *text)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "role", role);
	cJSON *c = cJSON_AddArrayToObject(m, "content");
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "type", "text");
	cJSON_AddStringToObject(b, "text", text);
	cJSON_AddItemToArray(c, b);
	return m;
}

/* A round: the assistant's calls (ncalls tool_use blocks) and the user
 * message with their results, each result of size bytes. */
static void add_round(cJSON *msgs, int r, int ncalls, size_t size)
{
	char id[64], out[64];
	cJSON *a = text_msg("assistant", "working");
	cJSON *u = cJSON_CreateObject();
	cJSON_AddStringToObject(u, "role", "user");
	cJSON *uc = cJSON_AddArrayToObject(u, "content");
	for (int k = 0; k < ncalls; k++) {
		snprintf(id, sizeof(id), "toolu_%d_%d", r, k);
		cJSON *b = cJSON_CreateObject();
		cJSON_AddStringToObject(b, "type", "tool_use");
		cJSON_AddStringToObject(b, "id", id);
		cJSON_AddStringToObject(b, "name", "bash");
		cJSON *in = cJSON_AddObjectToObject(b, "input");
		snprintf(out, sizeof(out), "echo marker-%d-%d", r, k);
		cJSON_AddStringToObject(in, "command", out);
		cJSON_AddItemToArray(cJSON_GetObjectItem(a, "content"), b);
		char *res = malloc(size + 64);
		int l = snprintf(res, size + 64, "output-%d-%d ", r, k);
		memset(res + l, 'x', size);
		res[l + size] = 0;
		cJSON *rb = cJSON_CreateObject();
		cJSON_AddStringToObject(rb, "type", "tool_result");
		cJSON_AddStringToObject(rb, "tool_use_id", id);
		cJSON_AddStringToObject(rb, "content", res);
		free(res);
		cJSON_AddItemToArray(uc, rb);
	}
	cJSON_AddItemToArray(msgs, a);
	cJSON_AddItemToArray(msgs, u);
}

static cJSON *conversation(int rounds, int ncalls, size_t size)
{
	cJSON *m = cJSON_CreateArray();
	cJSON_AddItemToArray(m, text_msg("user", "the task: fix the tests"));
	for (int r = 1; r <= rounds; r++)
		add_round(m, r, ncalls, size);
	return m;
}

/* Every tool_use in [from, n) has its tool_result there, and every
 * tool_result its tool_use. */
static bool pairs_whole(const cJSON *msgs, int from)
{
	int n = cJSON_GetArraySize(msgs);
	for (int i = from; i < n; i++) {
		const cJSON *b;
		cJSON_ArrayForEach(b, cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, i), "content")) {
			const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(b, "type"));
			bool use = !strcmp(type, "tool_use"), res = !strcmp(type, "tool_result");
			if (!use && !res)
				continue;
			const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(b, use ? "id" : "tool_use_id"));
			bool found = false;
			for (int j = from; j < n && !found; j++) {
				const cJSON *c;
				cJSON_ArrayForEach(c, cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, j), "content")) {
					const char *ct = cJSON_GetStringValue(cJSON_GetObjectItem(c, "type"));
					const char *cid = cJSON_GetStringValue(cJSON_GetObjectItem(c, use ? "tool_use_id" : "id"));
					if (ct && !strcmp(ct, use ? "tool_result" : "tool_use") && cid && !strcmp(cid, id))
						found = true;
				}
			}
			if (!found)
				return false;
		}
	}
	return true;
}

static void test_defaults(void)
{
	int64_t w = 0;
	is_int(COMPACT_AT_DEFAULT, 80, "--compact-at defaults to 80 %%");
	is_int(WINDOW_DEFAULT, 128000, "an unknown model is taken to have 128000 tokens");
	is_int(COMPACT_KEEP_ROUNDS, 6, "at most 6 recent rounds are kept verbatim");
	is_int(COMPACT_SUMMARY_MAX_TOKENS, 4096, "the summary's own max_tokens is 4096");
	ok(window_for("claude-sonnet-4-20250514", &w) && w == 200000, "claude-sonnet-4: 200000 tokens");
	ok(window_for("claude-3-5-haiku-latest", &w) && w == 200000, "claude-3-5-haiku: 200000 tokens");
	ok(window_for("gpt-4o-mini", &w) && w == 128000, "gpt-4o-mini: 128000 tokens");
	ok(window_for("gpt-4.1-2025-04-14", &w) && w == 1047576, "gpt-4.1: 1047576 tokens (not gpt-4's)");
	ok(window_for("gpt-4-0613", &w) && w == 8192, "gpt-4: 8192 tokens");
	ok(!window_for("fake-model", &w), "an unknown model is not guessed");
	ok(!window_for(NULL, &w), "no model, no window");
}

static void test_split(void)
{
	struct err e = { 0 };
	struct compact_split sp;
	cJSON *m = conversation(10, 1, 100);	/* 21 messages */
	struct compact_opts o = { .keep_rounds = 3 };
	is_int(compact_split(m, &o, &sp, &e), 0, "10 rounds, keep 3: compacts");
	is_int(sp.from, 1, "the first message (the task) is kept");
	is_int(sp.to, 15, "the last 3 rounds (6 messages) are kept");
	is_int(sp.rounds_replaced, 7, "7 rounds are replaced");
	is_int(sp.rounds_kept, 3, "3 rounds are kept");
	is_str(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(m, sp.to), "role")), "assistant",
	       "the kept part begins with the assistant's calls, not their results");
	ok(pairs_whole(m, sp.to), "every tool_use kept has its tool_result kept");

	/* Default keep. */
	is_int(compact_split(m, NULL, &sp, &e), 0, "default options: compacts");
	is_int(sp.rounds_kept, COMPACT_KEEP_ROUNDS, "default: COMPACT_KEEP_ROUNDS rounds kept");

	/* Big rounds: the byte bound keeps fewer, but never less than the last. */
	cJSON *big = conversation(10, 2, 4000);
	o = (struct compact_opts){ .keep_rounds = 6, .tail_bytes = 10000 };
	is_int(compact_split(big, &o, &sp, &e), 0, "big rounds: compacts");
	is_int(sp.rounds_kept, 1, "a byte bound of 10000 keeps one round of 8000 bytes");
	o.tail_bytes = 1000;
	is_int(compact_split(big, &o, &sp, &e), 0, "a bound smaller than one round");
	is_int(sp.rounds_kept, 1, "still keeps the last round whole");
	ok(pairs_whole(big, sp.to), "and its calls' results with it");
	o.tail_bytes = 0;
	is_int(compact_split(big, &o, &sp, &e), 0, "twin: no byte bound");
	is_int(sp.rounds_kept, 6, "twin: 6 rounds kept");
	cJSON_Delete(big);

	/* A conversation that ends with the assistant's calls answered and a
	 * person's message after (the terminal session): still whole pairs. */
	cJSON_AddItemToArray(m, text_msg("assistant", "done"));
	cJSON_AddItemToArray(m, text_msg("user", "now the docs"));
	o = (struct compact_opts){ .keep_rounds = 2 };
	is_int(compact_split(m, &o, &sp, &e), 0, "with a person's message last: compacts");
	is_int(sp.rounds_kept, 2, "2 rounds kept");
	ok(pairs_whole(m, sp.to), "pairs whole");
	cJSON_Delete(m);

	/* Every cut of every shape keeps the pairs whole. */
	int bad = 0, tried = 0;
	for (int rounds = 1; rounds <= 9; rounds++)
		for (int calls = 1; calls <= 3; calls++)
			for (int keep = 1; keep <= 7; keep++)
				for (size_t tb = 0; tb <= 3000; tb += 1000) {
					cJSON *c = conversation(rounds, calls, 300);
					struct compact_opts oo = { .keep_rounds = keep, .tail_bytes = tb };
					if (compact_split(c, &oo, &sp, &e) == 0) {
						tried++;
						bad += !pairs_whole(c, sp.to) || sp.from != 1 || sp.rounds_kept < 1 ||
						       sp.rounds_kept > keep || sp.rounds_replaced < 1 ||
						       sp.rounds_replaced + sp.rounds_kept != rounds;
					}
					cJSON_Delete(c);
				}
	ok(tried > 200 && bad == 0, "%d splits of conversations of 1-9 rounds of 1-3 calls: pairs whole, first and "
	   "recent kept (%d bad)", tried, bad);
}

static void test_too_few(void)
{
	struct err e = { 0 };
	struct compact_split sp = { .from = 99, .to = 99 };
	cJSON *m = conversation(1, 2, 10);
	is_int(compact_split(m, NULL, &sp, &e), -EAGAIN, "one round: too few to compact");
	like(e.msg, "too few rounds to compact", "it says so: %s", e.msg);
	like(e.msg, "1 round", "and how many there are");
	is_int(sp.from, 99, "and the split is left alone");
	cJSON_Delete(m);
	m = conversation(3, 1, 10);
	struct compact_opts o = { .keep_rounds = 3 };
	is_int(compact_split(m, &o, &sp, &e), 0, "3 rounds, keep at most 3: compacts all the same");
	is_int(sp.to - sp.from, 2, "the oldest round (2 messages) is replaced");
	is_int(sp.rounds_kept, 2, "2 rounds are kept");
	cJSON_Delete(m);
	m = cJSON_CreateArray();
	is_int(compact_split(m, NULL, &sp, &e), -EAGAIN, "an empty conversation: nothing to compact");
	cJSON_AddItemToArray(m, text_msg("user", "hello"));
	is_int(compact_split(m, NULL, &sp, &e), -EAGAIN, "only the first message: nothing to compact");
	cJSON_Delete(m);
}

static void test_splice(void)
{
	struct err e = { 0 };
	struct compact_split sp;
	cJSON *m = conversation(8, 1, 50);
	int n = cJSON_GetArraySize(m);
	struct compact_opts o = { .keep_rounds = 2 };
	compact_split(m, &o, &sp, &e);
	cJSON *req = compact_summary_request(m, &sp, 1 << 20);
	is_int(cJSON_GetArraySize(req), 1, "the summary request is one message");
	const cJSON *rm = cJSON_GetArrayItem(req, 0);
	is_str(cJSON_GetStringValue(cJSON_GetObjectItem(rm, "role")), "user", "a user message");
	const char *text = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(rm, "content"), 0), "text"));
	like(text, "the task: fix the tests", "it carries the first message, for context");
	like(text, "marker-1-0", "and the replaced rounds' calls");
	like(text, "output-6-0", "and their results");
	unlike(text, "marker-7-0", "not the kept rounds");
	_cleanup_free_ char *js = cJSON_PrintUnformatted(req);
	unlike(js, "\"tool_use\"", "no tool_use block (the request has no tools)");
	unlike(js, "\"tool_result\"", "no tool_result block");
	cJSON_Delete(req);

	/* A small budget: long blocks cut, marked, within it. */
	cJSON *bigm = conversation(8, 1, 20000);
	compact_split(bigm, &o, &sp, &e);
	req = compact_summary_request(bigm, &sp, 30000);
	text = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(req, 0), "content"), 0), "text"));
	ok(strlen(text) < 31000, "a 30000-byte budget holds (%zu bytes)", strlen(text));
	like(text, "bytes cut", "the cuts are marked");
	like(text, "output-6-0", "each replaced result still shows its beginning");
	cJSON_Delete(req);
	req = compact_summary_request(bigm, &sp, 2000);
	text = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(req, 0), "content"), 0), "text"));
	ok(strlen(text) < 4000, "a budget smaller than the blocks: the oldest lines go (%zu bytes)", strlen(text));
	like(text, "oldest", "and that is marked");
	cJSON_Delete(req);
	cJSON_Delete(bigm);

	cJSON *sum = compact_summary_message("SUMMARY-TEXT", &sp);
	cJSON *replaced = NULL;
	is_int(compact_splice(m, &sp, sum, &replaced), 0, "the splice");
	is_int(cJSON_GetArraySize(m), n - (sp.to - sp.from) + 1, "the replaced messages are one now");
	is_int(cJSON_GetArraySize(replaced), sp.to - sp.from, "and they are handed back");
	const char *t1 = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(m, 1), "content"), 0), "text"));
	like(t1, "summary of the earlier conversation", "the summary says what it is");
	like(t1, "SUMMARY-TEXT", "and holds the model's words");
	is_str(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(m, 0), "content"), 0), "text")),
	       "the task: fix the tests", "the first message is still first");
	ok(pairs_whole(m, 0), "the compacted conversation has every pair whole");
	cJSON_Delete(replaced);
	struct compact_split bad = { .from = 1, .to = 99 };
	int before = cJSON_GetArraySize(m);
	is_int(compact_splice(m, &bad, compact_summary_message("x", &bad), NULL), -EINVAL, "a split past the end: refused");
	is_int(cJSON_GetArraySize(m), before, "and nothing changed");
	cJSON_Delete(m);

	/* No person's first message (a conversation begun with a summary's
	 * results): nothing is held at the front, and the splice is at 0. */
	cJSON *nf = conversation(4, 1, 10);
	cJSON_DeleteItemFromArray(nf, 0);
	cJSON_DeleteItemFromArray(nf, 0);	/* now it begins with a tool_result: no first */
	o = (struct compact_opts){ .keep_rounds = 1 };
	is_int(compact_split(nf, &o, &sp, &e), 0, "a conversation that begins with results: compacts");
	is_int(sp.from, 0, "from its start");
	is_int(compact_splice(nf, &sp, compact_summary_message("AT-ZERO", &sp), NULL), 0, "spliced at 0");
	_cleanup_free_ char *nfs = cJSON_PrintUnformatted(nf);
	like(nfs, "AT-ZERO", "the summary is in");
	is_int(cJSON_GetArraySize(nf), 3, "summary, and the last round's 2 messages");
	ok(strstr(nfs, "AT-ZERO") < strstr(nfs, "marker-4-0"), "the summary comes first");
	cJSON_Delete(nf);

	cJSON *c = cJSON_Parse("[{\"type\":\"thinking\",\"thinking\":\"hm\"},{\"type\":\"text\",\"text\":\"one\"},{\"type\":\"text\",\"text\":\"two\"}]");
	_cleanup_free_ char *rt = compact_reply_text(c);
	is_str(rt, "one\ntwo", "the reply's text blocks, joined");
	cJSON_Delete(c);
	c = cJSON_Parse("[{\"type\":\"text\",\"text\":\"  \\n\"}]");
	ok(compact_reply_text(c) == NULL, "a blank reply is no summary");
	cJSON_Delete(c);
}

static void test_context_error(void)
{
	const char *an = "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: "
			 "208310 tokens > 200000 maximum\"}}";
	const char *oa = "{\"error\":{\"message\":\"This model's maximum context length is 128000 tokens. However, your "
			 "messages resulted in 130000 tokens.\",\"type\":\"invalid_request_error\",\"code\":\"context_length_exceeded\"}}";
	const char *other = "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad request body\"}}";
	ok(compact_context_error(400, an, strlen(an)), "Anthropic's prompt is too long");
	ok(compact_context_error(400, oa, strlen(oa)), "OpenAI's context_length_exceeded");
	ok(!compact_context_error(400, other, strlen(other)), "twin: another 400 is not one");
	ok(!compact_context_error(500, an, strlen(an)), "twin: a 500 is not one");
	ok(!compact_context_error(400, "", 0), "an empty body is not one");
}

int main(void)
{
	test_defaults();
	test_split();
	test_too_few();
	test_splice();
	test_context_error();
	return tap_done();
}
