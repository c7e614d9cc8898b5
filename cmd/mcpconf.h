/* Which MCP servers a run starts: the user's config file ("mcpServers"),
 * the workspace's .mcp.json once the person trusts it, and --mcp-config
 * files, later ones overriding earlier ones by name. A project's file runs
 * programs (in the box, but with the task's workspace and hosts), so it is
 * used only after a person approved it at a terminal (remembered by path
 * and content hash) or with --trust-project-mcp; otherwise one line says it
 * was not. */
#pragma once
#include <stdbool.h>

#include "mcp/mcp-config.h"

#define MCPCONF_FILES_MAX 16
/* --mcp-config and --trust-project-mcp: mcp_flags of cmd/flagtab.c. */
struct mcpconf {
	const char *files[MCPCONF_FILES_MAX];
	size_t nfiles;
	bool trust_project;
	struct mcp_config cfg;	/* after mcpconf_load */
};

/* 'M' and 'E': 1 handled, 0 not one of them, -1 after an error line. */
int mcpconf_flag(struct mcpconf *c, int ch, const char *arg);
/* The servers, from the sources in order. ask: whether a person at a
 * terminal approves the project's file (NULL: nobody there). 0, or an exit
 * code after an error line. */
typedef bool mcpconf_ask_fn(void *ud, const char *path, const struct mcp_config *servers);
int mcpconf_load(struct mcpconf *c, const char *workspace, mcpconf_ask_fn *ask, void *ud);
void mcpconf_free(struct mcpconf *c);
/* Start the servers in the box c drives (mcp_start), each line about them
 * on stderr; the journal j (or NULL) gets an "mcp" record of their state.
 * *ret NULL when there are none. 0, or an exit code after an error line. */
struct box_conn;
struct journal;
struct mcp;
int mcpconf_start(struct mcpconf *c, struct box_conn *box, struct journal *j, struct mcp **ret);
/* mcp_status as lines for a person: each server, its state, its tools. */
struct buf;
void mcpconf_describe(const cJSON *status, struct buf *out);
