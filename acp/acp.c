/* ACP's agent side: the methods (initialize, session/new, session/load,
 * session/prompt, session/set_mode, session/cancel), the sessions of one
 * connection (ward's own requests to the editor: acp/acp-ask.c). A
 * prompt is one run_turn; the turn's loop watches the
 * connection, so a cancel or a permission's answer is read while it
 * runs. One prompt runs at a time: a prompt (or a new session) sent while
 * another runs waits in order, and is answered after it. */
#include "acp/acp-int.h"
#include "base/json.h"
#include "acp/acp-params.h"
#include "base/cleanup.h"
#include "base/timeutil.h"
#include "base/utf8.h"
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

static void json_freep(cJSON **p)
{
	cJSON_Delete(*p);
}

void acp_say(struct acp *a, const char *fmt, ...)
{
	char line[1200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	a->host->log(a->ud, line);
}

static void rpc_said(void *ud, const char *line)
{
	acp_say(ud, "%s", line);
}

static const char *sid(const struct acp_sess *s)
{
	return s->o.s->j.id;
}

static void send_update(void *ud, cJSON *u)
{
	struct acp_sess *s = ud;
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "sessionId", sid(s));
	cJSON_AddItemToObject(p, "update", u);
	rpc_notify(&s->a->rpc, "session/update", p);
}



/* A write's file as the box sees it before the call: its diff's old
 * text (null: there is none; left out when it cannot be read, is past
 * the cap or is not UTF-8 text, and then no diff is shown). */
static void old_text(struct acp_sess *s, const cJSON *call)
{
	const char *name = json_str(call, "name"), *id = json_str(call, "id");
	const char *path = json_str(cJSON_GetObjectItemCaseSensitive(call, "input"), "path");
	if (!name || strcmp(name, "write") || !id || !path || !s->olds)
		return;
	char *d = NULL;
	size_t n = 0;
	int r = s->a->host->file_read(s->a->ud, s->o.h, path, false, ACP_TEXT_MAX, &d, &n);
	if (r == -ENOENT) {
		cJSON_AddNullToObject(s->olds, id);
		return;
	}
	if (r < 0)
		return;
	_cleanup_free_ char *safe = utf8_dup(d, n);
	if (safe && strlen(d) == n && !strcmp(safe, d))
		cJSON_AddStringToObject(s->olds, id, d);
	free(d);
}

static void on_event(void *ud, const struct turn_event *ev)
{
	struct acp_sess *s = ud;
	if (ev->type == EV_TOOL_CALL) {
		cJSON_Delete(s->call);
		s->call = cJSON_Duplicate(ev->call, 1);
		old_text(s, ev->call);
	}
	cJSON *u = acp_update_for(ev, s->o.ws, s->olds);
	if (u)
		send_update(s, u);
}

/* The loop's input: the connection is readable while the turn runs. */
static void on_input(void *ud, struct turn *t)
{
	struct acp_sess *s = ud;
	struct acp *a = s->a;
	a->t = t;
	rpc_read(&a->rpc, acp_message, a);
	if (turn_stopping(t))
		return;
	if (a->rpc.eof)
		turn_interrupt(t, true, "the editor closed ward's stdin");
	else if (s->cancel)
		turn_interrupt(t, false, "cancelled by the editor (session/cancel)");
}

static void sess_close(struct acp *a, struct acp_sess *s)
{
	for (size_t i = 0; i < ACP_SESSIONS_MAX; i++)
		if (a->sess[i] == s)
			a->sess[i] = NULL;
	a->host->close(a->ud, s->o.h);
	free(s);
}

static struct acp_sess *sess_find(struct acp *a, const char *id)
{
	for (size_t i = 0; id && i < ACP_SESSIONS_MAX; i++)
		if (a->sess[i] && !strcmp(sid(a->sess[i]), id))
			return a->sess[i];
	return NULL;
}

