/* The MCP client: one state machine per server over its box call's stdin
 * and stdout, or over streamable HTTP through the box's egress proxy
 * (mhttp.c). Every request has a deadline; every server's request gets an
 * answer; every way a server can fail (never answering, garbage, exiting,
 * an endless line) ends in a state the model and the person are told. */
#include "mcp/mcp.h"
#include "mcp/mcp-int.h"
#include "mcp/mhttp.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/timeutil.h"
#include "base/utf8.h"
#include "proto/budget.h"
#include "sandbox/box.h"
#include "tools/tool.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "config.h"	/* WARD_VERSION */

/* A server's call lives as long as the box: it is bounded by the box's TTL
 * and the task's end, not by a limit of its own. */
#define MCP_SERVER_LIMIT_MS (30LL * 24 * 3600 * 1000)
#define MCP_TOOL_NAME_MAX 64
#define MCP_DESC_MAX 4096
/* How long answered calls wait for a list asked again after list_changed. */
#define MCP_RELIST_MS 5000

enum srv_state {
	ST_OFF,		/* not running: between an exit and the restart */
	ST_INIT,	/* initialize sent */
	ST_LIST,	/* initialized; listing the tools */
	ST_READY,
	ST_KILLING,	/* stopped on purpose, to be started again */
	ST_DOWN,	/* given up: its tools are unavailable */
};

static const char *const state_names[] = { "starting", "starting", "starting", "ready", "restarting", "unavailable" };

enum rpc_kind { RPC_INIT, RPC_LIST, RPC_CALL, RPC_PING };

struct mcall {
	uint32_t id;
	struct srv *s;
	char name[MCP_TOOL_NAME_MAX + 1];	/* the model's */
	char tool[256];				/* the server's */
	cJSON *input;
	int64_t rpc;		/* 0: waiting for the server to be ready */
	/* Answered while the server's tools were being listed again: held
	 * until the list is in, so that the model's next request offers what
	 * the call made available (a tool's list_changed comes before its
	 * answer). */
	cJSON *held;
	int64_t limit_ms, start_ms, deadline_ms;
	mcp_done_fn *done;
	void *ud;
	struct mcall *next;
};

struct rpc {
	int64_t id;
	enum rpc_kind kind;
	int64_t deadline_ms;	/* 0: none of its own */
	struct rpc *next;
};

struct mtool {
	char name[MCP_TOOL_NAME_MAX + 1];
	const cJSON *def;	/* in srv.tools */
	bool readonly;
};

struct srv {
	struct mcp *m;
	struct mcp_server_cfg cfg;
	enum srv_state state;
	char why[600];
	bool live;		/* its box call is running (HTTP: a session is being made or held) */
	struct mhttp *http;	/* HTTP: its transport */
	uint32_t box_id;
	int restarts;
	int64_t next_id;
	int64_t ready_by;	/* start-up deadline */
	struct rpc *rpcs;
	char proto[32];
	char info[160];		/* serverInfo name and version */
	cJSON *tools;		/* the last complete list */
	struct mtool *mt;
	size_t nmt;
	cJSON *acc;		/* pages of the list in progress */
	int pages;
	bool relist;		/* list_changed came while listing */
	struct buf line;
	bool overlong;
	unsigned garbage;
	char garbage_first[120];
	struct capture err;	/* the tail of its stderr */
	int64_t ping_rpc, ping_by;	/* after a cancel: the server must answer by then */
};

struct mcp {
	struct box_conn *c;
	struct srv *v;
	size_t n;
	mcp_note_fn *note;
	void *ud;
	unsigned gen;
	uint32_t next_call;
	struct mcall *calls;
	bool freeing;
	struct mhub *hub;	/* the HTTP servers' loop and client, or NULL */
};

static void note(struct mcp *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct mcp *m, const char *fmt, ...)
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

/* ---- writing ---- */

/* rpc: the id when msg is a request of ours (HTTP carries its answer on
 * the POST's response), else 0. */
static int srv_send_then(struct srv *s, cJSON *msg, int64_t rpc, void (*then)(void *ud))
{
	cJSON_AddStringToObject(msg, "jsonrpc", "2.0");
	_cleanup_free_ char *t = cJSON_PrintUnformatted(msg);
	cJSON_Delete(msg);
	if (!t || !s->live)
		return -EPIPE;
	size_t n = strlen(t);
	if (s->http)
		return mhttp_post(s->http, t, n, rpc, then);
	t[n] = '\n';	/* over the NUL: the line's end */
	return box_call_input(s->m->c, s->box_id, t, n + 1);
}

