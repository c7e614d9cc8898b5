/* What ward's turn events become in ACP: session/update notifications
 * (message and thought chunks, tool calls and their updates), and the
 * stop reason a prompt is answered with. */
#include "acp/acp.h"
#include "base/json.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/jsonprint.h"
#include "tools/todo.h"
#include "tools/tool.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* (An editor must not be shown /etc/passwd of the host as the file a call
 * changed; a ".." segment's meaning beneath the box's root is not the
 * host's.) */
const char *acp_update_path(const char *p, const char *ws, char *out, size_t n)
{
	if (!p || !*p || !ws || !*ws)
		return NULL;
	if (!strncmp(p, "/workspace", 10) && (p[10] == '/' || !p[10]))
		p += 10;
	else if (p[0] == '/')
		return NULL;
	while (*p == '/')
		p++;
	for (const char *s = p; *s;) {
		size_t l = strcspn(s, "/");
		if (l == 2 && !strncmp(s, "..", 2))
			return NULL;
		s += l;
		while (*s == '/')
			s++;
	}
	int k = snprintf(out, n, "%s%s%s", ws, *p ? "/" : "", p);
	return k > 0 && (size_t)k < n ? out : NULL;
}

static const char *tool_kind(const char *name)
{
	static const struct {
		const char *tool, *kind;
	} kinds[] = {
		{ "read", "read" }, { "ls", "read" },	 { "write", "edit" },
		{ "edit", "edit" }, { "grep", "search" }, { "find", "search" },
		{ "bash", "execute" },
	};
	for (size_t i = 0; name && i < ARRAY_SIZE(kinds); i++)
		if (!strcmp(name, kinds[i].tool))
			return kinds[i].kind;
	return "other";
}

/* write and edit as ACP's diff: write's new text whole over the file as
 * it was (old: a string, null for a new file; no diff when not known),
 * edit's replaced text and its replacement. */
static cJSON *call_diff(const char *name, const cJSON *in, const char *path, const cJSON *old)
{
	bool w = name && !strcmp(name, "write"), ed = name && !strcmp(name, "edit");
	if (!path || (!w && !ed))
		return NULL;
	const char *newt = json_str(in, w ? "content" : "new_string");
	const char *oldt = ed ? json_str(in, "old_string") : cJSON_IsString(old) ? old->valuestring : NULL;
	if (!newt || (ed && !oldt) || (w && !cJSON_IsString(old) && !cJSON_IsNull(old)))
		return NULL;
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "type", "diff");
	cJSON_AddStringToObject(d, "path", path);
	if (oldt)
		cJSON_AddStringToObject(d, "oldText", oldt);
	else
		cJSON_AddNullToObject(d, "oldText");
	cJSON_AddStringToObject(d, "newText", newt);
	return d;
}

void acp_update_call(cJSON *o, const cJSON *call, const char *ws, const char *status, const cJSON *olds)
{
	const char *name = json_str(call, "name");
	const cJSON *in = cJSON_GetObjectItemCaseSensitive(call, "input");
	cJSON_AddStringToObject(o, "toolCallId", json_str(call, "id") ? json_str(call, "id") : "");
	char title[300];
	const char *arg = tool_call_arg(call);
	snprintf(title, sizeof(title), "%s%s%.200s", name ? name : "?", *arg ? " " : "", arg);
	cJSON_AddStringToObject(o, "title", title);
	cJSON_AddStringToObject(o, "kind", tool_kind(name));
	cJSON_AddStringToObject(o, "status", status);
	if (cJSON_IsObject(in))
		cJSON_AddItemToObject(o, "rawInput", cJSON_Duplicate(in, 1));
	char hp[PATH_MAX];
	const char *path = acp_update_path(json_str(in, "path"), ws, hp, sizeof(hp));
	cJSON *loc = cJSON_AddArrayToObject(o, "locations");
	if (path) {
		cJSON *l = cJSON_CreateObject();
		cJSON_AddStringToObject(l, "path", path);
		cJSON_AddItemToArray(loc, l);
	}
	cJSON *content = cJSON_AddArrayToObject(o, "content");
	cJSON *d = call_diff(name, in, path, cJSON_GetObjectItemCaseSensitive(olds, json_str(call, "id") ? json_str(call, "id") : ""));
	if (d)
		cJSON_AddItemToArray(content, d);
}