static void m_initialize(struct acp *a, const cJSON *id, const cJSON *params)
{
	const cJSON *pv = cJSON_GetObjectItemCaseSensitive(params, "protocolVersion");
	if (!cJSON_IsNumber(pv) || pv->valuedouble != floor(pv->valuedouble) || pv->valuedouble < 0 ||
	    pv->valuedouble > 65535) {
		rpc_error(&a->rpc, id, RPC_PARAMS, "initialize: protocolVersion must be an integer 0..65535 (ward speaks %d)",
			  ACP_PROTOCOL_VERSION);
		return;
	}
	const cJSON *fs = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(params, "clientCapabilities"), "fs");
	a->fs_read = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(fs, "readTextFile"));
	a->initialized = true;
	cJSON *r = cJSON_CreateObject();
	/* The client's version when ward speaks it, else ward's latest: the
	 * client then decides whether it can go on. */
	cJSON_AddNumberToObject(r, "protocolVersion", ACP_PROTOCOL_VERSION);
	cJSON *caps = cJSON_AddObjectToObject(r, "agentCapabilities");
	cJSON_AddBoolToObject(caps, "loadSession", 1);
	cJSON *pc = cJSON_AddObjectToObject(caps, "promptCapabilities");
	cJSON_AddBoolToObject(pc, "image", 0);
	cJSON_AddBoolToObject(pc, "audio", 0);
	cJSON_AddBoolToObject(pc, "embeddedContext", 1);
	cJSON *mc = cJSON_AddObjectToObject(caps, "mcpCapabilities");
	cJSON_AddBoolToObject(mc, "http", 0);	/* stdio servers only: HTTP ones through .mcp.json */
	cJSON_AddBoolToObject(mc, "sse", 0);
	/* The provider's key comes from the environment or ward's config,
	 * before any session: nothing to authenticate over the protocol. */
	cJSON_AddArrayToObject(r, "authMethods");
	cJSON *info = cJSON_AddObjectToObject(r, "agentInfo");
	cJSON_AddStringToObject(info, "name", "ward");
	cJSON_AddStringToObject(info, "title", "ward");
	cJSON_AddStringToObject(info, "version", WARD_VERSION);
	rpc_reply(&a->rpc, id, r);
}

/* ACP's session modes are ward's approval modes. */
static const struct {
	enum gate_mode mode;
	const char *name, *what;
} acp_modes[] = {
	{ GATE_ASK, "Ask", "every change and every command asks first" },
	{ GATE_EDITS, "Edits", "file changes run (in the copy-on-write workspace); commands ask" },
	{ GATE_AUTO, "Auto", "everything runs inside the box without asking" },
};

static cJSON *modes(const struct acp_sess *s)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "currentModeId", gate_mode_name(s->o.gate->mode));
	cJSON *list = cJSON_AddArrayToObject(m, "availableModes");
	for (size_t i = 0; i < ARRAY_SIZE(acp_modes); i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "id", gate_mode_name(acp_modes[i].mode));
		cJSON_AddStringToObject(o, "name", acp_modes[i].name);
		cJSON_AddStringToObject(o, "description", acp_modes[i].what);
		cJSON_AddItemToArray(list, o);
	}
	return m;
}

/* The session's slash commands: the copy-on-write workspace's changes,
 * shown and applied (with --rw there is no copy, and neither); rewind
 * (ward's /rewind: the conversation and the changes back to before a
 * message) and the box's background jobs are the host's (host->command).
 * hint: what follows the name, where anything may. */
static const struct {
	const char *name, *what, *hint;
	bool apply, host, cow;
} acp_commands[] = {
	{ "diff", "Show the session's changes to the directory (its copy-on-write workspace) as a diff", NULL, false, false, true },
	{ "apply", "Apply the session's changes to the directory (refused where a file changed there since)", NULL, true, false,
	  true },
	{ "rewind", "List your messages, or go back to before message N: the conversation and the workspace changes as "
		    "they were then (the box is made again)", "N (a message's number; nothing: list them)", false, true, true },
	{ "jobs", "The box's background jobs (the model's servers, watchers, builds); /jobs kill N ends one",
	  "kill N (nothing: list them)", false, true, false },
};

static void send_commands(struct acp_sess *s)
{
	cJSON *u = cJSON_CreateObject();
	cJSON_AddStringToObject(u, "sessionUpdate", "available_commands_update");
	cJSON *list = cJSON_AddArrayToObject(u, "availableCommands");
	for (size_t i = 0; i < ARRAY_SIZE(acp_commands); i++) {
		if ((s->o.rw && acp_commands[i].cow) || (acp_commands[i].host && !s->a->host->command))
			continue;
		cJSON *c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "name", acp_commands[i].name);
		cJSON_AddStringToObject(c, "description", acp_commands[i].what);
		if (acp_commands[i].hint)
			cJSON_AddStringToObject(cJSON_AddObjectToObject(c, "input"), "hint", acp_commands[i].hint);
		cJSON_AddItemToArray(list, c);
	}
	send_update(s, u);
}

