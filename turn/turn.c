#include "turn/turn-int.h"
#include "base/json.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/loop.h"
#include "base/timeutil.h"
#include "sandbox/box.h"
#include "tools/bash.h"
#include "tools/tool.h"
#include "http/http.h"
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

const char *turn_ev_name(enum turn_ev_type t)
{
	static const char *const names[] = {
		[EV_ROUND] = "round", [EV_TEXT] = "text", [EV_THINKING] = "thinking", [EV_RETRY] = "retry",
		[EV_TOOL_CALL] = "tool_call", [EV_APPROVAL] = "approval", [EV_TOOL_OUTPUT] = "tool_output",
		[EV_TOOL_RESULT] = "tool_result", [EV_USAGE] = "usage", [EV_STOP] = "stop", [EV_NET] = "net",
		[EV_COMPACT] = "compaction", [EV_HOOK] = "hook", [EV_BOX] = "box",
		[EV_JOB] = "job", [EV_AGENT] = "agent",
	};
	return (unsigned)t < ARRAY_SIZE(names) ? names[t] : "?";
}

void turn_cfg_emit(const struct turn_cfg *cfg, const struct turn_event *ev)
{
	for (int i = 0; i < cfg->nsinks; i++)
		if (cfg->sinks[i].on_event)
			cfg->sinks[i].on_event(cfg->sinks[i].ud, ev);
}

void turn_emit(struct turn *t, const struct turn_event *ev)
{
	turn_cfg_emit(t->cfg, ev);
}

/* Stream events from the assembler. */
static void sink_text(void *ud, const char *p, size_t n)
{
	struct turn *t = ud;
	buf_append(&t->partial, p, n);
	/* A retried stream: what it says again is not shown again; where it
	 * says something else, what follows is shown from there. */
	size_t a = t->att_n, skip = 0;
	t->att_n += n;
	if (a < t->shown_n) {
		size_t over = MIN(n, t->shown_n - a);
		while (skip < over && (a + skip >= t->shown.len || t->shown.data[a + skip] == p[skip]))
			skip++;
		if (skip < over) {
			t->shown_n = a + skip;
			t->shown.len = MIN(t->shown.len, t->shown_n);
		}
	}
	if (skip == n)
		return;
	buf_append(&t->shown, p + skip, n - skip);
	t->shown_n += n - skip;
	struct turn_event ev = { .type = EV_TEXT, .text = p + skip, .len = n - skip };
	turn_emit(t, &ev);
}

static void sink_thinking(void *ud, const char *p, size_t n)
{
	struct turn *t = ud;
	/* Thinking is shown, not kept: a retry's is counted, not compared. */
	size_t a = t->att_think, skip = a < t->think_n ? MIN(n, t->think_n - a) : 0;
	t->att_think += n;
	if (skip == n)
		return;
	t->think_n += n - skip;
	struct turn_event ev = { .type = EV_THINKING, .text = p + skip, .len = n - skip };
	turn_emit(t, &ev);
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
	t->att_n = t->att_think = 0;
	t->perr = (struct err){ 0 };
}


void turn_add_usage(struct turn *t, const struct usage *u)
{
	struct session *s = t->s;
	usage_add(&s->usage, u);
	if (t->cfg->ledger) {
		int64_t tok = usage_prompt(u) + u->output;
		double cost = t->priced ? price_cost(&t->price, u) : -1;
		ledger_add(t->cfg->ledger, tok, 0, cost);
		s->led_tokens += tok;
		if (cost > 0)
			s->led_cost += cost;
	}
	/* Each request's usage and cost in the journal, as it comes: a
	 * resumed session's totals are the sum of these (journal_load), a
	 * run killed before its stop included. */
	cJSON *rec = cJSON_CreateObject();
	cJSON_AddNumberToObject(rec, "input_tokens", (double)u->input);
	cJSON_AddNumberToObject(rec, "output_tokens", (double)u->output);
	cJSON_AddNumberToObject(rec, "cache_read_tokens", (double)u->cache_read);
	cJSON_AddNumberToObject(rec, "cache_write_tokens", (double)u->cache_write);
	cJSON_AddNumberToObject(rec, "cache_write_1h_tokens", (double)u->cache_write_1h);
	if (t->priced)
		cJSON_AddNumberToObject(rec, "cost_usd", price_cost(&t->price, u));
	else
		cJSON_AddNullToObject(rec, "cost_usd");
	journal_write(&s->j, "usage", rec);
	cJSON_Delete(rec);
	struct turn_event ue = { .type = EV_USAGE, .usage = &s->usage };
	turn_emit(t, &ue);
}