static int srv_send(struct srv *s, cJSON *msg, int64_t rpc)
{
	return srv_send_then(s, msg, rpc, NULL);
}

static int64_t srv_request(struct srv *s, enum rpc_kind kind, const char *method, cJSON *params, int64_t deadline)
{
	struct rpc *r = calloc(1, sizeof(*r));
	if (!r) {
		cJSON_Delete(params);
		return -ENOMEM;
	}
	r->id = ++s->next_id;
	r->kind = kind;
	r->deadline_ms = deadline;
	cJSON *msg = cJSON_CreateObject();
	cJSON_AddNumberToObject(msg, "id", (double)r->id);
	cJSON_AddStringToObject(msg, "method", method);
	if (params)
		cJSON_AddItemToObject(msg, "params", params);
	int rc = srv_send(s, msg, r->id);
	if (rc < 0) {
		free(r);
		return rc;
	}
	r->next = s->rpcs;
	s->rpcs = r;
	return r->id;
}

static void srv_notify(struct srv *s, const char *method, cJSON *params)
{
	cJSON *msg = cJSON_CreateObject();
	cJSON_AddStringToObject(msg, "method", method);
	if (params)
		cJSON_AddItemToObject(msg, "params", params);
	srv_send(s, msg, 0);
}

static struct rpc *rpc_take(struct srv *s, int64_t id)
{
	for (struct rpc **p = &s->rpcs; *p; p = &(*p)->next)
		if ((*p)->id == id) {
			struct rpc *r = *p;
			*p = r->next;
			return r;
		}
	return NULL;
}

/* ---- calls ---- */

static void call_free(struct mcall *c)
{
	cJSON_Delete(c->input);
	cJSON_Delete(c->held);
	free(c);
}

/* The call's result to its owner; c is gone after. */
static void call_finish(struct mcall *c, cJSON *result)
{
	mcp_done_fn *done = c->done;
	void *ud = c->ud;
	uint32_t id = c->id;
	call_free(c);
	if (done)
		done(ud, id, result);
	else
		cJSON_Delete(result);
}

static void call_end(struct mcp *m, struct mcall *c, cJSON *result)
{
	for (struct mcall **p = &m->calls; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	call_finish(c, result);
}

/* What the server's stderr said last, as one short clause. */
static void err_tail(const struct srv *s, char *out, size_t cap)
{
	char tail[400];
	size_t n = capture_tail(&s->err, tail, sizeof(tail) - 1);
	tail[n] = 0;
	while (n && (tail[n - 1] == '\n' || tail[n - 1] == '\r'))
		tail[--n] = 0;
	char *nl = strrchr(tail, '\n');
	const char *last = nl ? nl + 1 : tail;
	_cleanup_free_ char *safe = utf8_dup(last, strlen(last));
	if (safe && *safe)
		snprintf(out, cap, "; its stderr ends: \"%.200s\"", safe);
	else
		out[0] = 0;
}

enum which {
	HELD,		/* answered, waiting for a new list */
	SENT,		/* sent or answered: they end now, answered ones with their answer */
	WAITING,	/* not yet sent */
};

/* End the calls of s that `which` selects: answered ones with their
 * answer, the others with why. They are taken off the list first and
 * ended after, since an owner's callback may start, cancel or end other
 * calls. */
static void end_calls(struct srv *s, enum which which, const char *outcome, const char *why)
{
	struct mcp *m = s->m;
	struct mcall *take = NULL, **tail = &take;
	for (struct mcall **p = &m->calls; *p;) {
		struct mcall *c = *p;
		bool pick = c->s == s && (which == HELD	   ? c->held != NULL
					  : which == SENT  ? c->held || c->rpc
							   : !c->held && !c->rpc);
		if (!pick) {
			p = &c->next;
			continue;
		}
		*p = c->next;
		c->next = NULL;
		*tail = c;
		tail = &c->next;
	}
	while (take) {
		struct mcall *c = take;
		take = c->next;
		cJSON *r = c->held ? c->held : tool_result_json(outcome, "%s", why);
		c->held = NULL;
		call_finish(c, r);
	}
}

static void deliver_held(struct srv *s)
{
	end_calls(s, HELD, NULL, NULL);
}

static void call_send(struct mcall *c)
{
	struct srv *s = c->s;
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "name", c->tool);
	cJSON_AddItemToObject(p, "arguments", cJSON_Duplicate(c->input, 1));
	int64_t id = srv_request(s, RPC_CALL, "tools/call", p, 0);
	if (id < 0) {
		call_end(s->m, c, tool_result_json("failed", "the call could not be sent to the MCP server \"%s\": %s",
						s->cfg.name, strerror((int)-id)));
		return;
	}
	c->rpc = id;
}

