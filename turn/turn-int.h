/* What the turn loop's files share: turn.c runs the loop (rounds, the
 * stream, retries, signals), turn-calls.c a round's tool calls (gate,
 * budgets, the box), turn-stop.c how a turn stops. Not for front ends: they
 * see turn.h. */
#pragma once
#include "turn/turn.h"
#include "turn/compact.h"
#include "http/http.h"
#include "turn/price.h"
#include "http/sse.h"
#include "base/buf.h"
#include "base/loop.h"
#include "tools/tool.h"
#include "mcp/mcp.h"
#include "turn/agent.h"
#include "turn/ledger.h"

#define TURN_ERRBODY_MAX (64u * 1024)
#define TURN_SSE_EVENT_MAX (16u << 20)
#define TURN_REPLAY_CHUNK 512
/* Calls refused for want of a person before the run gives up. */
#define TURN_NEEDS_PERSON_MAX 3
/* A call is not started with less time than this left. */
#define TURN_MIN_CALL_MS 200

enum tc_state { TC_WAIT, TC_RUNNING, TC_DONE };

struct tcall {
	const cJSON *block;	/* the tool_use block, in the assistant message */
	const char *id, *name;
	const struct tool *tool;
	bool mcp;		/* an MCP server's tool (mcp__SERVER__TOOL) */
	bool agent;		/* the task tool: a subagent (runs beside reads and other subagents) */
	bool ro;		/* it only reads: runs beside other reads */
	enum tc_state state;
	uint32_t box_id;	/* or the MCP client's call id */
	cJSON *result;
	/* The input a PreToolUse hook gave instead of the model's (owned);
	 * NULL: the block's. The model's message keeps what it sent. */
	cJSON *input;
	char key[128];
};

enum phase { PH_IDLE, PH_STREAM, PH_RETRY_WAIT, PH_CALLS };

struct turn {
	const struct turn_cfg *cfg;
	struct session *s;
	struct turn_stop *stop;
	struct loop *loop;
	struct http *http;
	int sfd;
	bool finished, stopping;
	bool box_watched;	/* the box's channel is in the loop */
	enum turn_stop_kind stop_kind;
	char stop_why[512];
	int sigints;

	enum phase phase;
	int round_no;
	struct http_req *req;
	struct http_call hc;
	struct sse sse;
	struct stream *stream;
	const struct provider *prov;
	bool sse_on, bad_status, bad_type;
	struct buf errbody;
	struct err perr;
	unsigned attempt;
	int64_t retry_at;
	cJSON *replay_script;	/* read once a turn, at its first round */
	char *replay;
	size_t replay_len, replay_off;
	struct buf partial;	/* the text of this attempt's stream */
	/* What the front ends were shown this round, over its attempts: a
	 * retried stream's text is shown only past it (its bytes up to
	 * shown_n, compared where shown holds them, counted past its cap),
	 * so nothing is shown twice. att_*: this attempt's so far. */
	struct buf shown;
	size_t shown_n, att_n, think_n, att_think;

	struct tcall *calls;
	size_t ncalls, next;
	int running, running_mut;
	int needs_person;
	struct price price;
	bool priced;
	int64_t stream_end_us;
	int64_t lat[512];	/* dispatch latencies, for the stop's median */
	size_t nlat;
	cJSON *tools;		/* the tool schemas, the same every round */
	unsigned tools_gen;	/* the MCP servers' generation they were built at */
	bool answer_retried;	/* --output-schema: the answer was sent back once */
	bool stop_hook_done;	/* a Stop hook held the turn once */
	size_t req_bytes;	/* the body of the request in flight */

	/* Compaction (turn-compact.c): the summary request in flight. */
	bool compacting;
	bool compact_only;	/* run_compact: this is all the turn does */
	bool context_retried;	/* this round already compacted for a context-length error */
	enum compact_reason creason;
	struct compact_split csplit;
	cJSON *cmsgs;		/* the summary request's messages */
	int64_t cprompt;	/* the prompt's tokens when it began */
};