/* The Stop hooks: one that blocks sends its reason back as a user message
 * and the turn goes on, once a turn; the next Stop is told
 * stop_hook_active and cannot hold the turn again. */
static bool stop_hook(struct turn *t)
{
	if (!t->cfg->hooks.run)
		return false;
	cJSON *ev = cJSON_CreateObject();
	cJSON_AddBoolToObject(ev, "stop_hook_active", t->stop_hook_done);
	char why[1024], ctx[2048];
	bool blocked = turn_hooks_fire(t, "Stop", NULL, ev, why, sizeof(why), ctx, sizeof(ctx));
	cJSON_Delete(ev);
	if (!blocked || t->stop_hook_done)
		return false;
	t->stop_hook_done = true;
	cJSON *m = provider_user_text(why);
	journal_write(&t->s->j, "message", m);
	cJSON_AddItemToArray(t->s->messages, m);
	turn_start_round(t);
	return true;
}

static void process_reply(struct turn *t, struct reply *r)
{
	struct session *s = t->s;
	s->rounds++;
	/* The whole prompt: what the context window holds. */
	s->prompt_tokens = usage_prompt(&r->usage);
	s->prompt_bytes = (int64_t)t->req_bytes;
	snprintf(t->stop->model_stop, sizeof(t->stop->model_stop), "%s", r->stop_raw[0] ? r->stop_raw : stop_reason_name(r->stop));
	turn_add_usage(t, &r->usage);
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
			turn_start_round(t);
			return;
		}
		/* The provider's own word for why it stopped ("stop" from an
		 * OpenAI server, "end_turn" from Anthropic). */
		const char *raw = r->stop_raw[0] ? r->stop_raw : stop_reason_name(r->stop);
		if (r->stop == STOP_REFUSAL)
			turn_finish(t, TURN_MODEL_REFUSED, "the model declined the request (stop reason %s)", raw);
		else if (stop_hook(t))
			;
		else if (turn_answer(t, raw))
			;
		else if (r->stop == STOP_MAX_TOKENS)
			turn_finish(t, TURN_DONE, "the model's answer hit its max_tokens limit (%s)", raw);
		else
			turn_finish(t, TURN_DONE, "the model finished (%s)", raw);
		return;
	}
	turn_calls_begin(t, content, n);
}

static bool budget_check(struct turn *t)
{
	enum turn_stop_kind kind;
	char why[300];
	if (!turn_budget_ok(t, false, &kind, why, sizeof(why))) {
		turn_finish(t, kind, "%s", why);
		return false;
	}
	struct ledger *l = t->cfg->ledger;
	const struct task_limits *b = &t->cfg->b;
	/* A subagent's own share is a bound as the task's total is: no
	 * request is made that a reply as large as the task's largest so far
	 * would carry past it. */
	if (l && (b->share_tokens > 0 || b->share_cost > 0)) {
		int64_t et;
		double ec;
		ledger_largest(l, &et, &ec);
		int64_t own = usage_prompt(&t->s->usage) + t->s->usage.output;
		if (b->share_tokens > 0 && et > 0 && own + et > b->share_tokens) {
			turn_finish(t, TURN_TOKENS,
				    "its own share of the task's tokens (%lld) would be passed by another request (it used "
				    "%lld; the task's largest reply so far: %lld)",
				    (long long)b->share_tokens, (long long)own, (long long)et);
			return false;
		}
		double oc = turn_cost(t);
		if (b->share_cost > 0 && ec > 0 && oc >= 0 && oc + ec > b->share_cost) {
			turn_finish(t, TURN_COST,
				    "its own share of the task's cost ($%.4f) would be passed by another request (it spent "
				    "$%.4f; the task's largest reply so far: $%.4f)",
				    b->share_cost, oc, ec);
			return false;
		}
	}
	/* A subagent's request holds room for itself first: the task's
	 * total is never passed by agents asking at once. */
	if (l && l->shared && !ledger_reserve(l, b->max_tokens, b->max_cost)) {
		bool cost = b->max_cost > 0 && !ledger_reserve(l, 0, b->max_cost);
		ledger_release(l);
		turn_finish(t, cost ? TURN_COST : TURN_TOKENS,
			    "the task's %s budget would be passed by another request (its largest reply so far, with "
			    "what the task's agents spent and hold)",
			    cost ? "cost" : "token");
		return false;
	}
	return true;
}

