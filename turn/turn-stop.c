/* How a turn stops: the stop reasons, the budgets checked before every
 * round and every call, the stop asked for while calls run, and the end
 * (journaled and emitted once). */
#include "turn/turn-int.h"
#include "base/cleanup.h"
#include "base/timeutil.h"
#include "sandbox/box.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *turn_stop_name(enum turn_stop_kind k)
{
	static const char *const names[] = {
		[TURN_DONE] = "done", [TURN_ROUND_CAP] = "round_cap", [TURN_DEADLINE] = "deadline",
		[TURN_TOKENS] = "token_budget", [TURN_COST] = "cost_budget", [TURN_CALL_CAP] = "call_cap",
		[TURN_CANCELLED] = "cancelled", [TURN_REFUSED] = "refused", [TURN_MODEL_REFUSED] = "model_refused",
		[TURN_PROVIDER_ERROR] = "provider_error", [TURN_BOX_ERROR] = "box_error", [TURN_AUTH_ERROR] = "auth_error",
		[TURN_OUTPUT_INVALID] = "output_invalid",
	};
	return (unsigned)k < ARRAY_SIZE(names) ? names[k] : "?";
}

static int lat_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

double turn_cost(const struct turn *t)
{
	const struct session *s = t->s;
	if (!t->priced || s->cost_before < 0)
		return -1;
	struct usage d;
	usage_sub(&d, &s->usage, &s->usage_before);
	return s->cost_before + price_cost(&t->price, &d);
}

void turn_finish(struct turn *t, enum turn_stop_kind kind, const char *fmt, ...)
{
	if (t->finished)
		return;
	t->finished = true;
	ledger_release(t->cfg->ledger);
	struct turn_stop *st = t->stop;
	st->kind = kind;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(st->why, sizeof(st->why), fmt, ap);
	va_end(ap);
	st->rounds = t->s->rounds;
	st->calls = t->s->calls;
	st->refused = t->s->refused;
	st->usage = t->s->usage;
	st->cost = turn_cost(t);
	if (t->nlat) {
		qsort(t->lat, t->nlat, sizeof(t->lat[0]), lat_cmp);
		st->dispatch_us_median = t->lat[t->nlat / 2];
	}
	cJSON *rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "reason", turn_stop_name(kind));
	cJSON_AddStringToObject(rec, "why", st->why);
	cJSON_AddNumberToObject(rec, "rounds", st->rounds);
	cJSON_AddNumberToObject(rec, "calls", st->calls);
	usage_json(rec, &st->usage);
	/* A compaction by hand is not the end of a turn. */
	if (!t->compact_only)
		journal_write(&t->s->j, "stop", rec);
	cJSON_Delete(rec);
	struct turn_event ev = { .type = EV_STOP, .stop = st };
	turn_emit(t, &ev);
}


void turn_stop_request(struct turn *t, enum turn_stop_kind kind, const char *why)
{
	if (t->stopping)
		return;
	t->stopping = true;
	t->stop_kind = kind;
	snprintf(t->stop_why, sizeof(t->stop_why), "%s", why);
}

/* The task's totals: this session's, and what the rest of the task (a
 * parent, other children) added to the ledger. */
static int64_t total_tokens(const struct turn *t)
{
	const struct session *s = t->s;
	return usage_prompt(&s->usage) + s->usage.output + ledger_tokens(t->cfg->ledger) - s->led_tokens;
}

static int64_t total_calls(const struct turn *t)
{
	return t->s->calls + ledger_calls(t->cfg->ledger) - t->s->led_calls;
}

static double total_cost(const struct turn *t)
{
	double c = turn_cost(t);
	return c < 0 ? c : c + ledger_cost(t->cfg->ledger) - t->s->led_cost;
}

