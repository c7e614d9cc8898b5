#include "turn/turn.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/loop.h"
#include "base/timeutil.h"
#include "sandbox/box.h"
#include "tools/bash.h"
#include "tools/tool.h"
#include "turn/http.h"
#include "turn/retry.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <unistd.h>

#define TURN_IDLE_MS_DEFAULT 120000
#define TURN_ERRBODY_MAX (64u * 1024)
#define TURN_SSE_EVENT_MAX (16u << 20)
#define TURN_REPLAY_CHUNK 512
/* Calls refused for want of a person before the run gives up. */
#define TURN_NEEDS_PERSON_MAX 3
/* A call is not started with less time than this left. */
#define TURN_MIN_CALL_MS 200

const char *turn_stop_name(enum turn_stop_kind k)
{
	static const char *const names[] = {
		[TURN_DONE] = "done", [TURN_ROUND_CAP] = "round_cap", [TURN_DEADLINE] = "deadline",
		[TURN_TOKENS] = "token_budget", [TURN_COST] = "cost_budget", [TURN_CALL_CAP] = "call_cap",
		[TURN_CANCELLED] = "cancelled", [TURN_REFUSED] = "refused", [TURN_PROVIDER_ERROR] = "provider_error",
		[TURN_BOX_ERROR] = "box_error",
	};
	return (unsigned)k < ARRAY_SIZE(names) ? names[k] : "?";
}

const char *turn_ev_name(enum turn_ev_type t)
{
	static const char *const names[] = {
		[EV_ROUND] = "round", [EV_TEXT] = "text", [EV_THINKING] = "thinking", [EV_RETRY] = "retry",
		[EV_TOOL_CALL] = "tool_call", [EV_APPROVAL] = "approval", [EV_TOOL_OUTPUT] = "tool_output",
		[EV_TOOL_RESULT] = "tool_result", [EV_USAGE] = "usage", [EV_STOP] = "stop",
	};
	return (unsigned)t < ARRAY_SIZE(names) ? names[t] : "?";
}

enum tc_state { TC_WAIT, TC_RUNNING, TC_DONE };

struct tcall {
	const cJSON *block;	/* the tool_use block, in the assistant message */
	const char *id, *name;
	const struct tool *tool;
	enum tc_state state;
	uint32_t box_id;
	cJSON *result;
	char key[128];
};

enum phase { PH_IDLE, PH_STREAM, PH_RETRY_WAIT, PH_CALLS };

struct turn {
	const struct turn_cfg *cfg;
	struct session *s;
	struct turn_stop *stop;
	struct loop *loop;
	struct http *http;
	int sfd;
	bool finished, stopping;
	bool box_watched;	/* the box's channel is in the loop */
	enum turn_stop_kind stop_kind;
	char stop_why[512];
	int sigints;

	enum phase phase;
	int round_no;
	struct http_req *req;
	struct http_call hc;
	struct sse sse;
	struct stream *stream;
	const struct provider *prov;
	bool sse_on, output_shown, bad_status, bad_type;
	struct buf errbody;
	struct err perr;
	unsigned attempt;
	int64_t retry_at;
	cJSON *replay_script;	/* read once a turn, at its first round */
	char *replay;
	size_t replay_len, replay_off;
	struct buf partial;	/* text shown this round */

	struct tcall *calls;
	size_t ncalls, next;
	int running, running_mut;
	int needs_person;
	struct price price;
	bool priced;
	int64_t stream_end_us;
	int64_t lat[512];	/* dispatch latencies, for the stop's median */
	size_t nlat;
	cJSON *tools;		/* the tool schemas, the same every round */
};

static void emit(struct turn *t, const struct turn_event *ev)
{
	for (int i = 0; i < t->cfg->nsinks; i++)
		if (t->cfg->sinks[i].on_event)
			t->cfg->sinks[i].on_event(t->cfg->sinks[i].ud, ev);
}

static void start_round(struct turn *t);
static void pump_calls(struct turn *t);