/* The built-in tools, then the MCP servers' as they are listed now. */
static cJSON *tool_schemas(struct turn *t)
{
	cJSON *a = cJSON_CreateArray();
	for (const struct tool *const *tp = tool_table; *tp; tp++)
		cJSON_AddItemToArray(a, tool_schema(*tp));
	if (agents_offered(t->cfg->agents))
		cJSON_AddItemToArray(a, agents_schema());
	t->tools_gen = mcp_generation(t->cfg->mcp);
	cJSON *m = mcp_tools(t->cfg->mcp);
	cJSON *it;
	while ((it = cJSON_DetachItemFromArray(m, 0)))
		cJSON_AddItemToArray(a, it);
	cJSON_Delete(m);
	return a;
}

/* A server's list changed (list_changed, a restart, a server given up):
 * the next request offers the tools as they are. */
void turn_tools_refresh(struct turn *t)
{
	if (mcp_generation(t->cfg->mcp) == t->tools_gen)
		return;
	cJSON_Delete(t->tools);
	t->tools = tool_schemas(t);
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

void turn_start_attempt(struct turn *t)
{
	round_reset(t);
	t->phase = PH_STREAM;
	/* The summary is not the model's answer: it is not shown. */
	struct stream_sink sink = { .ud = t, .text = sink_text, .thinking = sink_thinking };
	if (t->compacting)
		sink = (struct stream_sink){ .ud = t };
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
			turn_finish(t, TURN_PROVIDER_ERROR, "%s", e.msg);
			return;
		}
		t->replay_len = strlen(t->replay);
		return;
	}
	struct provider_req q = { .system = t->s->system ? t->s->system : t->cfg->system, .tools = t->tools, .messages = t->s->messages };
	if (t->compacting)
		q = (struct provider_req){ .system = compact_instruction, .messages = t->cmsgs,
					   .max_tokens = COMPACT_SUMMARY_MAX_TOKENS };
	int r = t->prov->request(&t->cfg->pcfg, &q, &t->hc, &e);
	t->req_bytes = t->hc.body_len;
	if (r >= 0) {
		struct http_opts o = {
			.connect_ms = t->cfg->connect_ms,
			.idle_ms = t->cfg->idle_ms > 0 ? t->cfg->idle_ms : TURN_IDLE_MS_DEFAULT,
		};
		static const struct http_cbs cbs = { .on_head = http_head, .on_data = http_data, .on_done = http_done };
		r = http_start(t->http, t->hc.url, (const char *const *)t->hc.headers, t->hc.body, t->hc.body_len, &o,
			       &cbs, t, &t->req);
		if (r < 0)
			err_setc(&e, r, "cannot start the request");
	}
	if (r < 0) {
		t->phase = PH_IDLE;
		if (t->compacting)
			turn_compact_failed(t, e.msg);
		else
			turn_finish(t, TURN_PROVIDER_ERROR, "%s", e.msg);
	}
}

void turn_start_round(struct turn *t)
{
	if (t->finished)
		return;
	if (!budget_check(t))
		return;
	/* Near the context window: the summary first; its end starts the
	 * round. Too few rounds to compact: the round goes as it is. */
	char why[300];
	if (turn_compact_due(t) && turn_compact_begin(t, COMPACT_THRESHOLD, why, sizeof(why)) == 0)
		return;
	turn_tools_refresh(t);
	/* The round before is on the disk before this one begins. */
	journal_sync(&t->s->j);
	t->round_no++;
	t->attempt = 0;
	t->shown.len = t->shown_n = t->think_n = 0;
	t->context_retried = false;
	struct turn_event ev = { .type = EV_ROUND, .n = t->round_no };
	turn_emit(t, &ev);
	turn_start_attempt(t);
}

