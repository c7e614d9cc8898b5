#pragma once
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* --approve-cmd: a program that answers for the person. It gets the call
 * as JSON on stdin ({"tool","input"}) and WARD_TOOL in its environment;
 * exit 0 allows the call, 2 stops the turn, anything else refuses it (the
 * first line it prints is the reason the model is told). It runs as a
 * PreToolUse hook does, with a hook's time limit, and never past the
 * run's deadline. */

struct run_approver {
	const char *cmd;
	const int64_t *deadline_ms;	/* the run's, or 0 */
};

/* The gate's ask (turn/gate.h) for ud, a struct run_approver: 'y' allow,
 * 'n' refuse (the reason in reason), 'q' stop the turn. */
int run_approver_ask(void *ud, const char *tool, const cJSON *input, char *reason, size_t cap);
