/* ward acp: the Agent Client Protocol (version 1), for editors. The
 * protocol's loop is cmd/acp.c; what the turn's events become on the wire
 * (session/update, the permission request's tool call, the stop reason)
 * is cmd/acp-update.c. */
#pragma once
#include <stdbool.h>

#include <cjson/cJSON.h>

#include "turn/turn.h"

/* The protocol version ward speaks (ACP's stable one). */
#define ACP_PROTOCOL_VERSION 1

/* A turn's event as a session/update's "update" object, or NULL when it
 * has none. ws: the session's workspace on the host, so that the paths an
 * editor is given are its own files' (absolute). olds: each write's file
 * as it was before the call, by call id (a string, or null for none). */
cJSON *acp_update_for(const struct turn_event *ev, const char *ws, const cJSON *olds);
/* The ToolCall fields of a tool_use block (toolCallId, title, kind,
 * status, rawInput, locations, and for write and edit a diff), added to o. */
void acp_update_call(cJSON *o, const cJSON *call, const char *ws, const char *status, const cJSON *olds);
/* session/load: a session's conversation as the updates that would have
 * shown it (the person's messages as user_message_chunk), each passed to
 * send. */
void acp_update_replay(const cJSON *messages, const char *ws, void (*send)(void *ud, cJSON *update), void *ud);
/* ward's stop as ACP's stopReason; NULL for a stop that is an error
 * (the prompt is answered with a JSON-RPC error saying why). */
const char *acp_stop_reason(enum turn_stop_kind k, bool cancelled);