/* The stream ended, whole or not: take the message, retry, or stop. */
static void stream_done(struct turn *t, const struct http_result *res)
{
	t->stream_end_us = now_us();
	int fin = sse_finish(&t->sse);
	struct reply r = { 0 };
	t->prov->stream_end(t->stream, &r);
	char why[700] = "";
	bool retry = false, context = false, auth = false;
	if (t->perr.code) {
		snprintf(why, sizeof(why), "%s", t->perr.msg);
	} else if (res->fail != HTTP_OK) {
		snprintf(why, sizeof(why), "the request failed: %s (%s)", http_fail_name(res->fail), res->msg);
		retry = retry_should(res);
	} else if (t->bad_status) {
		char msg[400] = "";
		t->prov->error_text(t->errbody.data ? t->errbody.data : "", t->errbody.len, msg, sizeof(msg));
		snprintf(why, sizeof(why), "the API answered HTTP %ld: %s%s%s", res->status, msg,
			 res->request_id[0] ? " (request id " : "", res->request_id[0] ? res->request_id : "");
		if (res->request_id[0])
			strncat(why, ")", sizeof(why) - strlen(why) - 1);
		/* Not found: most often a --base-url without its path. */
		if (res->status == 404 && t->hc.url[0] && strlen(why) + strlen(t->hc.url) + 48 < sizeof(why))
			snprintf(why + strlen(why), sizeof(why) - strlen(why), " at %s (is --base-url right?)", t->hc.url);
		retry = retry_should(res);
		auth = retry_auth_refused(res->status);
		context = !t->compacting && compact_context_error(res->status, t->errbody.data ? t->errbody.data : "",
								  t->errbody.len);
	} else if (t->bad_type) {
		snprintf(why, sizeof(why), "the API answered with content type \"%s\", not an event stream (is --base-url right?)",
			 res->content_type);
	} else if (r.error) {
		snprintf(why, sizeof(why), "the stream reported an error: %s: %s", r.error_type, r.error_msg);
		/* Overload and server errors mid-stream are retried like a 529
		 * (Anthropic's overloaded_error and api_error, OpenAI's
		 * server_error):
		 * no call of the message has run, and what was shown is not
		 * shown again. */
		retry = !strcmp(r.error_type, "overloaded_error") || !strcmp(r.error_type, "api_error") ||
			!strcmp(r.error_type, "server_error");	/* (OpenAI's) */
	} else if (!r.complete || fin == -ENODATA) {
		snprintf(why, sizeof(why), "the stream ended before the message did (incomplete)");
		retry = true;
	} else {
		round_reset(t);
		if (t->compacting)
			turn_compact_done(t, &r);
		else
			process_reply(t, &r);
		reply_free(&r);
		return;
	}
	reply_free(&r);
	/* The prompt is more than the window: compact and send the round
	 * again, once; a second time the turn stops with the API's words. */
	if (context && !t->context_retried && !t->stopping) {
		char cwhy[300];
		t->context_retried = true;
		if (turn_compact_begin(t, COMPACT_CONTEXT, cwhy, sizeof(cwhy)) == 0)
			return;
		t->phase = PH_IDLE;
		turn_finish(t, TURN_PROVIDER_ERROR, "%s; ward could not compact the conversation: %s", why, cwhy);
		return;
	}
	/* --retries N, or by default as many as the deadline leaves room
	 * for (RETRY_MAX_DEFAULT without one). */
	bool to_deadline = t->cfg->retries < 0 && t->cfg->b.deadline_ms;
	int retries = t->cfg->retries >= 0 ? t->cfg->retries : RETRY_MAX_DEFAULT;
	if (retry && (to_deadline || (int)t->attempt < retries) && !t->stopping) {
		uint32_t rnd = 0;
		getrandom(&rnd, sizeof(rnd), 0);
		int64_t delay = retry_delay_ms(t->attempt, res, (double)rnd / 4294967296.0);
		t->attempt++;
		const int64_t dl = t->cfg->b.deadline_ms;
		if (dl && now_ms() + delay >= dl) {
			t->phase = PH_IDLE;
			turn_finish(t, TURN_DEADLINE, "the run's deadline came before the retry of: %s", why);
			return;
		}
		if (t->shown_n || t->think_n)
			strncat(why, "; what it showed is not shown again", sizeof(why) - strlen(why) - 1);
		struct turn_event ev = { .type = EV_RETRY, .text = why, .len = strlen(why), .n = delay };
		turn_emit(t, &ev);
		t->phase = PH_RETRY_WAIT;
		t->retry_at = now_ms() + delay;
		return;
	}
	t->phase = PH_IDLE;
	if (retry && t->attempt)
		snprintf(why + strlen(why), sizeof(why) - strlen(why), "; after %u retries", t->attempt);
	if (t->compacting)
		turn_compact_failed(t, why);
	else if (context)
		turn_finish(t, TURN_PROVIDER_ERROR, "%s; the conversation was compacted for this round already", why);
	else if (auth)
		turn_finish(t, TURN_AUTH_ERROR, "%s; the API refused the key: check %s", why,
			    t->prov->key_env ? t->prov->key_env : "the provider's key");
	else
		turn_finish(t, TURN_PROVIDER_ERROR, "%s", why);
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
		turn_wind_down(t, TURN_CANCELLED, why);
	if (!now || t->finished)
		return;
	if (t->req) {
		http_abort(t->req);
		t->req = NULL;
	}
	/* The children are killed now, their boxes destroyed. */
	agents_forget(t->cfg->agents);
	if (t->phase == PH_CALLS) {
		/* Not waiting for the cancelled calls' results: each gets one
		 * that says so, and the conversation stays whole for the next
		 * message (a model is never left with a call and no result). */
		for (size_t i = 0; i < t->ncalls; i++) {
			struct tcall *c = &t->calls[i];
			/* Its result, if it comes, is for no one: the connection
			 * outlives this turn (ward run lists the box's jobs). */
			if (c->state == TC_RUNNING && !c->mcp && !c->agent)
				box_call_forget(t->s->box, c->box_id);
			if (c->state == TC_RUNNING)
				turn_call_done(t, c,
					  tool_result_json("unknown",
						     "outcome unknown: ward stopped waiting for this call (%s) after "
						     "sending its cancel; check its effects before repeating it",
						     why),
					  true);
			else if (c->state == TC_WAIT)
				turn_call_done(t, c, tool_result_json("cancelled", "not run: %s", why), false);
		}
		turn_calls_message(t);
	}
	t->phase = PH_IDLE;
	turn_finish(t, TURN_CANCELLED, "%s", why);
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

static void on_mcp(struct loop *l, int fd, uint32_t events, void *data)
{
	mcp_io(data);
}

static void on_box(struct loop *l, int fd, uint32_t events, void *data)
{
	struct turn *t = data;
	if (box_conn_io(t->s->box, events) < 0) {
		loop_del(l, fd);
		t->box_watched = false;
		if (!t->stopping)
			turn_wind_down(t, TURN_BOX_ERROR, "the connection to the box was lost");
		else
			turn_calls_pump(t);
	}
}

/* What the box's egress proxy carried or refused, and the box's wakes:
 * journalled and told. */
static void on_box_event(void *ud, cJSON *ev)
{
	struct turn *t = ud;
	const char *type = json_str(ev, "type");
	bool net = type && !strcmp(type, "net"), box = type && !strcmp(type, "box");
	if (net || box) {
		journal_write(&t->s->j, net ? "net" : "box", ev);
		struct turn_event te = { .type = net ? EV_NET : EV_BOX, .result = ev };
		turn_emit(t, &te);
	} else if (type && !strcmp(type, "job")) {
		journal_write(&t->s->j, "job", ev);
		struct turn_event te = { .type = EV_JOB, .result = ev };
		turn_emit(t, &te);
		const char *what = json_str(ev, "event");
		if (what && !strcmp(what, "ended")) {
			if (!t->s->job_news)
				t->s->job_news = cJSON_CreateArray();
			/* A model that never reads them is told of the last few. */
			if (cJSON_GetArraySize(t->s->job_news) >= TURN_JOB_NEWS_MAX)
				cJSON_DeleteItemFromArray(t->s->job_news, 0);
			cJSON_AddItemToArray(t->s->job_news, ev);
			return;
		}
	}
	cJSON_Delete(ev);
}

void turn_job_news(struct turn *t, cJSON *content)
{
	cJSON *news = t->s->job_news;
	const cJSON *ev;
	cJSON_ArrayForEach(ev, news) {
		const cJSON *job = cJSON_GetObjectItemCaseSensitive(ev, "job");
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(job, "id");
		const char *cmd = json_str(job, "command"), *how = json_str(ev, "how"), *tail = json_str(ev, "tail");
		struct buf b;
		buf_init(&b, 8192);
		int n = cJSON_IsNumber(id) ? (int)id->valuedouble : 0;
		buf_printf(&b, "[ward: background job %d (%s) %s.", n, cmd ? cmd : "?", how ? how : "ended");
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ev, "output_lost")))
			buf_printf(&b, " Its output went with it; start it again if it is still needed.]");
		else if (tail && *tail)
			buf_printf(&b, " The end of its output:\n%s%s", tail, tail[strlen(tail) - 1] == '\n' ? "" : "\n");
		else
			buf_printf(&b, " It wrote no output.\n");
		if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ev, "output_lost")))
			buf_printf(&b, "(job_output {\"id\": %d} reads the rest of it)]", n);
		/* Told: a resumed session is not told again from the box's info. */
		if (cJSON_HasObjectItem(ev, "hibernated_at")) {
			cJSON *rec = cJSON_CreateObject();
			cJSON_AddNumberToObject(rec, "id", n);
			cJSON_AddItemToObject(rec, "hibernated_at",
					      cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(ev, "hibernated_at"), 0));
			journal_write(&t->s->j, "job_told", rec);
			cJSON_Delete(rec);
		}
		buf_cstr(&b);
		cJSON *blk = cJSON_CreateObject();
		cJSON_AddStringToObject(blk, "type", "text");
		cJSON_AddStringToObject(blk, "text", b.data ? b.data : "");
		cJSON_AddItemToArray(content, blk);
		buf_free(&b);
	}
	cJSON_Delete(news);
	t->s->job_news = NULL;
}

