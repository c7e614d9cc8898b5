/* The run's MCP servers: each stdio server is a long-lived call of the
 * task's box (its stdin and stdout carry newline-delimited JSON-RPC 2.0),
 * so it lives in the box, under the box's limits and egress rules, and dies
 * with it; each streamable HTTP server is reached from the host through the
 * box's egress proxy (box_egress_dial), so the box's allow-list and byte
 * budget decide, and its headers (a token) never enter the box. This is the client: initialize (a current protocol version,
 * falling back to the server's), tools/list with its pages and
 * list_changed, tools/call with the call's deadline and
 * notifications/cancelled, and a JSON-RPC error for every request of the
 * server's that ward does not serve (sampling, elicitation, roots).
 *
 * Driven by the loop that drives the box connection: its output reaches
 * the servers through the connection's callbacks; mcp_fd is the HTTP
 * servers' (mcp_io); mcp_deadline and mcp_tick are the servers' own clocks
 * (start-up, calls, the ping after a cancel, HTTP's timers). */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "mcp/mcp-config.h"

#define MCP_PROTOCOL_VERSION "2025-06-18"
/* A server that exits is started again this many times, then given up. */
#define MCP_RESTARTS_MAX 2
/* The longest message a server may send: a longer line is not read, and the
 * server is restarted (its calls in flight fail). */
#define MCP_LINE_MAX (32u << 20)
/* What of a result's text the model gets: bash's head and tail. */
#define MCP_TEXT_HEAD 10000
#define MCP_TEXT_TAIL 20000
/* Pages of tools/list, and tools, taken from one server at most. */
#define MCP_LIST_PAGES_MAX 64
#define MCP_TOOLS_MAX 512

struct box_conn;
struct mcp;

/* One line for the person (a server started, failed, restarted). */
typedef void mcp_note_fn(void *ud, const char *line);

/* The servers of cfg (copied), to run over box connection c. */
int mcp_new(const struct mcp_config *cfg, struct box_conn *c, mcp_note_fn *note, void *ud, struct mcp **ret,
	    struct err *e);
/* Start every server and wait until each has listed its tools, failed, or
 * run out of its start-up time, driving the connection meanwhile. A server
 * that fails is reported (note) and offered as unavailable; the run goes on.
 * <0 only when the connection is gone. */
int mcp_start(struct mcp *m, struct err *e);
/* Stop the servers' calls (the box ends the rest); NULL is fine. */
void mcp_free(struct mcp *m);

/* The tools for the model, {name: "mcp__SERVER__TOOL", description,
 * input_schema} each (a new array, the caller's). */
cJSON *mcp_tools(const struct mcp *m);
/* Changes whenever a server's tools change (the request's tools are then
 * built again). */
unsigned mcp_generation(const struct mcp *m);
/* Whether name is an MCP tool's (mcp__...). */
bool mcp_is_name(const char *name);
/* 0 when name is a tool a server lists now, with whether the server says it
 * only reads (annotations.readOnlyHint); <0 and why (no such server or
 * tool, or its server is unavailable) otherwise. */
int mcp_tool_check(const struct mcp *m, const char *name, bool *ret_readonly, struct err *e);

/* A call of a tool: its result ({outcome, text, ...} as a box call's, the
 * callee's to free) comes through done exactly once, unless mcp_free comes
 * first. left_ms: what the task has left (<0: no clamp), which clamps the
 * server's tool_timeout_sec. */
typedef void mcp_done_fn(void *ud, uint32_t id, cJSON *result);
int mcp_call_start(struct mcp *m, const char *name, const cJSON *input, int64_t left_ms, mcp_done_fn *done,
		   void *ud, uint32_t *ret_id, struct err *e);
/* The server is told (notifications/cancelled) and the call ends now,
 * "cancelled"; a server that then does not answer a ping within the box's
 * grace is stopped and started again. */
void mcp_call_cancel(struct mcp *m, uint32_t id);

int64_t mcp_deadline(const struct mcp *m);
void mcp_tick(struct mcp *m);
/* The HTTP servers' descriptor, for the driving loop to watch for input
 * (mcp_io then), or -1 when there are none. */
int mcp_fd(const struct mcp *m);
void mcp_io(struct mcp *m);

/* [{name, transport, state, why?, restarts, protocol?, server?, tools:
 * [{name, tool, readonly, description}]}] for ward mcp list and /mcp. */
cJSON *mcp_status(const struct mcp *m);