static int lat_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static void finish(struct turn *t, enum turn_stop_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void finish(struct turn *t, enum turn_stop_kind kind, const char *fmt, ...)
{
	if (t->finished)
		return;
	t->finished = true;
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
	st->cost = t->priced ? price_cost(&t->price, &t->s->usage) : -1;
	if (t->nlat) {
		qsort(t->lat, t->nlat, sizeof(t->lat[0]), lat_cmp);
		st->dispatch_us_median = t->lat[t->nlat / 2];
	}
	cJSON *rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "reason", turn_stop_name(kind));
	cJSON_AddStringToObject(rec, "why", st->why);
	cJSON_AddNumberToObject(rec, "rounds", st->rounds);
	cJSON_AddNumberToObject(rec, "calls", st->calls);
	cJSON *u = cJSON_AddObjectToObject(rec, "usage");
	cJSON_AddNumberToObject(u, "input_tokens", (double)st->usage.input);
	cJSON_AddNumberToObject(u, "output_tokens", (double)st->usage.output);
	journal_write(&t->s->j, "stop", rec);
	cJSON_Delete(rec);
	struct turn_event ev = { .type = EV_STOP, .stop = st };
	emit(t, &ev);
}

/* Begin winding down: no new rounds, no new calls; what runs is cancelled.
 * The first reason wins. */
static void wind_down(struct turn *t, enum turn_stop_kind kind, const char *why)
{
	if (!t->stopping) {
		t->stopping = true;
		t->stop_kind = kind;
		snprintf(t->stop_why, sizeof(t->stop_why), "%s", why);
	}
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
		finish(t, t->stop_kind, "%s", t->stop_why);
		break;
	case PH_CALLS:
		for (size_t i = 0; i < t->ncalls; i++)
			if (t->calls[i].state == TC_RUNNING)
				box_call_cancel(t->s->box, t->calls[i].box_id);
		/* Their results (cancelled) arrive; pump_calls ends the round. */
		pump_calls(t);
		break;
	case PH_IDLE:
		finish(t, t->stop_kind, "%s", t->stop_why);
		break;
	}
}

/* Stream events from the assembler. */
static void sink_text(void *ud, const char *p, size_t n)
{
	struct turn *t = ud;
	t->output_shown = true;
	buf_append(&t->partial, p, n);
	struct turn_event ev = { .type = EV_TEXT, .text = p, .len = n };
	emit(t, &ev);
}

static void sink_thinking(void *ud, const char *p, size_t n)
{
	struct turn *t = ud;
	t->output_shown = true;
	struct turn_event ev = { .type = EV_THINKING, .text = p, .len = n };
	emit(t, &ev);
}

static int on_sse(void *ud, const struct sse_event *ev)
{
	struct turn *t = ud;
	return t->prov->stream_event(t->stream, ev, &t->perr);
}

static void round_reset(struct turn *t)
{
	if (t->sse_on)
		sse_free(&t->sse);
	t->sse_on = false;
	if (t->stream)
		t->prov->stream_free(t->stream);
	t->stream = NULL;
	http_call_free(&t->hc);
	free(t->replay);
	t->replay = NULL;
	t->replay_len = t->replay_off = 0;
	t->bad_status = t->bad_type = false;
	t->errbody.len = 0;
	t->partial.len = 0;
	t->perr = (struct err){ 0 };
}

static void calls_free(struct turn *t)
{
	for (size_t i = 0; i < t->ncalls; i++)
		cJSON_Delete(t->calls[i].result);
	free(t->calls);
	t->calls = NULL;
	t->ncalls = t->next = 0;
	t->running = t->running_mut = 0;
}


static void call_done(struct turn *t, struct tcall *c, cJSON *result, bool dispatched)
{
	c->state = TC_DONE;
	c->result = result;
	if (dispatched) {
		cJSON *rec = cJSON_Duplicate(result, 1);
		cJSON_AddStringToObject(rec, "call_id", c->id);
		journal_write(&t->s->j, "result", rec);
		cJSON_Delete(rec);
	}
	struct turn_event ev = { .type = EV_TOOL_RESULT, .call = c->block, .result = result };
	emit(t, &ev);
}

static void on_box_output(void *ud, uint32_t id, const char *p, size_t n)
{
	struct turn *t = ud;
	for (size_t i = 0; i < t->ncalls; i++)
		if (t->calls[i].state == TC_RUNNING && t->calls[i].box_id == id) {
			struct turn_event ev = { .type = EV_TOOL_OUTPUT, .call = t->calls[i].block, .text = p, .len = n };
			emit(t, &ev);
		}
}

static void on_box_result(void *ud, uint32_t id, cJSON *result)
{
	struct turn *t = ud;
	for (size_t i = 0; i < t->ncalls; i++) {
		struct tcall *c = &t->calls[i];
		if (c->state != TC_RUNNING || c->box_id != id)
			continue;
		t->running--;
		if (!c->tool || !c->tool->readonly)
			t->running_mut--;
		call_done(t, c, result, true);
		pump_calls(t);
		return;
	}
	cJSON_Delete(result);
}

