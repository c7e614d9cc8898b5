/* A command's MCP servers (task/mcpconf.h) as the CLI has them: the
 * flags (mcp_flags of cmd/flagtab.c), and their load and start with one
 * error line and the exit code. */
#pragma once
#include "task/mcpconf.h"

/* 'M' and 'E': 1 handled, 0 not one of them, -1 after an error line. */
int mcprun_flag(struct mcpconf *c, int ch, const char *arg);
/* mcpconf_load with the user's servers of the last run_settings_apply, the
 * warnings on stderr: 0, or EXIT_USAGE after an error line. */
int mcprun_load(struct mcpconf *c, const char *workspace, mcpconf_ask_fn *ask, void *ud);
/* mcpconf_start: 0, or EXIT_FAIL (out of memory) or EXIT_NOBOX (the
 * servers could not start in the box) after an error line. */
int mcprun_start(struct mcpconf *c, struct box_conn *box, struct journal *j, struct mcp **ret);
