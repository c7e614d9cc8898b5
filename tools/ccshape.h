/* Claude Code's names for ward's tools and their fields, both ways, in one
 * table (tools/ccshape.c): a hook written for Claude Code sees a call as
 * Claude Code would show it (tool_name "Bash", tool_input {"file_path"}),
 * and what it gives back (updatedInput) is read in the same names. An MCP
 * tool's name (mcp__SERVER__TOOL) is the same in both. */
#pragma once
#include <stdbool.h>

#include <cjson/cJSON.h>

#include "base/err.h"

/* Claude Code's name for ward's tool `ward` ("bash" -> "Bash"); the name
 * itself when Claude Code has no other (an MCP tool, an unknown name). */
const char *ccshape_name(const char *ward);

/* Every tool name either spelling has, NULL-terminated (ward's, then
 * Claude Code's): what a hook's matcher is tried against when it is
 * loaded, to tell one that can match no tool. */
extern const char *const ccshape_names[];

/* A built-in tool's input as Claude Code names it: a new object (fields
 * renamed, bash's timeout in milliseconds, grep's mode values); a field
 * the table does not know keeps its name. NULL when out of memory. */
cJSON *ccshape_to_cc(const char *ward, const cJSON *input);

/* The way back: an input in Claude Code's names (or ward's: a field in
 * ward's own name is taken as it is) for ward's tool `ward`, as a new
 * object. A field only Claude Code has and that changes nothing (Bash's
 * description) is dropped; any other unknown field is kept, for the
 * tool's own check to refuse. -EINVAL when one field is given in both
 * spellings (path and file_path), -ENOMEM; e says which. */
int ccshape_from_cc(const char *ward, const cJSON *input, cJSON **ret, struct err *e);
