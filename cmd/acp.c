/* ward acp: ward as an agent of the Agent Client Protocol (version 1), for
 * editors. JSON-RPC 2.0, one message a line, on stdin and stdout; stdout
 * carries nothing else (fd 1 is made stderr's copy at start, so a stray
 * line of any part of ward goes to the log, never into the protocol).
 *
 * The session is ward's own (a journal, its box "s-ID", copy-on-write
 * changes kept after it); a prompt is one run_turn over it, as the
 * terminal session's message is. The turn's loop watches stdin (a
 * session/cancel is turn_interrupt); the gate's ask is a
 * session/request_permission, answered while the loop waits. */
#include "cmd/acp.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/jsonprint.h"
#include "base/jsonstrict.h"
#include "base/timeutil.h"
#include "base/utf8.h"
#include "cmd/cmd.h"
#include "cmd/hook.h"
#include "cmd/mcpconf.h"
#include "cmd/rewind.h"
#include "cmd/session.h"
#include "config.h"
#include "mcp/mcp.h"
#include "sandbox/box.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

/* One message's ceiling: a prompt with files embedded fits; past it the
 * line is refused (an error with id null) and skipped to its end. */
#define ACP_LINE_MAX (16u << 20)
/* A write's old text shown in its diff, at most. */
#define ACP_OLD_MAX (1u << 20)
/* A prompt's text, as ward run's task. */
#define ACP_PROMPT_MAX (1u << 20)

/* JSON-RPC's error codes. */
enum {
	RPC_PARSE = -32700,
	RPC_INVALID = -32600,
	RPC_NO_METHOD = -32601,
	RPC_PARAMS = -32602,
	RPC_INTERNAL = -32603,
};

static const struct option acp_opts[] = {
	RUN_FLAG_OPTIONS,
	MCPCONF_OPTIONS,
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

static const char acp_help[] =
	"usage: ward acp [FLAGS]   (started by an editor: Zed, JetBrains, any ACP client)\n"
	"ward as an Agent Client Protocol agent on stdin/stdout: a session/new makes a session\n"
	"and its box over the editor's directory (copy-on-write), a prompt is a turn in it, the\n"
	"approvals are the editor's dialogs. Logs go to stderr.\n"
	"  --model M, --provider P, --base-url URL   as for ward run\n"
	"  --approve MODE     ask | edits | auto (default edits: file changes go to the\n"
	"                     copy-on-write workspace; commands are asked)\n"
	"  --allow RULE, --deny RULE                 as for ward run\n"
	"  --deadline DUR     each prompt's time limit\n"
	"  --max-rounds N, --max-calls N, --max-tokens N, --max-cost USD   each prompt's bounds\n"
	"  --image REF, --rw, --disk SIZE, --allow-host PAT, --net MODE      as for ward run\n"
	MCPCONF_HELP
	"Settings also come from config files and the environment: see `ward config --help`.\n"
	"The changes a session made stay in its layers: `ward diff` and `ward apply` show and apply them.\n";

struct acp {
	int out;		/* the protocol's stdout */
	struct buf in;		/* stdin's bytes not yet a whole line */
	bool skipping;		/* in a line past ACP_LINE_MAX */
	bool eof;		/* the editor is gone (stdin closed, stdout broken) or a signal came */
	bool initialized;
	struct run_flags f;
	struct run_flags f0;	/* as the command line and the settings made them: each session starts from these */
	struct hooks *hooks;
	struct mcpconf mc;
	struct mcp *mcp;
	bool open;		/* a session is */
	struct session s;
	char cwd[PATH_MAX], ws[PATH_MAX], box[BOX_NAME_MAX + 1];
	/* While a prompt runs. */
	bool busy, cancel;
	struct turn *t;		/* from the loop's input callback; NULL before one */
	cJSON *call;		/* the call the gate is about to ask about (its EV_TOOL_CALL) */
	cJSON *olds;		/* each write's file before it, by call id (acp_update_for) */
	int64_t deadline;
	/* ward's own requests (session/request_permission). */
	int64_t next_id;
	bool waiting;
	int64_t wait_id;
	cJSON *answer;
};

static void json_freep(cJSON **p)
{
	cJSON_Delete(*p);
}

static void acp_send(struct acp *a, cJSON *msg)
{
	_cleanup_free_ char *s = msg ? jsonprint_text(msg) : NULL;
	cJSON_Delete(msg);
	if (!s || a->out < 0)
		return;
	if (fdio_write_full(a->out, s, strlen(s)) < 0 || fdio_write_full(a->out, "\n", 1) < 0) {
		fprintf(stderr, "ward acp: the editor no longer reads ward's stdout: %s\n", strerror(errno));
		close(a->out);
		a->out = -1;
		a->eof = true;
	}
}

static cJSON *rpc(const cJSON *id)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "jsonrpc", "2.0");
	if (id)
		cJSON_AddItemToObject(m, "id", cJSON_Duplicate(id, 1));
	return m;
}