/* Each waiting call of s, sent; the list is looked at afresh each time,
 * since a call that cannot be sent ends through its owner's callback. */
static void send_waiting(struct srv *s)
{
	for (;;) {
		struct mcall *c = s->m->calls;
		while (c && !(c->s == s && !c->rpc && !c->held))
			c = c->next;
		if (!c)
			return;
		call_send(c);
	}
}

/* ---- the server's life ---- */

static void srv_down(struct srv *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void srv_start(struct srv *s);

static void srv_clear_rpcs(struct srv *s)
{
	for (struct rpc *r = s->rpcs, *n; r; r = n) {
		n = r->next;
		free(r);
	}
	s->rpcs = NULL;
	s->ping_rpc = 0;
	cJSON_Delete(s->acc);
	s->acc = NULL;
	s->line.len = 0;
	s->overlong = false;
}

/* Stop its process (the box's escalation: SIGTERM, the grace, SIGKILL of its
 * whole tree); its result then comes through srv_exited. */
static void srv_kill(struct srv *s)
{
	if (s->http) {
		/* No process to wait for: the session ends here, and a restart
		 * begins a new one at once. */
		mhttp_reset(s->http);
		s->live = false;
		if (s->state == ST_KILLING && !s->m->freeing)
			srv_start(s);
		return;
	}
	if (s->live)
		box_call_cancel(s->m->c, s->box_id);
}

static void srv_down(struct srv *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->why, sizeof(s->why), fmt, ap);
	va_end(ap);
	bool was_down = s->state == ST_DOWN;
	s->state = ST_DOWN;
	srv_kill(s);
	end_calls(s, SENT, "failed", s->why);
	srv_clear_rpcs(s);
	char why[700];
	snprintf(why, sizeof(why), "the MCP server \"%s\" is unavailable: %s", s->cfg.name, s->why);
	end_calls(s, WAITING, "failed", why);
	if (!was_down && !s->m->freeing)
		note(s->m, "MCP server \"%s\" is unavailable: %s", s->cfg.name, s->why);
	if (s->nmt) {
		s->nmt = 0;
		s->m->gen++;
	}
}

/* Restart on purpose (a stuck or broken server): its calls in flight fail
 * with why; waiting ones wait for it. */
static void srv_restart(struct srv *s, const char *why)
{
	if (s->state == ST_DOWN || s->state == ST_KILLING)
		return;
	/* First: a call the callbacks start now waits for the new process. */
	s->state = ST_KILLING;
	end_calls(s, SENT, "failed", why);
	srv_clear_rpcs(s);
	note(s->m, "MCP server \"%s\" is restarted: %s", s->cfg.name, why);
	srv_kill(s);
}

static void on_out(void *ud, uint32_t id, const char *p, size_t n);
static void on_err(void *ud, uint32_t id, const char *p, size_t n);
static void on_exit_result(void *ud, uint32_t id, cJSON *result);

/* The command line, for bash -c inside the box: every word quoted, the
 * environment exported, and exec so the server is the call's process. */
static int shell_word(struct buf *b, const char *w)
{
	if (buf_append(b, "'", 1) < 0)
		return -ENOBUFS;
	for (const char *p = w; *p; p++) {
		if (*p == '\'' ? buf_append(b, "'\\''", 4) < 0 : buf_append(b, p, 1) < 0)
			return -ENOBUFS;
	}
	return buf_append(b, "'", 1);
}

static char *srv_command(const struct mcp_server_cfg *c)
{
	struct buf b;
	buf_init(&b, 256 * 1024);
	int r = 0;
	for (size_t i = 0; i < c->nenv && r >= 0; i++) {
		const char *eq = strchr(c->env[i], '=');
		r = buf_printf(&b, "export %.*s=", (int)(eq - c->env[i]), c->env[i]);
		if (r >= 0)
			r = shell_word(&b, eq + 1);
		if (r >= 0)
			r = buf_append(&b, "; ", 2);
	}
	if (r >= 0)
		r = buf_append(&b, "exec ", 5);
	if (r >= 0)
		r = shell_word(&b, c->command);
	for (size_t i = 0; i < c->nargs && r >= 0; i++) {
		r = buf_append(&b, " ", 1);
		if (r >= 0)
			r = shell_word(&b, c->args[i]);
	}
	if (r < 0 || buf_cstr(&b) < 0) {
		buf_free(&b);
		return NULL;
	}
	return b.data;
}

