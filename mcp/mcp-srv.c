/* Each MCP server's life (started as a box call or an HTTP session,
 * killed, restarted, given up on), what is written to it, and the calls
 * made to it, from sent to ended. */
#include "mcp/mcp.h"
#include "mcp/mcp-int.h"
#include "base/cleanup.h"
#include "base/jsonprint.h"
#include "base/timeutil.h"
#include "base/utf8.h"
#include "sandbox/box.h"
#include "tools/tool.h"

#include "config.h"	/* WARD_VERSION */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- writing ---- */

/* rpc: the id when msg is a request of ours (HTTP carries its answer on
 * the POST's response), else 0. */
int mcp_srv_send_then(struct srv *s, cJSON *msg, int64_t rpc, void (*then)(void *ud))
{
	cJSON_AddStringToObject(msg, "jsonrpc", "2.0");
	_cleanup_free_ char *t = jsonprint_text(msg);
	cJSON_Delete(msg);
	if (!t || !s->live)
		return -EPIPE;
	size_t n = strlen(t);
	if (s->http)
		return mhttp_post(s->http, t, n, rpc, then);
	t[n] = '\n';	/* over the NUL: the line's end */
	return box_call_input(s->m->c, s->box_id, t, n + 1);
}

int mcp_srv_send(struct srv *s, cJSON *msg, int64_t rpc)
{
	return mcp_srv_send_then(s, msg, rpc, NULL);
}

int64_t mcp_srv_request(struct srv *s, enum rpc_kind kind, const char *method, cJSON *params, int64_t deadline)
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
	int rc = mcp_srv_send(s, msg, r->id);
	if (rc < 0) {
		free(r);
		return rc;
	}
	r->next = s->rpcs;
	s->rpcs = r;
	return r->id;
}

void mcp_srv_notify(struct srv *s, const char *method, cJSON *params)
{
	cJSON *msg = cJSON_CreateObject();
	cJSON_AddStringToObject(msg, "method", method);
	if (params)
		cJSON_AddItemToObject(msg, "params", params);
	mcp_srv_send(s, msg, 0);
}

struct rpc *mcp_srv_rpc_take(struct srv *s, int64_t id)
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

void mcp_srv_call_free(struct mcall *c)
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
	mcp_srv_call_free(c);
	if (done)
		done(ud, id, result);
	else
		cJSON_Delete(result);
}

void mcp_srv_call_end(struct mcp *m, struct mcall *c, cJSON *result)
{
	for (struct mcall **p = &m->calls; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	call_finish(c, result);
}

/* What the server's stderr said last, as one short clause. */
void mcp_srv_err_tail(const struct srv *s, char *out, size_t cap)
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

void mcp_srv_deliver_held(struct srv *s)
{
	end_calls(s, HELD, NULL, NULL);
}

void mcp_srv_call_send(struct mcall *c)
{
	struct srv *s = c->s;
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "name", c->tool);
	cJSON_AddItemToObject(p, "arguments", cJSON_Duplicate(c->input, 1));
	int64_t id = mcp_srv_request(s, RPC_CALL, "tools/call", p, 0);
	if (id < 0) {
		mcp_srv_call_end(s->m, c, tool_result_json("failed", "the call could not be sent to the MCP server \"%s\": %s",
						s->cfg.name, strerror((int)-id)));
		return;
	}
	c->rpc = id;
}

/* Each waiting call of s, sent; the list is looked at afresh each time,
 * since a call that cannot be sent ends through its owner's callback. */
void mcp_srv_send_waiting(struct srv *s)
{
	for (;;) {
		struct mcall *c = s->m->calls;
		while (c && !(c->s == s && !c->rpc && !c->held))
			c = c->next;
		if (!c)
			return;
		mcp_srv_call_send(c);
	}
}

/* ---- the server's life ---- */

void mcp_srv_clear_rpcs(struct srv *s)
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
void mcp_srv_kill(struct srv *s)
{
	if (s->http) {
		/* No process to wait for: the session ends here, and a restart
		 * begins a new one at once. */
		mhttp_reset(s->http);
		s->live = false;
		if (s->state == ST_KILLING && !s->m->freeing)
			mcp_srv_start(s);
		return;
	}
	if (s->live)
		box_call_cancel(s->m->c, s->box_id);
}

void mcp_srv_down(struct srv *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->why, sizeof(s->why), fmt, ap);
	va_end(ap);
	bool was_down = s->state == ST_DOWN;
	s->state = ST_DOWN;
	mcp_srv_kill(s);
	end_calls(s, SENT, "failed", s->why);
	mcp_srv_clear_rpcs(s);
	char why[700];
	snprintf(why, sizeof(why), "the MCP server \"%s\" is unavailable: %s", s->cfg.name, s->why);
	end_calls(s, WAITING, "failed", why);
	if (!was_down && !s->m->freeing)
		mcp_note(s->m, "MCP server \"%s\" is unavailable: %s", s->cfg.name, s->why);
	if (s->nmt) {
		s->nmt = 0;
		s->m->gen++;
	}
}