static cJSON *chunk(const char *kind, const char *text, size_t len)
{
	cJSON *u = cJSON_CreateObject();
	cJSON_AddStringToObject(u, "sessionUpdate", kind);
	cJSON *c = cJSON_AddObjectToObject(u, "content");
	cJSON_AddStringToObject(c, "type", "text");
	/* The turn's deltas are UTF-8 whole (the SSE parser's); cJSON needs
	 * the NUL the delta lacks. */
	_cleanup_free_ char *t = strndup(text ? text : "", len);
	cJSON_AddStringToObject(c, "text", t ? t : "");
	return u;
}

static cJSON *result_update(const cJSON *call, const cJSON *result, const char *ws, const cJSON *olds)
{
	cJSON *u = cJSON_CreateObject();
	cJSON_AddStringToObject(u, "sessionUpdate", "tool_call_update");
	cJSON_AddStringToObject(u, "toolCallId", json_str(call, "id") ? json_str(call, "id") : "");
	const char *oc = json_str(result, "outcome");
	bool ok = oc && !strcmp(oc, "ok");
	cJSON_AddStringToObject(u, "status", ok ? "completed" : "failed");
	cJSON *content = cJSON_AddArrayToObject(u, "content");
	/* A change that was made stays shown as its diff. */
	if (ok) {
		char hp[PATH_MAX];
		const char *name = json_str(call, "name");
		const cJSON *in = cJSON_GetObjectItemCaseSensitive(call, "input");
		const char *id = json_str(call, "id");
		cJSON *d = call_diff(name, in, acp_update_path(json_str(in, "path"), ws, hp, sizeof(hp)),
				     cJSON_GetObjectItemCaseSensitive(olds, id ? id : ""));
		if (d)
			cJSON_AddItemToArray(content, d);
	}
	const char *text = json_str(result, "text");
	if (text && *text) {
		cJSON *c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "type", "content");
		cJSON *b = cJSON_AddObjectToObject(c, "content");
		cJSON_AddStringToObject(b, "type", "text");
		cJSON_AddStringToObject(b, "text", text);
		cJSON_AddItemToArray(content, c);
	}
	cJSON_AddItemToObject(u, "rawOutput", cJSON_Duplicate(result, 1));
	return u;
}

/* A todo call whose plan reads as one: ACP's plan (the whole list, which
 * the editor shows in place of the one before), and no tool card; NULL
 * for any other call (a plan that does not read is a call like any, so
 * that its error is seen). */
static cJSON *plan_update(const cJSON *call)
{
	const char *name = json_str(call, "name");
	const char *plan = json_str(cJSON_GetObjectItemCaseSensitive(call, "input"), "plan");
	struct todo_step v[TODO_STEPS_MAX];
	size_t n;
	if (!name || strcmp(name, "todo") || !plan || todo_parse(plan, v, &n, NULL) < 0)
		return NULL;
	static const char *const states[] = {
		[TODO_PENDING] = "pending", [TODO_IN_PROGRESS] = "in_progress", [TODO_DONE] = "completed"
	};
	cJSON *u = cJSON_CreateObject();
	cJSON_AddStringToObject(u, "sessionUpdate", "plan");
	cJSON *list = cJSON_AddArrayToObject(u, "entries");
	for (size_t i = 0; i < n; i++) {
		cJSON *e = cJSON_CreateObject();
		_cleanup_free_ char *t = strndup(v[i].text, v[i].len);
		cJSON_AddStringToObject(e, "content", t ? t : "");
		/* ward's steps have no priority of their own. */
		cJSON_AddStringToObject(e, "priority", "medium");
		cJSON_AddStringToObject(e, "status", states[v[i].state]);
		cJSON_AddItemToArray(list, e);
	}
	return u;
}

