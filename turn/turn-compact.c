/* Compaction in the turn loop: near the context window (or told by the API
 * that the prompt is too long, or asked by /compact) the summary request
 * goes first, through the same provider and HTTP client as a round, with
 * its own max_tokens and no tools; its reply replaces the middle of the
 * conversation, and the journal keeps what was replaced. */
#include "turn/turn-int.h"
#include "base/cleanup.h"
#include "turn/window.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes of a request body per token when no reply has said better. */
#define COMPACT_TOKENS_PER_BYTE 0.25

static int64_t window_of(const struct turn *t)
{
	return t->cfg->context_window > 0 ? t->cfg->context_window : WINDOW_DEFAULT;
}

static int pct_of(const struct turn *t)
{
	return t->cfg->compact_at > 0 ? t->cfg->compact_at : COMPACT_AT_DEFAULT;
}

bool turn_compact_due(const struct turn *t)
{
	if (t->cfg->replay_path || t->compacting)
		return false;
	return t->s->prompt_tokens > 0 && t->s->prompt_tokens * 100 >= window_of(t) * pct_of(t);
}

void turn_compact_free(struct turn *t)
{
	cJSON_Delete(t->cmsgs);
	t->cmsgs = NULL;
	t->compacting = false;
}

int turn_compact_begin(struct turn *t, enum compact_reason reason, char *why, size_t n)
{
	const struct session *s = t->s;
	if (t->cfg->replay_path) {
		snprintf(why, n, "the replay provider does not compact: its script is the conversation");
		return -EOPNOTSUPP;
	}
	int64_t win = window_of(t);
	/* Tokens per byte of a request, from the last reply; a request the API
	 * found too long had more tokens than the whole window. */
	double tpb = s->prompt_tokens > 0 && s->prompt_bytes > 0 ? (double)s->prompt_tokens / (double)s->prompt_bytes
								 : COMPACT_TOKENS_PER_BYTE;
	if (reason == COMPACT_CONTEXT && t->req_bytes > 0 && (double)win / (double)t->req_bytes > tpb)
		tpb = (double)win / (double)t->req_bytes;
	/* The kept rounds take at most a third of the threshold, so that the
	 * next rounds have room before the next compaction; the summary
	 * request at most half the window. */
	struct compact_opts o = { .tail_bytes = (size_t)((double)win * pct_of(t) / 100 / 3 / tpb) };
	struct err e = { 0 };
	if (compact_split(s->messages, &o, &t->csplit, &e) < 0) {
		snprintf(why, n, "%s", e.msg);
		return e.code;
	}
	/* PreCompact: the hooks are told (trigger as Claude Code names it);
	 * one cannot stop a compaction the context window needs. */
	if (t->cfg->hooks.run) {
		cJSON *ev = cJSON_CreateObject();
		cJSON_AddStringToObject(ev, "trigger", reason == COMPACT_MANUAL ? "manual" : "auto");
		cJSON_AddStringToObject(ev, "custom_instructions", "");
		char hwhy[512], hctx[512];
		turn_hooks_fire(t, "PreCompact", NULL, ev, hwhy, sizeof(hwhy), hctx, sizeof(hctx));
		cJSON_Delete(ev);
	}
	t->cmsgs = compact_summary_request(s->messages, &t->csplit, (size_t)((double)win / 2 / tpb));
	if (!t->cmsgs) {
		snprintf(why, n, "out of memory");
		return -ENOMEM;
	}
	t->compacting = true;
	t->creason = reason;
	t->cprompt = s->prompt_tokens;
	t->attempt = 0;
	turn_start_attempt(t);
	return 0;
}

void turn_compact_failed(struct turn *t, const char *why)
{
	bool manual = t->creason == COMPACT_MANUAL;
	turn_compact_free(t);
	t->phase = PH_IDLE;
	if (manual)
		turn_finish(t, TURN_PROVIDER_ERROR, "the summary request failed: %s; the conversation is unchanged", why);
	else
		turn_finish(t, TURN_PROVIDER_ERROR,
			    "the conversation is too long for the context window and the summary request that would have "
			    "compacted it failed: %s; nothing more was sent",
			    why);
}