static bool any_open(const struct acp *a)
{
	for (size_t i = 0; i < ACP_SESSIONS_MAX; i++)
		if (a->sess[i])
			return true;
	return false;
}

static struct acp_sess *session_is(struct acp *a, const cJSON *id, const char *method, const cJSON *params)
{
	const char *want = json_str(params, "sessionId");
	struct acp_sess *s = sess_find(a, want);
	if (!s)
		rpc_error(&a->rpc, id, any_open(a) ? RPC_PARAMS : RPC_INVALID, "%s: no session %.100s here%s", method,
			  want ? want : "(none given)", any_open(a) ? "" : ": call session/new first");
	return s;
}

/* session/set_mode: the gate's mode from now on, a running prompt's next
 * calls included. */
static void m_session_set_mode(struct acp *a, const cJSON *id, const cJSON *params)
{
	struct acp_sess *s = session_is(a, id, "session/set_mode", params);
	if (!s)
		return;
	const char *mid = json_str(params, "modeId");
	enum gate_mode m;
	if (!mid || gate_mode_parse(mid, &m) < 0) {
		rpc_error(&a->rpc, id, RPC_PARAMS, "session/set_mode: modeId must be ask, edits or auto");
		return;
	}
	s->o.gate->mode = m;
	acp_say(a, "session %s: approvals: %s", sid(s), gate_mode_name(m));
	rpc_reply(&a->rpc, id, NULL);
}

static bool empty_array(const cJSON *v)
{
	return !v || cJSON_IsNull(v) || (cJSON_IsArray(v) && cJSON_GetArraySize(v) == 0);
}

/* session/new, and session/load (load: the session's ID, its conversation
 * replayed as updates before the answer). */
static void m_session_open(struct acp *a, const cJSON *id, const cJSON *params, const char *load)
{
	const char *method = load ? "session/load" : "session/new";
	const char *cwd = json_str(params, "cwd");
	const cJSON *mcps = cJSON_GetObjectItemCaseSensitive(params, "mcpServers");
	if (!cwd || cwd[0] != '/') {
		rpc_error(&a->rpc, id, RPC_PARAMS, "%s: cwd must be an absolute path", method);
		return;
	}
	if (mcps && !cJSON_IsArray(mcps) && !cJSON_IsNull(mcps)) {
		rpc_error(&a->rpc, id, RPC_PARAMS, "%s: mcpServers must be an array", method);
		return;
	}
	char why[300];
	__attribute__((cleanup(json_freep))) cJSON *servers = empty_array(mcps) ? NULL : acp_params_mcp(mcps, why, sizeof(why));
	if (!empty_array(mcps) && !servers) {
		rpc_error(&a->rpc, id, RPC_PARAMS, "%s: %s", method, why);
		return;
	}
	if (!empty_array(cJSON_GetObjectItemCaseSensitive(params, "additionalDirectories"))) {
		rpc_error(&a->rpc, id, RPC_PARAMS, "%s: a ward session has one workspace: additionalDirectories are "
						   "not supported", method);
		return;
	}
	struct stat st;
	if (strlen(cwd) >= PATH_MAX || stat(cwd, &st) < 0 || !S_ISDIR(st.st_mode)) {
		rpc_error(&a->rpc, id, RPC_PARAMS, "%s: cwd %.300s: not a directory ward can open", method, cwd);
		return;
	}
	if (load && sess_find(a, load)) {
		rpc_error(&a->rpc, id, RPC_INVALID, "session/load: session %.100s is open on this connection already", load);
		return;
	}
	size_t slot = 0;
	while (slot < ACP_SESSIONS_MAX && a->sess[slot])
		slot++;
	if (slot == ACP_SESSIONS_MAX) {
		rpc_error(&a->rpc, id, RPC_INVALID, "%s: %d sessions are open on this connection, ward's most; "
						    "start another ward acp for more", method, ACP_SESSIONS_MAX);
		return;
	}
	struct acp_sess *s = calloc(1, sizeof(*s));
	if (!s) {
		rpc_error(&a->rpc, id, RPC_INTERNAL, "%s: out of memory", method);
		return;
	}
	s->a = a;
	struct err e = { 0 };
	const struct acp_open o = { .cwd = cwd, .load = load, .mcp = servers };
	if (a->host->open(a->ud, &o, &s->o, &e) < 0) {
		free(s);
		if (e.msg[0])
			rpc_error(&a->rpc, id, RPC_PARAMS, "%s: %s", method, e.msg);
		else
			rpc_error(&a->rpc, id, RPC_INTERNAL, "%s: the session could not be %s (ward's log says why)", method,
				  load ? "loaded" : "started");
		return;
	}
	a->sess[slot] = s;
	s->o.gate->ask = acp_ask_permission;
	s->o.gate->ask_ud = s;
	if (load)
		acp_update_replay(s->o.s->messages, s->o.ws, send_update, s);
	cJSON *res = cJSON_CreateObject();
	if (!load)
		cJSON_AddStringToObject(res, "sessionId", sid(s));
	cJSON_AddItemToObject(res, "modes", modes(s));
	rpc_reply(&a->rpc, id, res);
	send_commands(s);
}

