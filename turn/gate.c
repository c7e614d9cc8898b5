#include "turn/gate.h"
#include "tools/tool.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

const char *gate_decision_name(enum gate_decision d)
{
	switch (d) {
	case GATE_ALLOW:
		return "allow";
	case GATE_DENY:
		return "deny";
	case GATE_NEEDS_PERSON:
		return "needs_person";
	case GATE_ABORT:
		return "abort";
	}
	return "?";
}

int gate_mode_parse(const char *s, enum gate_mode *ret)
{
	if (!strcmp(s, "ask"))
		*ret = GATE_ASK;
	else if (!strcmp(s, "edits"))
		*ret = GATE_EDITS;
	else if (!strcmp(s, "auto"))
		*ret = GATE_AUTO;
	else
		return -EINVAL;
	return 0;
}

int gate_add_rule(struct gate *g, bool allow, const char *spec, struct err *e)
{
	if (g->nrules >= GATE_RULES_MAX)
		return err_set(e, -E2BIG, "too many --allow/--deny rules (at most %d)", GATE_RULES_MAX);
	const char *colon = strchr(spec, ':');
	size_t tl = colon ? (size_t)(colon - spec) : strlen(spec);
	struct gate_rule *r = &g->rules[g->nrules];
	if (tl == 0 || tl >= sizeof(r->tool))
		return err_set(e, -EINVAL, "--%s '%s': give TOOL or TOOL:PATTERN, e.g. 'bash:git status*'",
			       allow ? "allow" : "deny", spec);
	*r = (struct gate_rule){ .allow = allow };
	memcpy(r->tool, spec, tl);
	if (!tool_lookup(r->tool) && strcmp(r->tool, "*"))
		return err_set(e, -EINVAL, "--%s '%s': no tool named %s", allow ? "allow" : "deny", spec, r->tool);
	if (colon && snprintf(r->pattern, sizeof(r->pattern), "%s", colon + 1) >= (int)sizeof(r->pattern))
		return err_set(e, -EINVAL, "--%s '%s': the pattern is too long", allow ? "allow" : "deny", spec);
	g->nrules++;
	return 0;
}

/* What a rule's pattern is matched against. */
static const char *gate_subject(const char *tool, const cJSON *input)
{
	const char *key = !strcmp(tool, "bash") ? "command" : "path";
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(input, key);
	if (cJSON_IsString(v))
		return v->valuestring;
	return !strcmp(tool, "bash") ? "" : ".";
}

static bool rule_matches(const struct gate_rule *r, const char *tool, const cJSON *input)
{
	if (strcmp(r->tool, "*") && strcmp(r->tool, tool))
		return false;
	if (!r->pattern[0])
		return true;
	return fnmatch(r->pattern, gate_subject(tool, input), 0) == 0;
}

enum gate_decision gate_check(struct gate *g, const char *tool, const cJSON *input, char *why, size_t cap)
{
	for (int i = 0; i < g->nrules; i++)
		if (!g->rules[i].allow && rule_matches(&g->rules[i], tool, input)) {
			snprintf(why, cap, "denied by the rule --deny '%s%s%s'", g->rules[i].tool,
				 g->rules[i].pattern[0] ? ":" : "", g->rules[i].pattern);
			return GATE_DENY;
		}
	for (int i = 0; i < g->nrules; i++)
		if (g->rules[i].allow && rule_matches(&g->rules[i], tool, input)) {
			snprintf(why, cap, "allowed by the rule --allow '%s%s%s'", g->rules[i].tool,
				 g->rules[i].pattern[0] ? ":" : "", g->rules[i].pattern);
			return GATE_ALLOW;
		}
	const struct tool *t = tool_lookup(tool);
	bool readonly = t && t->readonly;
	bool edit = !strcmp(tool, "write") || !strcmp(tool, "edit");
	if (g->mode == GATE_AUTO || readonly || (g->mode == GATE_EDITS && edit)) {
		snprintf(why, cap, "allowed by the mode (%s)", g->mode == GATE_AUTO ? "auto" : readonly ? "read-only tool" : "edits");
		return GATE_ALLOW;
	}
	if (!g->ask) {
		snprintf(why, cap,
			 "refused: this %s call needs a person's approval and no one is at a terminal "
			 "(the run allows it with --approve %s or --allow '%s:...')",
			 tool, edit ? "edits" : "auto", tool);
		return GATE_NEEDS_PERSON;
	}
	char reason[256] = "";
	int a = g->ask(g->ask_ud, tool, input, reason, sizeof(reason));
	switch (a) {
	case 'y':
		snprintf(why, cap, "approved once by the user");
		return GATE_ALLOW;
	case 'a': {
		/* Always: this tool, or for bash this command's first word (the
		 * word alone, or followed by a space: "make" is not "makeover"). */
		char spec[300], spec2[300];
		const char *subj = gate_subject(tool, input);
		size_t w = strcspn(subj, " \t\n;&|");
		struct err e = { 0 };
		if (!strcmp(tool, "bash") && w > 0 && w < 100 && !memchr(subj, '\'', w)) {
			/* The word as a pattern: its own *, ?, [ and \\ escaped. */
			char word[220];
			size_t k = 0;
			for (size_t i = 0; i < w; i++) {
				if (strchr("*?[\\", subj[i]))
					word[k++] = '\\';
				word[k++] = subj[i];
			}
			word[k] = 0;
			snprintf(spec, sizeof(spec), "bash:%s", word);
			snprintf(spec2, sizeof(spec2), "bash:%s *", word);
			gate_add_rule(g, true, spec, &e);
			gate_add_rule(g, true, spec2, &e);
			snprintf(why, cap, "approved by the user, and from now on '%s' and '%s'", spec, spec2);
		} else {
			snprintf(spec, sizeof(spec), "%s", tool);
			gate_add_rule(g, true, spec, &e);
			snprintf(why, cap, "approved by the user, and from now on '%s'", spec);
		}
		return GATE_ALLOW;
	}
	case 'q':
		snprintf(why, cap, "the user stopped the turn");
		return GATE_ABORT;
	default:
		snprintf(why, cap, "refused by the user%s%s", reason[0] ? ": " : "", reason);
		return GATE_DENY;
	}
}
