/* The editor's params as ward takes them. */
#pragma once
#include <stddef.h>

#include <cjson/cJSON.h>

#include "base/buf.h"

/* session/new's mcpServers (ACP's stdio servers: name, command, args,
 * env as [{name, value}]) in .mcp.json's shape, for mcp_config_add: they
 * start in the box as the project's do. NULL, and why, when one is not
 * taken. */
cJSON *acp_params_mcp(const cJSON *list, char *why, size_t cap);
/* A prompt's content blocks as the instruction's text in b (made with
 * its ceiling): text, an embedded resource's text (the editor's buffer),
 * a link's URI. 0, or -1 with why. */
int acp_params_prompt(const cJSON *prompt, struct buf *b, char *why, size_t cap);