/* Gate and dispatch one call; false when it must wait for others. */
static bool dispatch(struct turn *t, struct tcall *c)
{
	const cJSON *input = cJSON_GetObjectItemCaseSensitive(c->block, "input");
	const char *werr = json_str(c->block, "_ward_error");
	struct turn_event ev = { .type = EV_TOOL_CALL, .call = c->block };
	emit(t, &ev);
	if (t->stopping) {
		call_done(t, c, tool_result_json("cancelled", "not run: %s", t->stop_why), false);
		return true;
	}
	if (werr) {
		call_done(t, c, tool_result_json("bad_input", "not run: %s", werr), false);
		return true;
	}
	if (!c->tool) {
		call_done(t, c,
			  tool_result_json("bad_input", "no tool named \"%.60s\"; the tools are read, write, edit, grep, find, ls and bash",
				     c->name ? c->name : ""),
			  false);
		return true;
	}
	struct err e = { 0 };
	if (tool_check_args(c->tool, input, &e) < 0) {
		call_done(t, c, tool_result_json("bad_input", "%s", e.msg), false);
		return true;
	}
	const struct budgets *b = &t->cfg->b;
	if (b->max_calls > 0 && t->s->calls >= b->max_calls) {
		char why[160];
		snprintf(why, sizeof(why), "the run's tool-call cap (%d) was reached", b->max_calls);
		call_done(t, c, tool_result_json("cancelled", "not run: %s", why), false);
		if (!t->stopping) {
			t->stopping = true;
			t->stop_kind = TURN_CALL_CAP;
			snprintf(t->stop_why, sizeof(t->stop_why), "%s", why);
		}
		return true;
	}
	int64_t left = b->deadline_ms ? b->deadline_ms - now_ms() : -1;
	if (b->deadline_ms && left < TURN_MIN_CALL_MS) {
		call_done(t, c, tool_result_json("cancelled", "not run: the run's deadline was reached"), false);
		if (!t->stopping) {
			t->stopping = true;
			t->stop_kind = TURN_DEADLINE;
			snprintf(t->stop_why, sizeof(t->stop_why), "the run's deadline was reached");
		}
		return true;
	}
	char why[600];
	enum gate_decision d = gate_check(t->cfg->gate, c->name, input, why, sizeof(why));
	cJSON *g = cJSON_CreateObject();
	cJSON_AddStringToObject(g, "call_id", c->id);
	cJSON_AddStringToObject(g, "tool", c->name);
	cJSON_AddStringToObject(g, "decision", gate_decision_name(d));
	cJSON_AddStringToObject(g, "why", why);
	journal_write(&t->s->j, "gate", g);
	cJSON_Delete(g);
	struct turn_event ae = { .type = EV_APPROVAL, .call = c->block, .text = why, .len = strlen(why),
				 .n = (int64_t)d };
	emit(t, &ae);
	if (d == GATE_ABORT) {
		call_done(t, c, tool_result_json("refused", "not run: %s", why), false);
		if (!t->stopping) {
			t->stopping = true;
			t->stop_kind = TURN_REFUSED;
			snprintf(t->stop_why, sizeof(t->stop_why), "%s", why);
		}
		return true;
	}
	if (d == GATE_DENY || d == GATE_NEEDS_PERSON) {
		if (d == GATE_NEEDS_PERSON) {
			t->needs_person++;
			t->s->refused++;
		}
		call_done(t, c, tool_result_json("refused", "%s", why), false);
		return true;
	}
	cJSON *intent = cJSON_CreateObject();
	cJSON_AddStringToObject(intent, "call_id", c->id);
	cJSON_AddStringToObject(intent, "key", c->key);
	cJSON_AddStringToObject(intent, "tool", c->name);
	cJSON_AddItemToObject(intent, "input", cJSON_Duplicate(input, 1));
	journal_write(&t->s->j, "intent", intent);
	cJSON_Delete(intent);
	static const struct box_call_cbs cbs = { on_box_output, on_box_result };
	const struct box_call_req rq = { .tool = c->name, .args = input, .key = c->key, .left_ms = left, .stream = true };
	int r = box_call_start(t->s->box, &rq, &cbs, t, &c->box_id, &e);
	t->s->calls++;
	if (r >= 0 && t->stream_end_us) {
		int64_t us = now_us() - t->stream_end_us;
		if (us > t->stop->dispatch_us_max)
			t->stop->dispatch_us_max = us;
		/* A reservoir of the first 512 is plenty for a median. */
		if (t->nlat < ARRAY_SIZE(t->lat))
			t->lat[t->nlat++] = us;
		/* The first call of a message only: later ones wait for others. */
		t->stream_end_us = 0;
	}
	if (r < 0) {
		call_done(t, c, tool_result_json("unknown", "the call could not be sent to the box: %s", e.msg), true);
		return true;
	}
	c->state = TC_RUNNING;
	t->running++;
	if (!c->tool->readonly)
		t->running_mut++;
	return true;
}

