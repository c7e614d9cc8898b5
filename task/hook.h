/* The user's programs that ward runs on the host: lifecycle hooks (Claude
 * Code's events and JSON) and --approve-cmd. One way to run them: as the
 * user, in a process group of their own, the event as JSON on stdin, a
 * timeout that never passes the run's deadline; when one answers or runs
 * out of time, its whole group is killed, and so it is when ward dies
 * (task/hook-guard.h). Nothing here prints: what is wrong comes back in
 * a struct err, and a warning (a hook that failed and was passed over, a
 * matcher that matches no tool) goes to the note function the hooks were
 * given. */
#pragma once
#include "base/note.h"
#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/err.h"
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
 * [{type, command, timeout}]}], ...}; from names it in messages): checked,
 * or -EINVAL (-ENOMEM) with one line in e naming what is wrong. nf (or
 * NULL) gets the warnings, when read and when they run. */
struct hooks;
int hooks_new(const cJSON *conf, const char *from, note_fn *nf, void *ud, struct hooks **ret, struct err *e);
void hooks_free(struct hooks *h);
/* The turn's interface to them (ud: the hooks). deadline_ms: the run's. */
bool hooks_turn_run(void *ud, const char *event, const char *tool, const cJSON *ev, cJSON *runs, char *why,
		    size_t why_cap, char *ctx, size_t ctx_cap);
void hooks_set_deadline(struct hooks *h, const int64_t *deadline_ms);
/* h installed as cfg's hooks, bounded by the deadline *deadline_ms holds
 * when one runs (h stays the caller's: hooks_free it after the turn). */
void hooks_install(struct hooks *h, struct turn_cfg *cfg, const int64_t *deadline_ms);