static void srv_init(struct srv *s)
{
	s->state = ST_INIT;
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "protocolVersion", MCP_PROTOCOL_VERSION);
	cJSON_AddObjectToObject(p, "capabilities");
	cJSON *ci = cJSON_AddObjectToObject(p, "clientInfo");
	cJSON_AddStringToObject(ci, "name", "ward");
	cJSON_AddStringToObject(ci, "version", WARD_VERSION);
	if (srv_request(s, RPC_INIT, "initialize", p, 0) < 0)
		srv_down(s, "initialize could not be sent");
}

static const struct mhttp_cbs http_cbs;

static void srv_start(struct srv *s)
{
	struct mcp *m = s->m;
	srv_clear_rpcs(s);
	s->ready_by = now_ms() + s->cfg.startup_ms;
	if (s->cfg.transport == MCP_HTTP) {
		/* A session of its own through the box's egress proxy: no
		 * process, so nothing of the server runs in the box. */
		if (!m->hub) {
			char why[sizeof(s->why)];
			snprintf(why, sizeof(why), "%s", s->why[0] ? s->why : "the HTTP client could not be started");
			srv_down(s, "%s", why);
			return;
		}
		if (!s->http && mhttp_new(m->hub, s->cfg.url, s->cfg.headers, &http_cbs, s, &s->http) < 0) {
			srv_down(s, "out of memory");
			return;
		}
		mhttp_reset(s->http);
		s->live = true;
		srv_init(s);
		return;
	}
	_cleanup_free_ char *cmd = srv_command(&s->cfg);
	if (!cmd) {
		srv_down(s, "its command line is too long");
		return;
	}
	cJSON *args = cJSON_CreateObject();
	cJSON_AddStringToObject(args, "command", cmd);
	char key[128];
	snprintf(key, sizeof(key), "mcp-%s-%d", s->cfg.name, s->restarts);
	const struct box_call_req rq = { .tool = "bash", .args = args, .key = key, .left_ms = -1, .stream = true,
					 .input = true, .limit_ms = MCP_SERVER_LIMIT_MS };
	static const struct box_call_cbs cbs = { .output = on_out, .result = on_exit_result, .output_err = on_err };
	struct err e = { 0 };
	int r = box_call_start(m->c, &rq, &cbs, s, &s->box_id, &e);
	cJSON_Delete(args);
	if (r < 0) {
		srv_down(s, "it could not be started in the box: %s", e.msg);
		return;
	}
	s->live = true;
	srv_init(s);
}

/* The server went away on its own (how: what happened): calls in flight
 * fail; it is started again up to MCP_RESTARTS_MAX times. lost: the box's
 * connection went, and with it every way to the server. */
static void srv_lost(struct srv *s, const char *how, bool lost)
{
	struct mcp *m = s->m;
	if (m->freeing || s->state == ST_DOWN)
		return;
	if (s->state == ST_KILLING) {
		srv_start(s);
		return;
	}
	char tail[300];
	err_tail(s, tail, sizeof(tail));
	char why[600];
	snprintf(why, sizeof(why), "the MCP server \"%s\" stopped during the call: %s%s", s->cfg.name, how, tail);
	s->state = ST_OFF;
	end_calls(s, SENT, "failed", why);
	srv_clear_rpcs(s);
	if (lost) {
		srv_down(s, "%s", how);
		return;
	}
	if (s->restarts >= MCP_RESTARTS_MAX) {
		srv_down(s, "%s, and it was started %d times%s", how, s->restarts + 1, tail);
		return;
	}
	s->restarts++;
	note(m, "MCP server \"%s\": %s%s; starting it again (%d of %d)", s->cfg.name, how, tail, s->restarts,
	     MCP_RESTARTS_MAX);
	srv_start(s);
}

static void on_exit_result(void *ud, uint32_t id, cJSON *result)
{
	struct srv *s = ud;
	s->live = false;
	char how[200] = "it ended";
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(result, "exit_code");
	const cJSON *sig = cJSON_GetObjectItemCaseSensitive(result, "signal");
	const char *outcome = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(result, "outcome"));
	if (cJSON_IsNumber(code))
		snprintf(how, sizeof(how), "it exited with code %d", code->valueint);
	else if (cJSON_IsNumber(sig))
		snprintf(how, sizeof(how), "it was killed by signal %d", sig->valueint);
	bool lost = outcome && !strcmp(outcome, "unknown");
	if (lost)
		snprintf(how, sizeof(how), "the box's connection was lost");
	cJSON_Delete(result);
	srv_lost(s, how, lost);
}