static void reply(struct acp *a, const cJSON *id, cJSON *result)
{
	cJSON *m = rpc(id);
	cJSON_AddItemToObject(m, "result", result);
	acp_send(a, m);
}

__attribute__((format(printf, 4, 5))) static void reply_error(struct acp *a, const cJSON *id, int code,
							      const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cJSON *m = rpc(NULL);
	cJSON_AddItemToObject(m, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
	cJSON *e = cJSON_AddObjectToObject(m, "error");
	cJSON_AddNumberToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", msg);
	acp_send(a, m);
	fprintf(stderr, "ward acp: answered an error: %s\n", msg);
}

static void notify(struct acp *a, const char *method, cJSON *params)
{
	cJSON *m = rpc(NULL);
	cJSON_AddStringToObject(m, "method", method);
	cJSON_AddItemToObject(m, "params", params);
	acp_send(a, m);
}

/* A write's file as the box sees it before the call: its diff's old
 * text (null: there is none; left out when it cannot be read, is past
 * the cap or is not UTF-8 text, and then no diff is shown). */
static void old_text(struct acp *a, const cJSON *call)
{
	const char *name = json_str(call, "name"), *id = json_str(call, "id");
	const char *path = json_str(cJSON_GetObjectItemCaseSensitive(call, "input"), "path");
	if (!name || strcmp(name, "write") || !id || !path || !a->olds)
		return;
	struct session_ws sw = { .session = a->s.j.id, .workspace = a->ws };
	char *d = NULL;
	size_t n = 0;
	int r = session_file_read(&sw, a->f.rw, path, ACP_OLD_MAX, &d, &n);
	if (r == -ENOENT) {
		cJSON_AddNullToObject(a->olds, id);
		return;
	}
	if (r < 0)
		return;
	_cleanup_free_ char *safe = utf8_dup(d, n);
	if (safe && strlen(d) == n && !strcmp(safe, d))
		cJSON_AddStringToObject(a->olds, id, d);
	free(d);
}

static void on_event(void *ud, const struct turn_event *ev)
{
	struct acp *a = ud;
	if (ev->type == EV_TOOL_CALL) {
		cJSON_Delete(a->call);
		a->call = cJSON_Duplicate(ev->call, 1);
		old_text(a, ev->call);
	}
	cJSON *u = acp_update_for(ev, a->ws, a->olds);
	if (!u)
		return;
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "sessionId", a->s.j.id);
	cJSON_AddItemToObject(p, "update", u);
	notify(a, "session/update", p);
}

static void acp_read(struct acp *a);

/* The gate asks: a session/request_permission, and the answer awaited
 * (stdin read meanwhile: a session/cancel ends the wait). */