/* A slash command's answer, as the agent's message. */
static void run_command(struct acp *a, struct acp_sess *s, const cJSON *id, int k, const char *arg)
{
	struct err e = { 0 };
	_cleanup_free_ char *text = NULL;
	const char *stop = "end_turn";
	bool apply = acp_commands[k].apply;
	if (acp_commands[k].host) {
		if (a->host->command(a->ud, s->o.h, acp_commands[k].name, arg, &text, &e) < 0) {
			free(text);
			text = NULL;
			rpc_error(&a->rpc, id, RPC_INTERNAL, "/%s: %s", acp_commands[k].name,
				  e.msg[0] ? e.msg : "failed (ward's log says why)");
			return;
		}
	} else if (s->o.rw) {
		text = strdup("This session's box works on the directory itself (--rw): there is no copy to diff or apply.");
	} else if (a->host->changes(a->ud, s->o.h, apply, &text, &e) < 0) {
		free(text);
		text = NULL;
		rpc_error(&a->rpc, id, RPC_INTERNAL, "/%s: %s", apply ? "apply" : "diff", e.msg[0] ? e.msg : "failed (ward's log says why)");
		return;
	}
	if (!apply && !acp_commands[k].host && text && *text) {
		size_t n = strlen(text) + 32;
		char *md = malloc(n);
		if (md) {
			snprintf(md, n, "```diff\n%s%s```\n", text, text[strlen(text) - 1] == '\n' ? "" : "\n");
			free(text);
			text = md;
		}
	}
	cJSON *u = cJSON_CreateObject();
	cJSON_AddStringToObject(u, "sessionUpdate", "agent_message_chunk");
	cJSON *c = cJSON_AddObjectToObject(u, "content");
	cJSON_AddStringToObject(c, "type", "text");
	cJSON_AddStringToObject(c, "text", text && *text ? text : "No changes to the directory.");
	send_update(s, u);
	cJSON *res = cJSON_CreateObject();
	cJSON_AddStringToObject(res, "stopReason", stop);
	rpc_reply(&a->rpc, id, res);
}

/* The prompt's text as a slash command of the session's: its index (and
 * *arg, what follows its name, trimmed, for one that takes any), or -1. */
static int command_of(const struct acp_sess *s, char *text, const char **arg)
{
	text += strspn(text, " \t\r\n");
	if (*text != '/')
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(acp_commands); i++) {
		size_t l = strlen(acp_commands[i].name);
		if (strncmp(text + 1, acp_commands[i].name, l) || (text[1 + l] && !strchr(" \t\r\n", text[1 + l])))
			continue;
		if ((s->o.rw && acp_commands[i].cow) || (acp_commands[i].host && !s->a->host->command))
			continue;
		char *rest = text + 1 + l;
		rest += strspn(rest, " \t\r\n");
		size_t n = strlen(rest);
		while (n && strchr(" \t\r\n", rest[n - 1]))
			rest[--n] = 0;
		if (*rest && !acp_commands[i].hint)
			continue;	/* /diff something: not the command, a prompt */
		*arg = rest;
		return (int)i;
	}
	return -1;
}

