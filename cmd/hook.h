/* The user's programs that ward runs on the host: lifecycle hooks (Claude
 * Code's events and JSON) and --approve-cmd. One way to run them: as the
 * user, in a process group of their own, the event as JSON on stdin, a
 * timeout that never passes the run's deadline; when one answers or runs
 * out of time, its whole group is killed, and so it is when ward dies
 * (cmd/hook-guard.h). */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "turn/turn.h"

/* A hook's timeout when it names none (Claude Code's: 60 s). */
#define HOOK_TIMEOUT_MS_DEFAULT 60000

struct hook_run {
	int status;		/* the wait status; meaningful when !timed_out */
	bool timed_out, by_deadline;
	bool interrupted;	/* ward got SIGTERM, SIGINT or SIGHUP (left pending) */
	int64_t elapsed_ms;
	char out[8192];		/* what it printed, cut at the size */
	char err[2048];
};

/* Run `sh -c cmd` with input on its stdin (WARD_TOOL=tool in its
 * environment when tool is set), for at most timeout_ms, never past
 * deadline_ms (absolute, monotonic; 0: none), and not past a stop signal
 * ward has blocked for its loop. Its process group is killed at the end,
 * whichever it is. 0, or -errno when it could not start. */
int hook_exec(const char *cmd, const char *input, const char *tool, int64_t timeout_ms, int64_t deadline_ms,
	      struct hook_run *ret);

/* The hooks of the user's config file ({"PreToolUse": [{matcher, hooks:
 * [{type, command, timeout}]}], ...}): checked, or -1 after an error line
 * naming what is wrong. */
struct hooks;
int hooks_new(const cJSON *conf, const char *from, struct hooks **ret);
void hooks_free(struct hooks *h);
/* The turn's interface to them (ud: the hooks). deadline_ms: the run's. */
bool hooks_turn_run(void *ud, const char *event, const char *tool, const cJSON *ev, cJSON *runs, char *why,
		    size_t why_cap, char *ctx, size_t ctx_cap);
void hooks_set_deadline(struct hooks *h, const int64_t *deadline_ms);
/* The hooks of the user's config file (settings_hooks) installed in cfg,
 * bounded by the deadline *deadline_ms holds when one runs: 0 (*ret NULL
 * when there are none; hooks_free it), or EXIT_USAGE after an error line.
 * ward run and the terminal session both start this way. */
int hooks_install(struct turn_cfg *cfg, const int64_t *deadline_ms, struct hooks **ret);