/* ---- reading ---- */

static const char *const versions[] = { "2025-06-18", "2025-03-26", "2024-11-05" };

static void list_next(struct srv *s, const char *cursor)
{
	cJSON *p = NULL;
	if (cursor) {
		p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "cursor", cursor);
	}
	s->pages++;
	/* A list again (list_changed) holds answered calls: a short bound. */
	int64_t bound = s->cfg.startup_ms < MCP_RELIST_MS ? s->cfg.startup_ms : MCP_RELIST_MS;
	if (srv_request(s, RPC_LIST, "tools/list", p, s->state == ST_LIST ? 0 : now_ms() + bound) < 0)
		srv_restart(s, "tools/list could not be sent");
}

static void list_begin(struct srv *s)
{
	cJSON_Delete(s->acc);
	s->acc = cJSON_CreateArray();
	s->pages = 0;
	s->relist = false;
	list_next(s, NULL);
}

static bool name_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
}

/* The list is complete: it replaces the last one. */
static void list_done(struct srv *s)
{
	struct mcp *m = s->m;
	cJSON_Delete(s->tools);
	s->tools = s->acc;
	s->acc = NULL;
	free(s->mt);
	s->mt = calloc((size_t)cJSON_GetArraySize(s->tools) + 1, sizeof(*s->mt));
	s->nmt = 0;
	const cJSON *t;
	cJSON_ArrayForEach(t, s->tools) {
		const char *tn = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "name"));
		if (!tn || !*tn || !s->mt)
			continue;
		struct mtool *mt = &s->mt[s->nmt];
		int n = snprintf(mt->name, sizeof(mt->name), "mcp__%s__%s", s->cfg.name, tn);
		if (n >= (int)sizeof(mt->name)) {
			note(m, "MCP server \"%s\": tool \"%.80s\" is not offered: mcp__%s__%.80s is longer than %d characters",
			     s->cfg.name, tn, s->cfg.name, tn, MCP_TOOL_NAME_MAX);
			continue;
		}
		/* Providers take [A-Za-z0-9_-] in a tool's name. */
		for (char *p = mt->name; *p; p++)
			if (!name_char(*p))
				*p = '_';
		bool dup = false;
		for (size_t k = 0; k < s->nmt; k++)
			dup |= !strcmp(s->mt[k].name, mt->name);
		if (dup) {
			note(m, "MCP server \"%s\": tool \"%.80s\" is not offered: its name is another's once made safe",
			     s->cfg.name, tn);
			continue;
		}
		mt->def = t;
		const cJSON *ann = cJSON_GetObjectItemCaseSensitive(t, "annotations");
		mt->readonly = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ann, "readOnlyHint"));
		s->nmt++;
	}
	m->gen++;
	bool first = s->state == ST_LIST;
	s->state = ST_READY;
	if (first)
		note(m, "MCP server \"%s\" is ready: %zu tool%s", s->cfg.name, s->nmt, s->nmt == 1 ? "" : "s");
	send_waiting(s);
	if (s->relist)
		list_begin(s);
	else
		deliver_held(s);
}

static void http_initialized(void *ud)
{
	struct srv *s = ud;
	if (s->state == ST_LIST && !s->acc)
		list_begin(s);
}

static void on_init(struct srv *s, const cJSON *res)
{
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "protocolVersion"));
	bool ok = false;
	for (size_t i = 0; v && i < ARRAY_SIZE(versions); i++)
		ok |= !strcmp(v, versions[i]);
	if (!ok) {
		_cleanup_free_ char *safe = utf8_dup(v ? v : "(none)", strlen(v ? v : "(none)"));
		srv_down(s, "it speaks MCP protocol version \"%.40s\"; ward speaks 2025-06-18, 2025-03-26 and 2024-11-05",
			 safe ? safe : "");
		return;
	}
	snprintf(s->proto, sizeof(s->proto), "%s", v);
	const cJSON *si = cJSON_GetObjectItemCaseSensitive(res, "serverInfo");
	const char *sn = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(si, "name"));
	const char *sv = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(si, "version"));
	snprintf(s->info, sizeof(s->info), "%.80s%s%.40s", sn ? sn : "", sv ? " " : "", sv ? sv : "");
	s->state = ST_LIST;
	if (s->http) {
		/* The server takes the list only once it has the notification:
		 * over HTTP the two would race. */
		mhttp_ready(s->http, s->proto);
		cJSON *msg = cJSON_CreateObject();
		cJSON_AddStringToObject(msg, "method", "notifications/initialized");
		if (srv_send_then(s, msg, 0, http_initialized) < 0)
			srv_down(s, "notifications/initialized could not be sent");
		return;
	}
	srv_notify(s, "notifications/initialized", NULL);
	list_begin(s);
}