static void m_session_prompt(struct acp *a, const cJSON *id, const cJSON *params)
{
	struct acp_sess *s = session_is(a, id, "session/prompt", params);
	if (!s)
		return;
	struct buf b;
	buf_init(&b, ACP_PROMPT_MAX);
	char why[300];
	if (acp_params_prompt(cJSON_GetObjectItemCaseSensitive(params, "prompt"), &b, why, sizeof(why)) < 0) {
		buf_free(&b);
		rpc_error(&a->rpc, id, RPC_PARAMS, "session/prompt: %s", why);
		return;
	}
	const char *arg = "";
	int cmd = b.data ? command_of(s, b.data, &arg) : -1;
	if (cmd >= 0) {
		run_command(a, s, id, cmd, arg);
		buf_free(&b);
		return;
	}
	struct turn_cfg cfg = { 0 };
	struct err e = { 0 };
	if (a->host->prompt_begin(a->ud, s->o.h, &cfg, &e) < 0) {
		buf_free(&b);
		rpc_error(&a->rpc, id, RPC_INTERNAL, "session/prompt: %s", e.msg[0] ? e.msg : "no box could be made (ward's log says why)");
		return;
	}
	if (cfg.nsinks < TURN_SINKS_MAX)
		cfg.sinks[cfg.nsinks++] = (struct turn_sink){ on_event, s };
	cfg.input = (struct turn_input){ .fd = a->rpc.in, .on_ready = on_input, .ud = s };
	cfg.answer = (struct turn_answer){ acp_ask_buffer, s };
	a->deadline = cfg.b.deadline_ms;
	a->busy = s;
	a->t = NULL;
	s->cancel = false;
	s->olds = cJSON_CreateObject();
	struct turn_stop stop = { 0 };
	int r = run_turn(&cfg, s->o.s, b.data, &stop, &e);
	buf_free(&b);
	a->busy = NULL;
	a->t = NULL;
	a->deadline = 0;
	cJSON_Delete(s->call);
	s->call = NULL;
	cJSON_Delete(s->olds);
	s->olds = NULL;
	cJSON_Delete(stop.output);
	a->host->prompt_end(a->ud, s->o.h, r < 0 ? NULL : &stop);
	if (r < 0) {
		rpc_error(&a->rpc, id, RPC_INTERNAL, "session/prompt: %s", e.msg);
		return;
	}
	acp_say(a, "session %s: %s: %s (%d rounds, %d calls)", sid(s), turn_stop_name(stop.kind), stop.why, stop.rounds,
	    stop.calls);
	if (stop.signal)
		a->rpc.eof = true;
	const char *reason = acp_stop_reason(stop.kind, s->cancel);
	if (!reason) {
		rpc_error(&a->rpc, id, RPC_INTERNAL, "ward stopped: %s: %s", turn_stop_name(stop.kind), stop.why);
		return;
	}
	cJSON *res = cJSON_CreateObject();
	cJSON_AddStringToObject(res, "stopReason", reason);
	rpc_reply(&a->rpc, id, res);
}

static void n_session_cancel(struct acp *a, const cJSON *params)
{
	const char *want = json_str(params, "sessionId");
	struct acp_sess *s = sess_find(a, want);
	if (!s) {
		acp_say(a, "session/cancel for no session of this connection's: ignored");
		return;
	}
	if (a->busy == s) {
		/* In a wait for the editor the wait ends; else the loop's
		 * callback interrupts the turn when it has read this. */
		s->cancel = true;
		return;
	}
	/* A prompt of its still waiting its turn: answered cancelled. */
	cJSON *q = a->queue ? a->queue->child : NULL;
	while (q) {
		cJSON *next = q->next;
		const cJSON *qp = cJSON_GetObjectItemCaseSensitive(q, "params");
		const char *qm = json_str(q, "method"), *qs = json_str(qp, "sessionId");
		if (qm && !strcmp(qm, "session/prompt") && qs && !strcmp(qs, want)) {
			cJSON *res = cJSON_CreateObject();
			cJSON_AddStringToObject(res, "stopReason", "cancelled");
			rpc_reply(&a->rpc, cJSON_GetObjectItemCaseSensitive(q, "id"), res);
			cJSON_Delete(cJSON_DetachItemViaPointer(a->queue, q));
		}
		q = next;
	}
}

static bool waits_its_turn(const char *name)
{
	return !strcmp(name, "session/new") || !strcmp(name, "session/load") || !strcmp(name, "session/prompt");
}

