/* run_turn: one task (or one more instruction in a session) to its stop.
 * It builds the request, streams it, assembles the message, gates each
 * tool call, dispatches it into the box, collects every result, and goes
 * round again, until the model is done or a bound stops it. One event loop
 * owns the HTTP transfer, the box channel, signals and timers. It is not
 * yet the only wait: a PreToolUse hook or an --approve-cmd (task/hook.c),
 * and the terminal's approval question, are waited for in dispatch, each
 * bounded by its own timeout, and nothing else of the turn moves
 * meanwhile (docs/architecture.md, "Where the loop still waits"). Front
 * ends only see events. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "turn/gate.h"
#include "turn/journal.h"
#include "turn/price.h"
#include "turn/provider.h"

struct box_conn;
struct mcp;
struct schema;

enum turn_stop_kind {
	TURN_DONE,
	TURN_ROUND_CAP,
	TURN_DEADLINE,
	TURN_TOKENS,
	TURN_COST,
	TURN_CALL_CAP,
	TURN_CANCELLED,
	TURN_REFUSED,		/* a gate abort, or calls that need a person and none is there */
	TURN_MODEL_REFUSED,	/* the model declined the request (stop reason refusal, content filter) */
	TURN_PROVIDER_ERROR,
	TURN_BOX_ERROR,
	TURN_OUTPUT_INVALID,	/* --output-schema: the final answer did not match, after one retry */
	TURN_AUTH_ERROR,	/* the API refused the key (401, 403) */
};
const char *turn_stop_name(enum turn_stop_kind k);

struct turn_stop {
	enum turn_stop_kind kind;
	char why[512];
	int rounds, calls, refused;
	struct usage usage;
	double cost;		/* USD; <0 when the model's prices are unknown */
	char model_stop[32];	/* the last stop reason the model gave */
	int signal;		/* the signal that stopped the turn, or 0 */
	/* Loop overhead: from the stream's last byte to each call's frame
	 * written to the box's channel, in microseconds (0 with no calls). */
	int64_t dispatch_us_median, dispatch_us_max;
	/* With an output schema: the model's answer, checked; the caller
	 * frees it (cJSON_Delete). NULL otherwise. */
	cJSON *output;
};

enum turn_ev_type {
	EV_ROUND,		/* a request is about to be sent (n = round) */
	EV_TEXT,		/* text delta */
	EV_THINKING,		/* thinking delta */
	EV_RETRY,		/* text: why; n: delay ms */
	EV_TOOL_CALL,		/* call: the tool_use block */
	EV_APPROVAL,		/* call; text: the decision and why */
	EV_TOOL_OUTPUT,		/* call; text/len: output bytes */
	EV_TOOL_RESULT,		/* call; result: {outcome, text, ...} */
	EV_USAGE,		/* usage: the running total */
	EV_STOP,		/* stop */
	EV_NET,			/* result: a connection of the box's egress proxy
				 * {host, port, method, allowed, why, addr, up, down, ms} */
	EV_COMPACT,		/* text: why; result: {reason, why, replaced, rounds_replaced,
				 * rounds_kept, prompt_tokens, context_window} */
	EV_HOOK,		/* result: one hook run {event, command, exit, elapsed_ms,
				 * decision, why?} */
	EV_BOX,			/* result: the box woke for a call, or hibernated
				 * {event: waking|woken|wake_failed|hibernated, box, ms?,
				 * disk_bytes?, why?} */
	EV_JOB,			/* result: a background job of the box started or ended
				 * {event: started|ended, job: {id, command, state, ...},
				 * running, how?, tail?} (guest/bgjob.c) */
	EV_AGENT,		/* result: one event line of a subagent's (its own
				 * type, and its agent and parent ids), as it wrote it;
				 * text: the child's id (a1); call: the task call's
				 * tool_use block that started it */
};
const char *turn_ev_name(enum turn_ev_type t);

struct turn_event {
	enum turn_ev_type type;
	const char *text;
	size_t len;
	int64_t n;
	const cJSON *call;
	const cJSON *result;
	const struct usage *usage;
	const struct turn_stop *stop;
	const char *hook;	/* EV_APPROVAL: what the PreToolUse hooks said (allow, ask); NULL: nothing */
};

