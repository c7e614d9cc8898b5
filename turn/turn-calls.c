/* A round's tool calls: each is gated, checked against the task's budgets
 * again, and dispatched into the box (read-only ones side by side, one that
 * changes something alone); their results become the next user message. */
#include "turn/turn-int.h"
#include "base/json.h"
#include "base/cleanup.h"
#include "base/timeutil.h"
#include "sandbox/box.h"
#include "base/jsonprint.h"
#include "tools/ccshape.h"

#include <stdarg.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void calls_end(struct turn *t);

void turn_calls_free(struct turn *t)
{
	for (size_t i = 0; i < t->ncalls; i++) {
		cJSON_Delete(t->calls[i].result);
		cJSON_Delete(t->calls[i].input);
	}
	free(t->calls);
	t->calls = NULL;
	t->ncalls = t->next = 0;
	t->running = t->running_mut = 0;
}

void turn_call_done(struct turn *t, struct tcall *c, cJSON *result, bool dispatched)
{
	c->state = TC_DONE;
	if (dispatched && t->cfg->hooks.run && result) {
		/* PostToolUse: what a hook adds (its additionalContext, or the
		 * reason of one that exits 2) follows the result's text. */
		cJSON *ev = turn_hooks_tool_event(c->name, c->input ? c->input : cJSON_GetObjectItemCaseSensitive(c->block, "input"),
						  c->id);
		cJSON_AddItemToObject(ev, "tool_response", cJSON_Duplicate(result, 1));
		char why[1024], ctx[4096];
		bool blocked = turn_hooks_fire(t, "PostToolUse", c->name, ev, why, sizeof(why), ctx, sizeof(ctx));
		cJSON_Delete(ev);
		const char *add = blocked ? why : ctx;
		cJSON *text = cJSON_GetObjectItemCaseSensitive(result, "text");
		if (add[0] && cJSON_IsString(text)) {
			size_t n = strlen(text->valuestring) + strlen(add) + 32;
			_cleanup_free_ char *nt = malloc(n);
			if (nt) {
				snprintf(nt, n, "%s\n\n[PostToolUse hook] %s", text->valuestring, add);
				cJSON_SetValuestring(text, nt);
			}
		}
	}
	c->result = result;
	if (dispatched) {
		cJSON *rec = cJSON_Duplicate(result, 1);
		cJSON_AddStringToObject(rec, "call_id", c->id);
		journal_write(&t->s->j, "result", rec);
		cJSON_Delete(rec);
	}
	struct turn_event ev = { .type = EV_TOOL_RESULT, .call = c->block, .result = result };
	turn_emit(t, &ev);
}

static void on_box_output(void *ud, uint32_t id, const char *p, size_t n)
{
	struct turn *t = ud;
	for (size_t i = 0; i < t->ncalls; i++)
		if (t->calls[i].state == TC_RUNNING && t->calls[i].box_id == id) {
			struct turn_event ev = { .type = EV_TOOL_OUTPUT, .call = t->calls[i].block, .text = p, .len = n };
			turn_emit(t, &ev);
		}
}

enum call_kind { CK_BOX, CK_MCP, CK_AGENT };

static void call_result(struct turn *t, enum call_kind kind, uint32_t id, cJSON *result)
{
	for (size_t i = 0; i < t->ncalls; i++) {
		struct tcall *c = &t->calls[i];
		enum call_kind k = c->mcp ? CK_MCP : c->agent ? CK_AGENT : CK_BOX;
		if (c->state != TC_RUNNING || c->box_id != id || k != kind)
			continue;
		t->running--;
		if (!c->ro)
			t->running_mut--;
		turn_call_done(t, c, result, true);
		turn_calls_pump(t);
		return;
	}
	cJSON_Delete(result);
}

static void on_box_result(void *ud, uint32_t id, cJSON *result)
{
	call_result(ud, CK_BOX, id, result);
}

static void on_mcp_result(void *ud, uint32_t id, cJSON *result)
{
	call_result(ud, CK_MCP, id, result);
}

static void on_agent_result(void *ud, uint32_t id, cJSON *result)
{
	struct turn *t = ud;
	/* The journal records each merge: what was taken, what conflicted. */
	const cJSON *ag = cJSON_GetObjectItemCaseSensitive(result, "agent");
	if (cJSON_GetObjectItemCaseSensitive(ag, "merged")) {
		cJSON *rec = cJSON_Duplicate(ag, 1);
		journal_write(&t->s->j, "merge", rec);
		cJSON_Delete(rec);
	}
	call_result(t, CK_AGENT, id, result);
}