/* Whose a subagent's call is, for the editor: ACP's ToolCall has no
 * parent, so ward says it under _meta (the protocol's room for an
 * agent's own fields): {"ward": {"agent": "a1", "parentToolCallId": the
 * task call's}}. */
static void agent_meta(cJSON *u, const char *agent, const cJSON *task)
{
	cJSON *w = cJSON_AddObjectToObject(cJSON_AddObjectToObject(u, "_meta"), "ward");
	cJSON_AddStringToObject(w, "agent", agent);
	if (json_str(task, "id"))
		cJSON_AddStringToObject(w, "parentToolCallId", json_str(task, "id"));
}

/* A subagent's own call (EV_AGENT's line): the editor sees it as a call
 * of the prompt's, its id the child's ("a1/ID", unique in the session),
 * its title labelled with the child ("a1 · bash make"). Its diffs are
 * not shown: the child's box is its own until the merge. */
static cJSON *agent_update(const struct turn_event *ev, const char *ws)
{
	const cJSON *line = ev->result;
	const char *type = json_str(line, "type"), *who = json_str(line, "agent");
	if (!type || !who)
		return NULL;
	char id[300];
	cJSON *u = NULL;
	if (!strcmp(type, "tool_call")) {
		const cJSON *call = cJSON_GetObjectItemCaseSensitive(line, "call");
		cJSON *c = cJSON_Duplicate(call, 1);
		if (!c)
			return NULL;
		snprintf(id, sizeof(id), "%s/%s", who, json_str(call, "id") ? json_str(call, "id") : "?");
		cJSON_ReplaceItemInObject(c, "id", cJSON_CreateString(id));
		u = cJSON_CreateObject();
		cJSON_AddStringToObject(u, "sessionUpdate", "tool_call");
		acp_update_call(u, c, ws, "pending", NULL);
		cJSON_Delete(c);
		char title[400];
		snprintf(title, sizeof(title), "%s · %.300s", who, json_str(u, "title") ? json_str(u, "title") : "");
		cJSON_ReplaceItemInObject(u, "title", cJSON_CreateString(title));
		/* A write's card without the file as it was: no diff here. */
		cJSON_ReplaceItemInObject(u, "content", cJSON_CreateArray());
	} else if (!strcmp(type, "approval") && json_str(line, "decision") && !strcmp(json_str(line, "decision"), "allow")) {
		snprintf(id, sizeof(id), "%s/%s", who, json_str(line, "call_id") ? json_str(line, "call_id") : "?");
		u = cJSON_CreateObject();
		cJSON_AddStringToObject(u, "sessionUpdate", "tool_call_update");
		cJSON_AddStringToObject(u, "toolCallId", id);
		cJSON_AddStringToObject(u, "status", "in_progress");
	} else if (!strcmp(type, "tool_result")) {
		snprintf(id, sizeof(id), "%s/%s", who, json_str(line, "call_id") ? json_str(line, "call_id") : "?");
		cJSON *c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "id", id);
		u = result_update(c, cJSON_GetObjectItemCaseSensitive(line, "result"), ws, NULL);
		cJSON_Delete(c);
	}
	if (u)
		agent_meta(u, who, ev->call);
	return u;
}

/* A background job of the box (EV_JOB): a card of its own for as long as
 * it lives ("job-N"), in progress from its start, completed or failed at
 * its end, which says how it ended and the tail of its output. */
