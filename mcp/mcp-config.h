/* The MCP servers a run is given, in the shape users already have
 * (Claude Code's .mcp.json): {"mcpServers": {"NAME": {"command", "args",
 * "env"} | {"type": "http", "url", "headers"}}}, with Codex's
 * startup_timeout_sec and tool_timeout_sec. ${VAR} and ${VAR:-default} in
 * command, args, env, url and headers are expanded from ward's own
 * environment, as Claude Code does. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/err.h"

#define MCP_SERVERS_MAX 32
#define MCP_NAME_MAX 40
/* How long a server has to answer initialize and list its tools, and a
 * tool call's limit, unless its entry says otherwise. */
#define MCP_STARTUP_MS_DEFAULT 30000
#define MCP_CALL_MS_DEFAULT 120000
#define MCP_CALL_MS_MAX (3600 * 1000)

enum mcp_transport { MCP_STDIO, MCP_HTTP };

struct mcp_server_cfg {
	char name[MCP_NAME_MAX + 1];
	enum mcp_transport transport;
	char *command;		/* stdio */
	char **args;
	size_t nargs;
	char **env;		/* "K=V" */
	size_t nenv;
	char *url;		/* http */
	char **headers;		/* "K: V" */
	size_t nheaders;
	int64_t startup_ms, call_ms;
	char source[256];	/* the file it came from, for messages */
};

struct mcp_config {
	struct mcp_server_cfg v[MCP_SERVERS_MAX];
	size_t n;
};

/* The servers of one "mcpServers" object (from is the file, for
 * messages), into c (emptied first). <0 with one line in e for a malformed
 * entry, and c empty. */
int mcp_config_parse(struct mcp_config *c, const cJSON *servers, const char *from, struct err *e);
/* src's servers moved into dst (src is left empty): a server named again
 * replaces the earlier one, so a later source overrides an earlier one. */
int mcp_config_merge(struct mcp_config *dst, struct mcp_config *src, struct err *e);
/* Both: nothing of servers is added when one entry is malformed. */
int mcp_config_add(struct mcp_config *c, const cJSON *servers, const char *from, struct err *e);
/* The same from a file holding {"mcpServers": {...}}. */
int mcp_config_add_file(struct mcp_config *c, const char *path, struct err *e);
void mcp_config_free(struct mcp_config *c);