cJSON *turn_tool_result(const char *id, const cJSON *result)
{
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "type", "tool_result");
	cJSON_AddStringToObject(b, "tool_use_id", id);
	const char *outcome = json_str(result, "outcome");
	const char *text = json_str(result, "text");
	cJSON_AddStringToObject(b, "content", text && *text ? text : outcome ? outcome : "");
	if (!outcome || strcmp(outcome, "ok"))
		cJSON_AddBoolToObject(b, "is_error", 1);
	return b;
}

/* The results of the message's calls, as the next user message. */
static void calls_message(struct turn *t)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "role", "user");
	cJSON *content = cJSON_AddArrayToObject(m, "content");
	for (size_t i = 0; i < t->ncalls; i++)
		cJSON_AddItemToArray(content, turn_tool_result(t->calls[i].id, t->calls[i].result));
	journal_write(&t->s->j, "message", m);
	cJSON_AddItemToArray(t->s->messages, m);
	calls_free(t);
	t->phase = PH_IDLE;
}

static void calls_end(struct turn *t)
{
	calls_message(t);
	if (t->stopping) {
		finish(t, t->stop_kind, "%s", t->stop_why);
		return;
	}
	if (t->needs_person >= TURN_NEEDS_PERSON_MAX) {
		finish(t, TURN_REFUSED,
		       "%d calls needed a person's approval and no one is at a terminal; rerun with --approve or --allow",
		       t->needs_person);
		return;
	}
	start_round(t);
}

/* Read-only calls run side by side; a call that changes something waits
 * for every earlier call and holds every later one. */
static void pump_calls(struct turn *t)
{
	if (t->phase != PH_CALLS || t->finished)
		return;
	while (t->next < t->ncalls) {
		struct tcall *c = &t->calls[t->next];
		bool ro = c->tool && c->tool->readonly;
		if (!t->stopping && ((ro && t->running_mut) || (!ro && t->running)))
			return;
		t->next++;
		dispatch(t, c);
	}
	if (t->running == 0)
		calls_end(t);
}

static void process_reply(struct turn *t, struct reply *r)
{
	struct session *s = t->s;
	s->usage.input += r->usage.input;
	s->usage.output += r->usage.output;
	s->usage.cache_read += r->usage.cache_read;
	s->usage.cache_write += r->usage.cache_write;
	s->rounds++;
	snprintf(t->stop->model_stop, sizeof(t->stop->model_stop), "%s", r->stop_raw[0] ? r->stop_raw : stop_reason_name(r->stop));
	struct turn_event ue = { .type = EV_USAGE, .usage = &s->usage };
	emit(t, &ue);
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "role", "assistant");
	cJSON_AddItemToObject(m, "content", TAKE_PTR(r->content));
	journal_write(&s->j, "message", m);
	cJSON_AddItemToArray(s->messages, m);
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
	size_t n = 0;
	const cJSON *b;
	cJSON_ArrayForEach(b, content) {
		const char *type = json_str(b, "type");
		n += type && !strcmp(type, "tool_use");
	}
	if (n == 0) {
		t->phase = PH_IDLE;
		if (r->stop == STOP_PAUSE_TURN) {
			start_round(t);
			return;
		}
		if (r->stop == STOP_REFUSAL)
			finish(t, TURN_DONE, "the model declined the request (stop reason refusal)");
		else if (r->stop == STOP_MAX_TOKENS)
			finish(t, TURN_DONE, "the model's answer hit its max_tokens limit");
		else
			finish(t, TURN_DONE, "the model finished (%s)", stop_reason_name(r->stop));
		return;
	}
	t->calls = calloc(n, sizeof(*t->calls));
	if (!t->calls) {
		finish(t, TURN_BOX_ERROR, "out of memory");
		return;
	}
	cJSON_ArrayForEach(b, content) {
		const char *type = json_str(b, "type");
		if (!type || strcmp(type, "tool_use"))
			continue;
		struct tcall *c = &t->calls[t->ncalls++];
		c->block = b;
		c->id = json_str(b, "id") ? json_str(b, "id") : "";
		c->name = json_str(b, "name") ? json_str(b, "name") : "";
		c->tool = tool_lookup(c->name);
		/* The idempotency key the command sees as WARD_CALL_ID. */
		snprintf(c->key, sizeof(c->key), "%s-%d-%zu", s->j.id[0] ? s->j.id : "run", s->rounds, t->ncalls);
	}
	t->phase = PH_CALLS;
	pump_calls(t);
}

