/* What the MCP client's files share. Not for callers: they see mcp.h. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* A tools/call result as a box call's result: {outcome ("ok", or "failed"
 * for isError), text (every content block as text, images described,
 * structuredContent as JSON where no text came; capped at MCP_TEXT_HEAD
 * and MCP_TEXT_TAIL with the cap named), images? [{media_type, data}],
 * structured?, output_bytes, truncated, elapsed_ms}. */
cJSON *mcp_result(const cJSON *res, const char *server, int64_t elapsed_ms);
