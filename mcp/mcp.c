/* The MCP client: one state machine per server over its box call's stdin
 * and stdout, or over streamable HTTP through the box's egress proxy
 * (mhttp.c). Every request has a deadline; every server's request gets an
 * answer; every way a server can fail (never answering, garbage, exiting,
 * an endless line) ends in a state the model and the person are told.
 * This file is the API; mcp-srv.c is each server's life and what is
 * written to it, mcp-read.c what a server says. */
#include "mcp/mcp.h"
#include "mcp/mcp-int.h"
#include "base/cleanup.h"
#include "base/timeutil.h"
#include "base/utf8.h"
#include "proto/budget.h"
#include "sandbox/box.h"
#include "tools/tool.h"

#include <errno.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const state_names[] = { "starting", "starting", "starting", "ready", "restarting", "unavailable" };

void mcp_note(struct mcp *m, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (m->note)
		m->note(m->ud, line);
}

bool mcp_is_name(const char *name)
{
	return name && !strncmp(name, "mcp__", 5);
}

/* ---- the API ---- */

int mcp_new(const struct mcp_config *cfg, struct box_conn *c, mcp_note_fn *nf, void *ud, struct mcp **ret,
	    struct err *e)
{
	struct mcp *m = calloc(1, sizeof(*m));
	if (!m || !(m->v = calloc(cfg->n + 1, sizeof(*m->v)))) {
		free(m);
		return err_set(e, -ENOMEM, "out of memory");
	}
	m->c = c;
	m->note = nf;
	m->ud = ud;
	m->n = cfg->n;
	for (size_t i = 0; i < cfg->n; i++) {
		struct srv *s = &m->v[i];
		s->m = m;
		/* The strings stay the config's: it outlives the run. */
		s->cfg = cfg->v[i];
		buf_init(&s->line, MCP_LINE_MAX);
		capture_init(&s->err, 1024, 2048);
		if (s->cfg.transport == MCP_HTTP && !m->hub) {
			struct err he = { 0 };
			if (mhub_new(&m->hub, &he) < 0)
				snprintf(s->why, sizeof(s->why), "%s", he.msg);
		}
	}
	*ret = m;
	return 0;
}

static bool started(void *ud)
{
	const struct mcp *m = ud;
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].state != ST_READY && m->v[i].state != ST_DOWN)
			return false;
	return true;
}

int mcp_fd(const struct mcp *m)
{
	return m ? mhub_fd(m->hub) : -1;
}

void mcp_io(struct mcp *m)
{
	if (m)
		mhub_io(m->hub);
}

static void mcp_io_cb(void *ud)
{
	mcp_io(ud);
}

int mcp_start(struct mcp *m, struct err *e)
{
	for (size_t i = 0; i < m->n; i++)
		mcp_srv_start(&m->v[i]);
	/* The box's connection and the HTTP servers' loop, to the servers'
	 * next deadline, then their clock: start-up bounds, restarts. */
	while (!started(m)) {
		/* ward's stop signals are blocked for its loop and stay pending:
		 * the servers not up yet are given up, so the run can stop now
		 * rather than at their start-up bound. */
		sigset_t pend;
		if (sigpending(&pend) == 0 &&
		    (sigismember(&pend, SIGTERM) || sigismember(&pend, SIGINT) || sigismember(&pend, SIGHUP))) {
			for (size_t i = 0; i < m->n; i++)
				if (m->v[i].state != ST_READY && m->v[i].state != ST_DOWN)
					mcp_srv_down(&m->v[i], "ward was asked to stop while it started");
			break;
		}
		/* (The wait wakes at least once a second to look.) */
		int64_t d = mcp_deadline(m), soon = now_ms() + 1000;
		int r = box_conn_wait_fd(m->c, started, m, d < 0 || d > soon ? soon : d, mcp_fd(m), mcp_io_cb, m);
		if (r == -ECONNRESET) {
			for (size_t i = 0; i < m->n; i++)
				if (m->v[i].state != ST_DOWN)
					mcp_srv_down(&m->v[i], "the connection to the box was lost");
			return err_set(e, r, "the connection to the box was lost while the MCP servers started");
		}
		if (r < 0 && r != -ETIMEDOUT)
			return err_setc(e, r, "waiting for the MCP servers");
		mcp_tick(m);
	}
	return 0;
}