static int64_t dmin(int64_t a, int64_t b)
{
	return a < 0 ? b : b < 0 ? a : MIN(a, b);
}

static int turn_run(const struct turn_cfg *cfg, struct session *s, const char *instruction, bool compact_only,
		    struct turn_stop *stop, struct err *e)
{
	*stop = (struct turn_stop){ .cost = -1 };
	struct turn t = { .cfg = cfg, .s = s, .stop = stop, .sfd = -1, .compact_only = compact_only };
	t.prov = cfg->replay_path ? &provider_anthropic : cfg->provider;
	if (!t.prov)
		return err_set(e, -EINVAL, "no provider");
	t.priced = price_for(cfg->pcfg.model, &t.price);
	t.tools = tool_schemas(&t);
	buf_init(&t.errbody, TURN_ERRBODY_MAX);
	buf_init(&t.partial, TURN_SSE_EVENT_MAX);
	buf_init(&t.shown, TURN_SSE_EVENT_MAX);
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
	if (s->box) {
		t.box_watched = loop_add(t.loop, box_conn_fd(s->box), EPOLLIN, on_box, &t) == 0;
		box_conn_on_event(s->box, on_box_event, &t);
		/* What the box said while no turn ran (a job that ended between
		 * two messages) is read before the first round's message. */
		if (t.box_watched && box_conn_io(s->box, EPOLLIN) < 0) {
			loop_del(t.loop, box_conn_fd(s->box));
			t.box_watched = false;
		}
	}
	/* The MCP servers over HTTP: their own loop, one fd of this one. */
	int mfd = mcp_fd(cfg->mcp);
	if (mfd >= 0 && loop_add(t.loop, mfd, EPOLLIN, on_mcp, cfg->mcp) < 0)
		mfd = -1;
	const struct turn_input *in = &cfg->input;
	if (in->on_ready)
		loop_add(t.loop, in->fd, EPOLLIN, on_input, &t);
	int64_t next_tick = in->tick_ms > 0 && in->on_tick ? now_ms() + in->tick_ms : -1;