static int acp_ask(void *ud, const char *tool, const cJSON *input, char *reason, size_t cap)
{
	struct acp *a = ud;
	if (a->eof || a->cancel) {
		snprintf(reason, cap, "the editor cancelled the prompt");
		return 'q';
	}
	const char *id = json_str(a->call, "id");
	cJSON *call = cJSON_CreateObject();
	cJSON_AddStringToObject(call, "id", id ? id : "");
	cJSON_AddStringToObject(call, "name", tool);
	cJSON_AddItemToObject(call, "input", cJSON_Duplicate(input, 1));
	cJSON *tc = cJSON_CreateObject();
	acp_update_call(tc, call, a->ws, "pending", a->olds);
	cJSON_Delete(call);
	char rules[GATE_ALWAYS_MAX][GATE_SPEC_MAX], scope[200];
	int nrules = gate_always(tool, input, rules, scope, sizeof(scope));
	cJSON *opts = cJSON_CreateArray();
	static const struct {
		const char *id, *name;
	} choice[] = { { "allow_once", "Allow once" }, { "allow_always", "Allow always" }, { "reject_once", "Reject" } };
	for (size_t i = 0; i < ARRAY_SIZE(choice); i++) {
		if (i == 1 && !nrules)
			continue;	/* no rule fits the call: always would be once */
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "optionId", choice[i].id);
		char name[300];
		snprintf(name, sizeof(name), "%s%s%s", choice[i].name, i == 1 ? ": " : "", i == 1 ? scope : "");
		cJSON_AddStringToObject(o, "name", name);
		cJSON_AddStringToObject(o, "kind", choice[i].id);
		cJSON_AddItemToArray(opts, o);
	}
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "sessionId", a->s.j.id);
	cJSON_AddItemToObject(p, "toolCall", tc);
	cJSON_AddItemToObject(p, "options", opts);
	cJSON *m = rpc(NULL);
	a->wait_id = a->next_id++;
	cJSON_AddNumberToObject(m, "id", (double)a->wait_id);
	cJSON_AddStringToObject(m, "method", "session/request_permission");
	cJSON_AddItemToObject(m, "params", p);
	acp_send(a, m);
	a->waiting = true;
	while (a->waiting && !a->eof && !a->cancel) {
		int64_t left = a->deadline ? a->deadline - now_ms() : -1;
		if (a->deadline && left <= 0)
			break;
		struct pollfd pf = { .fd = 0, .events = POLLIN };
		int k = poll(&pf, 1, left < 0 ? -1 : (int)MIN(left, INT32_MAX));
		if (k < 0 && errno != EINTR)
			break;
		if (k > 0)
			acp_read(a);
	}
	__attribute__((cleanup(json_freep))) cJSON *ans = a->answer;
	a->answer = NULL;
	bool answered = !a->waiting;
	a->waiting = false;
	if (a->eof || a->cancel) {
		snprintf(reason, cap, "the editor cancelled the prompt");
		return 'q';
	}
	if (!answered) {
		snprintf(reason, cap, "no answer came before the deadline");
		return 'n';
	}
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(ans, "error");
	if (err) {
		const char *em = json_str(err, "message");
		snprintf(reason, cap, "the editor could not ask: %.300s", em ? em : "an error");
		return 'n';
	}
	const cJSON *oc = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ans, "result"), "outcome");
	const char *kind = json_str(oc, "outcome"), *opt = json_str(oc, "optionId");
	if (kind && !strcmp(kind, "cancelled")) {
		a->cancel = true;
		snprintf(reason, cap, "the editor cancelled the prompt");
		return 'q';
	}
	if (kind && !strcmp(kind, "selected") && opt) {
		if (!strcmp(opt, "allow_once"))
			return 'y';
		if (!strcmp(opt, "allow_always") && nrules)
			return 'a';
		if (!strcmp(opt, "reject_once")) {
			snprintf(reason, cap, "the person refused it (in the editor)");
			return 'n';
		}
	}
	fprintf(stderr, "ward acp: the answer to a permission request named none of its options: refused\n");
	snprintf(reason, cap, "the editor's answer named none of the options: refused");
	return 'n';
}

/* The loop's input: stdin is readable while the turn runs. */
static void on_input(void *ud, struct turn *t)
{
	struct acp *a = ud;
	a->t = t;
	acp_read(a);
	if (turn_stopping(t))
		return;
	if (a->eof)
		turn_interrupt(t, true, "the editor closed ward's stdin");
	else if (a->cancel)
		turn_interrupt(t, false, "cancelled by the editor (session/cancel)");
}

static void session_close(struct acp *a)
{
	if (!a->open)
		return;
	mcp_free(a->mcp);
	a->mcp = NULL;
	if (a->s.box && a->box[0]) {
		session_box_end(&a->s, a->box, false);
		session_box_settle(a->box);
	}
	a->s.box = NULL;
	a->box[0] = 0;
	session_end(&a->s);
	a->open = false;
}

/* The session's box (again, after a box error): 0, or -1 after ward's
 * lines on stderr. */
static int box_up(struct acp *a)
{
	if (a->s.box)
		return 0;
	bool kept;
	if (session_box(&a->s, &a->f, a->ws, true, a->box, sizeof(a->box), &kept) != 0) {
		a->box[0] = 0;
		return -1;
	}
	return mcpconf_start(&a->mc, a->s.box, &a->s.j, &a->mcp) ? -1 : 0;
}

static void m_initialize(struct acp *a, const cJSON *id, const cJSON *params)
{
	const cJSON *pv = cJSON_GetObjectItemCaseSensitive(params, "protocolVersion");
	if (!cJSON_IsNumber(pv) || pv->valuedouble != floor(pv->valuedouble) || pv->valuedouble < 0 ||
	    pv->valuedouble > 65535) {
		reply_error(a, id, RPC_PARAMS, "initialize: protocolVersion must be an integer 0..65535 (ward speaks %d)",
			    ACP_PROTOCOL_VERSION);
		return;
	}
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
	reply(a, id, r);
}