void turn_compact_done(struct turn *t, struct reply *r)
{
	struct session *s = t->s;
	/* The summary's tokens are the run's, for its totals and budgets. */
	turn_add_usage(t, &r->usage);
	_cleanup_free_ char *sum = compact_reply_text(r->content);
	if (!sum) {
		turn_compact_failed(t, "the model's summary was empty");
		return;
	}
	int64_t win = window_of(t);
	char why[300];
	if (t->creason == COMPACT_THRESHOLD)
		snprintf(why, sizeof(why), "the last prompt was %lld tokens, %lld%% of the %lld-token context window",
			 (long long)t->cprompt, (long long)(t->cprompt * 100 / win), (long long)win);
	else if (t->creason == COMPACT_CONTEXT)
		snprintf(why, sizeof(why), "the API said the prompt is more than the model's context window");
	else
		snprintf(why, sizeof(why), "asked for by hand");
	const struct compact_split sp = t->csplit;
	cJSON *msg = compact_summary_message(sum, &sp);
	cJSON *summary = cJSON_Duplicate(msg, 1);
	cJSON *replaced = NULL;
	if (compact_splice(s->messages, &sp, msg, &replaced) < 0) {
		cJSON_Delete(summary);
		turn_compact_failed(t, "the split no longer fits the conversation");
		return;
	}
	cJSON *rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "reason", compact_reason_name(t->creason));
	cJSON_AddStringToObject(rec, "why", why);
	cJSON_AddNumberToObject(rec, "from", sp.from);
	cJSON_AddNumberToObject(rec, "to", sp.to);
	cJSON_AddNumberToObject(rec, "prompt_tokens", (double)t->cprompt);
	cJSON_AddNumberToObject(rec, "context_window", (double)win);
	cJSON_AddItemToObject(rec, "summary", summary);
	cJSON_AddItemToObject(rec, "replaced", replaced);
	journal_write(&s->j, "compaction", rec);
	cJSON_Delete(rec);

	cJSON *ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "reason", compact_reason_name(t->creason));
	cJSON_AddStringToObject(ev, "why", why);
	cJSON_AddNumberToObject(ev, "replaced", sp.to - sp.from);
	cJSON_AddNumberToObject(ev, "rounds_replaced", sp.rounds_replaced);
	cJSON_AddNumberToObject(ev, "rounds_kept", sp.rounds_kept);
	cJSON_AddNumberToObject(ev, "prompt_tokens", (double)t->cprompt);
	cJSON_AddNumberToObject(ev, "context_window", (double)win);
	struct turn_event te = { .type = EV_COMPACT, .text = why, .len = strlen(why), .n = sp.to - sp.from, .result = ev };
	turn_emit(t, &te);
	cJSON_Delete(ev);

	/* Not known again until the next reply says. */
	s->prompt_tokens = s->prompt_bytes = 0;
	enum compact_reason reason = t->creason;
	turn_compact_free(t);
	t->phase = PH_IDLE;
	switch (reason) {
	case COMPACT_MANUAL:
		turn_finish(t, TURN_DONE, "compacted: %d message%s (%d round%s) replaced by a summary; %d round%s kept",
			    sp.to - sp.from, sp.to - sp.from == 1 ? "" : "s", sp.rounds_replaced,
			    sp.rounds_replaced == 1 ? "" : "s", sp.rounds_kept, sp.rounds_kept == 1 ? "" : "s");
		break;
	case COMPACT_CONTEXT:
		/* The same round again, smaller. */
		t->attempt = 0;
			turn_start_attempt(t);
		break;
	case COMPACT_THRESHOLD:
		turn_start_round(t);
		break;
	}
}