static void on_list(struct srv *s, const cJSON *res)
{
	const cJSON *tools = cJSON_GetObjectItemCaseSensitive(res, "tools");
	const cJSON *t;
	cJSON_ArrayForEach(t, tools) {
		if (cJSON_GetArraySize(s->acc) >= MCP_TOOLS_MAX)
			break;
		if (cJSON_IsObject(t))
			cJSON_AddItemToArray(s->acc, cJSON_Duplicate(t, 1));
	}
	const char *cursor = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "nextCursor"));
	if (cursor && *cursor && s->pages < MCP_LIST_PAGES_MAX && cJSON_GetArraySize(s->acc) < MCP_TOOLS_MAX) {
		list_next(s, cursor);
		return;
	}
	if (cursor && *cursor)
		note(s->m, "MCP server \"%s\": only the first %d pages or %d tools of its list are taken", s->cfg.name,
		     MCP_LIST_PAGES_MAX, MCP_TOOLS_MAX);
	list_done(s);
}

static void on_response(struct srv *s, const cJSON *msg)
{
	const cJSON *idj = cJSON_GetObjectItemCaseSensitive(msg, "id");
	if (!cJSON_IsNumber(idj))
		return;
	int64_t id = (int64_t)idj->valuedouble;
	const cJSON *res = cJSON_GetObjectItemCaseSensitive(msg, "result");
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(msg, "error");
	const char *emsg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "message"));
	_cleanup_free_ char *esafe = utf8_dup(emsg ? emsg : "no message", strlen(emsg ? emsg : "no message"));
	struct rpc *r = rpc_take(s, id);
	if (!r)
		return;	/* a cancelled call's late answer */
	/* HTTP: the answer is in; its stream is closed, not left to the server. */
	if (s->http)
		mhttp_drop(s->http, id);
	enum rpc_kind kind = r->kind;
	free(r);
	switch (kind) {
	case RPC_INIT:
		if (err || !cJSON_IsObject(res))
			srv_down(s, "it refused initialize: %.300s", esafe ? esafe : "");
		else
			on_init(s, res);
		break;
	case RPC_LIST:
		if (err || !cJSON_IsObject(res)) {
			if (s->state == ST_LIST)
				srv_down(s, "it refused tools/list: %.300s", esafe ? esafe : "");
			else
				note(s->m, "MCP server \"%s\": tools/list failed (%.200s); its last list is kept", s->cfg.name,
				     esafe ? esafe : "");
			cJSON_Delete(s->acc);
			s->acc = NULL;
			deliver_held(s);
			return;
		}
		on_list(s, res);
		break;
	case RPC_PING:
		s->ping_rpc = 0;
		break;
	case RPC_CALL:
		for (struct mcall *c = s->m->calls; c; c = c->next)
			if (c->s == s && c->rpc == id) {
				cJSON *out = err ? tool_result_json("failed", "the MCP server \"%s\" answered with an error: %.1000s",
								 s->cfg.name, esafe ? esafe : "")
						 : mcp_result(res, s->cfg.name, now_ms() - c->start_ms);
				if (s->acc) {
					c->held = out;
					c->rpc = 0;
					c->deadline_ms = INT64_MAX;	/* the list's own deadline bounds it */
				} else {
					call_end(s->m, c, out);
				}
				break;
			}
		break;
	}
}

/* A request of the server's: ward answers every one, ping with a result,
 * the rest with "method not found" (it offers no sampling, elicitation or
 * roots), never with silence. */
static void on_server_request(struct srv *s, const cJSON *msg, const char *method)
{
	cJSON *reply = cJSON_CreateObject();
	cJSON_AddItemToObject(reply, "id", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(msg, "id"), 1));
	if (!strcmp(method, "ping")) {
		cJSON_AddObjectToObject(reply, "result");
	} else {
		cJSON *e = cJSON_AddObjectToObject(reply, "error");
		cJSON_AddNumberToObject(e, "code", -32601);
		char m[300];
		snprintf(m, sizeof(m), "ward does not support %.100s: this client offers no sampling, elicitation or roots",
			 method);
		cJSON_AddStringToObject(e, "message", m);
	}
	srv_send(s, reply, 0);
}