struct turn_sink {
	void (*on_event)(void *ud, const struct turn_event *ev);
	void *ud;
};

/* The task's limits (--deadline, --max-*): totals over the run and its
 * subagents. Not a call's time, which is proto/budget.h's struct budget. */
struct task_limits {
	int64_t deadline_ms;	/* absolute, monotonic; 0: none */
	int max_rounds;		/* 0: none */
	int max_calls;
	int64_t max_tokens;	/* input + output over the run */
	double max_cost;	/* USD; 0: none */
	/* A subagent's own share, which its parent's task call gave it:
	 * what this run alone may spend, inside the task's totals above
	 * (which still bind); 0: none. */
	int share_calls;
	int64_t share_tokens;
	double share_cost;
};

#define TURN_SINKS_MAX 4
/* A stream's idle limit when turn_cfg.idle_ms is 0 (2 minutes). */
#define TURN_IDLE_MS_DEFAULT 120000

struct turn;

/* A front end's own input while a turn runs (a terminal's keyboard): the
 * turn's loop watches fd and calls on_ready when it is readable, and calls
 * on_tick every tick_ms (a spinner). Either may call turn_interrupt. */
struct turn_input {
	int fd;
	void (*on_ready)(void *ud, struct turn *t);
	int64_t tick_ms;	/* 0: no ticks */
	void (*on_tick)(void *ud, struct turn *t);
	void *ud;
};

/* The user's lifecycle hooks (Claude Code's events), run by the front end:
 * run_turn calls run for PreToolUse (before the gate; tool set), PostToolUse
 * (after a dispatched call's result; tool set), UserPromptSubmit (before
 * the instruction is sent), Stop (the model is done; once a turn, a block
 * sends the reason back as a user message), PreCompact (before the summary
 * is asked for), and SessionStart (turn_session_start). ev is the event as the hooks read it
 * (session_id, transcript_path, cwd, hook_event_name and the event's own
 * fields). run appends one record to runs for each hook it ran
 * ({event, command, exit, elapsed_ms, decision, why?}: run_turn journals
 * each as a "hook" record and emits it as EV_HOOK); it returns true when a
 * hook blocked (why: the reason), and puts what the hooks added for the
 * model (additionalContext) into ctx ("" when none). */
struct turn_hooks {
	bool (*run)(void *ud, const char *event, const char *tool, const cJSON *ev, cJSON *runs, char *why,
		    size_t why_cap, char *ctx, size_t ctx_cap);
	void *ud;
};

/* A front end's own answer to a call the gate allowed, instead of the
 * box's (ward acp: a read of a file the editor holds unsaved is answered
 * from the editor's buffer). call returns the result ({outcome, text},
 * the turn's to free), journalled and shown as the box's would be, or
 * NULL: the box runs the call. Asked after the gate and the intent
 * record, for built-in tools only. A call that writes a reason to stop
 * (an editor's cancel read while it waited) stops the turn as cancelled,
 * the calls after it not run. */
struct turn_answer {
	cJSON *(*call)(void *ud, const char *tool, const cJSON *input, char *stop, size_t cap);
	void *ud;
};

struct turn_cfg {
	const struct provider *provider;	/* NULL with replay */
	struct provider_cfg pcfg;
	const char *replay_path;		/* replay provider's script */
	const char *system;
	struct task_limits b;
	struct gate *gate;
	struct turn_sink sinks[TURN_SINKS_MAX];
	int nsinks;
	struct turn_input input;	/* on_ready NULL: none */
	int retries;		/* provider retries; -1: the default (2) */
	int64_t idle_ms;	/* stream idle limit */
	const struct schema *output_schema;	/* turn/schema.h; NULL: none */
	int64_t connect_ms;
	int64_t context_window;	/* tokens; 0: WINDOW_DEFAULT */
	int compact_at;		/* percent of it; 0: COMPACT_AT_DEFAULT */
	struct turn_hooks hooks;	/* run NULL: none */
	/* The run's MCP servers (mcp/mcp.h), started in the session's box:
	 * their tools are offered as mcp__SERVER__TOOL and gated as tools.
	 * NULL: none. */
	struct mcp *mcp;
	struct turn_answer answer;	/* call NULL: the box runs every call */
	/* Subagents (turn/agent.h): the task tool; NULL: not offered. */
	struct agents *agents;
	/* The task's spend shared with its parent and children
	 * (turn/ledger.h): the budgets are checked against its totals. NULL:
	 * this run's alone. */
	struct ledger *ledger;
};

