/* What acp/acp.c and acp/acp-ask.c share: a connection and its sessions. */
#pragma once
#include "acp/acp.h"
#include "acp/rpc.h"

/* A prompt's text, as ward run's task. */
#define ACP_PROMPT_MAX (1u << 20)
/* Requests held while a prompt runs, at most. */
#define ACP_QUEUE_MAX 64
/* How long the editor has to give a file's buffer. */
#define ACP_FS_WAIT_MS 10000
struct acp_sess {
	struct acp_opened o;
	struct acp *a;
	bool cancel;		/* while it prompts: the editor cancelled */
	cJSON *call;		/* the call the gate is about to ask about (its EV_TOOL_CALL) */
	cJSON *olds;		/* each write's file before it, by call id (acp_update_for) */
};

struct acp {
	const struct acp_host *host;
	void *ud;
	struct rpc rpc;
	bool initialized;
	bool fs_read;		/* the client offers fs/read_text_file */
	struct acp_sess *sess[ACP_SESSIONS_MAX];
	struct acp_sess *busy;	/* the session whose prompt runs */
	struct turn *t;		/* its turn, from the loop's input callback */
	int64_t deadline;
	/* A request of ward's awaiting its response. */
	bool waiting;
	int64_t wait_id;
	cJSON *answer;
	cJSON *queue;		/* requests that came while a prompt ran */
};

void acp_say(struct acp *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A message read from the editor, handled (acp/acp.c). */
void acp_message(void *ud, const struct rpc_msg *m);

/* ward's requests to the editor (acp/acp-ask.c). The gate's ask (a
 * gate's ask callback, ud the session). */
int acp_ask_permission(void *ud, const char *tool, const cJSON *input, char *reason, size_t cap);
/* turn_answer's call (ud the session): a read answered from the editor's
 * unsaved buffer, or NULL. */
cJSON *acp_ask_buffer(void *ud, const char *tool, const cJSON *input, char *stop, size_t cap);