static void request(struct acp *a, const cJSON *id, const char *name, const cJSON *params)
{
	if (!strcmp(name, "initialize")) {
		m_initialize(a, id, params);
		return;
	}
	if (!strcmp(name, "session/set_mode")) {
		m_session_set_mode(a, id, params);
		return;
	}
	if (!waits_its_turn(name)) {
		rpc_error(&a->rpc, id, RPC_NO_METHOD,
			  "no method %.100s in ward acp (it has initialize, session/new, session/load, session/prompt, "
			  "session/set_mode and session/cancel)", name);
		return;
	}
	if (!a->initialized) {
		rpc_error(&a->rpc, id, RPC_INVALID, "%s: call initialize first", name);
		return;
	}
	if (!strcmp(name, "session/new")) {
		m_session_open(a, id, params, NULL);
	} else if (!strcmp(name, "session/load")) {
		const char *want = json_str(params, "sessionId");
		if (!want || !*want)
			rpc_error(&a->rpc, id, RPC_PARAMS, "session/load: give the sessionId");
		else
			m_session_open(a, id, params, want);
	} else {
		m_session_prompt(a, id, params);
	}
}

void acp_message(void *ud, const struct rpc_msg *m)
{
	struct acp *a = ud;
	if (!m->method) {
		if (!a->waiting || !rpc_is_response(m, a->wait_id)) {
			acp_say(a, "a response to no request of ward's: ignored");
			return;
		}
		cJSON_Delete(a->answer);
		a->answer = cJSON_Duplicate(m->m, 1);
		a->waiting = false;
		return;
	}
	if (!m->id) {
		if (!strcmp(m->method, "session/cancel"))
			n_session_cancel(a, m->params);
		else
			acp_say(a, "notification %.100s: ward has none by that name: ignored", m->method);
		return;
	}
	if (a->busy && waits_its_turn(m->method)) {
		/* One turn runs at a time: this one after it, in order. */
		if (cJSON_GetArraySize(a->queue) >= ACP_QUEUE_MAX) {
			rpc_error(&a->rpc, m->id, RPC_INVALID, "%s: %d requests wait for the running prompt already; "
							       "send it when one is answered", m->method, ACP_QUEUE_MAX);
			return;
		}
		cJSON_AddItemToArray(a->queue, cJSON_Duplicate(m->m, 1));
		return;
	}
	request(a, m->id, m->method, m->params);
	/* What waited for the prompt, now (each may be a prompt itself). */
	while (!a->busy && !a->rpc.eof && a->queue->child) {
		__attribute__((cleanup(json_freep))) cJSON *q = cJSON_DetachItemViaPointer(a->queue, a->queue->child);
		request(a, cJSON_GetObjectItemCaseSensitive(q, "id"), json_str(q, "method"),
			cJSON_GetObjectItemCaseSensitive(q, "params"));
	}
}

struct acp *acp_new(const struct acp_host *host, void *ud, int in, int out)
{
	struct acp *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->host = host;
	a->ud = ud;
	a->rpc.log = rpc_said;
	a->rpc.log_ud = a;
	rpc_init(&a->rpc, in, out, ACP_LINE_MAX);
	a->queue = cJSON_CreateArray();
	return a;
}

int acp_serve(struct acp *a, int sigfd)
{
	int sig = 0;
	while (!a->rpc.eof) {
		struct pollfd pf[2] = { { .fd = a->rpc.in, .events = POLLIN }, { .fd = sigfd, .events = POLLIN } };
		if (poll(pf, sigfd >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (sigfd >= 0 && (pf[1].revents & POLLIN)) {
			struct signalfd_siginfo si;
			if (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				sig = (int)si.ssi_signo;
			break;
		}
		if (pf[0].revents)
			rpc_read(&a->rpc, acp_message, a);
	}
	for (size_t i = 0; i < ACP_SESSIONS_MAX; i++)
		if (a->sess[i])
			sess_close(a, a->sess[i]);
	return sig;
}

void acp_free(struct acp *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < ACP_SESSIONS_MAX; i++)
		if (a->sess[i])
			sess_close(a, a->sess[i]);
	cJSON_Delete(a->answer);
	cJSON_Delete(a->queue);
	rpc_free(&a->rpc);
	free(a);
}