	char hwhy[1024], hctx[4096];
	bool prompt_blocked = false;
	hctx[0] = 0;
	if (instruction && cfg->hooks.run) {
		cJSON *ev = cJSON_CreateObject();
		cJSON_AddStringToObject(ev, "prompt", instruction);
		prompt_blocked = turn_hooks_fire(&t, "UserPromptSubmit", NULL, ev, hwhy, sizeof(hwhy), hctx, sizeof(hctx));
		cJSON_Delete(ev);
	}
	if (instruction && !prompt_blocked) {
		cJSON *m = provider_user_text(instruction);
		if (hctx[0]) {
			cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
			cJSON *b = cJSON_CreateObject();
			cJSON_AddStringToObject(b, "type", "text");
			cJSON_AddStringToObject(b, "text", hctx);
			cJSON_AddItemToArray(c, b);
		}
		turn_job_news(&t, cJSON_GetObjectItemCaseSensitive(m, "content"));
		journal_write(&s->j, "message", m);
		cJSON_AddItemToArray(s->messages, m);
	}
	if (prompt_blocked) {
		turn_finish(&t, TURN_REFUSED, "a UserPromptSubmit hook stopped the prompt: %s", hwhy);
	} else if (compact_only) {
		char why[300];
		if (turn_compact_begin(&t, COMPACT_MANUAL, why, sizeof(why)) < 0)
			turn_finish(&t, TURN_DONE, "%s", why);
	} else {
		turn_start_round(&t);
	}
	while (!t.finished) {
		int64_t d = t.http ? http_deadline(t.http) : -1;
		if (s->box)
			d = dmin(d, box_conn_deadline(s->box));
		d = dmin(d, mcp_deadline(cfg->mcp));
		d = dmin(d, agents_deadline(cfg->agents));
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
		mcp_tick(cfg->mcp);
		agents_tick(cfg->agents);
		if (t.finished)
			break;
		if (t.phase == PH_RETRY_WAIT && now_ms() >= t.retry_at)
			turn_start_attempt(&t);
		else if (t.phase == PH_STREAM && t.replay)
			replay_feed(&t);
		if (cfg->b.deadline_ms && !t.stopping && now_ms() >= cfg->b.deadline_ms)
			turn_wind_down(&t, TURN_DEADLINE, "the run's deadline was reached");
	}
	if (!t.finished)
		turn_finish(&t, TURN_BOX_ERROR, "the event loop failed");
	if (t.req)
		http_abort(t.req);
	round_reset(&t);
	/* No child outlives the turn whose loop watches it. */
	agents_forget(cfg->agents);
	turn_calls_free(&t);
	turn_compact_free(&t);
	buf_free(&t.errbody);
	buf_free(&t.partial);
	buf_free(&t.shown);
	if (s->box)
		box_conn_on_event(s->box, NULL, NULL);
	if (s->box && t.box_watched)
		loop_del(t.loop, box_conn_fd(s->box));
	if (in->on_ready)
		loop_del(t.loop, in->fd);
	if (mfd >= 0)
		loop_del(t.loop, mfd);
	if (t.sfd >= 0)
		close(t.sfd);
	http_free(t.http);
	loop_free(t.loop);
	cJSON_Delete(t.tools);
	cJSON_Delete(t.replay_script);
	return 0;
}

int run_turn(const struct turn_cfg *cfg, struct session *s, const char *instruction, struct turn_stop *stop,
	     struct err *e)
{
	return turn_run(cfg, s, instruction, false, stop, e);
}

int run_compact(const struct turn_cfg *cfg, struct session *s, struct turn_stop *stop, struct err *e)
{
	return turn_run(cfg, s, NULL, true, stop, e);
}