void turn_emit(struct turn *t, const struct turn_event *ev);
/* The same where there is a configuration and no turn (SessionStart). */
void turn_cfg_emit(const struct turn_cfg *cfg, const struct turn_event *ev);
void turn_start_round(struct turn *t);
/* The request's tools built again where an MCP server's changed. */
void turn_tools_refresh(struct turn *t);
/* Send the request (a round's, or the summary's while compacting). */
void turn_start_attempt(struct turn *t);
/* Add a reply's usage to the session's and tell the front ends. */
void turn_add_usage(struct turn *t, const struct usage *u);

/* turn-compact.c. Whether the last prompt passed --compact-at. */
bool turn_compact_due(const struct turn *t);
/* Begin: the split chosen and the summary request sent. <0 with why set
 * (too few rounds; the replay provider) when nothing was begun. */
int turn_compact_begin(struct turn *t, enum compact_reason reason, char *why, size_t n);
/* The summary came: spliced in, journalled, told; then the round goes on
 * (or is retried, or the turn ends for run_compact). */
void turn_compact_done(struct turn *t, struct reply *r);
/* The summary request failed for good: the turn stops. */
void turn_compact_failed(struct turn *t, const char *why);
void turn_compact_free(struct turn *t);

/* turn-stop.c. A stop asked for while calls run: no new rounds or calls;
 * the first reason asked for is the one the turn ends with. */
void turn_stop_request(struct turn *t, enum turn_stop_kind kind, const char *why);
/* The task's budgets as they stand: the deadline, tokens, cost, and the
 * round cap (before a round) or the call cap (before a call). false with
 * kind and why set when one is used up. Checked before every round and
 * every call. */
bool turn_budget_ok(struct turn *t, bool before_call, enum turn_stop_kind *ret_kind, char *why, size_t n);
/* End the turn: the stop is filled, journaled and emitted (once). */
void turn_finish(struct turn *t, enum turn_stop_kind kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The session's cost so far, its earlier runs' included; <0: unknown. */
double turn_cost(const struct turn *t);
/* Begin winding down: no new rounds, no new calls; what runs is cancelled;
 * the turn ends when the calls' results are in. */
void turn_wind_down(struct turn *t, enum turn_stop_kind kind, const char *why);

/* turn-answer.c. The model finished (raw: its stop reason): with an
 * output schema, check its answer and finish, or send it back once.
 * false: there is no schema; the caller finishes. */
bool turn_answer(struct turn *t, const char *raw);

/* turn.c. What the model is told of the jobs that ended since its last
 * message: a text block each, added to content (a user message's). */
void turn_job_news(struct turn *t, cJSON *content);

/* turn-calls.c. The calls of the message just received (n tool_use blocks
 * in content), dispatched as they may run. */
void turn_calls_begin(struct turn *t, const cJSON *content, size_t n);
void turn_calls_pump(struct turn *t);
void turn_calls_cancel(struct turn *t);
void turn_call_done(struct turn *t, struct tcall *c, cJSON *result, bool dispatched);
/* The results of the message's calls, as the next user message. */
void turn_calls_message(struct turn *t);
void turn_calls_free(struct turn *t);

/* turn-hooks.c. Run the user's hooks of one event (ev: its own fields; the
 * session's are added here): each run journalled and emitted. true when
 * one blocked (why says why); ctx gets what they added for the model. */
bool turn_hooks_fire(struct turn *t, const char *event, const char *tool, cJSON *ev, char *why, size_t why_cap,
		     char *ctx, size_t ctx_cap);
/* The PreToolUse hooks of a call, as turn_hooks_fire runs them; *ret_hook
 * gets what they said for the gate (ask over allow, as Claude Code orders
 * them), GATE_HOOK_NONE when they blocked or said neither; *ret_input the
 * call's new input when one gave updatedInput (in Claude Code's names;
 * the caller's to free), else NULL. */
bool turn_hooks_pre_tool(struct turn *t, const char *tool, cJSON *ev, char *why, size_t why_cap, char *ctx,
			 size_t ctx_cap, enum gate_hook *ret_hook, cJSON **ret_input);
/* A tool event's own fields as a hook reads them (tool_name, tool_input,
 * tool_use_id), in Claude Code's names. */
cJSON *turn_hooks_tool_event(const char *tool, const cJSON *input, const char *id);