static bool budget_check(struct turn *t)
{
	const struct budgets *b = &t->cfg->b;
	struct session *s = t->s;
	if (b->deadline_ms && now_ms() >= b->deadline_ms) {
		finish(t, TURN_DEADLINE, "the run's deadline was reached");
		return false;
	}
	if (b->max_rounds > 0 && t->round_no >= b->max_rounds) {
		finish(t, TURN_ROUND_CAP, "the round cap (%d) was reached", b->max_rounds);
		return false;
	}
	if (b->max_tokens > 0 && s->usage.input + s->usage.output >= b->max_tokens) {
		finish(t, TURN_TOKENS, "the token budget (%lld) was used: %lld in, %lld out", (long long)b->max_tokens,
		       (long long)s->usage.input, (long long)s->usage.output);
		return false;
	}
	if (b->max_cost > 0 && t->priced && price_cost(&t->price, &s->usage) >= b->max_cost) {
		finish(t, TURN_COST, "the cost budget ($%.2f) was used: $%.4f", b->max_cost,
		       price_cost(&t->price, &s->usage));
		return false;
	}
	return true;
}

static cJSON *tool_schemas(void)
{
	cJSON *a = cJSON_CreateArray();
	for (const struct tool *const *tp = tool_table; *tp; tp++)
		cJSON_AddItemToArray(a, tool_schema(*tp));
	return a;
}

static int http_head(void *ud, const struct http_result *h)
{
	struct turn *t = ud;
	if (h->status < 200 || h->status > 299)
		t->bad_status = true;
	else if (!strstr(h->content_type, "text/event-stream"))
		t->bad_type = true;
	return 0;
}

static int http_data(void *ud, const char *p, size_t n)
{
	struct turn *t = ud;
	if (t->bad_status || t->bad_type) {
		buf_append(&t->errbody, p, MIN(n, t->errbody.cap - t->errbody.len));
		return 0;
	}
	int r = sse_feed(&t->sse, p, n);
	if (r < 0 && !t->perr.code)
		err_set(&t->perr, r, "the event stream is malformed (%s)", strerror(-r));
	return r < 0 ? -1 : 0;
}

static void stream_done(struct turn *t, const struct http_result *res);

static void http_done(void *ud, const struct http_result *res)
{
	struct turn *t = ud;
	t->req = NULL;
	stream_done(t, res);
}

static void start_attempt(struct turn *t)
{
	round_reset(t);
	t->phase = PH_STREAM;
	struct stream_sink sink = { .ud = t, .text = sink_text, .thinking = sink_thinking };
	t->stream = t->prov->stream_new(&sink);
	sse_init(&t->sse, TURN_SSE_EVENT_MAX, on_sse, t);
	t->sse_on = true;
	struct err e = { 0 };
	if (t->cfg->replay_path) {
		if (!t->replay_script)
			t->replay_script = replay_load(t->cfg->replay_path, &e);
		t->replay = t->replay_script ? replay_stream(t->replay_script, t->cfg->replay_path, t->s->messages, &e)
					     : NULL;
		if (!t->replay) {
			t->phase = PH_IDLE;
			finish(t, TURN_PROVIDER_ERROR, "%s", e.msg);
			return;
		}
		t->replay_len = strlen(t->replay);
		return;
	}
	struct provider_req q = { .system = t->cfg->system, .tools = t->tools, .messages = t->s->messages };
	int r = t->prov->request(&t->cfg->pcfg, &q, &t->hc, &e);
	if (r >= 0) {
		struct http_opts o = {
			.connect_ms = t->cfg->connect_ms,
			.idle_ms = t->cfg->idle_ms > 0 ? t->cfg->idle_ms : TURN_IDLE_MS_DEFAULT,
		};
		static const struct http_cbs cbs = { http_head, http_data, http_done };
		r = http_start(t->http, t->hc.url, (const char *const *)t->hc.headers, t->hc.body, t->hc.body_len, &o,
			       &cbs, t, &t->req);
		if (r < 0)
			err_setc(&e, r, "cannot start the request");
	}
	if (r < 0) {
		t->phase = PH_IDLE;
		finish(t, TURN_PROVIDER_ERROR, "%s", e.msg);
	}
}