/* Ended jobs the model is told of at once, at most (the latest). */
#define TURN_JOB_NEWS_MAX 8

/* A session: the conversation so far, its journal, its box. */
struct session {
	cJSON *messages;
	struct journal j;
	struct box_conn *box;
	int rounds, calls, refused;	/* over the whole session, its earlier runs too, for the budgets */
	int asked;		/* the person's messages so far (their checkpoints, cmd/rewind.h) */
	struct usage usage;
	/* What the session's earlier runs spent (journal_load's totals; they
	 * are in usage, rounds and calls too): the cost of this run is priced
	 * on what was added since. cost_before <0: unknown. */
	struct usage usage_before;
	double cost_before;
	char *system;		/* the session's system prompt (owned); NULL: cfg->system */
	cJSON *instructions;	/* the project instruction files in it: [{path, sha256, bytes, cut?}] */
	/* The last request's whole prompt (input + cache reads and writes) and
	 * its body's bytes: what compaction is decided on; 0: not known. */
	int64_t prompt_tokens, prompt_bytes;
	/* The box's jobs that ended and the model was not told of yet (their
	 * EV_JOB results): the next message to it says (turn_job_news). */
	cJSON *job_news;
	/* Of the jobs a hibernate ended, those its journal says the model was
	 * told of (journal_state's jobs_told): a resumed session's kept box
	 * lists them too, and they are not told twice. */
	cJSON *jobs_told;
	/* What this session added to the task's ledger (its own spend). */
	int64_t led_tokens, led_calls;
	double led_cost;
};

/* Run until a stop; the stop is always filled. Returns 0, or <0 for a
 * setup failure (e set) before anything ran. SIGINT, SIGTERM and SIGHUP
 * must be blocked by the caller; run_turn reads them from a signalfd. A
 * first SIGINT is turn_interrupt(now=false); a second, SIGTERM or SIGHUP
 * is turn_interrupt(now=true). */
int run_turn(const struct turn_cfg *cfg, struct session *s, const char *instruction, struct turn_stop *stop,
	     struct err *e);

/* Compact the conversation now (/compact): its middle replaced by a
 * summary the model writes, as run_turn does near the context window. The
 * stop says what happened (done, with why; "too few rounds" is done too,
 * and nothing changed). No stop record is journalled: a compaction is not
 * the end of a turn. Returns as run_turn does. */
int run_compact(const struct turn_cfg *cfg, struct session *s, struct turn_stop *stop, struct err *e);

/* Run the SessionStart hooks (source: "startup" or "resume"); what they
 * add for the model (additionalContext) joins the session's system prompt.
 * Each run is journalled and emitted as EV_HOOK. */
void turn_session_start(const struct turn_cfg *cfg, struct session *s, const char *source);

/* Stop the turn from a front end's callback. now=false: the stream is
 * cut (its text kept, marked partial), running calls are cancelled in the
 * box, and the turn ends when their results are in. now=true: the cancels
 * are sent and the turn ends at once; each call still running gets the
 * result "unknown" (and each not started "cancelled"), so the conversation
 * can go on. */
void turn_interrupt(struct turn *t, bool now, const char *why);
/* Whether the turn is already winding down. */
bool turn_stopping(const struct turn *t);

/* The text of the last assistant message (malloc'd; "" when none). */
char *turn_final_text(const cJSON *messages);

/* The tool_result block the model gets for a call's result. */
cJSON *turn_tool_result(const char *id, const cJSON *result);


/* The replay provider: its script, read and checked once (NULL, e set);
 * then the stream for the conversation so far: SSE bytes of the next
 * scripted turn in Anthropic's format, or NULL and e set when the
 * conversation diverged from the script (path names it in the message). */
cJSON *replay_load(const char *path, struct err *e);
char *replay_stream(const cJSON *script, const char *path, const cJSON *messages, struct err *e);