/* How long ward waits at the end for its HTTP servers to take their
 * sessions' DELETE. */
#define MCP_HTTP_BYE_MS 500

void mcp_free(struct mcp *m)
{
	if (!m)
		return;
	m->freeing = true;
	/* As box_disconnect: calls still pending get no callback. */
	for (struct mcall *c = m->calls, *n; c; c = n) {
		n = c->next;
		mcp_srv_call_free(c);
	}
	m->calls = NULL;
	/* Each stdio server's box call is cancelled and forgotten: the
	 * connection may be used after this (ward run lists the box's jobs
	 * over it), and the call's result must then reach no freed server. */
	for (size_t i = 0; i < m->n; i++) {
		struct srv *s = &m->v[i];
		bool call = !s->http && s->live;
		mcp_srv_kill(s);
		if (call)
			box_call_forget(m->c, s->box_id);
	}
	/* The HTTP servers are told their sessions are over, briefly. */
	mhub_close(m->hub, now_ms() + MCP_HTTP_BYE_MS);
	for (size_t i = 0; i < m->n; i++) {
		struct srv *s = &m->v[i];
		mhttp_free(s->http);
		mcp_srv_clear_rpcs(s);
		cJSON_Delete(s->tools);
		free(s->mt);
		buf_free(&s->line);
		capture_free(&s->err);
	}
	mhub_free(m->hub);
	free(m->v);
	free(m);
}

cJSON *mcp_tools(const struct mcp *m)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; m && i < m->n; i++) {
		const struct srv *s = &m->v[i];
		if (s->state == ST_DOWN)
			continue;
		for (size_t k = 0; k < s->nmt; k++) {
			const cJSON *def = s->mt[k].def;
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "name", s->mt[k].name);
			const char *d = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(def, "description"));
			char *desc = utf8_dup(d ? d : "", d ? strnlen(d, MCP_DESC_MAX) : 0);
			cJSON_AddStringToObject(o, "description", desc && *desc ? desc : "(no description)");
			free(desc);
			const cJSON *sch = cJSON_GetObjectItemCaseSensitive(def, "inputSchema");
			cJSON *is = cJSON_IsObject(sch) ? cJSON_Duplicate(sch, 1) : cJSON_CreateObject();
			if (!cJSON_GetObjectItemCaseSensitive(is, "type"))
				cJSON_AddStringToObject(is, "type", "object");
			cJSON_AddItemToObject(o, "input_schema", is);
			cJSON_AddItemToArray(a, o);
		}
	}
	return a;
}

unsigned mcp_generation(const struct mcp *m)
{
	return m ? m->gen : 0;
}

static struct srv *find(const struct mcp *m, const char *name, const struct mtool **ret_tool)
{
	*ret_tool = NULL;
	for (size_t i = 0; m && i < m->n; i++) {
		struct srv *s = &m->v[i];
		size_t nl = strlen(s->cfg.name);
		if (strncmp(name + 5, s->cfg.name, nl) || strncmp(name + 5 + nl, "__", 2))
			continue;
		for (size_t k = 0; k < s->nmt; k++)
			if (!strcmp(s->mt[k].name, name))
				*ret_tool = &s->mt[k];
		return s;
	}
	return NULL;
}

int mcp_tool_check(const struct mcp *m, const char *name, bool *ret_readonly, struct err *e)
{
	*ret_readonly = false;
	const struct mtool *t = NULL;
	const struct srv *s = mcp_is_name(name) ? find(m, name, &t) : NULL;
	if (!s)
		return err_set(e, -ENOENT, "no MCP server is configured for \"%.80s\"", name);
	if (s->state == ST_DOWN)
		return err_set(e, -EHOSTDOWN, "the MCP server \"%s\" is unavailable: %s", s->cfg.name, s->why);
	if (!t)
		return err_set(e, -ENOENT, "the MCP server \"%s\" lists no tool \"%.80s\"", s->cfg.name,
			       name + 7 + strlen(s->cfg.name));
	*ret_readonly = t->readonly;
	return 0;
}

