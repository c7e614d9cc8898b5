/* Compaction: ward's own work to compact a conversation of about 150k
 * tokens (some 600 KB of messages, 150 rounds of tool_use and
 * tool_result): choosing the split, building the summary request's body,
 * splicing the summary in, writing the journal record. Not the model's
 * time. Prints, in µs, the median of 9 runs of each step and of their sum,
 * then the conversation's bytes and messages.
 * usage: bench-compact [ROUNDS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timeutil.h"
#include "turn/compact.h"
#include "turn/journal.h"
#include "turn/provider.h"

#define RUNS 9

static cJSON *text_block(const char *type, const char *key, const char *text)
{
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "type", type);
	cJSON_AddStringToObject(b, key, text);
	return b;
}

/* A task, then rounds of a few words and a bash call, and its ~3.6 KB of
 * output (a build log's lines). */
static cJSON *conversation(int rounds)
{
	cJSON *msgs = cJSON_CreateArray();
	cJSON *u = cJSON_CreateObject();
	cJSON_AddStringToObject(u, "role", "user");
	cJSON_AddItemToArray(cJSON_AddArrayToObject(u, "content"), text_block("text", "text", "Fix the failing tests in src/."));
	cJSON_AddItemToArray(msgs, u);
	char out[4096], cmd[128], id[64];
	for (int r = 0; r < rounds; r++) {
		snprintf(id, sizeof(id), "toolu_%06d", r);
		snprintf(cmd, sizeof(cmd), "make -C src test TEST=case_%d 2>&1 | tail -60", r);
		size_t k = 0;
		for (int l = 0; k + 80 < sizeof(out) - 200; l++)
			k += (size_t)snprintf(out + k, sizeof(out) - k, "src/case_%d.c:%d: check %d passed in %d.%03d s\n", r, l,
					      l * 7, l % 3, (l * 37) % 1000);
		cJSON *a = cJSON_CreateObject();
		cJSON_AddStringToObject(a, "role", "assistant");
		cJSON *ac = cJSON_AddArrayToObject(a, "content");
		cJSON_AddItemToArray(ac, text_block("text", "text", "Running the next case to see whether the fix holds; "
								    "then I will look at the failures, if any, one by one."));
		cJSON *tu = cJSON_CreateObject();
		cJSON_AddStringToObject(tu, "type", "tool_use");
		cJSON_AddStringToObject(tu, "id", id);
		cJSON_AddStringToObject(tu, "name", "bash");
		cJSON_AddStringToObject(cJSON_AddObjectToObject(tu, "input"), "command", cmd);
		cJSON_AddItemToArray(ac, tu);
		cJSON_AddItemToArray(msgs, a);
		cJSON *res = cJSON_CreateObject();
		cJSON_AddStringToObject(res, "role", "user");
		cJSON *tr = text_block("tool_result", "content", out);
		cJSON_AddStringToObject(tr, "tool_use_id", id);
		cJSON_AddItemToArray(cJSON_AddArrayToObject(res, "content"), tr);
		cJSON_AddItemToArray(msgs, res);
	}
	return msgs;
}

static int cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int64_t median(int64_t *v)
{
	qsort(v, RUNS, sizeof(v[0]), cmp);
	return v[RUNS / 2];
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 150;
	cJSON *base = conversation(rounds);
	char *all = cJSON_PrintUnformatted(base);
	size_t bytes = strlen(all);
	free(all);
	/* As the loop does for a 200k window at 80 %, 4 bytes a token. */
	const int64_t win = 200000;
	const double tpb = 0.25;
	struct compact_opts o = { .tail_bytes = (size_t)((double)win * COMPACT_AT_DEFAULT / 100 / 3 / tpb) };
	struct provider_cfg pc = { .base_url = "http://127.0.0.1:9", .model = "claude-sonnet-4-20250514" };
	FILE *tf = tmpfile();	/* the journal's file, gone at exit */
	if (!tf)
		return 1;
	struct journal j = { .fd = fileno(tf) };
	int64_t t_split[RUNS], t_req[RUNS], t_splice[RUNS], t_journal[RUNS], t_all[RUNS];
	size_t body = 0;
	for (int r = 0; r < RUNS; r++) {
		cJSON *msgs = cJSON_Duplicate(base, 1);
		struct compact_split sp;
		struct err e = { 0 };
		int64_t t0 = now_us();
		if (compact_split(msgs, &o, &sp, &e) < 0) {
			fprintf(stderr, "bench-compact: %s\n", e.msg);
			return 1;
		}
		int64_t t1 = now_us();
		cJSON *req = compact_summary_request(msgs, &sp, (size_t)((double)win / 2 / tpb));
		struct provider_req q = { .system = compact_instruction, .messages = req, .max_tokens = COMPACT_SUMMARY_MAX_TOKENS };
		struct http_call hc = { 0 };
		if (provider_anthropic.request(&pc, &q, &hc, &e) < 0)
			return 1;
		body = hc.body_len;
		int64_t t2 = now_us();
		cJSON *msg = compact_summary_message("The agent fixed cases 0 to 120 of src/ and ran each; all pass.", &sp);
		cJSON *summary = cJSON_Duplicate(msg, 1);
		cJSON *replaced = NULL;
		if (compact_splice(msgs, &sp, msg, &replaced) < 0)
			return 1;
		int64_t t3 = now_us();
		cJSON *rec = cJSON_CreateObject();
		cJSON_AddStringToObject(rec, "reason", "threshold");
		cJSON_AddNumberToObject(rec, "from", sp.from);
		cJSON_AddNumberToObject(rec, "to", sp.to);
		cJSON_AddItemToObject(rec, "summary", summary);
		cJSON_AddItemToObject(rec, "replaced", replaced);
		if (journal_write(&j, "compaction", rec) < 0)
			return 1;
		int64_t t4 = now_us();
		t_split[r] = t1 - t0;
		t_req[r] = t2 - t1;
		t_splice[r] = t3 - t2;
		t_journal[r] = t4 - t3;
		t_all[r] = t4 - t0;
		cJSON_Delete(rec);
		http_call_free(&hc);
		cJSON_Delete(req);
		cJSON_Delete(msgs);
	}
	printf("%lld %lld %lld %lld %lld %zu %d %zu\n", (long long)median(t_split), (long long)median(t_req),
	       (long long)median(t_splice), (long long)median(t_journal), (long long)median(t_all), bytes,
	       cJSON_GetArraySize(base), body);
	fclose(tf);
	cJSON_Delete(base);
	return 0;
}