static void start_round(struct turn *t)
{
	if (t->finished)
		return;
	if (!budget_check(t))
		return;
	t->round_no++;
	t->attempt = 0;
	t->output_shown = false;
	struct turn_event ev = { .type = EV_ROUND, .n = t->round_no };
	emit(t, &ev);
	start_attempt(t);
}

/* The stream ended, whole or not: take the message, retry, or stop. */
static void stream_done(struct turn *t, const struct http_result *res)
{
	t->stream_end_us = now_us();
	int fin = sse_finish(&t->sse);
	struct reply r = { 0 };
	t->prov->stream_end(t->stream, &r);
	char why[700] = "";
	bool retry = false;
	if (t->perr.code) {
		snprintf(why, sizeof(why), "%s", t->perr.msg);
	} else if (res->fail != HTTP_OK) {
		snprintf(why, sizeof(why), "the request failed: %s (%s)", http_fail_name(res->fail), res->msg);
		retry = retry_should(res, t->output_shown);
	} else if (t->bad_status) {
		char msg[400] = "";
		t->prov->error_text(t->errbody.data ? t->errbody.data : "", t->errbody.len, msg, sizeof(msg));
		snprintf(why, sizeof(why), "the API answered HTTP %ld: %s%s%s", res->status, msg,
			 res->request_id[0] ? " (request id " : "", res->request_id[0] ? res->request_id : "");
		if (res->request_id[0])
			strncat(why, ")", sizeof(why) - strlen(why) - 1);
		retry = retry_should(res, t->output_shown);
	} else if (t->bad_type) {
		snprintf(why, sizeof(why), "the API answered with content type \"%s\", not an event stream (is --base-url right?)",
			 res->content_type);
	} else if (r.error) {
		snprintf(why, sizeof(why), "the stream reported an error: %s: %s", r.error_type, r.error_msg);
		/* Overload and server errors mid-stream are retried like a 529,
		 * unless output was shown. */
		retry = !t->output_shown && (!strcmp(r.error_type, "overloaded_error") || !strcmp(r.error_type, "api_error"));
	} else if (!r.complete || fin == -ENODATA) {
		snprintf(why, sizeof(why), "the stream ended before the message did (incomplete)");
		retry = !t->output_shown;
	} else {
		round_reset(t);
		process_reply(t, &r);
		reply_free(&r);
		return;
	}
	reply_free(&r);
	int retries = t->cfg->retries >= 0 ? t->cfg->retries : RETRY_MAX_DEFAULT;
	if (retry && (int)t->attempt < retries && !t->stopping) {
		uint32_t rnd = 0;
		getrandom(&rnd, sizeof(rnd), 0);
		int64_t delay = retry_delay_ms(t->attempt, res, (double)rnd / 4294967296.0);
		t->attempt++;
		const int64_t dl = t->cfg->b.deadline_ms;
		if (dl && now_ms() + delay >= dl) {
			t->phase = PH_IDLE;
			finish(t, TURN_DEADLINE, "the run's deadline came before the retry of: %s", why);
			return;
		}
		struct turn_event ev = { .type = EV_RETRY, .text = why, .len = strlen(why), .n = delay };
		emit(t, &ev);
		t->phase = PH_RETRY_WAIT;
		t->retry_at = now_ms() + delay;
		return;
	}
	t->phase = PH_IDLE;
	if (t->output_shown && retry)
		strncat(why, "; not retried because its output was already shown", sizeof(why) - strlen(why) - 1);
	finish(t, TURN_PROVIDER_ERROR, "%s", why);
}

static void replay_feed(struct turn *t)
{
	size_t n = MIN(t->replay_len - t->replay_off, (size_t)TURN_REPLAY_CHUNK);
	int r = sse_feed(&t->sse, t->replay + t->replay_off, n);
	if (r < 0 && !t->perr.code)
		err_set(&t->perr, r, "the replay stream is malformed (%s)", strerror(-r));
	t->replay_off += n;
	if (t->replay_off >= t->replay_len || t->perr.code) {
		struct http_result res = { .fail = HTTP_OK, .status = 200, .retry_after_ms = -1, .should_retry = -1 };
		snprintf(res.content_type, sizeof(res.content_type), "text/event-stream");
		stream_done(t, &res);
	}
}