int mcp_call_start(struct mcp *m, const char *name, const cJSON *input, int64_t left_ms, mcp_done_fn *done,
		   void *ud, uint32_t *ret_id, struct err *e)
{
	bool ro;
	if (mcp_tool_check(m, name, &ro, e) < 0)
		return -ENOENT;
	const struct mtool *t = NULL;
	struct srv *s = find(m, name, &t);
	struct mcall *c = calloc(1, sizeof(*c));
	if (!c)
		return err_set(e, -ENOMEM, "out of memory");
	c->id = ++m->next_call;
	c->s = s;
	snprintf(c->name, sizeof(c->name), "%s", name);
	snprintf(c->tool, sizeof(c->tool), "%s",
		 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t->def, "name")));
	c->input = cJSON_IsObject(input) ? cJSON_Duplicate(input, 1) : cJSON_CreateObject();
	/* The server's limit, or what the task has left when shorter: the
	 * rule every call's time follows (proto/budget.h). */
	c->limit_ms = budget_make(s->cfg.call_ms, 0, left_ms, 0).limit_ms;
	c->start_ms = now_ms();
	c->deadline_ms = c->start_ms + c->limit_ms;
	c->done = done;
	c->ud = ud;
	c->next = m->calls;
	m->calls = c;
	*ret_id = c->id;
	if (s->state == ST_READY)
		mcp_srv_call_send(c);
	return 0;
}

/* Tell the server, end the call, and check the server still answers. */
static void call_stop(struct mcall *c, const char *outcome, const char *why)
{
	struct srv *s = c->s;
	if (c->held) {
		/* It was done: its answer stands. */
		cJSON *r = c->held;
		c->held = NULL;
		mcp_srv_call_end(s->m, c, r);
		return;
	}
	if (c->rpc) {
		struct rpc *r = mcp_srv_rpc_take(s, c->rpc);
		free(r);
		cJSON *p = cJSON_CreateObject();
		cJSON_AddNumberToObject(p, "requestId", (double)c->rpc);
		cJSON_AddStringToObject(p, "reason", why);
		mcp_srv_notify(s, "notifications/cancelled", p);
		if (s->http)
			mhttp_drop(s->http, c->rpc);
		if (!s->ping_rpc && s->state == ST_READY) {
			s->ping_by = now_ms() + BUDGET_GRACE_MS;
			int64_t id = mcp_srv_request(s, RPC_PING, "ping", NULL, 0);
			s->ping_rpc = id > 0 ? id : 0;
		}
	}
	struct mcp *m = s->m;
	mcp_srv_call_end(m, c, tool_result_json(outcome, "%s; the MCP server \"%s\" was told to stop it (notifications/cancelled)",
				     why, s->cfg.name));
}

void mcp_call_cancel(struct mcp *m, uint32_t id)
{
	for (struct mcall *c = m ? m->calls : NULL; c; c = c->next)
		if (c->id == id) {
			char why[100];
			snprintf(why, sizeof(why), "cancelled after %.1f s", (now_ms() - c->start_ms) / 1000.0);
			call_stop(c, "cancelled", why);
			return;
		}
}

int64_t mcp_deadline(const struct mcp *m)
{
	int64_t d = -1;
#define NEXT(t) do { if (d < 0 || (t) < d) d = (t); } while (0)
	for (const struct mcall *c = m ? m->calls : NULL; c; c = c->next)
		NEXT(c->deadline_ms);
	for (size_t i = 0; m && i < m->n; i++) {
		const struct srv *s = &m->v[i];
		if (s->state == ST_INIT || s->state == ST_LIST)
			NEXT(s->ready_by);
		if (s->ping_rpc)
			NEXT(s->ping_by);
		for (const struct rpc *r = s->rpcs; r; r = r->next)
			if (r->deadline_ms)
				NEXT(r->deadline_ms);
	}
	int64_t h = m ? mhub_deadline(m->hub) : -1;
	if (h >= 0)
		NEXT(h);
	return d;
#undef NEXT
}