static void on_garbage(struct srv *s, const char *p, size_t n)
{
	if (!s->garbage++) {
		_cleanup_free_ char *safe = utf8_dup(p, n < 100 ? n : 100);
		snprintf(s->garbage_first, sizeof(s->garbage_first), "%s", safe ? safe : "");
		if (s->http)
			note(s->m, "MCP server \"%s\" sent a message that is not JSON-RPC (ignored): \"%.100s\"",
			     s->cfg.name, s->garbage_first);
		else
			note(s->m, "MCP server \"%s\" wrote a line that is not JSON-RPC to its stdout (ignored; stdout is "
			     "the protocol's): \"%.100s\"", s->cfg.name, s->garbage_first);
	}
}

/* One JSON-RPC message of the server's. */
static void on_msg(struct srv *s, const cJSON *msg, const char *p, size_t n)
{
	const char *jv = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "jsonrpc"));
	if (!cJSON_IsObject(msg) || !jv || strcmp(jv, "2.0")) {
		on_garbage(s, p, n);
		return;
	}
	const char *method = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "method"));
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
	if (method && id) {
		on_server_request(s, msg, method);
	} else if (method) {
		if (!strcmp(method, "notifications/tools/list_changed")) {
			if (s->state == ST_READY && !s->acc)
				list_begin(s);
			else
				s->relist = true;
		}
	} else if (id) {
		on_response(s, msg);
	}
}

/* A line (stdio) or a body or event (HTTP): a message, or a batch of them
 * (an array; HTTP only, from servers of 2025-03-26). */
