/* Claude Code's tool and field names against ward's (tools/ccshape.h):
 * each tool there and back, bash's timeout in ms, grep's values, a field
 * in both spellings refused, and the matcher's list of names. */
#include <stdbool.h>

#include "base/jsonprint.h"
#include "tools/ccshape.h"
#include "tools/tool.h"
#include "tap.h"

static char *to_cc(const char *tool, const char *json)
{
	cJSON *in = cJSON_Parse(json), *o = ccshape_to_cc(tool, in);
	char *s = jsonprint_text(o);
	cJSON_Delete(in);
	cJSON_Delete(o);
	return s;
}

static char *from_cc(const char *tool, const char *json, struct err *e)
{
	cJSON *in = cJSON_Parse(json), *o = NULL;
	char *s = ccshape_from_cc(tool, in, &o, e) < 0 ? NULL : jsonprint_text(o);
	cJSON_Delete(in);
	cJSON_Delete(o);
	return s;
}

int main(void)
{
	static const char *const names[][2] = { { "bash", "Bash" }, { "read", "Read" }, { "write", "Write" },
						{ "edit", "Edit" }, { "grep", "Grep" }, { "find", "Glob" },
						{ "ls", "LS" }, { "job_output", "BashOutput" }, { "job_kill", "KillShell" },
						{ "job_list", "job_list" }, { "mcp__gh__issue", "mcp__gh__issue" } };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		is_str(ccshape_name(names[i][0]), names[i][1], "%s is Claude Code's %s", names[i][0], names[i][1]);
	/* Every built-in tool has its Claude Code name in the matcher's list. */
	for (const struct tool *const *t = tool_table; *t; t++) {
		bool w = false, c = false;
		for (const char *const *n = ccshape_names; *n; n++) {
			w |= !strcmp(*n, (*t)->name);
			c |= !strcmp(*n, ccshape_name((*t)->name));
		}
		ok(w && c, "the matcher's names hold %s and %s", (*t)->name, ccshape_name((*t)->name));
	}

	struct err e = { 0 };
	char *s;
	is_str(s = to_cc("read", "{\"path\":\"a.txt\",\"offset\":3,\"limit\":9}"),
	       "{\"file_path\":\"a.txt\",\"offset\":3,\"limit\":9}", "read: path is file_path");
	free(s);
	is_str(s = to_cc("edit", "{\"path\":\"a\",\"old_string\":\"x\",\"new_string\":\"y\",\"replace_all\":true}"),
	       "{\"file_path\":\"a\",\"old_string\":\"x\",\"new_string\":\"y\",\"replace_all\":true}", "edit");
	free(s);
	is_str(s = to_cc("bash", "{\"command\":\"make\",\"timeout\":30}"), "{\"command\":\"make\",\"timeout\":30000}",
	       "bash: the timeout in milliseconds");
	free(s);
	is_str(s = to_cc("grep", "{\"pattern\":\"x\",\"ignore_case\":true,\"mode\":\"files\",\"context\":2,\"limit\":5}"),
	       "{\"pattern\":\"x\",\"-i\":true,\"output_mode\":\"files_with_matches\",\"-C\":2,\"head_limit\":5}",
	       "grep: Claude Code's field names and mode");
	free(s);
	is_str(s = to_cc("mcp__a__b", "{\"path\":\"x\"}"), "{\"path\":\"x\"}", "an MCP tool's input as it is");
	free(s);

	is_str(s = from_cc("write", "{\"file_path\":\"b.txt\",\"content\":\"hi\"}", &e), "{\"path\":\"b.txt\",\"content\":\"hi\"}",
	       "back: file_path is path");
	free(s);
	is_str(s = from_cc("write", "{\"path\":\"b.txt\",\"content\":\"hi\"}", &e), "{\"path\":\"b.txt\",\"content\":\"hi\"}",
	       "back: ward's own name is taken too");
	free(s);
	is_str(s = from_cc("bash", "{\"command\":\"make\",\"timeout\":1500,\"description\":\"Build\"}", &e),
	       "{\"command\":\"make\",\"timeout\":2}", "back: ms to s rounded up, the description dropped");
	free(s);
	is_str(s = from_cc("grep", "{\"pattern\":\"x\",\"output_mode\":\"files_with_matches\",\"head_limit\":3}", &e),
	       "{\"pattern\":\"x\",\"mode\":\"files\",\"limit\":3}", "back: grep's fields and mode");
	free(s);
	is_str(s = from_cc("bash", "{\"command\":\"x\",\"run_in_background\":true}", &e),
	       "{\"command\":\"x\",\"background\":true}", "back: Bash's run_in_background is bash's background");
	free(s);
	is_str(s = from_cc("job_kill", "{\"shell_id\":3}", &e), "{\"id\":3}", "back: KillShell's shell_id is job_kill's id");
	free(s);
	is_str(s = from_cc("bash", "{\"command\":\"x\",\"dangerouslyDisableSandbox\":true}", &e),
	       "{\"command\":\"x\",\"dangerouslyDisableSandbox\":true}", "back: a field ward has not is kept (the tool refuses it)");
	free(s);
	ok(!(s = from_cc("read", "{\"file_path\":\"a\",\"path\":\"b\"}", &e)), "back: file_path and path together refused");
	like(e.msg, "\"path\" is given twice", "saying so: %s", e.msg);
	free(s);
	/* There and back is the same input. */
	const char *ins[][2] = { { "read", "{\"path\":\"a\",\"limit\":2}" }, { "bash", "{\"command\":\"ls\",\"timeout\":7}" },
				 { "grep", "{\"pattern\":\"p\",\"path\":\"src\",\"glob\":\"*.c\",\"mode\":\"count\"}" },
				 { "find", "{\"pattern\":\"*.c\",\"path\":\"src\"}" }, { "ls", "{\"path\":\"src\"}" } };
	for (size_t i = 0; i < sizeof(ins) / sizeof(ins[0]); i++) {
		char *c = to_cc(ins[i][0], ins[i][1]);
		char *b = from_cc(ins[i][0], c, &e);
		is_str(b, ins[i][1], "%s: there and back", ins[i][0]);
		free(c);
		free(b);
	}
	return tap_done();
}