static cJSON *job_update(const struct turn_event *ev)
{
	const char *what = json_str(ev->result, "event"), *how = json_str(ev->result, "how");
	const cJSON *job = cJSON_GetObjectItemCaseSensitive(ev->result, "job");
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(job, "id");
	if (!what || !cJSON_IsNumber(n))
		return NULL;
	char id[32];
	snprintf(id, sizeof(id), "job-%d", n->valueint);
	bool start = !strcmp(what, "started");
	if (!start && strcmp(what, "ended"))
		return NULL;
	cJSON *u = cJSON_CreateObject();
	cJSON_AddStringToObject(u, "sessionUpdate", start ? "tool_call" : "tool_call_update");
	cJSON_AddStringToObject(u, "toolCallId", id);
	if (start) {
		char title[300];
		snprintf(title, sizeof(title), "job %d: %.250s", n->valueint, json_str(job, "command") ? json_str(job, "command") : "");
		cJSON_AddStringToObject(u, "title", title);
		cJSON_AddStringToObject(u, "kind", "execute");
		cJSON_AddStringToObject(u, "status", "in_progress");
	} else {
		/* It exited with status 0; a signal or another status failed. */
		const cJSON *ec = cJSON_GetObjectItemCaseSensitive(job, "exit_code");
		bool ok = cJSON_IsNumber(ec) && ec->valueint == 0;
		cJSON_AddStringToObject(u, "status", ok ? "completed" : "failed");
		const char *tail = json_str(ev->result, "tail");
		char text[1024];
		snprintf(text, sizeof(text), "job %d %s%s%.900s", n->valueint, how ? how : "ended", tail && *tail ? "\n" : "",
			 tail ? tail : "");
		cJSON *c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "type", "content");
		cJSON *b = cJSON_AddObjectToObject(c, "content");
		cJSON_AddStringToObject(b, "type", "text");
		cJSON_AddStringToObject(b, "text", text);
		cJSON_AddItemToArray(cJSON_AddArrayToObject(u, "content"), c);
	}
	cJSON_AddItemToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(u, "_meta"), "ward"), "job", cJSON_Duplicate(job, 1));
	return u;
}

cJSON *acp_update_for(const struct turn_event *ev, const char *ws, const cJSON *olds)
{
	if (ev->type == EV_TOOL_CALL || ev->type == EV_APPROVAL || ev->type == EV_TOOL_RESULT) {
		cJSON *plan = plan_update(ev->call);
		if (plan && ev->type != EV_TOOL_CALL) {
			cJSON_Delete(plan);
			return NULL;	/* shown as the plan */
		}
		if (plan)
			return plan;
	}
	switch (ev->type) {
	case EV_TEXT:
		return chunk("agent_message_chunk", ev->text, ev->len);
	case EV_THINKING:
		return chunk("agent_thought_chunk", ev->text, ev->len);
	case EV_TOOL_CALL: {
		cJSON *u = cJSON_CreateObject();
		cJSON_AddStringToObject(u, "sessionUpdate", "tool_call");
		acp_update_call(u, ev->call, ws, "pending", olds);
		return u;
	}
	case EV_APPROVAL: {
		if ((enum gate_decision)ev->n != GATE_ALLOW)
			return NULL;	/* its result says why it did not run */
		cJSON *u = cJSON_CreateObject();
		cJSON_AddStringToObject(u, "sessionUpdate", "tool_call_update");
		const char *id = json_str(ev->call, "id");
		cJSON_AddStringToObject(u, "toolCallId", id ? id : "");
		cJSON_AddStringToObject(u, "status", "in_progress");
		return u;
	}
	case EV_TOOL_RESULT:
		return result_update(ev->call, ev->result, ws, olds);
	case EV_AGENT:
		return agent_update(ev, ws);
	case EV_JOB:
		return job_update(ev);
	default:
		return NULL;
	}
}

const char *acp_stop_reason(enum turn_stop_kind k, bool cancelled)
{
	if (cancelled)
		return "cancelled";
	switch (k) {
	case TURN_DONE:
		return "end_turn";
	case TURN_TOKENS:
		return "max_tokens";
	case TURN_ROUND_CAP:
	case TURN_CALL_CAP:
	case TURN_DEADLINE:
	case TURN_COST:
		return "max_turn_requests";
	case TURN_CANCELLED:
		return "cancelled";
	case TURN_MODEL_REFUSED:
		return "refusal";
	case TURN_REFUSED:
		/* A gate abort: the person's answer, not the model's refusal
		 * (which would drop the prompt from the next one). */
		return "end_turn";
	case TURN_PROVIDER_ERROR:
	case TURN_BOX_ERROR:
	case TURN_OUTPUT_INVALID:
	case TURN_AUTH_ERROR:
		return NULL;
	}
	return NULL;
}

