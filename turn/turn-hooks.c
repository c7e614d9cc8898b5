/* The user's hooks, as run_turn sees them: the event's common fields, and
 * each run recorded in the journal and the event stream. Running them is
 * the front end's (turn_cfg.hooks). */
#include "turn/turn-int.h"
#include "base/json.h"
#include "tools/ccshape.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

static bool fire(const struct turn_cfg *cfg, struct session *s, const char *event, const char *tool, cJSON *ev,
		 char *why, size_t why_cap, char *ctx, size_t ctx_cap, enum gate_hook *word, cJSON **updated)
{
	if (word)
		*word = GATE_HOOK_NONE;
	if (updated)
		*updated = NULL;
	why[0] = ctx[0] = 0;
	const struct turn_hooks *h = &cfg->hooks;
	if (!h->run)
		return false;
	char cwd[PATH_MAX];
	cJSON_AddStringToObject(ev, "session_id", s->j.id);
	cJSON_AddStringToObject(ev, "transcript_path", s->j.path);
	cJSON_AddStringToObject(ev, "cwd", getcwd(cwd, sizeof(cwd)) ? cwd : "");
	cJSON_AddStringToObject(ev, "hook_event_name", event);
	cJSON *runs = cJSON_CreateArray();
	bool blocked = h->run(h->ud, event, tool, ev, runs, why, why_cap, ctx, ctx_cap);
	for (cJSON *r = runs ? runs->child : NULL; r; r = r->next) {
		/* The records' decisions are what the gate takes, so the
		 * journal holds exactly what changed it. */
		const char *d = json_str(r, "decision");
		if (word && d && !strcmp(d, "ask"))
			*word = GATE_HOOK_ASK;
		else if (word && d && !strcmp(d, "approve") && *word == GATE_HOOK_NONE)
			*word = GATE_HOOK_ALLOW;
		/* Of several hooks' updatedInput, the last one's is the input,
		 * as the last to run saw the call before it. */
		const cJSON *ui = cJSON_GetObjectItemCaseSensitive(r, "updated_input");
		if (updated && cJSON_IsObject(ui)) {
			cJSON_Delete(*updated);
			*updated = cJSON_Duplicate(ui, 1);
		}
		cJSON *rec = cJSON_Duplicate(r, 1);
		journal_write(&s->j, "hook", rec);
		cJSON_Delete(rec);
		struct turn_event te = { .type = EV_HOOK, .result = r };
		turn_cfg_emit(cfg, &te);
	}
	cJSON_Delete(runs);
	if (blocked && word)
		*word = GATE_HOOK_NONE;
	if (blocked && updated) {
		cJSON_Delete(*updated);
		*updated = NULL;
	}
	return blocked;
}

bool turn_hooks_fire(struct turn *t, const char *event, const char *tool, cJSON *ev, char *why, size_t why_cap,
		     char *ctx, size_t ctx_cap)
{
	return fire(t->cfg, t->s, event, tool, ev, why, why_cap, ctx, ctx_cap, NULL, NULL);
}

bool turn_hooks_pre_tool(struct turn *t, const char *tool, cJSON *ev, char *why, size_t why_cap, char *ctx,
			 size_t ctx_cap, enum gate_hook *ret_hook, cJSON **ret_input)
{
	return fire(t->cfg, t->s, "PreToolUse", tool, ev, why, why_cap, ctx, ctx_cap, ret_hook, ret_input);
}

cJSON *turn_hooks_tool_event(const char *tool, const cJSON *input, const char *id)
{
	/* Claude Code's shape (tools/ccshape.h): its tool and field names,
	 * so that a hook written for it runs unchanged. */
	cJSON *ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "tool_name", ccshape_name(tool));
	cJSON_AddItemToObject(ev, "tool_input", ccshape_to_cc(tool, input));
	cJSON_AddStringToObject(ev, "tool_use_id", id);
	return ev;
}

void turn_session_start(const struct turn_cfg *cfg, struct session *s, const char *source)
{
	if (!cfg->hooks.run)
		return;
	cJSON *ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "source", source);
	char why[512], ctx[4096];
	fire(cfg, s, "SessionStart", NULL, ev, why, sizeof(why), ctx, sizeof(ctx), NULL, NULL);
	cJSON_Delete(ev);
	if (!ctx[0])
		return;
	/* What the hooks add is the model's from the first request on. */
	const char *sys = s->system ? s->system : cfg->system ? cfg->system : "";
	size_t n = strlen(sys) + strlen(ctx) + 4;
	char *ns = malloc(n);
	if (!ns)
		return;
	snprintf(ns, n, "%s%s%s", sys, sys[0] ? "\n\n" : "", ctx);
	free(s->system);
	s->system = ns;
}