static void on_agent_event(void *ud, uint32_t id, const char *agent, cJSON *ev)
{
	struct turn *t = ud;
	struct turn_event te = { .type = EV_AGENT, .result = ev, .text = agent, .len = strlen(agent) };
	/* Whose child it is: the task call that started it (its
	 * description), for a front end's card. */
	const struct tcall *c = NULL;
	for (size_t i = 0; i < t->ncalls; i++)
		if (t->calls[i].agent && t->calls[i].state == TC_RUNNING && t->calls[i].box_id == id)
			c = &t->calls[i];
	te.call = c ? c->block : NULL;
	/* The journal records each child's end as it comes (its session,
	 * how it stopped): a resume after a cut knows which had ended. */
	const char *type = json_str(ev, "type"), *who = json_str(ev, "agent");
	if (c && type && !strcmp(type, "result") && who && !strcmp(who, agent)) {
		cJSON *rec = cJSON_CreateObject();
		cJSON_AddStringToObject(rec, "call_id", c->id ? c->id : "");
		cJSON_AddStringToObject(rec, "agent", agent);
		static const char *const keys[] = { "session", "stop", "why", "cost_usd" };
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(ev, keys[k]);
			if (v)
				cJSON_AddItemToObject(rec, keys[k], cJSON_Duplicate(v, 1));
		}
		journal_write(&t->s->j, "agent_end", rec);
		cJSON_Delete(rec);
	}
	turn_emit(ud, &te);
	cJSON_Delete(ev);
}

/* A call refused before the gate (a PreToolUse hook's no, or the input it
 * gave that does not pass): journalled and shown as the gate's refusals
 * are, and counted with them. */