bool turn_budget_ok(struct turn *t, bool before_call, enum turn_stop_kind *ret_kind, char *why, size_t n)
{
	const struct task_limits *b = &t->cfg->b;
	/* Worded for the task once it has subagents (its ledger shared). */
	bool shared = t->cfg->ledger && t->cfg->ledger->shared;
	const char *whose = shared ? "the task's (with its subagents')" : "the run's";
	/* A call is not started with less than TURN_MIN_CALL_MS left. */
	if (b->deadline_ms && now_ms() + (before_call ? TURN_MIN_CALL_MS : 0) >= b->deadline_ms) {
		*ret_kind = TURN_DEADLINE;
		snprintf(why, n, "the run's deadline was reached");
	} else if (!before_call && b->max_rounds > 0 && t->round_no >= b->max_rounds) {
		*ret_kind = TURN_ROUND_CAP;
		snprintf(why, n, "the round cap (%d) was reached", b->max_rounds);
	} else if (before_call && b->max_calls > 0 && total_calls(t) >= b->max_calls) {
		*ret_kind = TURN_CALL_CAP;
		snprintf(why, n, "%s tool-call cap (%d) was reached", whose, b->max_calls);
	} else if (b->max_tokens > 0 && total_tokens(t) >= b->max_tokens) {
		*ret_kind = TURN_TOKENS;
		if (shared)
			snprintf(why, n, "the task's token budget (%lld) was used: %lld by it and its subagents",
				 (long long)b->max_tokens, (long long)total_tokens(t));
		else
			snprintf(why, n, "the token budget (%lld) was used: %lld in, %lld out", (long long)b->max_tokens,
				 (long long)usage_prompt(&t->s->usage), (long long)t->s->usage.output);
	} else if (b->max_cost > 0 && total_cost(t) >= b->max_cost) {
		*ret_kind = TURN_COST;
		snprintf(why, n, "%s cost budget ($%.2f) was used: $%.4f", shared ? whose : "the", b->max_cost,
			 total_cost(t));
	} else if (before_call && b->share_calls > 0 && t->s->calls >= b->share_calls) {
		*ret_kind = TURN_CALL_CAP;
		snprintf(why, n, "its own share of the task's tool calls (%d) was used", b->share_calls);
	} else if (b->share_tokens > 0 && usage_prompt(&t->s->usage) + t->s->usage.output >= b->share_tokens) {
		*ret_kind = TURN_TOKENS;
		snprintf(why, n, "its own share of the task's tokens (%lld) was used: %lld", (long long)b->share_tokens,
			 (long long)(usage_prompt(&t->s->usage) + t->s->usage.output));
	} else if (b->share_cost > 0 && turn_cost(t) >= b->share_cost) {
		*ret_kind = TURN_COST;
		snprintf(why, n, "its own share of the task's cost ($%.4f) was used: $%.4f", b->share_cost, turn_cost(t));
	} else {
		return true;
	}
	return false;
}

void turn_wind_down(struct turn *t, enum turn_stop_kind kind, const char *why)
{
	turn_stop_request(t, kind, why);
	switch (t->phase) {
	case PH_STREAM:
	case PH_RETRY_WAIT:
		if (t->req) {
			http_abort(t->req);
			t->req = NULL;
		}
		if (t->partial.len) {
			/* What was shown is kept, marked as cut; never a partial call. */
			cJSON *m = cJSON_CreateObject();
			cJSON_AddStringToObject(m, "role", "assistant");
			cJSON *c = cJSON_AddArrayToObject(m, "content");
			cJSON *b = cJSON_CreateObject();
			cJSON_AddStringToObject(b, "type", "text");
			cJSON_AddStringToObject(b, "text", t->partial.data);
			cJSON_AddItemToArray(c, b);
			cJSON *rec = cJSON_Duplicate(m, 1);
			cJSON_AddBoolToObject(rec, "partial", 1);
			journal_write(&t->s->j, "message", rec);
			cJSON_Delete(rec);
			cJSON_AddItemToArray(t->s->messages, m);
		}
		t->phase = PH_IDLE;
		turn_finish(t, t->stop_kind, "%s", t->stop_why);
		break;
	case PH_CALLS:
		/* Their results (cancelled) arrive; the pump ends the round. */
		turn_calls_cancel(t);
		turn_calls_pump(t);
		break;
	case PH_IDLE:
		turn_finish(t, t->stop_kind, "%s", t->stop_why);
		break;
	}
}

