/* Which MCP servers a run starts: the user's config file ("mcpServers"),
 * the workspace's .mcp.json once the person trusts it, and --mcp-config
 * files, later ones overriding earlier ones by name. A project's file runs
 * programs (in the box, but with the task's workspace and hosts), so it is
 * used only after a person approved it at a terminal (remembered by path
 * and content hash) or with trust_project (--trust-project-mcp);
 * otherwise a warning says it was not. */
#pragma once
#include <stdbool.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "base/note.h"
#include "mcp/mcp-config.h"

#define MCPCONF_FILES_MAX 16
struct mcpconf {
	const char *files[MCPCONF_FILES_MAX];	/* --mcp-config's, in order */
	size_t nfiles;
	bool trust_project;
	struct note note;	/* lines for the person: warnings ("warning: ..."), the servers' own */
	struct mcp_config cfg;	/* after mcpconf_load */
};

/* One more file of servers (read by mcpconf_load; path must live as long
 * as c): 0, or -E2BIG past MCPCONF_FILES_MAX with e. */
int mcpconf_add_file(struct mcpconf *c, const char *path, struct err *e);
/* The servers, from the sources in order: user (the user's "mcpServers",
 * or NULL; from: its file, for the messages), the workspace's .mcp.json,
 * the files. ask: whether a person at a terminal approves the project's
 * file (NULL: nobody there). 0, or -errno with e: a file that does not
 * parse or names a server wrongly. */
typedef bool mcpconf_ask_fn(void *ud, const char *path, const struct mcp_config *servers);
int mcpconf_load(struct mcpconf *c, const cJSON *user, const char *from, const char *workspace, mcpconf_ask_fn *ask,
		 void *ud, struct err *e);
void mcpconf_free(struct mcpconf *c);
/* Start the servers in the box c drives (mcp_start), their lines to
 * c->note; the journal j (or NULL) gets an "mcp" record of their state.
 * *ret NULL when there are none. 0, or -errno with e: -ENOMEM when they
 * could not be set up, any other when they could not start in the box. */
struct box_conn;
struct journal;
struct mcp;
int mcpconf_start(struct mcpconf *c, struct box_conn *box, struct journal *j, struct mcp **ret, struct err *e);
/* mcp_status as lines for a person: each server, its state, its tools. */
struct buf;
void mcpconf_describe(const cJSON *status, struct buf *out);
