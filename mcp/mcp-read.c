/* What an MCP server says: JSON-RPC lines on its box call's stdout (or
 * bodies and events over HTTP), its answers to our requests (initialize,
 * the tools' list, calls, pings), its own requests (each answered) and
 * anything else (counted as garbage); its stderr, kept for messages. */
#include "mcp/mcp.h"
#include "mcp/mcp-int.h"
#include "base/cleanup.h"
#include "base/jsonstrict.h"
#include "base/timeutil.h"
#include "base/utf8.h"
#include "sandbox/box.h"
#include "tools/tool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	if (mcp_srv_request(s, RPC_LIST, "tools/list", p, s->state == ST_LIST ? 0 : now_ms() + bound) < 0)
		mcp_srv_restart(s, "tools/list could not be sent");
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
			mcp_note(m, "MCP server \"%s\": tool \"%.80s\" is not offered: mcp__%s__%.80s is longer than %d characters",
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
			mcp_note(m, "MCP server \"%s\": tool \"%.80s\" is not offered: its name is another's once made safe",
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
		mcp_note(m, "MCP server \"%s\" is ready: %zu tool%s", s->cfg.name, s->nmt, s->nmt == 1 ? "" : "s");
	mcp_srv_send_waiting(s);
	if (s->relist)
		list_begin(s);
	else
		mcp_srv_deliver_held(s);
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
		mcp_srv_down(s, "it speaks MCP protocol version \"%.40s\"; ward speaks 2025-06-18, 2025-03-26 and 2024-11-05",
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
		if (mcp_srv_send_then(s, msg, 0, http_initialized) < 0)
			mcp_srv_down(s, "notifications/initialized could not be sent");
		return;
	}
	mcp_srv_notify(s, "notifications/initialized", NULL);
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
		mcp_note(s->m, "MCP server \"%s\": only the first %d pages or %d tools of its list are taken", s->cfg.name,
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
	struct rpc *r = mcp_srv_rpc_take(s, id);
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
			mcp_srv_down(s, "it refused initialize: %.300s", esafe ? esafe : "");
		else
			on_init(s, res);
		break;
	case RPC_LIST:
		if (err || !cJSON_IsObject(res)) {
			if (s->state == ST_LIST)
				mcp_srv_down(s, "it refused tools/list: %.300s", esafe ? esafe : "");
			else
				mcp_note(s->m, "MCP server \"%s\": tools/list failed (%.200s); its last list is kept", s->cfg.name,
				     esafe ? esafe : "");
			cJSON_Delete(s->acc);
			s->acc = NULL;
			mcp_srv_deliver_held(s);
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
					mcp_srv_call_end(s->m, c, out);
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
	mcp_srv_send(s, reply, 0);
}

/* why: what the strict parser said of a message that looked like JSON. */
static void on_garbage(struct srv *s, const char *p, size_t n, const char *why)
{
	if (!s->garbage++) {
		_cleanup_free_ char *safe = utf8_dup(p, n < 100 ? n : 100);
		snprintf(s->garbage_first, sizeof(s->garbage_first), "%s", safe ? safe : "");
		if (why)
			mcp_note(s->m, "MCP server \"%s\" sent a message that is not valid JSON (ignored): %s", s->cfg.name,
				 why);
		else if (s->http)
			mcp_note(s->m, "MCP server \"%s\" sent a message that is not JSON-RPC (ignored): \"%.100s\"",
			     s->cfg.name, s->garbage_first);
		else
			mcp_note(s->m, "MCP server \"%s\" wrote a line that is not JSON-RPC to its stdout (ignored; stdout is "
			     "the protocol's): \"%.100s\"", s->cfg.name, s->garbage_first);
	}
}

/* One JSON-RPC message of the server's. */
static void on_msg(struct srv *s, const cJSON *msg, const char *p, size_t n)
{
	const char *jv = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "jsonrpc"));
	if (!cJSON_IsObject(msg) || !jv || strcmp(jv, "2.0")) {
		on_garbage(s, p, n, NULL);
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
	/* One strict reading (base/jsonstrict.h): a result whose key is given
	 * twice would be one answer to ward and another to a hook reading
	 * tool_response. A message that is not one unambiguous JSON value is
	 * ignored, as garbage is. */
	cJSON *msg = NULL;
	struct err pe = { 0 };
	if (jsonstrict_parse(p, n, &msg, &pe) < 0) {
		on_garbage(s, p, n, *p == '{' || *p == '[' ? pe.msg : NULL);
		return;
	}
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

void mcp_read_out(void *ud, uint32_t id, const char *p, size_t n)
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
			mcp_srv_restart(s, why);
			return;
		}
		on_message(s, s->line.data, s->line.len);
		s->line.len = 0;
		if (s->state == ST_KILLING || s->state == ST_DOWN || !s->live)
			return;
	}
}