static bool empty_array(const cJSON *v)
{
	return !v || cJSON_IsNull(v) || (cJSON_IsArray(v) && cJSON_GetArraySize(v) == 0);
}

/* session/new's mcpServers (ACP's stdio servers: name, command, args,
 * env as [{name, value}]) in .mcp.json's shape, for mcp_config_add: they
 * start in the box as the project's do. NULL and why when one is not
 * taken. ward's config reads ${VAR} in these values from ward's
 * environment; the editor's are literal, so a value holding "${" is
 * refused rather than read another way. */
static bool mcp_literal(const char *v)
{
	return v && !strstr(v, "${");
}

static cJSON *mcp_servers(const cJSON *list, char *why, size_t cap)
{
	cJSON *out = cJSON_CreateObject();
	int i = 0;
	const cJSON *m;
	cJSON_ArrayForEach(m, list) {
		const char *name = json_str(m, "name"), *cmd = json_str(m, "command");
		const cJSON *args = cJSON_GetObjectItemCaseSensitive(m, "args");
		const cJSON *env = cJSON_GetObjectItemCaseSensitive(m, "env");
		if (cJSON_GetObjectItemCaseSensitive(m, "type") || !cmd) {
			snprintf(why, cap, "mcpServers[%d]: ward acp takes stdio servers ({name, command, args, env}); "
					   "give HTTP ones in .mcp.json", i);
			goto fail;
		}
		if (!name || !*name || cJSON_GetObjectItemCaseSensitive(out, name)) {
			snprintf(why, cap, "mcpServers[%d]: a server needs a name of its own", i);
			goto fail;
		}
		if ((args && !cJSON_IsArray(args)) || (env && !cJSON_IsArray(env)) || !mcp_literal(cmd)) {
			snprintf(why, cap, "mcpServers[%d] (%.40s): command a string, args an array of strings, env an array "
					   "of {name, value}, with no ${", i, name);
			goto fail;
		}
		cJSON *srv = cJSON_AddObjectToObject(out, name);
		cJSON_AddStringToObject(srv, "command", cmd);
		cJSON *ja = cJSON_AddArrayToObject(srv, "args");
		const cJSON *x;
		cJSON_ArrayForEach(x, args) {
			if (!cJSON_IsString(x) || !mcp_literal(x->valuestring)) {
				snprintf(why, cap, "mcpServers[%d] (%.40s): each arg a string, with no ${", i, name);
				goto fail;
			}
			cJSON_AddItemToArray(ja, cJSON_CreateString(x->valuestring));
		}
		cJSON *je = cJSON_AddObjectToObject(srv, "env");
		cJSON_ArrayForEach(x, env) {
			const char *k = json_str(x, "name"), *v = json_str(x, "value");
			if (!k || !*k || !mcp_literal(v) || cJSON_GetObjectItemCaseSensitive(je, k)) {
				snprintf(why, cap, "mcpServers[%d] (%.40s): each env entry {name, value}, names once, values "
						   "with no ${", i, name);
				goto fail;
			}
			cJSON_AddStringToObject(je, k, v);
		}
		i++;
	}
	return out;
fail:
	cJSON_Delete(out);
	return NULL;
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

static cJSON *modes(struct acp *a)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "currentModeId", gate_mode_name(a->f.gate.mode));
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

static bool session_is(struct acp *a, const cJSON *id, const char *method, const cJSON *params);

/* session/set_mode: the gate's mode from now on, a running prompt's next
 * calls included. */
static void m_session_set_mode(struct acp *a, const cJSON *id, const cJSON *params)
{
	if (!session_is(a, id, "session/set_mode", params))
		return;
	const char *mid = json_str(params, "modeId");
	enum gate_mode m;
	if (!mid || gate_mode_parse(mid, &m) < 0) {
		reply_error(a, id, RPC_PARAMS, "session/set_mode: modeId must be ask, edits or auto");
		return;
	}
	a->f.gate.mode = m;
	fprintf(stderr, "ward acp: approvals: %s\n", gate_mode_name(m));
	reply(a, id, cJSON_CreateObject());
}

static void send_update(void *ud, cJSON *u)
{
	struct acp *a = ud;
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "sessionId", a->s.j.id);
	cJSON_AddItemToObject(p, "update", u);
	notify(a, "session/update", p);
}

