/* The tables of ward's flags (cmd/flags.h), one per command, and the
 * getopt values of the flags that have no letter of their own. */
#pragma once
#include "cmd/flags.h"

enum {
	FLAG_RUN_TASK_FILE = 1000,
	FLAG_RUN_TASK_INDEX,
	FLAG_RUN_OUT,
	FLAG_RUN_TRUST_TASKS,
	FLAG_RUN_TASK_ROOT,
	FLAG_RUN_KEEP_CHANGES,
	FLAG_RUN_MAX_SUBAGENTS,
	FLAG_RUN_AGENT_DEPTH,
	FLAG_RUN_AGENT_LEDGER,
	FLAG_RUN_AGENT_ID,
	FLAG_RUN_AGENT_PARENT,
	FLAG_RUN_AGENT_SESSION,
	FLAG_RUN_AGENT_MAX_CALLS,
	FLAG_RUN_AGENT_MAX_TOKENS,
	FLAG_RUN_AGENT_MAX_COST,
	FLAG_BOX_SIZE,	/* box pool's --size, taken before the box flags */
};

extern const struct flag_cmd flagtab_ward, flagtab_run, flagtab_chat, flagtab_config, flagtab_acp, flagtab_mcp_list, flagtab_box_create,
	flagtab_box_run, flagtab_box_exec, flagtab_box_pool, flagtab_image_pull, flagtab_image_import,
	flagtab_sessions_prune, flagtab_report, flagtab_sessions, flagtab_diff, flagtab_apply, flagtab_image_ls,
	flagtab_image_prune, flagtab_box_ls, flagtab_vm_image_build;
