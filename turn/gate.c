#include "turn/gate.h"
#include "base/cleanup.h"
#include "tools/glob.h"
#include "tools/tool.h"

#include <errno.h>
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

const char *gate_mode_name(enum gate_mode m)
{
	switch (m) {
	case GATE_ASK:
		return "ask";
	case GATE_EDITS:
		return "edits";
	case GATE_AUTO:
		return "auto";
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
	/* An MCP tool's name is only known once its server has listed it: a
	 * rule names it by a glob over mcp__SERVER__TOOL, and no pattern. */
	if (!strncmp(r->tool, "mcp__", 5)) {
		if (colon)
			return err_set(e, -EINVAL, "--%s '%s': an MCP tool's rule is its name alone (a glob such as "
				       "mcp__github__* or mcp__*__delete*), with no :PATTERN", allow ? "allow" : "deny", spec);
		g->nrules++;
		return 0;
	}
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

/* A bash command as the shell runs it: its simple commands, split where
 * the shell would start another (;, &, &&, |, ||, |&, a newline, and the
 * openers and closers of substitutions, subshells and groups: $( ` <( >(
 * ( ) { }), outside quotes. complex: the command holds a substitution, a
 * subshell, a group or a redirection to a file (what it runs or writes
 * cannot be told from one simple command's words; `2>&1` and `>/dev/null`
 * are not complex), or more simple commands than GATE_SEGS_MAX. */
#define GATE_SEGS_MAX 64
struct gate_segs {
	const char *at[GATE_SEGS_MAX];
	size_t len[GATE_SEGS_MAX];
	int n;
	bool complex;
};

static void segs_add(struct gate_segs *s, const char *from, const char *to)
{
	while (from < to && (*from == ' ' || *from == '\t'))
		from++;
	while (to > from && (to[-1] == ' ' || to[-1] == '\t'))
		to--;
	if (from == to)
		return;
	if (s->n == GATE_SEGS_MAX) {
		s->complex = true;
		return;
	}
	s->at[s->n] = from;
	s->len[s->n++] = (size_t)(to - from);
}

/* A redirection at p (a '<' or '>' outside quotes) that names no file:
 * to or from a descriptor (>&2, 2>&1, <&0) or /dev/null. */
static bool redirect_harmless(const char *p)
{
	p += p[1] == p[0] ? 2 : 1;	/* >> and << alike */
	if (*p == '&')
		return p[1] == '-' || (p[1] >= '0' && p[1] <= '9');
	p += strspn(p, " \t");
	return !strncmp(p, "/dev/null", 9) && (!p[9] || strchr(" \t;&|)\n", p[9]));
}

static void gate_split(const char *cmd, struct gate_segs *s)
{
	*s = (struct gate_segs){ 0 };
	const char *start = cmd, *p = cmd;
	char quote = 0;
	while (*p) {
		char c = *p;
		size_t cut = 0;	/* an operator of this many bytes ends a simple command here */
		if (quote == '\'') {
			quote = c == '\'' ? 0 : quote;
		} else if (c == '\\' && p[1]) {
			p++;
		} else if (c == '`' || ((c == '$' || c == '<' || c == '>') && p[1] == '(')) {
			s->complex = true;	/* in double quotes too */
			cut = c == '`' ? 1 : 2;
		} else if (quote == '"') {
			quote = c == '"' ? 0 : quote;
		} else if (c == '\'' || c == '"') {
			quote = c;
		} else if (c == ';' || c == '\n' || c == '&' || c == '|') {
			cut = (c == '&' || c == '|') && (p[1] == c || (c == '|' && p[1] == '&')) ? 2 : 1;
		} else if (c == '(' || c == ')' || ((c == '{' || c == '}') && (p[1] == ' ' || p[1] == '\t' || !p[1] ||
									  p[1] == '\n' || p[1] == ';'))) {
			s->complex = true;
			cut = 1;
		} else if (c == '<' || c == '>') {
			/* The operator whole (>>, >&, <&, >|), so that its & or | is
			 * not taken for a list's. */
			if (!redirect_harmless(p))
				s->complex = true;
			if (p[1] == c)
				p++;
			if (p[1] == '&' || p[1] == '|')
				p++;
		}
		if (cut) {
			segs_add(s, start, p);
			p += cut;
			start = p;
			continue;
		}
		p++;
	}
	segs_add(s, start, p);
}

/* pat over n bytes of s. */
static bool glob_match_n(const char *pat, const char *s, size_t n)
{
	char buf[GATE_COMMAND_MATCH_MAX];
	if (n >= sizeof(buf))
		return false;	/* longer than any command a pattern approves */
	memcpy(buf, s, n);
	buf[n] = 0;
	return glob_match_text(pat, buf);
}

/* A pattern with nothing a glob would expand names one command. */
static bool pattern_literal(const char *pat)
{
	for (const char *p = pat; *p; p++) {
		if (*p == '\\' && p[1])
			p++;
		else if (*p == '*' || *p == '?' || *p == '[')
			return false;
	}
	return true;
}

static bool rule_tool_matches(const struct gate_rule *r, const char *tool)
{
	if (!strncmp(r->tool, "mcp__", 5))
		return glob_match_text(r->tool, tool);
	return !strcmp(r->tool, "*") || !strcmp(r->tool, tool);
}

/* A rule of the tool alone, or bash's pattern `*`: every call. */
static bool rule_covers_all(const struct gate_rule *r)
{
	return !r->pattern[0] || !strncmp(r->tool, "mcp__", 5) || !strcmp(r->pattern, "*");
}

/* The tools' glob dialect (tools/glob.h) for both. A file tool's path is
 * matched as find and .gitignore match one, segment by segment: "src" "/"
 * "*" is what is directly in src, with `**` all below it. bash's command
 * is matched as the shell runs it (gate_split), and within one simple
 * command `*` runs over '/' too (`git diff*` covers `git diff src/x.c`):
 * - a deny rule refuses a command when the whole of it or any of its
 *   simple commands matches (`rm *` refuses `ls; rm -rf x` and
 *   `echo $(rm -rf x)`);
 * - allow rules' patterns allow a command only when each of its simple
 *   commands is matched by one of them and it is not complex
 *   (`git status *` does not allow `git status; rm -rf x`, nor
 *   `git status $(rm -rf x)`, nor `git status > .git/hooks/pre-commit`),
 *   or when a pattern that expands nothing is the whole command (an
 *   "always" given for that exact command). */
static bool bash_denied(const struct gate_rule *r, const char *cmd, const struct gate_segs *sg)
{
	if (rule_covers_all(r) || glob_match_text(r->pattern, cmd))
		return true;
	for (int i = 0; i < sg->n; i++)
		if (glob_match_n(r->pattern, sg->at[i], sg->len[i]))
			return true;
	return false;
}

/* The allow rule that allows bash's cmd, or -1. */
static int bash_allowed(const struct gate *g, const char *cmd, const struct gate_segs *sg)
{
	for (int i = 0; i < g->nrules; i++) {
		const struct gate_rule *r = &g->rules[i];
		if (r->allow && rule_tool_matches(r, "bash") &&
		    (rule_covers_all(r) || (pattern_literal(r->pattern) && glob_match_text(r->pattern, cmd))))
			return i;
	}
	if (sg->complex || sg->n == 0)
		return -1;
	int last = -1;
	for (int k = 0; k < sg->n; k++) {
		last = -1;
		for (int i = 0; i < g->nrules && last < 0; i++) {
			const struct gate_rule *r = &g->rules[i];
			if (r->allow && rule_tool_matches(r, "bash") && glob_match_n(r->pattern, sg->at[k], sg->len[k]))
				last = i;
		}
		if (last < 0)
			return -1;
	}
	return last;
}

static bool rule_matches(const struct gate_rule *r, const char *tool, const cJSON *input)
{
	if (!rule_tool_matches(r, tool))
		return false;
	if (rule_covers_all(r))
		return true;
	return glob_match(r->pattern, gate_subject(tool, input));
}

int gate_always(const char *tool, const cJSON *input, char rules[GATE_ALWAYS_MAX][GATE_SPEC_MAX], char *desc,
		size_t cap)
{
	/* A rule's pattern is at most 255 bytes: "bash:" and that. */
	char pat[256];
	if (strcmp(tool, "bash")) {
		snprintf(rules[0], GATE_SPEC_MAX, "%s", tool);
		snprintf(desc, cap, "every %s call", tool);
		return 1;
	}
	const char *cmd = gate_subject(tool, input);
	size_t w = strcspn(cmd, " \t\n;&|");
	/* The first word, when it is a plain name (no quoting, expansion or
	 * redirection that would make it something else). */
	bool plain = w > 0 && strcspn(cmd, "'\"\\$`()<>{}=") >= w;
	/* And its subcommand, when the next word is a plain one (git status,
	 * npm test): approving git status is not approving git push. */
	if (plain && (cmd[w] == ' ' || cmd[w] == '\t')) {
		const char *next = cmd + w + strspn(cmd + w, " \t");
		size_t w2 = strcspn(next, " \t\n;&|");
		bool word = w2 > 0 && ((next[0] >= 'a' && next[0] <= 'z') || (next[0] >= 'A' && next[0] <= 'Z'));
		for (size_t i = 0; word && i < w2; i++)
			word = (next[i] >= 'a' && next[i] <= 'z') || (next[i] >= 'A' && next[i] <= 'Z') ||
			       (next[i] >= '0' && next[i] <= '9') || next[i] == '-' || next[i] == '_' || next[i] == ':';
		if (word && next == cmd + w + 1)
			w += 1 + w2;
	}
	if (plain && glob_escape(cmd, w, pat, sizeof(pat) - 2) == 0) {
		snprintf(rules[0], GATE_SPEC_MAX, "bash:%s", pat);
		snprintf(rules[1], GATE_SPEC_MAX, "bash:%s *", pat);
		snprintf(desc, cap, "commands starting with \"%.*s\"", (int)MIN(w, (size_t)80), cmd);
		/* The prefix covers one simple command (gate_split): a command of
		 * several, or a complex one, is allowed again as this whole. */
		struct gate_segs sg;
		gate_split(cmd, &sg);
		if ((sg.complex || sg.n > 1) && glob_escape(cmd, strlen(cmd), pat, sizeof(pat)) == 0) {
			snprintf(rules[2], GATE_SPEC_MAX, "bash:%s", pat);
			size_t l = strlen(desc);
			snprintf(desc + l, cap - l, ", and this whole command");
			return 3;
		}
		return 2;
	}
	if (*cmd && glob_escape(cmd, strlen(cmd), pat, sizeof(pat)) == 0) {
		snprintf(rules[0], GATE_SPEC_MAX, "bash:%s", pat);
		snprintf(desc, cap, "this exact command");
		return 1;
	}
	snprintf(desc, cap, "nothing more (this call once: it is too long for a rule)");
	return 0;
}

const char *gate_hook_name(enum gate_hook h)
{
	static const char *const names[] = { [GATE_HOOK_NONE] = "none", [GATE_HOOK_ALLOW] = "allow",
					     [GATE_HOOK_ASK] = "ask" };
	return (size_t)h < ARRAY_SIZE(names) ? names[h] : "?";
}

/* The rules and the mode alone: GATE_DENY (a deny rule), GATE_ALLOW (an
 * allow rule or the mode; why set), or GATE_NEEDS_PERSON (someone is to be
 * asked; why not set). */
static enum gate_decision by_rules(const struct gate *g, const char *tool, const cJSON *input, bool readonly,
				   char *why, size_t cap)
{
	bool bash = !strcmp(tool, "bash");
	const char *cmd = bash ? gate_subject(tool, input) : NULL;
	struct gate_segs sg;
	if (bash)
		gate_split(cmd, &sg);
	for (int i = 0; i < g->nrules; i++) {
		const struct gate_rule *r = &g->rules[i];
		if (!r->allow && (bash ? rule_tool_matches(r, tool) && bash_denied(r, cmd, &sg)
				       : rule_matches(r, tool, input))) {
			snprintf(why, cap, "denied by the rule --deny '%s%s%s'", r->tool, r->pattern[0] ? ":" : "",
				 r->pattern);
			return GATE_DENY;
		}
	}
	int a = -1;
	if (bash)
		a = bash_allowed(g, cmd, &sg);
	for (int i = 0; !bash && a < 0 && i < g->nrules; i++)
		if (g->rules[i].allow && rule_matches(&g->rules[i], tool, input))
			a = i;
	if (a >= 0) {
		snprintf(why, cap, "allowed by the rule --allow '%s%s%s'", g->rules[a].tool, g->rules[a].pattern[0] ? ":" : "",
			 g->rules[a].pattern);
		return GATE_ALLOW;
	}
	bool mcp = !strncmp(tool, "mcp__", 5);
	bool edit = !strcmp(tool, "write") || !strcmp(tool, "edit");
	if (g->mode == GATE_AUTO || readonly || (g->mode == GATE_EDITS && edit)) {
		snprintf(why, cap, "allowed by the mode (%s)",
			 g->mode == GATE_AUTO ? "auto" : !readonly ? "edits" : mcp ? "the MCP server marks the tool read-only"
										 : "read-only tool");
		return GATE_ALLOW;
	}
	return GATE_NEEDS_PERSON;
}

enum gate_decision gate_check(struct gate *g, const char *tool, const cJSON *input, bool readonly,
			      enum gate_hook hook, char *why, size_t cap)
{
	enum gate_decision d = by_rules(g, tool, input, readonly, why, cap);
	/* A deny rule (--deny, or the user's or the project's "deny") holds
	 * whatever a hook says, as Claude Code's deny rules do. */
	if (d == GATE_DENY) {
		if (hook == GATE_HOOK_ALLOW) {
			size_t l = strlen(why);
			snprintf(why + l, cap - l, " (over a PreToolUse hook's allow)");
		}
		return d;
	}
	if (hook == GATE_HOOK_ALLOW) {
		if (d == GATE_NEEDS_PERSON)
			snprintf(why, cap, "allowed by a PreToolUse hook (permissionDecision allow)");
		return GATE_ALLOW;
	}
	if (d == GATE_ALLOW && hook != GATE_HOOK_ASK)
		return d;
	bool mcp = !strncmp(tool, "mcp__", 5);
	bool edit = !strcmp(tool, "write") || !strcmp(tool, "edit");
	if (!g->ask && hook == GATE_HOOK_ASK) {
		snprintf(why, cap,
			 "refused: a PreToolUse hook asks for a person's approval of this %s call and no one is at a "
			 "terminal", tool);
		return GATE_NEEDS_PERSON;
	}
	if (!g->ask && mcp) {
		snprintf(why, cap,
			 "refused: this MCP tool call (%s) needs a person's approval and no one is at a terminal "
			 "(the run allows it with --approve auto or --allow '%s')", tool, tool);
		return GATE_NEEDS_PERSON;
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
		char rules[GATE_ALWAYS_MAX][GATE_SPEC_MAX], desc[200];
		int n = gate_always(tool, input, rules, desc, sizeof(desc));
		struct err e = { 0 };
		for (int k = 0; k < n; k++)
			gate_add_rule(g, true, rules[k], &e);
		if (!n) {
			snprintf(why, cap, "approved once by the user (no rule fits this call)");
			return GATE_ALLOW;
		}
		int l = snprintf(why, cap, "approved by the user, and from now on");
		for (int k = 0; k < n && l >= 0 && (size_t)l < cap; k++)
			l += snprintf(why + l, cap - (size_t)l, "%s'%s'", !k ? " " : k == n - 1 ? " and " : ", ", rules[k]);
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
