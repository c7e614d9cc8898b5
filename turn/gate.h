/* The approval gate, asked before each call is dispatched. Deny rules
 * first, then allow rules, then the mode: ask (everything that writes or
 * runs needs a person), edits (file edits run, bash needs a person), auto
 * (everything inside the box runs). A rule is TOOL or TOOL:PATTERN, where
 * PATTERN is a glob (tools/glob.h) over bash's command, as one string, or
 * a file tool's path, segment by segment as find matches one. An MCP tool
 * (mcp__SERVER__TOOL) is named by a glob over its whole name, with no
 * pattern: mcp__github__*, mcp__*__delete*. */
#pragma once
#include <stdbool.h>

#include <cjson/cJSON.h>

#include "base/err.h"

enum gate_mode { GATE_ASK, GATE_EDITS, GATE_AUTO };

enum gate_decision {
	GATE_ALLOW,		/* run it */
	GATE_DENY,		/* a rule or a person said no: the model is told */
	GATE_NEEDS_PERSON,	/* nobody to ask: refused, the model is told */
	GATE_ABORT,		/* a person stopped the turn */
};
const char *gate_decision_name(enum gate_decision d);

#define GATE_RULES_MAX 64
struct gate_rule {
	bool allow;
	char tool[128];		/* a tool, "*", or a glob over mcp__SERVER__TOOL */
	char pattern[256];	/* "" matches every call of the tool */
};

/* A person's answer to one call: 'y' once, 'n' refuse, 'a' always (this
 * tool, or for bash this command's first word), 'q' abort the turn. */
typedef int gate_ask_fn(void *ud, const char *tool, const cJSON *input, char *reason, size_t cap);

struct gate {
	enum gate_mode mode;
	struct gate_rule rules[GATE_RULES_MAX];
	int nrules;
	gate_ask_fn *ask;	/* NULL: nobody at a terminal */
	void *ask_ud;
};

#define GATE_SPEC_MAX 300
/* A simple command longer than this is approved by no pattern (only by a
 * rule of the tool alone, or `*`). */
#define GATE_COMMAND_MATCH_MAX 8192

int gate_mode_parse(const char *s, enum gate_mode *ret);
const char *gate_mode_name(enum gate_mode m);
/* The allow rules 'a' (always) adds for a call, and a line for a person
 * saying what they allow. bash: the command's first word, alone or followed
 * by a space, taken literally ("make" is not "makeover"); when that word is
 * not a plain name, this exact command. A plain second word goes with the
 * first (a subcommand: "git status", "npm test", after one space), so
 * approving git status does not approve git push. A prefix covers one
 * simple command (see rule matching in gate.c), so for a command of several,
 * or one with a substitution or a redirection to a file, this exact command
 * is a third rule. Other tools: every call of the tool. Returns how many
 * rules (0: none fits; 'a' then allows once). */
#define GATE_ALWAYS_MAX 3
int gate_always(const char *tool, const cJSON *input, char rules[GATE_ALWAYS_MAX][GATE_SPEC_MAX], char *desc,
		size_t cap);
/* e.g. "bash:git status*", "write", "edit:src/x*" */
int gate_add_rule(struct gate *g, bool allow, const char *spec, struct err *e);
/* What the PreToolUse hooks said of a call (Claude Code's
 * permissionDecision; a deny has refused it before the gate). allow: run it
 * without asking anyone (a person, --approve-cmd) where the rules or the
 * mode would ask; a deny rule still refuses it. ask: a person (or
 * --approve-cmd) is asked where an allow rule or the mode would run it;
 * with nobody to ask it is refused as any call that needs a person. */
enum gate_hook { GATE_HOOK_NONE, GATE_HOOK_ALLOW, GATE_HOOK_ASK };
const char *gate_hook_name(enum gate_hook h);

/* The decision and a line saying why (for the model and the journal).
 * readonly: the tool only reads (a built-in tool's own flag; an MCP tool's
 * annotations.readOnlyHint), so the ask and edits modes let it run. hook:
 * what the PreToolUse hooks said; the line names the hook when its word
 * decided the call. */
enum gate_decision gate_check(struct gate *g, const char *tool, const cJSON *input, bool readonly,
			      enum gate_hook hook, char *why, size_t cap);
