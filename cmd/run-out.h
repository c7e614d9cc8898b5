/* What ward run shows of a run: plain (the answer on stdout, progress on
 * stderr, model text made safe for a terminal) or --json (one object per
 * event, to stdout or a task's events.jsonl). */
#pragma once
#include <stdbool.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "turn/turn.h"

struct run_out {
	FILE *to;		/* --json's stream: stdout, or a task's events.jsonl */
	bool json;
	bool text_open;		/* stdout's last byte was not a newline */
	bool thinking_open;
};

/* One JSON object as one line (to NULL: stdout), flushed. */
void run_out_json_line(FILE *to, cJSON *j);
/* A turn's sink (ud: the run_out). */
void run_out_event(void *ud, const struct turn_event *ev);
