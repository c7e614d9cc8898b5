/* The bash tool's limits and the text the model gets back. Execution lives
 * in guest/ (a process tree per call); formatting lives here. */
#pragma once
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/capture.h"
#include "tools/tool.h"

#define BASH_TIMEOUT_DEFAULT_S 120
#define BASH_TIMEOUT_MAX_S 600
#define BASH_OUT_HEAD 10000
#define BASH_OUT_TAIL 20000
/* On a time-out the model gets this much of the end of the output. */
#define BASH_TIMEOUT_TAIL 2000

struct bash_report {
	enum outcome outcome;
	int exit_code;		/* valid when signal == 0 */
	int signal;
	int64_t elapsed_ms;
	int64_t limit_ms;
	bool idle;		/* the idle limit fired, not the wall-clock one */
	const struct capture *out;
	const char *environment;	/* what became of the box; NULL when nothing */
	const cJSON *evidence;		/* processes seen before the kill */
	const char *disk_full;		/* a full file system of the box ("/workspace"), or NULL */
};

int bash_format(const struct bash_report *r, struct buf *text);
/* A hint drawn from evidence, or NULL. Writes into hint (size n). */
const char *bash_hint(const cJSON *evidence, char *hint, size_t n);
