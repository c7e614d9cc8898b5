/* ward's requests to the editor while a prompt runs: the gate's ask as
 * session/request_permission, and a file's unsaved buffer through
 * fs/read_text_file. Each waits for its answer with the connection read
 * meanwhile, so a session/cancel ends the wait. */
#include "acp/acp-int.h"
#include "base/json.h"
#include "base/cleanup.h"
#include "base/timeutil.h"
#include "tools/read.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void json_freep(cJSON **p)
{
	cJSON_Delete(*p);
}

/* ward's request sent: wait for its response (the connection read
 * meanwhile, a session/cancel of s ending the wait) until ms from now or
 * the prompt's deadline. The response, or NULL. */
static cJSON *await(struct acp *a, struct acp_sess *s, int64_t id, int64_t ms)
{
	a->waiting = true;
	a->wait_id = id;
	int64_t until = now_ms() + ms;
	if (a->deadline && a->deadline < until)
		until = a->deadline;
	while (a->waiting && !a->rpc.eof && !s->cancel) {
		int64_t left = until - now_ms();
		if (left <= 0)
			break;
		struct pollfd pf = { .fd = a->rpc.in, .events = POLLIN };
		int k = poll(&pf, 1, (int)MIN(left, INT32_MAX));
		if (k < 0 && errno != EINTR)
			break;
		if (k > 0)
			rpc_read(&a->rpc, acp_message, a);
	}
	cJSON *ans = a->waiting ? NULL : a->answer;
	if (a->waiting)
		cJSON_Delete(a->answer);
	a->answer = NULL;
	a->waiting = false;
	return ans;
}

/* The gate asks: a session/request_permission, and the answer awaited. */
int acp_ask_permission(void *ud, const char *tool, const cJSON *input, char *reason, size_t cap)
{
	struct acp_sess *s = ud;
	struct acp *a = s->a;
	if (a->rpc.eof || s->cancel) {
		snprintf(reason, cap, "the editor cancelled the prompt");
		return 'q';
	}
	const char *id = json_str(s->call, "id");
	cJSON *call = cJSON_CreateObject();
	cJSON_AddStringToObject(call, "id", id ? id : "");
	cJSON_AddStringToObject(call, "name", tool);
	cJSON_AddItemToObject(call, "input", cJSON_Duplicate(input, 1));
	cJSON *tc = cJSON_CreateObject();
	acp_update_call(tc, call, s->o.ws, "pending", s->olds);
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
	cJSON_AddStringToObject(p, "sessionId", s->o.s->j.id);
	cJSON_AddItemToObject(p, "toolCall", tc);
	cJSON_AddItemToObject(p, "options", opts);
	int64_t rid = rpc_request(&a->rpc, "session/request_permission", p);
	/* Until the prompt's deadline: a person answers in their time. */
	__attribute__((cleanup(json_freep))) cJSON *ans = await(a, s, rid, INT32_MAX);
	if (a->rpc.eof || s->cancel) {
		snprintf(reason, cap, "the editor cancelled the prompt");
		return 'q';
	}
	if (!ans) {
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
		s->cancel = true;
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
	acp_say(a, "the answer to a permission request named none of its options: refused");
	snprintf(reason, cap, "the editor's answer named none of the options: refused");
	return 'n';
}

/* A read of a workspace file the editor holds with changes it has not
 * saved: answered from the editor's buffer (fs/read_text_file), as the
 * read tool formats a file, and said so. Only where the box's copy is
 * the tree's own (the box has not changed the file: its own change is
 * what the model must see) and the box works on a copy (with --rw a
 * process in the box could turn the path into a symlink between ward's
 * look and the editor's read, and the editor follows links). NULL: the
 * box reads it. */
cJSON *acp_ask_buffer(void *ud, const char *tool, const cJSON *input, char *stop, size_t cap)
{
	struct acp_sess *s = ud;
	struct acp *a = s->a;
	const char *path = json_str(input, "path");
	char hp[PATH_MAX];
	if (!a->fs_read || s->o.rw || strcmp(tool, "read") || !path ||
	    !acp_update_path(path, s->o.ws, hp, sizeof(hp)))
		return NULL;
	_cleanup_free_ char *box = NULL, *tree = NULL;
	size_t nb = 0, nt = 0;
	if (a->host->file_read(a->ud, s->o.h, path, false, ACP_TEXT_MAX, &box, &nb) < 0 ||
	    a->host->file_read(a->ud, s->o.h, path, true, ACP_TEXT_MAX, &tree, &nt) < 0 || nb != nt ||
	    memcmp(box, tree, nb))
		return NULL;
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "sessionId", s->o.s->j.id);
	cJSON_AddStringToObject(p, "path", hp);
	int64_t rid = rpc_request(&a->rpc, "fs/read_text_file", p);
	__attribute__((cleanup(json_freep))) cJSON *ans = await(a, s, rid, ACP_FS_WAIT_MS);
	if (a->rpc.eof || s->cancel) {
		/* The cancel was read here, not by the loop: the turn is told. */
		snprintf(stop, cap, "%s", a->rpc.eof ? "the editor closed ward's stdin" : "cancelled by the editor (session/cancel)");
		return tool_result_json("cancelled", "not run: the editor cancelled the prompt");
	}
	const char *text = json_str(cJSON_GetObjectItemCaseSensitive(ans, "result"), "content");
	if (!text) {
		acp_say(a, "fs/read_text_file %s: no content came (%s): the box reads it", hp,
		    ans ? "an error" : "no answer in time");
		return NULL;
	}
	size_t n = strlen(text);
	if (n > ACP_TEXT_MAX || (n == nt && !memcmp(text, tree, n)))
		return NULL;
	char shown[PATH_MAX + 16];
	snprintf(shown, sizeof(shown), "/workspace/%s", hp + strlen(s->o.ws) + (hp[strlen(s->o.ws)] == '/'));
	struct tool_result res;
	tool_result_init(&res);
	read_lines(shown, text, n, tool_arg_int(input, "offset", 1), tool_arg_int(input, "limit", READ_DEFAULT_LINES),
		   NULL, &res);
	static const char note[] = "\n[This is the editor's buffer of %s, with changes not saved yet. The file in the "
				   "box, which edit, grep and bash see, is the saved one: an edit must match the saved "
				   "text, or write the file whole.]";
	if (buf_printf(&res.text, note, shown) < 0) {
		/* The note goes in whole: the lines before it give way. */
		res.text.len = res.text.cap > sizeof(note) + PATH_MAX + 64 ? res.text.cap - sizeof(note) - PATH_MAX - 64 : 0;
		buf_printf(&res.text, "\n[cut]");
		buf_printf(&res.text, note, shown);
	}
	if (buf_cstr(&res.text) < 0) {
		buf_free(&res.text);
		return NULL;
	}
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "outcome", outcome_name(res.outcome));
	cJSON_AddStringToObject(r, "text", res.text.data);
	cJSON_AddStringToObject(r, "source", "editor");
	buf_free(&res.text);
	acp_say(a, "read %s: the editor's unsaved buffer", hp);
	return r;
}
