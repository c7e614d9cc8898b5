/* The gate: modes, rules (deny first), and a person's answers. */
#include "turn/gate.h"
#include "tools/tool.h"
#include "tap.h"

static int answers[8], asked;

static int ask(void *ud, const char *tool, const cJSON *input, char *reason, size_t cap)
{
	snprintf(reason, cap, "because");
	return answers[asked++];
}

/* A command as a test's description shows it: a newline as \n. */
static const char *shown(const char *cmd)
{
	static char buf[256];
	size_t o = 0;
	for (const char *c = cmd; *c && o + 3 < sizeof(buf); c++) {
		if (*c == '\n') {
			buf[o++] = '\\';
			buf[o++] = 'n';
		} else {
			buf[o++] = *c;
		}
	}
	buf[o] = 0;
	return buf;
}

static enum gate_decision check(struct gate *g, const char *tool, const char *input_json)
{
	cJSON *in = cJSON_Parse(input_json);
	char why[600];
	const struct tool *t = tool_lookup(tool);
	enum gate_decision d = gate_check(g, tool, in, t && t->readonly, GATE_HOOK_NONE, why, sizeof(why));
	cJSON_Delete(in);
	return d;
}

int main(void)
{
	struct gate g = { .mode = GATE_ASK };
	struct err e = { 0 };
	is_int(check(&g, "read", "{\"path\":\"a\"}"), GATE_ALLOW, "ask mode: a read-only tool runs");
	is_int(check(&g, "write", "{\"path\":\"a\"}"), GATE_NEEDS_PERSON, "ask mode: a write needs a person");
	is_int(check(&g, "bash", "{\"command\":\"ls\"}"), GATE_NEEDS_PERSON, "ask mode: bash needs a person");
	g.mode = GATE_EDITS;
	is_int(check(&g, "edit", "{\"path\":\"a\"}"), GATE_ALLOW, "edits mode: an edit runs");
	is_int(check(&g, "bash", "{\"command\":\"ls\"}"), GATE_NEEDS_PERSON, "edits mode: bash needs a person");
	g.mode = GATE_AUTO;
	is_int(check(&g, "bash", "{\"command\":\"rm -rf x\"}"), GATE_ALLOW, "auto mode: bash runs");

	ok(gate_add_rule(&g, false, "bash:rm -rf*", &e) == 0, "a deny rule");
	is_int(check(&g, "bash", "{\"command\":\"rm -rf x\"}"), GATE_DENY, "deny matches the command");
	is_int(check(&g, "bash", "{\"command\":\"rm x\"}"), GATE_ALLOW, "positive twin: another command runs");
	ok(gate_add_rule(&g, true, "bash", &e) == 0, "an allow rule for every bash call");
	is_int(check(&g, "bash", "{\"command\":\"rm -rf y\"}"), GATE_DENY, "deny is checked before allow");

	struct gate g2 = { .mode = GATE_ASK };
	ok(gate_add_rule(&g2, true, "bash:git status*", &e) == 0, "an allow rule with a pattern");
	is_int(check(&g2, "bash", "{\"command\":\"git status --short\"}"), GATE_ALLOW, "allow matches");
	is_int(check(&g2, "bash", "{\"command\":\"git push\"}"), GATE_NEEDS_PERSON, "and only what it matches");
	is_int(check(&g2, "bash", "{\"command\":\"git status src/a/b\"}"), GATE_ALLOW,
	       "a command is one string: * runs over /");
	/* bash's command as the shell runs it: an allow pattern covers one
	 * simple command; a chain needs each part allowed; a substitution, a
	 * subshell or a redirection to a file is never allowed by a pattern. */
	static const char *const not_allowed[] = {
		"git status; rm -rf x", "git status && rm -rf x", "git status || rm -rf x", "git status | sh",
		"git status & rm -rf x", "git status\nrm -rf x", "git status $(rm -rf x)", "git status `rm -rf x`",
		"git status \"$(rm -rf x)\"", "git status <(rm -rf x)", "(rm -rf x)", "{ rm -rf x; }",
		"git status > .git/hooks/pre-commit", "git status >>~/.bashrc", "git status 2>out",
	};
	for (size_t i = 0; i < sizeof(not_allowed) / sizeof(not_allowed[0]); i++) {
		cJSON *in = cJSON_CreateObject();
		cJSON_AddStringToObject(in, "command", not_allowed[i]);
		char why[600];
		is_int(gate_check(&g2, "bash", in, false, GATE_HOOK_NONE, why, sizeof(why)), GATE_NEEDS_PERSON,
		       "bash:git status* does not allow %s", shown(not_allowed[i]));
		cJSON_Delete(in);
	}
	static const char *const allowed[] = {
		"git status && git status --short", "git status; git status -s", "git status 2>&1", "git status >/dev/null",
		"git status 'a;b' \"c && d\" e\\;f", "git status 2>/dev/null && git status",
	};
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
		cJSON *in = cJSON_CreateObject();
		cJSON_AddStringToObject(in, "command", allowed[i]);
		char why[600];
		is_int(gate_check(&g2, "bash", in, false, GATE_HOOK_NONE, why, sizeof(why)), GATE_ALLOW,
		       "twin: bash:git status* allows %s", allowed[i]);
		cJSON_Delete(in);
	}
	is_int(check(&g2, "bash", "{\"command\":\"git status | head -5\"}"), GATE_NEEDS_PERSON,
	       "a pipeline needs each command allowed");
	ok(gate_add_rule(&g2, true, "bash:head *", &e) == 0, "another allow rule");
	is_int(check(&g2, "bash", "{\"command\":\"git status | head -5\"}"), GATE_ALLOW,
	       "twin: each command allowed by a rule of its own: the pipeline runs");
	ok(gate_add_rule(&g2, true, "bash:cd x && make", &e) == 0, "a rule naming one whole command (an always)");
	is_int(check(&g2, "bash", "{\"command\":\"cd x && make\"}"), GATE_ALLOW, "allows that command");
	is_int(check(&g2, "bash", "{\"command\":\"cd x && make; rm -rf y\"}"), GATE_NEEDS_PERSON,
	       "and not that command with more after it");
	struct gate g3 = { .mode = GATE_AUTO };
	ok(gate_add_rule(&g3, false, "bash:rm *", &e) == 0, "a deny rule over rm");
	static const char *const denied[] = { "ls; rm -rf x", "ls && rm -rf x", "ls | rm -rf x", "echo $(rm -rf x)",
					      "echo `rm -rf x`", "(rm -rf x)", "ls\nrm -rf x" };
	for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++) {
		cJSON *in = cJSON_CreateObject();
		cJSON_AddStringToObject(in, "command", denied[i]);
		char why[600];
		is_int(gate_check(&g3, "bash", in, false, GATE_HOOK_NONE, why, sizeof(why)), GATE_DENY,
		       "bash:rm * denies %s", shown(denied[i]));
		cJSON_Delete(in);
	}
	is_int(check(&g3, "bash", "{\"command\":\"echo 'rm -rf x; ok'\"}"), GATE_ALLOW,
	       "twin: rm inside quotes is an argument, not a command: auto runs it");
	struct gate g4 = { .mode = GATE_ASK };
	ok(gate_add_rule(&g4, true, "bash:*", &e) == 0, "bash:* allows every command");
	is_int(check(&g4, "bash", "{\"command\":\"a; b $(c) > d\"}"), GATE_ALLOW, "a complex one too");

	/* Paths are matched as find and .gitignore match them (tools/glob.h). */
	ok(gate_add_rule(&g2, true, "write:src/*", &e) == 0, "a path rule");
	is_int(check(&g2, "write", "{\"path\":\"src/b.c\"}"), GATE_ALLOW, "a path rule matches the path");
	is_int(check(&g2, "write", "{\"path\":\"src/a/b.c\"}"), GATE_NEEDS_PERSON, "its * stays in one segment");
	is_int(check(&g2, "write", "{\"path\":\"README\"}"), GATE_NEEDS_PERSON, "and only that path");
	ok(gate_add_rule(&g2, true, "edit:lib/**", &e) == 0, "a path rule with **");
	is_int(check(&g2, "edit", "{\"path\":\"lib/a/b.c\"}"), GATE_ALLOW, "** matches at any depth");
	is_int(check(&g2, "edit", "{\"path\":\"lib\"}"), GATE_NEEDS_PERSON, "but not the directory itself");

	ok(gate_add_rule(&g2, true, "nosuchtool", &e) < 0, "an unknown tool in a rule is refused");
	like(e.msg, "no tool named nosuchtool", "and says so");
	ok(gate_add_rule(&g2, true, ":x", &e) < 0, "a rule without a tool is refused");

	/* MCP tools: named by globs; a read-only one runs where reads run. */
	struct gate m = { .mode = GATE_EDITS };
	char why[600];
	cJSON *none = cJSON_CreateObject();
	is_int(gate_check(&m, "mcp__t__delete_all", none, false, GATE_HOOK_NONE, why, sizeof(why)), GATE_NEEDS_PERSON,
	       "edits mode: an MCP tool that may change something needs a person");
	like(why, "--allow 'mcp__t__delete_all'", "and the line says how to allow it");
	is_int(gate_check(&m, "mcp__t__readonly_peek", none, true, GATE_HOOK_NONE, why, sizeof(why)), GATE_ALLOW,
	       "edits mode: an MCP tool marked read-only runs");
	like(why, "MCP server marks the tool read-only", "and says why");
	m.mode = GATE_ASK;
	is_int(gate_check(&m, "mcp__t__readonly_peek", none, true, GATE_HOOK_NONE, why, sizeof(why)), GATE_ALLOW,
	       "ask mode: a read-only MCP tool runs");
	ok(gate_add_rule(&m, true, "mcp__t__*", &e) == 0, "an allow rule by glob over MCP names");
	ok(gate_add_rule(&m, false, "mcp__*__delete*", &e) == 0, "a deny rule by glob over MCP names");
	is_int(gate_check(&m, "mcp__t__delete_all", none, false, GATE_HOOK_NONE, why, sizeof(why)), GATE_DENY,
	       "the deny rule wins over the allow rule");
	like(why, "--deny 'mcp__*__delete*'", "and is named");
	is_int(gate_check(&m, "mcp__t__echo", none, false, GATE_HOOK_NONE, why, sizeof(why)), GATE_ALLOW,
	       "positive twin: the allow rule lets another tool of the server run");
	is_int(gate_check(&m, "mcp__other__echo", none, false, GATE_HOOK_NONE, why, sizeof(why)), GATE_NEEDS_PERSON,
	       "and only that server's");
	is_int(gate_check(&m, "bash", none, false, GATE_HOOK_NONE, why, sizeof(why)), GATE_NEEDS_PERSON,
	       "an MCP glob does not match a built-in tool");
	ok(gate_add_rule(&m, true, "mcp__t__echo:x*", &e) < 0, "an MCP rule with a pattern is refused");
	like(e.msg, "name alone", "and says the rule is the name alone");
	cJSON_Delete(none);

	struct gate p = { .mode = GATE_ASK, .ask = ask };
	answers[0] = 'y';
	answers[1] = 'n';
	answers[2] = 'a';
	answers[3] = 'y';
	answers[4] = 'y';
	answers[5] = 'q';
	is_int(check(&p, "bash", "{\"command\":\"make test\"}"), GATE_ALLOW, "a person says yes once");
	is_int(check(&p, "bash", "{\"command\":\"make test\"}"), GATE_DENY, "then no");
	is_int(check(&p, "bash", "{\"command\":\"make lint\"}"), GATE_ALLOW, "then always (for make lint)");
	is_int(check(&p, "bash", "{\"command\":\"make lint --fix src\"}"), GATE_ALLOW,
	       "always: make lint with more arguments runs unasked");
	is_int(check(&p, "bash", "{\"command\":\"make lint\"}"), GATE_ALLOW, "always: the prefix alone too");
	is_int(asked, 3, "without asking");
	is_int(check(&p, "bash", "{\"command\":\"make all\"}"), GATE_ALLOW, "another subcommand of make is not the same command");
	is_int(asked, 4, "so it is asked");
	is_int(check(&p, "bash", "{\"command\":\"make linter\"}"), GATE_ALLOW, "nor a longer word");
	is_int(asked, 5, "asked too");
	is_int(check(&p, "bash", "{\"command\":\"cargo build\"}"), GATE_ABORT, "another command is asked: stop the turn");
	/* Approving git status is not approving git push. */
	struct gate gs = { .mode = GATE_ASK, .ask = ask };
	asked = 0;
	answers[0] = 'a';
	answers[1] = 'n';
	is_int(check(&gs, "bash", "{\"command\":\"git status\"}"), GATE_ALLOW, "always for git status");
	is_int(check(&gs, "bash", "{\"command\":\"git status --short\"}"), GATE_ALLOW, "twin: git status --short runs unasked");
	is_int(asked, 1, "without asking");
	is_int(check(&gs, "bash", "{\"command\":\"git push origin main\"}"), GATE_DENY, "git push is asked (and refused)");
	is_int(asked, 2, "it was asked");
	/* A first word with options after it: the word alone. */
	struct gate lo = { .mode = GATE_ASK, .ask = ask };
	asked = 0;
	answers[0] = 'a';
	is_int(check(&lo, "bash", "{\"command\":\"ls -la src\"}"), GATE_ALLOW, "always for ls -la");
	is_int(check(&lo, "bash", "{\"command\":\"ls docs\"}"), GATE_ALLOW, "covers ls (its options are not a subcommand)");
	is_int(asked, 1, "unasked");
	struct gate p2 = { .mode = GATE_ASK, .ask = ask };
	asked = 0;
	answers[0] = 'a';
	answers[1] = 'n';
	is_int(check(&p2, "bash", "{\"command\":\"l* -la\"}"), GATE_ALLOW, "always for a word with a glob character");
	is_int(check(&p2, "bash", "{\"command\":\"ls -la\"}"), GATE_DENY, "the word is literal, not a pattern: ls is asked");
	is_int(check(&p2, "bash", "{\"command\":\"l* /tmp\"}"), GATE_ALLOW, "and the word itself still runs");
	asked = 0;
	answers[0] = 'a';
	answers[1] = 'n';
	struct gate p3 = { .mode = GATE_ASK, .ask = ask };
	is_int(check(&p3, "bash", "{\"command\":\"$(rm -rf x) && ls\"}"), GATE_ALLOW,
	       "always for a command whose first word is not a plain name");
	is_int(check(&p3, "bash", "{\"command\":\"$(touch y) && ls\"}"), GATE_DENY, "is that exact command only");
	is_int(check(&p3, "bash", "{\"command\":\"$(rm -rf x) && ls\"}"), GATE_ALLOW, "which then runs unasked");
	is_int(asked, 2, "asked twice");
	char rules[GATE_ALWAYS_MAX][GATE_SPEC_MAX], desc[200];
	cJSON *in = cJSON_Parse("{\"command\":\"git push --force\"}");
	is_int(gate_always("bash", in, rules, desc, sizeof(desc)), 2, "always for git push: two rules");
	is_str(rules[0], "bash:git push", "the command and its subcommand alone");
	is_str(rules[1], "bash:git push *", "or followed by a space");
	is_str(desc, "commands starting with \"git push\"", "and a person is told so");
	cJSON_Delete(in);
	in = cJSON_Parse("{\"path\":\"a.txt\"}");
	is_int(gate_always("write", in, rules, desc, sizeof(desc)), 1, "always for a write: one rule");
	is_str(desc, "every write call", "every write");
	cJSON_Delete(in);

	/* What a PreToolUse hook says (permissionDecision): allow runs a call
	 * nobody would be asked about, ask asks about one that would run; a
	 * deny rule holds over allow. */
	struct gate h = { .mode = GATE_ASK };
	in = cJSON_Parse("{\"command\":\"make\"}");
	is_int(gate_check(&h, "bash", in, false, GATE_HOOK_NONE, why, sizeof(why)), GATE_NEEDS_PERSON,
	       "ask mode, headless: bash needs a person");
	is_int(gate_check(&h, "bash", in, false, GATE_HOOK_ALLOW, why, sizeof(why)), GATE_ALLOW,
	       "a hook's allow runs it");
	like(why, "allowed by a PreToolUse hook", "and the line names the hook");
	ok(gate_add_rule(&h, false, "bash:make*", &e) == 0, "a deny rule");
	is_int(gate_check(&h, "bash", in, false, GATE_HOOK_ALLOW, why, sizeof(why)), GATE_DENY,
	       "a deny rule holds over a hook's allow");
	like(why, "denied by the rule --deny 'bash:make*' (over a PreToolUse hook's allow)", "and says so");
	is_int(gate_check(&h, "read", in, true, GATE_HOOK_NONE, why, sizeof(why)), GATE_ALLOW, "a read runs");
	is_int(gate_check(&h, "read", in, true, GATE_HOOK_ASK, why, sizeof(why)), GATE_NEEDS_PERSON,
	       "a hook's ask: the read needs a person, and nobody is there");
	like(why, "a PreToolUse hook asks for a person's approval", "and the line names the hook");
	struct gate ha = { .mode = GATE_AUTO, .ask = ask };
	asked = 0;
	answers[0] = 'n';
	answers[1] = 'y';
	is_int(gate_check(&ha, "bash", in, false, GATE_HOOK_ASK, why, sizeof(why)), GATE_DENY,
	       "auto mode with a hook's ask: the person is asked, and says no");
	is_int(gate_check(&ha, "bash", in, false, GATE_HOOK_NONE, why, sizeof(why)), GATE_ALLOW,
	       "twin: without the hook's ask the mode runs it");
	is_int(asked, 1, "unasked");
	struct gate hp = { .mode = GATE_ASK, .ask = ask };
	is_int(gate_check(&hp, "bash", in, false, GATE_HOOK_ALLOW, why, sizeof(why)), GATE_ALLOW,
	       "a hook's allow with a person there: runs");
	is_int(asked, 1, "without asking them");
	cJSON_Delete(in);
	return tap_done();
}