static void cjson_deletep(cJSON **p)
{
	cJSON_Delete(*p);
}

/* A tool_result block's text: a string, or its text blocks. */
static void result_text(const cJSON *content, struct buf *b)
{
	if (cJSON_IsString(content)) {
		buf_printf(b, "%s", content->valuestring);
		return;
	}
	const cJSON *c;
	cJSON_ArrayForEach(c, content) {
		const char *t = json_str(c, "text");
		if (t)
			buf_printf(b, "%s%s", b->len ? "\n" : "", t);
	}
}

void acp_update_replay(const cJSON *messages, const char *ws, void (*send)(void *ud, cJSON *update), void *ud)
{
	/* The todo calls shown as plans: their results are not shown. */
	__attribute__((cleanup(cjson_deletep))) cJSON *plans = cJSON_CreateObject();
	const cJSON *m;
	cJSON_ArrayForEach(m, messages) {
		const char *role = json_str(m, "role");
		bool user = role && !strcmp(role, "user");
		const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
		if (cJSON_IsString(content)) {
			const char *t = content->valuestring;
			send(ud, chunk(user ? "user_message_chunk" : "agent_message_chunk", t, strlen(t)));
			continue;
		}
		const cJSON *b;
		cJSON_ArrayForEach(b, content) {
			const char *type = json_str(b, "type");
			const char *t = json_str(b, "text");
			if (!type)
				continue;
			if (!strcmp(type, "text") && t) {
				send(ud, chunk(user ? "user_message_chunk" : "agent_message_chunk", t, strlen(t)));
			} else if (!strcmp(type, "thinking") && json_str(b, "thinking")) {
				t = json_str(b, "thinking");
				send(ud, chunk("agent_thought_chunk", t, strlen(t)));
			} else if (!strcmp(type, "tool_use") && !user) {
				cJSON *plan = plan_update(b);
				if (plan) {
					if (json_str(b, "id"))
						cJSON_AddBoolToObject(plans, json_str(b, "id"), 1);
					send(ud, plan);
					continue;
				}
				cJSON *u = cJSON_CreateObject();
				cJSON_AddStringToObject(u, "sessionUpdate", "tool_call");
				acp_update_call(u, b, ws, "pending", NULL);
				send(ud, u);
			} else if (!strcmp(type, "tool_result") && user) {
				if (json_str(b, "tool_use_id") && cJSON_GetObjectItemCaseSensitive(plans, json_str(b, "tool_use_id")))
					continue;
				cJSON *u = cJSON_CreateObject();
				cJSON_AddStringToObject(u, "sessionUpdate", "tool_call_update");
				const char *id = json_str(b, "tool_use_id");
				cJSON_AddStringToObject(u, "toolCallId", id ? id : "");
				bool err = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "is_error"));
				cJSON_AddStringToObject(u, "status", err ? "failed" : "completed");
				struct buf tb;
				buf_init(&tb, 1u << 20);
				result_text(cJSON_GetObjectItemCaseSensitive(b, "content"), &tb);
				cJSON *cl = cJSON_AddArrayToObject(u, "content");
				if (buf_cstr(&tb) == 0 && tb.len) {
					cJSON *c = cJSON_CreateObject();
					cJSON_AddStringToObject(c, "type", "content");
					cJSON *tc = cJSON_AddObjectToObject(c, "content");
					cJSON_AddStringToObject(tc, "type", "text");
					cJSON_AddStringToObject(tc, "text", tb.data);
					cJSON_AddItemToArray(cl, c);
				}
				buf_free(&tb);
				send(ud, u);
			}
		}
	}
}