/* The host a starting server's stderr says it could not reach, as the
 * common clients word it: Node's getaddrinfo error (npx, npm), curl's and
 * git's, Python's, and the 403 of the box's own egress proxy (which names
 * the --allow-host it needs). true with host set. */
static bool unreachable_host(const char *text, char *host, size_t cap)
{
	static const char *const marks[] = { "--allow-host ", "getaddrinfo EAI_AGAIN ", "getaddrinfo ENOTFOUND ",
					     "Could not resolve host: ", "Failed to resolve '" };
	for (size_t i = 0; i < ARRAY_SIZE(marks); i++) {
		const char *m = strstr(text, marks[i]);
		if (!m)
			continue;
		m += strlen(marks[i]);
		size_t l = strspn(m, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-");
		if (l && l < cap && memchr(m, '.', l)) {
			memcpy(host, m, l);
			host[l] = 0;
			return true;
		}
	}
	return false;
}

void mcp_read_err(void *ud, uint32_t id, const char *p, size_t n)
{
	struct srv *s = ud;
	capture_add(&s->err, p, n);
	/* A server that cannot start without the network says so now, not
	 * at its start-up time's end: it would not start later either. */
	if (s->state != ST_INIT && s->state != ST_LIST)
		return;
	char tail[1024], host[256];
	size_t k = capture_tail(&s->err, tail, sizeof(tail) - 1);
	tail[k] = 0;
	if (!unreachable_host(tail, host, sizeof(host)))
		return;
	char last[300];
	mcp_srv_err_tail(s, last, sizeof(last));
	mcp_srv_down(s, "it tried to reach %s, which this box cannot (no network, or not an allowed host): to allow it, "
		     "--allow-host %s%s", host, host, last);
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
	struct rpc *r = mcp_srv_rpc_take(s, id);
	if (!r)
		return;	/* answered after all, or given up already */
	enum rpc_kind kind = r->kind;
	free(r);
	switch (kind) {
	case RPC_INIT:
		mcp_srv_down(s, "%s", why);
		break;
	case RPC_LIST:
		if (s->state == ST_LIST) {
			mcp_srv_down(s, "tools/list failed: %s", why);
			break;
		}
		mcp_note(s->m, "MCP server \"%s\": tools/list failed (%.300s); its last list is kept", s->cfg.name, why);
		cJSON_Delete(s->acc);
		s->acc = NULL;
		mcp_srv_deliver_held(s);
		break;
	case RPC_PING:
		break;	/* its deadline decides */
	case RPC_CALL:
		for (struct mcall *c = s->m->calls; c; c = c->next)
			if (c->s == s && c->rpc == id) {
				mcp_srv_call_end(s->m, c, tool_result_json("failed", "the MCP server \"%s\" gave no answer: %s",
								s->cfg.name, why));
				break;
			}
		break;
	}
}

static void http_expired(void *ud)
{
	mcp_srv_lost(ud, "it ended the session (HTTP 404)", false);
}

static void http_note(void *ud, const char *line)
{
	const struct srv *s = ud;
	mcp_note(s->m, "MCP server \"%s\": %s", s->cfg.name, line);
}

const struct mhttp_cbs mcp_read_http = {
	.dial = http_dial, .message = http_message, .failed = http_failed, .expired = http_expired, .note = http_note,
};
