/* The Agent Client Protocol (version 1), the agent's side: ward as an
 * editor's agent. The connection's methods, its sessions (more than one,
 * each its own ward session and box), a prompt as one run_turn, the
 * gate's asks as session/request_permission, reads of what the editor
 * holds through fs/read_text_file, and what the turn's events become on
 * the wire (acp/acp-update.c). What a session is on this machine (its
 * journal, its box, its changes) is the host's: the command that serves
 * the protocol (cmd/acp.c) gives it as struct acp_host. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "turn/turn.h"

/* The protocol version ward speaks (ACP's stable one). */
#define ACP_PROTOCOL_VERSION 1
/* One message's ceiling: a prompt with files embedded fits; past it the
 * line is refused (an error with id null) and skipped to its end. */
#define ACP_LINE_MAX (16u << 20)
/* A file's text shown in a diff, or taken from the editor, at most. */
#define ACP_TEXT_MAX (1u << 20)
/* Sessions one connection keeps open at once. */
#define ACP_SESSIONS_MAX 16

/* What session/new and session/load ask the host for. */
struct acp_open {
	const char *cwd;	/* absolute, a directory */
	const char *load;	/* session/load's ID; NULL: a new session */
	const cJSON *mcp;	/* the editor's MCP servers in .mcp.json's shape; NULL: none */
};

/* An open session, as the host made it. */
struct acp_opened {
	void *h;		/* the host's own */
	struct session *s;	/* its conversation and journal (s->j.id: the sessionId) */
	const char *ws;		/* its workspace on the host: absolute, real */
	struct gate *gate;	/* its gate: asks go to the editor, set_mode sets its mode */
	bool rw;		/* the box works on the tree itself (no copy-on-write) */
};

struct acp_host {
	/* 0 with *out set, or -1 with e (an empty e->msg: the host's log
	 * says why). session/load over another directory than the
	 * session's is the host's to refuse. */
	int (*open)(void *ud, const struct acp_open *o, struct acp_opened *out, struct err *e);
	/* A prompt is about to run: the session's box up and its
	 * checkpoint taken, cfg filled (the model, the budgets with the
	 * prompt's deadline, hooks, MCP servers). 0, or -1 with e. */
	int (*prompt_begin)(void *ud, void *h, struct turn_cfg *cfg, struct err *e);
	void (*prompt_end)(void *ud, void *h, const struct turn_stop *stop);
	void (*close)(void *ud, void *h);
	/* A workspace file (path as the model gives it) as the box sees it
	 * (tree false) or the tree's own (tree true), no symlink followed:
	 * 0 with *ret (malloc'd, NUL-terminated) and *len; -ENOENT when it
	 * is not there; another -errno. */
	int (*file_read)(void *ud, void *h, const char *path, bool tree, size_t cap, char **ret, size_t *len);
	/* The session's changes to the tree: apply false: as a unified diff
	 * (*ret, malloc'd; "" for none); apply true: applied, *ret saying
	 * what was. 0, or -1 with e. */
	int (*changes)(void *ud, void *h, bool apply, char **ret, struct err *e);
	/* A slash command of the host's (rewind, jobs) with arg (what
	 * followed its name, "" for nothing): 0 with *ret (malloc'd) what
	 * to tell the person, or -1 with e. NULL: none offered. */
	int (*command)(void *ud, void *h, const char *name, const char *arg, char **ret, struct err *e);
	/* One line for the log (ward's stderr). */
	void (*log)(void *ud, const char *line);
};

struct acp;

/* A connection over in and out (out carries protocol messages alone).
 * NULL when out of memory. */
struct acp *acp_new(const struct acp_host *host, void *ud, int in, int out);
/* Serve until in closes, out breaks or sigfd (a signalfd, or -1) is
 * readable: the signal's number then, else 0. Every session is closed
 * before it returns. */
int acp_serve(struct acp *a, int sigfd);
void acp_free(struct acp *a);

/* What the turn's events become (acp/acp-update.c). ws: the session's
 * workspace on the host, so that the paths an editor is given are its
 * own files' (absolute). olds: each write's file as it was before the
 * call, by call id (a string, or null for none). */
cJSON *acp_update_for(const struct turn_event *ev, const char *ws, const cJSON *olds);
/* The ToolCall fields of a tool_use block (toolCallId, title, kind,
 * status, rawInput, locations, and for write and edit a diff), added to o. */
void acp_update_call(cJSON *o, const cJSON *call, const char *ws, const char *status, const cJSON *olds);
/* session/load: a session's conversation as the updates that would have
 * shown it (the person's messages as user_message_chunk), each passed to
 * send. */
void acp_update_replay(const cJSON *messages, const char *ws, void (*send)(void *ud, cJSON *update), void *ud);
/* A tool's path as the editor's file (out, n bytes): a path under
 * /workspace, or a relative one, is the workspace's on the host; NULL for
 * any other (the box's own files) and for one with a ".." segment. */
const char *acp_update_path(const char *p, const char *ws, char *out, size_t n);
/* ward's stop as ACP's stopReason; NULL for a stop that is an error
 * (the prompt is answered with a JSON-RPC error saying why). */
const char *acp_stop_reason(enum turn_stop_kind k, bool cancelled);