/* session/new, and session/load (load: the session's ID, its conversation
 * replayed as updates before the answer). */
static void m_session_open(struct acp *a, const cJSON *id, const cJSON *params, const char *load)
{
	const char *method = load ? "session/load" : "session/new";
	const char *cwd = json_str(params, "cwd");
	const cJSON *mcps = cJSON_GetObjectItemCaseSensitive(params, "mcpServers");
	if (!cwd || cwd[0] != '/') {
		reply_error(a, id, RPC_PARAMS, "%s: cwd must be an absolute path", method);
		return;
	}
	if (mcps && !cJSON_IsArray(mcps) && !cJSON_IsNull(mcps)) {
		reply_error(a, id, RPC_PARAMS, "%s: mcpServers must be an array", method);
		return;
	}
	char why[300];
	__attribute__((cleanup(json_freep))) cJSON *servers = empty_array(mcps) ? NULL : mcp_servers(mcps, why, sizeof(why));
	if (!empty_array(mcps) && !servers) {
		reply_error(a, id, RPC_PARAMS, "%s: %s", method, why);
		return;
	}
	if (!empty_array(cJSON_GetObjectItemCaseSensitive(params, "additionalDirectories"))) {
		reply_error(a, id, RPC_PARAMS, "%s: a ward session has one workspace: additionalDirectories are "
					       "not supported", method);
		return;
	}
	char real[PATH_MAX];
	struct stat st;
	if (strlen(cwd) >= sizeof(a->cwd) || stat(cwd, &st) < 0 || !S_ISDIR(st.st_mode) || !realpath(cwd, real)) {
		reply_error(a, id, RPC_PARAMS, "%s: cwd %.300s: not a directory ward can open", method, cwd);
		return;
	}
	/* One session at a time: a new one ends the one before (its changes
	 * stay in its layers, for ward diff and ward apply). */
	session_close(a);
	a->f = a->f0;
	snprintf(a->cwd, sizeof(a->cwd), "%s", cwd);
	a->f.workspace = a->cwd;
	a->f.resume = load;
	int r = session_start(&a->f, &a->s, a->ws);
	a->f.resume = NULL;	/* (params' string) */
	if (r != 0) {
		reply_error(a, id, RPC_INTERNAL, "%s: the session could not be %s (ward's log says why)", method,
			    load ? "loaded" : "started");
		return;
	}
	a->open = true;
	if (load && strcmp(a->ws, real)) {
		reply_error(a, id, RPC_PARAMS, "session/load: session %s works on %.300s, not on %.300s", load,
			    a->ws[0] ? a->ws : "no directory", real);
		session_close(a);
		return;
	}
	/* The servers of the user's config, the project's .mcp.json (trusted
	 * by --trust-project-mcp or at a terminal before), --mcp-config, then
	 * the editor's. */
	struct err e = { 0 };
	if (mcpconf_load(&a->mc, a->ws, NULL, NULL) != 0 ||
	    (servers && mcp_config_add(&a->mc.cfg, servers, method, &e) < 0)) {
		reply_error(a, id, e.msg[0] ? RPC_PARAMS : RPC_INTERNAL, "%s: MCP servers: %s", method,
			    e.msg[0] ? e.msg : "the configuration could not be read (ward's log says why)");
		session_close(a);
		return;
	}
	turn_session_start(&a->f.cfg, &a->s, load ? "resume" : "startup");
	if (box_up(a) < 0) {
		reply_error(a, id, RPC_INTERNAL, "%s: no box could be made for %.300s (ward's log says why)", method, cwd);
		session_close(a);
		return;
	}
	fprintf(stderr, "ward acp: session %s, box %s, workspace %s\n", a->s.j.id, a->box, a->ws);
	if (load)
		acp_update_replay(a->s.messages, a->ws, send_update, a);
	cJSON *res = cJSON_CreateObject();
	if (!load)
		cJSON_AddStringToObject(res, "sessionId", a->s.j.id);
	cJSON_AddItemToObject(res, "modes", modes(a));
	reply(a, id, res);
}

/* A prompt's content blocks as the instruction's text: text, an
 * embedded resource's text (the editor's buffer), a link's URI. 0, or -1
 * with why. */