void turn_interrupt(struct turn *t, bool now, const char *why)
{
	if (t->finished)
		return;
	if (!now || !t->stopping)
		wind_down(t, TURN_CANCELLED, why);
	if (!now || t->finished)
		return;
	if (t->req) {
		http_abort(t->req);
		t->req = NULL;
	}
	if (t->phase == PH_CALLS) {
		/* Not waiting for the cancelled calls' results: each gets one
		 * that says so, and the conversation stays whole for the next
		 * message (a model is never left with a call and no result). */
		for (size_t i = 0; i < t->ncalls; i++) {
			struct tcall *c = &t->calls[i];
			if (c->state == TC_RUNNING)
				call_done(t, c,
					  tool_result_json("unknown",
						     "outcome unknown: ward stopped waiting for this call (%s) after "
						     "sending its cancel; check its effects before repeating it",
						     why),
					  true);
			else if (c->state == TC_WAIT)
				call_done(t, c, tool_result_json("cancelled", "not run: %s", why), false);
		}
		calls_message(t);
	}
	t->phase = PH_IDLE;
	finish(t, TURN_CANCELLED, "%s", why);
}

bool turn_stopping(const struct turn *t)
{
	return t->stopping || t->finished;
}

static void on_signal(struct loop *l, int fd, uint32_t events, void *data)
{
	struct turn *t = data;
	struct signalfd_siginfo si;
	while (!t->finished && read(fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGINT && (++t->sigints < 2 || !t->stopping)) {
			/* A first interrupt: cancel, and wait for the calls' results. */
			t->stop->signal = SIGINT;
			turn_interrupt(t, false, "cancelled by an interrupt");
			continue;
		}
		/* SIGTERM, SIGHUP, or a second interrupt: send the cancels and
		 * leave now. */
		t->stop->signal = (int)si.ssi_signo;
		turn_interrupt(t, true,
			       si.ssi_signo == SIGTERM ? "cancelled (SIGTERM)"
			       : si.ssi_signo == SIGHUP ? "cancelled (the terminal hung up)"
							: "cancelled (a second interrupt)");
	}
}

static void on_input(struct loop *l, int fd, uint32_t events, void *data)
{
	struct turn *t = data;
	t->cfg->input.on_ready(t->cfg->input.ud, t);
}

static void on_box(struct loop *l, int fd, uint32_t events, void *data)
{
	struct turn *t = data;
	if (box_conn_io(t->s->box, events) < 0) {
		loop_del(l, fd);
		t->box_watched = false;
		if (!t->stopping)
			wind_down(t, TURN_BOX_ERROR, "the connection to the box was lost");
		else
			pump_calls(t);
	}
}

static int64_t dmin(int64_t a, int64_t b)
{
	return a < 0 ? b : b < 0 ? a : MIN(a, b);
}

int run_turn(const struct turn_cfg *cfg, struct session *s, const char *instruction, struct turn_stop *stop,
	     struct err *e)
{
	*stop = (struct turn_stop){ .cost = -1 };
	struct turn t = { .cfg = cfg, .s = s, .stop = stop, .sfd = -1 };
	t.prov = cfg->replay_path ? &provider_anthropic : cfg->provider;
	if (!t.prov)
		return err_set(e, -EINVAL, "no provider");
	t.priced = price_for(cfg->pcfg.model, &t.price);
	t.tools = tool_schemas();
	buf_init(&t.errbody, TURN_ERRBODY_MAX);
	buf_init(&t.partial, TURN_SSE_EVENT_MAX);
	int r = loop_new(&t.loop);
	if (r < 0)
		return err_setc(e, r, "event loop");
	r = http_new(&t.http, t.loop);
	if (r < 0 && !cfg->replay_path) {
		loop_free(t.loop);
		if (r == -ENOENT || r == -ENOSYS)
			return err_set(e, r, "cannot load libcurl.so.4 (install the libcurl4 package)");
		return err_setc(e, r, "HTTP client");
	}
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	t.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (t.sfd >= 0)
		loop_add(t.loop, t.sfd, EPOLLIN, on_signal, &t);
	if (s->box)
		t.box_watched = loop_add(t.loop, box_conn_fd(s->box), EPOLLIN, on_box, &t) == 0;
	const struct turn_input *in = &cfg->input;
	if (in->on_ready)
		loop_add(t.loop, in->fd, EPOLLIN, on_input, &t);
	int64_t next_tick = in->tick_ms > 0 && in->on_tick ? now_ms() + in->tick_ms : -1;

