/* What ward run shows of a run: plain (progress on stderr, the model's
 * text as it streams too, and at the end the final answer alone on stdout;
 * model text made safe for a terminal) or --json (one object per
 * event, to stdout or a task's events.jsonl). */
#pragma once
#include <stdbool.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "turn/turn.h"

struct run_out {
	FILE *to;		/* --json's stream: stdout, or a task's events.jsonl */
	bool json;
	bool text_open;		/* stderr's last byte of model text was not a newline */
	bool thinking_open;
	/* --json: every line's "agent" (this run's id: "main", or a
	 * subagent's) and "parent" (NULL: none). */
	const char *agent, *parent;
};

/* One JSON object as one line (to NULL: stdout), flushed. */
void run_out_json_line(FILE *to, cJSON *j);
/* Add "agent" and "parent" to a line of its. */
void run_out_agent(const struct run_out *o, cJSON *j);
/* A turn's sink (ud: the run_out). */
void run_out_event(void *ud, const struct turn_event *ev);
/* The final answer (the last message's text, or with --output-schema the
 * checked JSON alone), ending in a newline: to stdout (made safe for a
 * terminal) when to_stdout, and its exact bytes to path when given
 * (--output-last-message: 0600, written whole). NULL: nothing to say. 0,
 * or -errno writing path. */
int run_out_answer(const char *answer, const char *path, bool to_stdout);