/* Restart on purpose (a stuck or broken server): its calls in flight fail
 * with why; waiting ones wait for it. */
void mcp_srv_restart(struct srv *s, const char *why)
{
	if (s->state == ST_DOWN || s->state == ST_KILLING)
		return;
	/* First: a call the callbacks start now waits for the new process. */
	s->state = ST_KILLING;
	end_calls(s, SENT, "failed", why);
	mcp_srv_clear_rpcs(s);
	mcp_note(s->m, "MCP server \"%s\" is restarted: %s", s->cfg.name, why);
	mcp_srv_kill(s);
}

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

/* In a box with no network (no egress proxy and no default route), a
 * package runner (npx, npm exec) that fetches its package can never reach
 * its registry; npm's own retries would hold the start for over a minute
 * before it says so. Told to fail at once, it says which host it tried
 * (mcp-read.c reads that from its stderr). The server's own variables,
 * exported after, still win. */
static const char no_net_prelude[] =
	"if [ -z \"${HTTPS_PROXY:-}\" ] && ! awk 'NR > 1 && $2 == \"00000000\" { f = 1 } END { exit !f }' "
	"/proc/net/route 2>/dev/null; then export npm_config_fetch_retries=0 npm_config_fetch_timeout=10000; fi; ";

static char *srv_command(const struct mcp_server_cfg *c)
{
	struct buf b;
	buf_init(&b, 256 * 1024);
	int r = buf_append(&b, no_net_prelude, strlen(no_net_prelude));
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
	if (mcp_srv_request(s, RPC_INIT, "initialize", p, 0) < 0)
		mcp_srv_down(s, "initialize could not be sent");
}

void mcp_srv_start(struct srv *s)
{
	struct mcp *m = s->m;
	mcp_srv_clear_rpcs(s);
	s->ready_by = now_ms() + s->cfg.startup_ms;
	if (s->cfg.transport == MCP_HTTP) {
		/* A session of its own through the box's egress proxy: no
		 * process, so nothing of the server runs in the box. */
		if (!m->hub) {
			char why[sizeof(s->why)];
			snprintf(why, sizeof(why), "%s", s->why[0] ? s->why : "the HTTP client could not be started");
			mcp_srv_down(s, "%s", why);
			return;
		}
		if (!s->http && mhttp_new(m->hub, s->cfg.url, s->cfg.headers, &mcp_read_http, s, &s->http) < 0) {
			mcp_srv_down(s, "out of memory");
			return;
		}
		mhttp_reset(s->http);
		s->live = true;
		srv_init(s);
		return;
	}
	_cleanup_free_ char *cmd = srv_command(&s->cfg);
	if (!cmd) {
		mcp_srv_down(s, "its command line is too long");
		return;
	}
	cJSON *args = cJSON_CreateObject();
	cJSON_AddStringToObject(args, "command", cmd);
	char key[128];
	snprintf(key, sizeof(key), "mcp-%s-%d", s->cfg.name, s->restarts);
	const struct box_call_req rq = { .tool = "bash", .args = args, .key = key, .left_ms = -1, .stream = true,
					 .input = true, .limit_ms = MCP_SERVER_LIMIT_MS };
	static const struct box_call_cbs cbs = { .output = mcp_read_out, .result = on_exit_result, .output_err = mcp_read_err };
	struct err e = { 0 };
	int r = box_call_start(m->c, &rq, &cbs, s, &s->box_id, &e);
	cJSON_Delete(args);
	if (r < 0) {
		mcp_srv_down(s, "it could not be started in the box: %s", e.msg);
		return;
	}
	s->live = true;
	srv_init(s);
}

/* The server went away on its own (how: what happened): calls in flight
 * fail; it is started again up to MCP_RESTARTS_MAX times. lost: the box's
 * connection went, and with it every way to the server. */
void mcp_srv_lost(struct srv *s, const char *how, bool lost)
{
	struct mcp *m = s->m;
	if (m->freeing || s->state == ST_DOWN)
		return;
	if (s->state == ST_KILLING) {
		mcp_srv_start(s);
		return;
	}
	char tail[300];
	mcp_srv_err_tail(s, tail, sizeof(tail));
	char why[600];
	snprintf(why, sizeof(why), "the MCP server \"%s\" stopped during the call: %s%s", s->cfg.name, how, tail);
	s->state = ST_OFF;
	end_calls(s, SENT, "failed", why);
	mcp_srv_clear_rpcs(s);
	if (lost) {
		mcp_srv_down(s, "%s", how);
		return;
	}
	if (s->restarts >= MCP_RESTARTS_MAX) {
		mcp_srv_down(s, "%s, and it was started %d times%s", how, s->restarts + 1, tail);
		return;
	}
	s->restarts++;
	mcp_note(m, "MCP server \"%s\": %s%s; starting it again (%d of %d)", s->cfg.name, how, tail, s->restarts,
	     MCP_RESTARTS_MAX);
	mcp_srv_start(s);
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
	mcp_srv_lost(s, how, lost);
}