static void refuse(struct turn *t, struct tcall *c, const char *hook, const char *why, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void refuse(struct turn *t, struct tcall *c, const char *hook, const char *why, const char *fmt, ...)
{
	cJSON *g = cJSON_CreateObject();
	cJSON_AddStringToObject(g, "call_id", c->id);
	cJSON_AddStringToObject(g, "tool", c->name);
	cJSON_AddStringToObject(g, "decision", gate_decision_name(GATE_DENY));
	cJSON_AddStringToObject(g, "why", why);
	cJSON_AddStringToObject(g, "hook", hook);
	journal_write(&t->s->j, "gate", g);
	cJSON_Delete(g);
	struct turn_event ae = { .type = EV_APPROVAL, .call = c->block, .text = why, .len = strlen(why),
				 .n = (int64_t)GATE_DENY, .hook = hook };
	turn_emit(t, &ae);
	t->s->refused++;
	char text[1200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	turn_call_done(t, c, tool_result_json("refused", "%s", text), false);
}

/* A PreToolUse hook's updatedInput (Claude Code's names) as the call's
 * input: read back as the model's input is (one strict parse of its one
 * serialisation, base/jsonstrict.h), in ward's names, through the tool's
 * own argument checks. 0, or -1 with why said. */
static int updated_input(struct tcall *c, const cJSON *ui, char *why, size_t cap)
{
	struct err e = { 0 };
	cJSON *w = NULL;
	if (ccshape_from_cc(c->name, ui, &w, &e) < 0) {
		snprintf(why, cap, "the PreToolUse hook's updatedInput: %s", e.msg);
		return -1;
	}
	_cleanup_free_ char *txt = jsonprint_text(w);
	cJSON_Delete(w);
	char pwhy[512];
	cJSON *in = txt ? provider_parse_input(txt, strlen(txt), pwhy, sizeof(pwhy)) : NULL;
	if (!in) {
		snprintf(why, cap, "the PreToolUse hook's updatedInput: %s", txt ? pwhy : "out of memory");
		return -1;
	}
	if (c->tool && tool_check_args(c->tool, in, &e) < 0) {
		snprintf(why, cap, "the PreToolUse hook's updatedInput is bad input: %s", e.msg);
		cJSON_Delete(in);
		return -1;
	}
	c->input = in;
	return 0;
}

/* Gate one call and start it in the box, or finish it at once with the
 * reason it does not run. */
static void dispatch(struct turn *t, struct tcall *c)
{
	const cJSON *input = cJSON_GetObjectItemCaseSensitive(c->block, "input");
	const char *werr = json_str(c->block, "_ward_error");
	struct turn_event ev = { .type = EV_TOOL_CALL, .call = c->block };
	turn_emit(t, &ev);
	if (t->stopping) {
		turn_call_done(t, c, tool_result_json("cancelled", "not run: %s", t->stop_why), false);
		return;
	}
	if (werr) {
		turn_call_done(t, c, tool_result_json("bad_input", "not run: %s", werr), false);
		return;
	}
	if (!c->tool && !c->mcp && !c->agent) {
		turn_call_done(t, c,
			  tool_result_json("bad_input", "no tool named \"%.60s\"; the tools are read, write, edit, grep, find, ls, bash, job_output, "
					   "job_kill, job_list and todo",
				     c->name ? c->name : ""),
			  false);
		return;
	}
	struct err e = { 0 };
	/* A server given up, or a tool it no longer lists. */
	if (c->mcp && mcp_tool_check(t->cfg->mcp, c->name, &c->ro, &e) < 0) {
		turn_call_done(t, c, tool_result_json("failed", "not run: %s", e.msg), false);
		return;
	}
	if (c->tool && tool_check_args(c->tool, input, &e) < 0) {
		turn_call_done(t, c, tool_result_json("bad_input", "%s", e.msg), false);
		return;
	}
	if (c->agent && agents_check(t->cfg->agents, input, &e) < 0) {
		turn_call_done(t, c, tool_result_json("bad_input", "%s", e.msg), false);
		return;
	}
	/* The budgets again before every call: a round whose usage went past
	 * --max-tokens runs no further call. */
	enum turn_stop_kind over;
	char why[600];
	if (!turn_budget_ok(t, true, &over, why, sizeof(why))) {
		turn_call_done(t, c, tool_result_json("cancelled", "not run: %s", why), false);
		turn_stop_request(t, over, why);
		return;
	}
	/* PreToolUse, before the gate: a hook that blocks refuses the call,
	 * its reason told to the model; its allow or ask goes to the gate. */
	enum gate_hook word = GATE_HOOK_NONE;
	bool updated = false;
	if (t->cfg->hooks.run) {
		cJSON *ev = turn_hooks_tool_event(c->name, input, c->id);
		char ctx[2048];
		cJSON *ui = NULL;
		bool blocked = turn_hooks_pre_tool(t, c->name, ev, why, sizeof(why), ctx, sizeof(ctx), &word, &ui);
		cJSON_Delete(ev);
		if (blocked) {
			refuse(t, c, "deny", why, "refused by a PreToolUse hook: %s", why);
			return;
		}
		if (ui) {
			/* The hook's input replaces the model's, and is checked as
			 * the model's was, before the gate sees it. */
			int r = updated_input(c, ui, why, sizeof(why));
			cJSON_Delete(ui);
			if (r < 0) {
				refuse(t, c, "deny", why, "not run: %s", why);
				return;
			}
			input = c->input;
			updated = true;
		}
	}
	const struct task_limits *b = &t->cfg->b;
	int64_t left = b->deadline_ms ? b->deadline_ms - now_ms() : -1;
	bool gro = c->agent ? agents_readonly(input) : c->ro;
	enum gate_decision d = gate_check(t->cfg->gate, c->name, input, gro, word, why, sizeof(why));
	const char *hook = word != GATE_HOOK_NONE ? gate_hook_name(word) : NULL;
	cJSON *g = cJSON_CreateObject();
	cJSON_AddStringToObject(g, "call_id", c->id);
	cJSON_AddStringToObject(g, "tool", c->name);
	cJSON_AddStringToObject(g, "decision", gate_decision_name(d));
	cJSON_AddStringToObject(g, "why", why);
	if (hook)
		cJSON_AddStringToObject(g, "hook", hook);
	journal_write(&t->s->j, "gate", g);
	cJSON_Delete(g);
	struct turn_event ae = { .type = EV_APPROVAL, .call = c->block, .text = why, .len = strlen(why),
				 .n = (int64_t)d, .hook = hook };
	turn_emit(t, &ae);
	if (d == GATE_ABORT) {
		turn_call_done(t, c, tool_result_json("refused", "not run: %s", why), false);
		turn_stop_request(t, TURN_REFUSED, why);
		return;
	}
	if (d == GATE_DENY || d == GATE_NEEDS_PERSON) {
		if (d == GATE_NEEDS_PERSON)
			t->needs_person++;
		t->s->refused++;
		turn_call_done(t, c, tool_result_json("refused", "%s", why), false);
		return;
	}
	/* The task's last call is taken by one agent only (the ledger counts
	 * it now); the rest are told the cap is reached. */
	if (t->cfg->ledger && !ledger_take_call(t->cfg->ledger, t->cfg->b.max_calls)) {
		snprintf(why, sizeof(why), "%s tool-call cap (%d) was reached",
			 t->cfg->ledger->shared ? "the task's (with its subagents')" : "the run's", t->cfg->b.max_calls);
		turn_call_done(t, c, tool_result_json("cancelled", "not run: %s", why), false);
		turn_stop_request(t, TURN_CALL_CAP, why);
		return;
	}
	if (t->cfg->ledger)
		t->s->led_calls++;
	cJSON *intent = cJSON_CreateObject();
	cJSON_AddStringToObject(intent, "call_id", c->id);
	cJSON_AddStringToObject(intent, "key", c->key);
	cJSON_AddStringToObject(intent, "tool", c->name);
	cJSON_AddItemToObject(intent, "input", cJSON_Duplicate(input, 1));
	if (updated)
		cJSON_AddBoolToObject(intent, "hook_updated", 1);
	journal_write(&t->s->j, "intent", intent);
	cJSON_Delete(intent);
	char stop[256] = "";
	cJSON *own = !c->mcp && t->cfg->answer.call ? t->cfg->answer.call(t->cfg->answer.ud, c->name, input, stop, sizeof(stop))
						    : NULL;
	if (own) {
		t->s->calls++;
		turn_call_done(t, c, own, true);
		/* Not turn_wind_down here: it would end the calls this one is
		 * among while their dispatch runs. */
		if (stop[0])
			turn_stop_request(t, TURN_CANCELLED, stop);
		return;
	}
	static const struct box_call_cbs cbs = { .output = on_box_output, .result = on_box_result };
	const struct box_call_req rq = { .tool = c->name, .args = input, .key = c->key, .left_ms = left, .stream = true };
	int r = c->mcp	   ? mcp_call_start(t->cfg->mcp, c->name, input, left, on_mcp_result, t, &c->box_id, &e)
		: c->agent ? agents_start(t->cfg->agents, t->loop, input, on_agent_result, on_agent_event, t,
					    &c->box_id, &e)
			   : box_call_start(t->s->box, &rq, &cbs, t, &c->box_id, &e);
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
		if (c->mcp || c->agent)
			turn_call_done(t, c, tool_result_json("failed", "%s", e.msg), true);
		else
			turn_call_done(t, c, tool_result_json("unknown", "the call could not be sent to the box: %s", e.msg), true);
		return;
	}
	c->state = TC_RUNNING;
	t->running++;
	if (!c->ro)
		t->running_mut++;
	if (c->agent) {
		/* Its start (or its place in the queue behind --max-subagents). */
		cJSON *rec = cJSON_CreateObject();
		cJSON_AddStringToObject(rec, "call_id", c->id ? c->id : "");
		cJSON_AddStringToObject(rec, "agent", agents_name(t->cfg->agents, c->box_id));
		const char *d = json_str(input, "description");
		if (d)
			cJSON_AddStringToObject(rec, "description", d);
		cJSON_AddBoolToObject(rec, "read_only", agents_readonly(input));
		journal_write(&t->s->j, "agent_start", rec);
		cJSON_Delete(rec);
	}
}

cJSON *turn_tool_result(const char *id, const cJSON *result)
{
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "type", "tool_result");
	cJSON_AddStringToObject(b, "tool_use_id", id);
	const char *outcome = json_str(result, "outcome");
	const char *text = json_str(result, "text");
	const cJSON *images = cJSON_GetObjectItemCaseSensitive(result, "images");
	if (cJSON_IsArray(images)) {
		/* An MCP tool's images, as Anthropic's content blocks; the
		 * text describes them for providers that take none. */
		cJSON *content = cJSON_AddArrayToObject(b, "content");
		cJSON *tb = cJSON_CreateObject();
		cJSON_AddStringToObject(tb, "type", "text");
		cJSON_AddStringToObject(tb, "text", text && *text ? text : outcome ? outcome : "");
		cJSON_AddItemToArray(content, tb);
		const cJSON *im;
		cJSON_ArrayForEach(im, images) {
			cJSON *ib = cJSON_CreateObject();
			cJSON_AddStringToObject(ib, "type", "image");
			cJSON *src = cJSON_AddObjectToObject(ib, "source");
			cJSON_AddStringToObject(src, "type", "base64");
			cJSON_AddStringToObject(src, "media_type", json_str(im, "media_type") ? json_str(im, "media_type") : "");
			cJSON_AddStringToObject(src, "data", json_str(im, "data") ? json_str(im, "data") : "");
			cJSON_AddItemToArray(content, ib);
		}
	} else {
		cJSON_AddStringToObject(b, "content", text && *text ? text : outcome ? outcome : "");
	}
	if (!outcome || strcmp(outcome, "ok"))
		cJSON_AddBoolToObject(b, "is_error", 1);
	return b;
}

