/* Subagents: the `task` tool. A call hands a prompt to a child, a ward run
 * of its own (the same providers, gate rules and hooks: the parent's flags
 * are passed on), in a box forked from the parent's at that moment (or the
 * parent's own box, read-only, for a read-only child). Children run side
 * by side, up to --max-subagents at once; the rest wait. The task's
 * budgets are totals over all of them (turn/ledger.h). When the last
 * child of a round ends, their changes are merged into the parent's
 * workspace layer together (workspace/wsmerge.h), conflicts reported and
 * never applied, and each call's result is the child's final answer with
 * what was merged and what conflicted. A child is a process group of the
 * parent's: a cancel sends it SIGTERM (it cancels its own calls and
 * leaves), and freeing the agents kills what is left and destroys the
 * children's boxes. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/err.h"

struct loop;
struct ledger;
struct task_limits;

/* Defaults, pinned in tests/unit/test-defaults.c. */
#define AGENT_MAX_DEFAULT 3	/* --max-subagents: children running at once */
#define AGENT_DEPTH_MAX 2	/* a child's child is the deepest */
#define AGENT_CHILDREN_MAX 64	/* children over one run */
#define AGENT_LINE_MAX (4u << 20)	/* one event line of a child's */
/* A child asked to stop (SIGTERM) is killed this long after. */
#define AGENT_STOP_GRACE_MS 5000
#define AGENT_TOOL "task"

struct agents_cfg {
	const char *exe;		/* ward itself */
	const char *const *argv;	/* the flags passed on to each child */
	size_t nargv;
	const char *box;		/* the parent's box */
	const char *workspace;		/* the tree under its layer; NULL: none */
	int max;			/* at once; 0: AGENT_MAX_DEFAULT */
	int depth;			/* the parent's: 0 for a run a person started */
	struct ledger *ledger;
	const struct task_limits *b;	/* the task's */
	const char *replay_dir;		/* a replay parent's script directory: a child's model is replay:NAME there */
	const char *id;			/* the parent's agent id; NULL: "main" (its children: a1, a2, ...) */
	const char *session;		/* the parent's session, which each child's journal names; NULL: none */
};

struct agents;
typedef void agent_result_cb(void *ud, uint32_t id, cJSON *result);
/* A child's event line (its --json), for the parent's front ends. */
typedef void agent_event_cb(void *ud, uint32_t id, const char *agent, cJSON *ev);

int agents_new(const struct agents_cfg *cfg, struct agents **ret, struct err *e);
/* Kill what still runs, destroy the children's boxes, free. */
void agents_free(struct agents *a);
/* Whether the tool is offered: a run deep enough offers none. */
bool agents_offered(const struct agents *a);
/* The tool's schema, as the model sees it. */
cJSON *agents_schema(void);
/* Whether input asks for a read-only child. */
bool agents_readonly(const cJSON *input);
/* Check the call's input: 0, or -EINVAL with e saying what is wrong. */
int agents_check(const struct agents *a, const cJSON *input, struct err *e);
/* Start a child (or queue it behind --max-subagents): its result comes to
 * cb once, from l's callbacks or agents_tick. */
int agents_start(struct agents *a, struct loop *l, const cJSON *input, agent_result_cb *cb, agent_event_cb *ev_cb,
		 void *ud, uint32_t *ret_id, struct err *e);
/* Child id's name (a1, a1.a2); "" for none. */
const char *agents_name(const struct agents *a, uint32_t id);
/* Stop child id (SIGTERM; killed after AGENT_STOP_GRACE_MS); its result
 * says it was cancelled. */
void agents_cancel(struct agents *a, uint32_t id);
/* The turn leaves now: every child's result will come to no one. */
void agents_forget(struct agents *a);
void agents_tick(struct agents *a);
int64_t agents_deadline(const struct agents *a);
/* The children so far, for the run's result: [{id, description, stop,
 * rounds, calls, input_tokens, output_tokens, cost_usd, merged, conflicts,
 * started_ms, ended_ms}]. */
cJSON *agents_report(const struct agents *a);