void mcp_tick(struct mcp *m)
{
	if (!m)
		return;
	mhub_tick(m->hub);
	int64_t now = now_ms();
	for (struct mcall *c = m->calls, *n; c; c = n) {
		n = c->next;
		if (now < c->deadline_ms)
			continue;
		char why[160];
		snprintf(why, sizeof(why), "timed out after %lld s%s", (long long)((c->limit_ms + 999) / 1000),
			 c->rpc ? "" : " waiting for the server to start");
		call_stop(c, "timed_out", why);
		/* call_stop may end others (a restart): start over. */
		n = m->calls;
		now = now_ms();
	}
	for (size_t i = 0; i < m->n; i++) {
		struct srv *s = &m->v[i];
		if ((s->state == ST_INIT || s->state == ST_LIST) && now >= s->ready_by) {
			char tail[300];
			mcp_srv_err_tail(s, tail, sizeof(tail));
			char garb[200] = "";
			if (s->garbage)
				snprintf(garb, sizeof(garb), "; it wrote %u line%s that are not JSON-RPC", s->garbage,
					 s->garbage == 1 ? "" : "s");
			mcp_srv_down(s, "no answer to %s within %lld s%s%s", s->state == ST_INIT ? "initialize" : "tools/list",
				 (long long)(s->cfg.startup_ms / 1000), garb, tail);
			continue;
		}
		if (s->ping_rpc && now >= s->ping_by) {
			char why[200];
			snprintf(why, sizeof(why), "it did not answer a ping within %d s after a cancel",
				 BUDGET_GRACE_MS / 1000);
			mcp_srv_restart(s, why);
			continue;
		}
		for (struct rpc *r = s->rpcs; r; r = r->next)
			if (r->deadline_ms && now >= r->deadline_ms && r->kind == RPC_LIST) {
				/* A list after list_changed that never came: keep the last. */
				mcp_srv_rpc_take(s, r->id);
				free(r);
				cJSON_Delete(s->acc);
				s->acc = NULL;
				mcp_note(m, "MCP server \"%s\": no answer to tools/list; its last list is kept", s->cfg.name);
				mcp_srv_deliver_held(s);
				break;
			}
	}
}

cJSON *mcp_status(const struct mcp *m)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; m && i < m->n; i++) {
		const struct srv *s = &m->v[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", s->cfg.name);
		cJSON_AddStringToObject(o, "transport", s->cfg.transport == MCP_HTTP ? "http" : "stdio");
		cJSON_AddStringToObject(o, "state", state_names[s->state]);
		if (s->state == ST_DOWN)
			cJSON_AddStringToObject(o, "why", s->why);
		cJSON_AddNumberToObject(o, "restarts", s->restarts);
		if (s->proto[0])
			cJSON_AddStringToObject(o, "protocol", s->proto);
		if (s->info[0]) {
			_cleanup_free_ char *safe = utf8_dup(s->info, strlen(s->info));
			cJSON_AddStringToObject(o, "server", safe ? safe : "");
		}
		cJSON_AddStringToObject(o, "source", s->cfg.source);
		cJSON *ta = cJSON_AddArrayToObject(o, "tools");
		for (size_t k = 0; k < s->nmt; k++) {
			cJSON *t = cJSON_CreateObject();
			cJSON_AddStringToObject(t, "name", s->mt[k].name);
			cJSON_AddStringToObject(t, "tool", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s->mt[k].def, "name")));
			cJSON_AddBoolToObject(t, "readonly", s->mt[k].readonly);
			cJSON_AddItemToArray(ta, t);
		}
		cJSON_AddItemToArray(a, o);
	}
	return a;
}