static void on_message(struct srv *s, const char *p, size_t n)
{
	while (n && (p[n - 1] == '\r' || p[n - 1] == '\n' || p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	if (!n)
		return;
	cJSON *msg = cJSON_ParseWithLength(p, n);
	if (cJSON_IsArray(msg) && s->http) {
		const cJSON *it;
		cJSON_ArrayForEach(it, msg) {
			on_msg(s, it, p, n);
			if (s->state == ST_KILLING || s->state == ST_DOWN || !s->live)
				break;
		}
	} else {
		on_msg(s, msg, p, n);
	}
	cJSON_Delete(msg);
}

static void on_out(void *ud, uint32_t id, const char *p, size_t n)
{
	struct srv *s = ud;
	while (n) {
		const char *nl = memchr(p, '\n', n);
		size_t k = nl ? (size_t)(nl - p) : n;
		if (!s->overlong && buf_append(&s->line, p, k) < 0) {
			s->overlong = true;
			s->line.len = 0;
		}
		if (!nl)
			return;
		p += k + 1;
		n -= k + 1;
		if (s->overlong) {
			s->overlong = false;
			char why[300];
			snprintf(why, sizeof(why), "the MCP server \"%s\" sent a message over %u MiB, which ward does not read",
				 s->cfg.name, MCP_LINE_MAX >> 20);
			srv_restart(s, why);
			return;
		}
		on_message(s, s->line.data, s->line.len);
		s->line.len = 0;
		if (s->state == ST_KILLING || s->state == ST_DOWN || !s->live)
			return;
	}
}

static void on_err(void *ud, uint32_t id, const char *p, size_t n)
{
	struct srv *s = ud;
	capture_add(&s->err, p, n);
}

/* ---- HTTP servers (mhttp.c is the transport) ---- */

static int http_dial(void *ud, char *msg, size_t cap)
{
	const struct srv *s = ud;
	return box_egress_dial(s->m->c, msg, cap);
}

static void http_message(void *ud, const char *p, size_t n)
{
	struct srv *s = ud;
	if (s->state != ST_DOWN && s->state != ST_KILLING)
		on_message(s, p, n);
}

/* A request's POST ended without its answer. */
static void http_failed(void *ud, int64_t id, const char *why)
{
	struct srv *s = ud;
	struct rpc *r = rpc_take(s, id);
	if (!r)
		return;	/* answered after all, or given up already */
	enum rpc_kind kind = r->kind;
	free(r);
	switch (kind) {
	case RPC_INIT:
		srv_down(s, "%s", why);
		break;
	case RPC_LIST:
		if (s->state == ST_LIST) {
			srv_down(s, "tools/list failed: %s", why);
			break;
		}
		note(s->m, "MCP server \"%s\": tools/list failed (%.300s); its last list is kept", s->cfg.name, why);
		cJSON_Delete(s->acc);
		s->acc = NULL;
		deliver_held(s);
		break;
	case RPC_PING:
		break;	/* its deadline decides */
	case RPC_CALL:
		for (struct mcall *c = s->m->calls; c; c = c->next)
			if (c->s == s && c->rpc == id) {
				call_end(s->m, c, tool_result_json("failed", "the MCP server \"%s\" gave no answer: %s",
								s->cfg.name, why));
				break;
			}
		break;
	}
}

static void http_expired(void *ud)
{
	srv_lost(ud, "it ended the session (HTTP 404)", false);
}

static void http_note(void *ud, const char *line)
{
	const struct srv *s = ud;
	note(s->m, "MCP server \"%s\": %s", s->cfg.name, line);
}

static const struct mhttp_cbs http_cbs = {
	.dial = http_dial, .message = http_message, .failed = http_failed, .expired = http_expired, .note = http_note,
};

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
		srv_start(&m->v[i]);
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
					srv_down(&m->v[i], "ward was asked to stop while it started");
			break;
		}
		/* (The wait wakes at least once a second to look.) */
		int64_t d = mcp_deadline(m), soon = now_ms() + 1000;
		int r = box_conn_wait_fd(m->c, started, m, d < 0 || d > soon ? soon : d, mcp_fd(m), mcp_io_cb, m);
		if (r == -ECONNRESET) {
			for (size_t i = 0; i < m->n; i++)
				if (m->v[i].state != ST_DOWN)
					srv_down(&m->v[i], "the connection to the box was lost");
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
		call_free(c);
	}
	m->calls = NULL;
	for (size_t i = 0; i < m->n; i++)
		srv_kill(&m->v[i]);
	/* The HTTP servers are told their sessions are over, briefly. */
	mhub_close(m->hub, now_ms() + MCP_HTTP_BYE_MS);
	for (size_t i = 0; i < m->n; i++) {
		struct srv *s = &m->v[i];
		mhttp_free(s->http);
		srv_clear_rpcs(s);
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
	c->limit_ms = s->cfg.call_ms;
	if (left_ms >= 0 && left_ms < c->limit_ms)
		c->limit_ms = left_ms > 1 ? left_ms : 1;
	c->start_ms = now_ms();
	c->deadline_ms = c->start_ms + c->limit_ms;
	c->done = done;
	c->ud = ud;
	c->next = m->calls;
	m->calls = c;
	*ret_id = c->id;
	if (s->state == ST_READY)
		call_send(c);
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
		call_end(s->m, c, r);
		return;
	}
	if (c->rpc) {
		struct rpc *r = rpc_take(s, c->rpc);
		free(r);
		cJSON *p = cJSON_CreateObject();
		cJSON_AddNumberToObject(p, "requestId", (double)c->rpc);
		cJSON_AddStringToObject(p, "reason", why);
		srv_notify(s, "notifications/cancelled", p);
		if (s->http)
			mhttp_drop(s->http, c->rpc);
		if (!s->ping_rpc && s->state == ST_READY) {
			s->ping_by = now_ms() + BUDGET_GRACE_MS;
			int64_t id = srv_request(s, RPC_PING, "ping", NULL, 0);
			s->ping_rpc = id > 0 ? id : 0;
		}
	}
	struct mcp *m = s->m;
	call_end(m, c, tool_result_json(outcome, "%s; the MCP server \"%s\" was told to stop it (notifications/cancelled)",
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
			err_tail(s, tail, sizeof(tail));
			char garb[200] = "";
			if (s->garbage)
				snprintf(garb, sizeof(garb), "; it wrote %u line%s that are not JSON-RPC", s->garbage,
					 s->garbage == 1 ? "" : "s");
			srv_down(s, "no answer to %s within %lld s%s%s", s->state == ST_INIT ? "initialize" : "tools/list",
				 (long long)(s->cfg.startup_ms / 1000), garb, tail);
			continue;
		}
		if (s->ping_rpc && now >= s->ping_by) {
			char why[200];
			snprintf(why, sizeof(why), "it did not answer a ping within %d s after a cancel",
				 BUDGET_GRACE_MS / 1000);
			srv_restart(s, why);
			continue;
		}
		for (struct rpc *r = s->rpcs; r; r = r->next)
			if (r->deadline_ms && now >= r->deadline_ms && r->kind == RPC_LIST) {
				/* A list after list_changed that never came: keep the last. */
				rpc_take(s, r->id);
				free(r);
				cJSON_Delete(s->acc);
				s->acc = NULL;
				note(m, "MCP server \"%s\": no answer to tools/list; its last list is kept", s->cfg.name);
				deliver_held(s);
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