void turn_calls_message(struct turn *t)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "role", "user");
	cJSON *content = cJSON_AddArrayToObject(m, "content");
	for (size_t i = 0; i < t->ncalls; i++)
		cJSON_AddItemToArray(content, turn_tool_result(t->calls[i].id, t->calls[i].result));
	turn_job_news(t, content);
	journal_write(&t->s->j, "message", m);
	cJSON_AddItemToArray(t->s->messages, m);
	turn_calls_free(t);
	t->phase = PH_IDLE;
}


static void calls_end(struct turn *t)
{
	turn_calls_message(t);
	if (t->stopping) {
		turn_finish(t, t->stop_kind, "%s", t->stop_why);
		return;
	}
	if (t->needs_person >= TURN_NEEDS_PERSON_MAX) {
		turn_finish(t, TURN_REFUSED,
		       "%d calls needed a person's approval and no one is at a terminal; rerun with --approve or --allow",
		       t->needs_person);
		return;
	}
	turn_start_round(t);
}

/* Read-only calls run side by side; a call that changes something waits
 * for every earlier call and holds every later one. */
void turn_calls_pump(struct turn *t)
{
	if (t->phase != PH_CALLS || t->finished)
		return;
	while (t->next < t->ncalls) {
		struct tcall *c = &t->calls[t->next];
		bool ro = c->ro;
		if (!t->stopping && ((ro && t->running_mut) || (!ro && t->running)))
			return;
		t->next++;
		dispatch(t, c);
	}
	if (t->running == 0)
		calls_end(t);
}