static int prompt_text(const cJSON *prompt, struct buf *b, char *why, size_t cap)
{
	if (!cJSON_IsArray(prompt) || !cJSON_GetArraySize(prompt)) {
		snprintf(why, cap, "prompt must be a non-empty array of content blocks");
		return -1;
	}
	int i = 0;
	const cJSON *c;
	cJSON_ArrayForEach(c, prompt) {
		const char *type = json_str(c, "type");
		int r = -1;
		if (type && !strcmp(type, "text") && json_str(c, "text")) {
			r = buf_printf(b, "%s%s", b->len ? "\n\n" : "", json_str(c, "text"));
		} else if (type && !strcmp(type, "resource")) {
			const cJSON *res = cJSON_GetObjectItemCaseSensitive(c, "resource");
			const char *uri = json_str(res, "uri"), *text = json_str(res, "text");
			if (!uri || !text) {
				snprintf(why, cap, "prompt[%d]: a resource needs uri and text (ward takes no blobs)", i);
				return -1;
			}
			r = buf_printf(b, "%s<file uri=\"%s\">\n%s\n</file>", b->len ? "\n\n" : "", uri, text);
		} else if (type && !strcmp(type, "resource_link") && json_str(c, "uri")) {
			r = buf_printf(b, "%s[%s]", b->len ? "\n\n" : "", json_str(c, "uri"));
		} else {
			snprintf(why, cap, "prompt[%d]: content of type %.40s is not taken (ward takes text, resource and "
					   "resource_link, each with its fields)", i, type ? type : "(none)");
			return -1;
		}
		if (r < 0) {
			snprintf(why, cap, "the prompt is longer than %u KiB", ACP_PROMPT_MAX >> 10);
			return -1;
		}
		i++;
	}
	if (buf_cstr(b) < 0 || !b->data[strspn(b->data, " \t\r\n")]) {
		snprintf(why, cap, "the prompt is empty");
		return -1;
	}
	return 0;
}

static bool session_is(struct acp *a, const cJSON *id, const char *method, const cJSON *params)
{
	const char *sid = json_str(params, "sessionId");
	if (!a->open) {
		reply_error(a, id, RPC_INVALID, "%s: no session: call session/new first", method);
		return false;
	}
	if (!sid || strcmp(sid, a->s.j.id)) {
		reply_error(a, id, RPC_PARAMS, "%s: no session %.100s here (this ward's is %s)", method, sid ? sid : "(none)",
			    a->s.j.id);
		return false;
	}
	return true;
}

static void m_session_prompt(struct acp *a, const cJSON *id, const cJSON *params)
{
	if (!session_is(a, id, "session/prompt", params))
		return;
	struct buf b;
	buf_init(&b, ACP_PROMPT_MAX);
	char why[300];
	if (prompt_text(cJSON_GetObjectItemCaseSensitive(params, "prompt"), &b, why, sizeof(why)) < 0) {
		buf_free(&b);
		reply_error(a, id, RPC_PARAMS, "session/prompt: %s", why);
		return;
	}
	struct session_ws sw = { .session = a->s.j.id, .workspace = a->ws };
	bool changes = !a->f.rw;
	if (changes)
		session_changes_begin(&sw, now_wall_ns());
	if (box_up(a) < 0) {
		buf_free(&b);
		reply_error(a, id, RPC_INTERNAL, "session/prompt: no box could be made (ward's log says why)");
		return;
	}
	rewind_checkpoint(&a->s, changes);
	struct turn_cfg cfg = a->f.cfg;
	cfg.gate = &a->f.gate;
	cfg.mcp = a->mcp;
	cfg.sinks[cfg.nsinks++] = (struct turn_sink){ on_event, a };
	cfg.input = (struct turn_input){ .fd = 0, .on_ready = on_input, .ud = a };
	a->deadline = a->f.deadline_ms ? now_ms() + a->f.deadline_ms : 0;
	cfg.b.deadline_ms = a->deadline;
	a->busy = true;
	a->cancel = false;
	a->olds = cJSON_CreateObject();
	a->t = NULL;
	struct turn_stop stop = { 0 };
	struct err e = { 0 };
	int r = run_turn(&cfg, &a->s, b.data, &stop, &e);
	buf_free(&b);
	a->busy = false;
	a->t = NULL;
	cJSON_Delete(a->call);
	a->call = NULL;
	cJSON_Delete(a->olds);
	a->olds = NULL;
	cJSON_Delete(stop.output);
	if (changes)
		session_changes_record(&sw);
	if (r < 0) {
		reply_error(a, id, RPC_INTERNAL, "session/prompt: %s", e.msg);
		return;
	}
	fprintf(stderr, "ward acp: %s: %s (%d rounds, %d calls)\n", turn_stop_name(stop.kind), stop.why, stop.rounds,
		stop.calls);
	if (stop.kind == TURN_BOX_ERROR && a->s.box) {
		box_disconnect(a->s.box);	/* the next prompt makes it again */
		a->s.box = NULL;
	}
	if (stop.signal)
		a->eof = true;
	const char *reason = acp_stop_reason(stop.kind, a->cancel);
	if (!reason) {
		reply_error(a, id, RPC_INTERNAL, "ward stopped: %s: %s", turn_stop_name(stop.kind), stop.why);
		return;
	}
	cJSON *res = cJSON_CreateObject();
	cJSON_AddStringToObject(res, "stopReason", reason);
	reply(a, id, res);
}