	if (instruction) {
		cJSON *m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "role", "user");
		cJSON *c = cJSON_AddArrayToObject(m, "content");
		cJSON *b = cJSON_CreateObject();
		cJSON_AddStringToObject(b, "type", "text");
		cJSON_AddStringToObject(b, "text", instruction);
		cJSON_AddItemToArray(c, b);
		journal_write(&s->j, "message", m);
		cJSON_AddItemToArray(s->messages, m);
	}
	start_round(&t);
	while (!t.finished) {
		int64_t d = t.http ? http_deadline(t.http) : -1;
		if (s->box)
			d = dmin(d, box_conn_deadline(s->box));
		if (t.phase == PH_RETRY_WAIT)
			d = dmin(d, t.retry_at);
		if (t.phase == PH_STREAM && t.replay)
			d = now_ms();
		if (cfg->b.deadline_ms && !t.stopping)
			d = dmin(d, cfg->b.deadline_ms);
		d = dmin(d, next_tick);
		/* Frames waiting for the box: wake when it takes them. */
		if (s->box && t.box_watched)
			loop_mod(t.loop, box_conn_fd(s->box), box_conn_events(s->box));
		if (loop_run_once(t.loop, d) < 0)
			break;
		if (next_tick >= 0 && now_ms() >= next_tick && !t.finished) {
			in->on_tick(in->ud, &t);
			next_tick = now_ms() + in->tick_ms;
		}
		if (t.http)
			http_tick(t.http);
		if (s->box)
			box_conn_tick(s->box);
		if (t.finished)
			break;
		if (t.phase == PH_RETRY_WAIT && now_ms() >= t.retry_at)
			start_attempt(&t);
		else if (t.phase == PH_STREAM && t.replay)
			replay_feed(&t);
		if (cfg->b.deadline_ms && !t.stopping && now_ms() >= cfg->b.deadline_ms)
			wind_down(&t, TURN_DEADLINE, "the run's deadline was reached");
	}
	if (!t.finished)
		finish(&t, TURN_BOX_ERROR, "the event loop failed");
	if (t.req)
		http_abort(t.req);
	round_reset(&t);
	calls_free(&t);
	buf_free(&t.errbody);
	buf_free(&t.partial);
	if (s->box && t.box_watched)
		loop_del(t.loop, box_conn_fd(s->box));
	if (in->on_ready)
		loop_del(t.loop, in->fd);
	if (t.sfd >= 0)
		close(t.sfd);
	http_free(t.http);
	loop_free(t.loop);
	cJSON_Delete(t.tools);
	cJSON_Delete(t.replay_script);
	return 0;
}

/* Prices per million tokens (USD), by model name prefix. */
static const struct {
	const char *prefix;
	struct price p;
} prices[] = {
	{ "claude-opus-4", { 15, 75, 1.5, 18.75 } },
	{ "claude-sonnet-4", { 3, 15, 0.3, 3.75 } },
	{ "claude-3-7-sonnet", { 3, 15, 0.3, 3.75 } },
	{ "claude-3-5-sonnet", { 3, 15, 0.3, 3.75 } },
	{ "claude-3-5-haiku", { 0.8, 4, 0.08, 1 } },
	{ "claude-haiku-4", { 1, 5, 0.1, 1.25 } },
	{ "gpt-4o-mini", { 0.15, 0.6, 0.075, 0 } },
	{ "gpt-4o", { 2.5, 10, 1.25, 0 } },
	{ "gpt-4.1-mini", { 0.4, 1.6, 0.1, 0 } },
	{ "gpt-4.1", { 2, 8, 0.5, 0 } },
	{ "replay", { 0, 0, 0, 0 } },
};

bool price_for(const char *model, struct price *ret)
{
	if (!model)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(prices); i++)
		if (!strncmp(model, prices[i].prefix, strlen(prices[i].prefix))) {
			*ret = prices[i].p;
			return true;
		}
	return false;
}

double price_cost(const struct price *p, const struct usage *u)
{
	return ((double)u->input * p->in + (double)u->output * p->out + (double)u->cache_read * p->cache_read +
		(double)u->cache_write * p->cache_write) / 1e6;
}