void turn_calls_begin(struct turn *t, const cJSON *content, size_t n)
{
	struct session *s = t->s;
	const cJSON *b;
	t->calls = calloc(n, sizeof(*t->calls));
	if (!t->calls) {
		turn_finish(t, TURN_BOX_ERROR, "out of memory");
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
		c->ro = c->tool && c->tool->readonly;
		c->agent = !c->tool && t->cfg->agents && !strcmp(c->name, AGENT_TOOL);
		/* Subagents run side by side (each in its own box), as reads do. */
		if (c->agent)
			c->ro = true;
		if (!c->tool && mcp_is_name(c->name)) {
			c->mcp = true;
			mcp_tool_check(t->cfg->mcp, c->name, &c->ro, NULL);
		}
		/* The idempotency key the command sees as WARD_CALL_ID. */
		snprintf(c->key, sizeof(c->key), "%s-%d-%zu", s->j.id[0] ? s->j.id : "run", s->rounds, t->ncalls);
	}
	t->phase = PH_CALLS;
	turn_calls_pump(t);
}

void turn_calls_cancel(struct turn *t)
{
	for (size_t i = 0; i < t->ncalls; i++)
		if (t->calls[i].state == TC_RUNNING && t->calls[i].mcp)
			mcp_call_cancel(t->cfg->mcp, t->calls[i].box_id);
		else if (t->calls[i].state == TC_RUNNING && t->calls[i].agent)
			agents_cancel(t->cfg->agents, t->calls[i].box_id);
		else if (t->calls[i].state == TC_RUNNING)
			box_call_cancel(t->s->box, t->calls[i].box_id);
}