static void n_session_cancel(struct acp *a, const cJSON *params)
{
	const char *sid = json_str(params, "sessionId");
	if (!a->open || !sid || strcmp(sid, a->s.j.id)) {
		fprintf(stderr, "ward acp: session/cancel for no session of this ward's: ignored\n");
		return;
	}
	if (!a->busy)
		return;
	a->cancel = true;
	/* In a permission's wait the ask returns; else the loop's callback
	 * interrupts the turn when it has read this. */
}

/* A response to ward's request: the permission's answer. */
static void on_response(struct acp *a, cJSON *m, const cJSON *id)
{
	if (!a->waiting || !cJSON_IsNumber(id) || id->valuedouble != (double)a->wait_id ||
	    (!cJSON_GetObjectItemCaseSensitive(m, "result") && !cJSON_GetObjectItemCaseSensitive(m, "error"))) {
		fprintf(stderr, "ward acp: a response to no request of ward's: ignored\n");
		return;
	}
	cJSON_Delete(a->answer);
	a->answer = cJSON_Duplicate(m, 1);
	a->waiting = false;
}

static void acp_message(struct acp *a, const char *line, size_t n)
{
	while (n && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
		n--;
	if (!n)
		return;
	__attribute__((cleanup(json_freep))) cJSON *m = NULL;
	struct err e = { 0 };
	if (jsonstrict_parse(line, n, &m, &e) < 0) {
		reply_error(a, NULL, RPC_PARSE, "not one JSON value: %s", e.msg);
		return;
	}
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
	if (!cJSON_IsObject(m)) {
		reply_error(a, NULL, RPC_INVALID, "a message is a JSON object");
		return;
	}
	if (id && !cJSON_IsString(id) && !cJSON_IsNumber(id) && !cJSON_IsNull(id)) {
		reply_error(a, NULL, RPC_INVALID, "id must be a string or a number");
		return;
	}
	const char *ver = json_str(m, "jsonrpc");
	if (!ver || strcmp(ver, "2.0")) {
		reply_error(a, id, RPC_INVALID, "\"jsonrpc\" must be \"2.0\"");
		return;
	}
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(m, "method");
	if (!method) {
		if (!id)
			reply_error(a, NULL, RPC_INVALID, "a message has a method, or is a response with an id");
		else
			on_response(a, m, id);
		return;
	}
	if (!cJSON_IsString(method)) {
		reply_error(a, id, RPC_INVALID, "method must be a string");
		return;
	}
	const char *name = method->valuestring;
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(m, "params");
	if (params && !cJSON_IsObject(params)) {
		if (id)
			reply_error(a, id, RPC_PARAMS, "%.100s: params must be an object", name);
		return;
	}
	if (!id) {
		if (!strcmp(name, "session/cancel"))
			n_session_cancel(a, params);
		else
			fprintf(stderr, "ward acp: notification %.100s: ward has none by that name: ignored\n", name);
		return;
	}
	if (!strcmp(name, "initialize")) {
		m_initialize(a, id, params);
		return;
	}
	if (!strcmp(name, "session/set_mode")) {
		m_session_set_mode(a, id, params);
		return;
	}
	if (!strcmp(name, "session/new") || !strcmp(name, "session/load") || !strcmp(name, "session/prompt")) {
		if (!a->initialized) {
			reply_error(a, id, RPC_INVALID, "%s: call initialize first", name);
			return;
		}
		if (a->busy) {
			reply_error(a, id, RPC_INVALID,
				    "%s: a prompt is running; wait for its answer, or send session/cancel", name);
			return;
		}
		if (!strcmp(name, "session/new")) {
			m_session_open(a, id, params, NULL);
		} else if (!strcmp(name, "session/load")) {
			const char *sid = json_str(params, "sessionId");
			if (!sid || !*sid)
				reply_error(a, id, RPC_PARAMS, "session/load: give the sessionId");
			else
				m_session_open(a, id, params, sid);
		} else {
			m_session_prompt(a, id, params);
		}
		return;
	}
	reply_error(a, id, RPC_NO_METHOD,
		    "no method %.100s in ward acp (it has initialize, session/new, session/load, session/prompt, session/set_mode and session/cancel)", name);
}

/* One read of stdin (the caller knows it is readable, or waits), and each
 * whole line handled. A line is taken off the buffer before it is handled:
 * a prompt's turn reads the lines after it while it runs. */
static void acp_read(struct acp *a)
{
	char tmp[65536];
	ssize_t n = fdio_read_some(0, tmp, sizeof(tmp));
	if (n <= 0) {
		a->eof = true;
		return;
	}
	size_t from = 0;
	while (a->skipping && from < (size_t)n) {
		if (tmp[from++] == '\n')
			a->skipping = false;
	}
	if (buf_append(&a->in, tmp + from, (size_t)n - from) < 0) {
		a->in.len = 0;
		a->skipping = true;
		reply_error(a, NULL, RPC_INVALID, "a message longer than %u MiB: skipped", ACP_LINE_MAX >> 20);
		return;
	}
	for (;;) {
		char *nl = a->in.len ? memchr(a->in.data, '\n', a->in.len) : NULL;
		if (!nl)
			break;
		size_t len = (size_t)(nl - a->in.data);
		_cleanup_free_ char *line = malloc(len + 1);
		if (!line)
			return;
		memcpy(line, a->in.data, len);
		line[len] = 0;
		buf_consume(&a->in, len + 1);
		acp_message(a, line, len);
	}
}

static int acp_run(int argc, char **argv)
{
	_cleanup_free_ struct acp *a = calloc(1, sizeof(*a));
	if (!a)
		return EXIT_FAIL;
	a->out = -1;
	run_flags_init(&a->f, GATE_EDITS);
	optind = 1;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, "+:h", acp_opts, NULL)) != -1) {
		if (c == '?' || c == ':')
			return cmd_bad_flag("acp", c, argv);
		if (c == 'h') {
			fputs(acp_help, stdout);
			return 0;
		}
		if (c == 'S' || c == 'b' || c == 'w') {
			cmd_error("acp: the editor gives the session's directory (session/new's cwd): --resume, --box and "
				  "--workspace are not for ward acp");
			return EXIT_USAGE;
		}
		int k = run_flag_given(&a->f, c, optarg);
		if (k == 0)
			k = mcpconf_flag(&a->mc, c, optarg);
		if (k <= 0)
			return EXIT_USAGE;
	}
	if (optind != argc) {
		cmd_error("acp takes no arguments: the editor sends the prompts; see `ward acp --help`");
		return EXIT_USAGE;
	}
	if (a->f.rw)
		a->f.mode_default = GATE_ASK;	/* edits would reach the tree at once */
	int r = run_flags_finish(&a->f);
	if (r)
		return r;
	if (hooks_install(&a->f.cfg, &a->deadline, &a->hooks))
		return EXIT_USAGE;
	a->f.gate.ask = acp_ask;
	a->f.gate.ask_ud = a;
	a->f0 = a->f;
	/* The protocol's fd is a copy of stdout; fd 1 becomes stderr's. */
	a->out = fcntl(1, F_DUPFD_CLOEXEC, 3);
	if (a->out < 0 || dup2(2, 1) < 0) {
		cmd_error("acp: cannot set up stdout: %s", strerror(errno));
		return EXIT_FAIL;
	}
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	_cleanup_close_ int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	buf_init(&a->in, ACP_LINE_MAX);
	int sig = 0;
	while (!a->eof) {
		struct pollfd pf[2] = { { .fd = 0, .events = POLLIN }, { .fd = sfd, .events = POLLIN } };
		if (poll(pf, sfd >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (sfd >= 0 && (pf[1].revents & POLLIN)) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				sig = (int)si.ssi_signo;
			break;
		}
		if (pf[0].revents)
			acp_read(a);
	}
	session_close(a);
	mcpconf_free(&a->mc);
	hooks_free(a->hooks);
	buf_free(&a->in);
	cJSON_Delete(a->answer);
	if (a->out >= 0)
		close(a->out);
	return sig ? 128 + sig : EXIT_OKAY;
}

const struct command cmd_acp = {
	.name = "acp", .args = "[FLAGS]", .summary = "ward for editors: the Agent Client Protocol on stdin/stdout",
	.run = acp_run,
};
