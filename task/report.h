/* The results of a fleet's runs (ward run --task-file F --task-index I
 * --out DIR leaves DIR/ID/result.json): DIR read and its totals, for ward
 * report (cmd/report.c, and cmd/report-out.h for its four forms) and any
 * other reader of a fleet's results. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/err.h"

/* A result.json larger than this is unreadable, not read. */
#define REPORT_FILE_MAX (1u << 20)
/* Directories of one DIR; a fleet is hundreds to some 10,000. */
#define REPORT_TASKS_MAX 100000
/* A task id, as ward run makes them: [A-Za-z0-9._-], not "." or "..". */
#define REPORT_ID_MAX 64
/* A task file's line, at most: ward run --task-file refuses a longer one
 * (task/fleet.h), and it names no task here. */
#define REPORT_TASK_LINE_MAX (1u << 20)
/* The why kept of each task, in bytes; a longer one is cut and marked. */
#define REPORT_WHY_MAX 1000
/* Subagents of one task it lists, at most. */
#define REPORT_AGENTS_MAX 64

enum report_state {
	REPORT_RESULT,		/* result.json read */
	REPORT_MISSING,		/* no result.json, nothing else either */
	REPORT_UNFINISHED,	/* no result.json, but a journal or events */
	REPORT_UNREADABLE,	/* result.json there and bad: why says how */
};

/* One task directory. The strings are valid UTF-8 (bytes that were not
 * are U+FFFD); stop and id are [A-Za-z0-9._-]. Numbers are meaningful
 * only for REPORT_RESULT. */
struct report_task {
	char id[REPORT_ID_MAX + 1];
	enum report_state state;
	char stop[33];		/* the result's stop, or "missing", "unfinished", "unreadable" */
	char *why;		/* the result's why, or what is wrong; may be "" */
	char *task, *task_file, *session, *model;	/* NULL when not given */
	bool final;
	int exit_code;
	int64_t index;		/* -1 when not given */
	uint64_t rounds, calls, refused, runs;
	uint64_t in, out, cache_read, cache_write;
	bool cost_known;
	double cost_usd;
	uint64_t files;		/* changed files */
	uint64_t duration_ms;
	/* Its subagents' spend, each [{id, stop, input_tokens, output_tokens,
	 * cost_usd}] (owned; NULL: none): in, out and cost_usd above are the
	 * task's whole, theirs included, as its budgets are. */
	cJSON *agents;
};

struct report_stop_count {
	const char *stop;	/* points into a task */
	size_t n;
};

struct report_totals {
	size_t tasks, done, with_result, not_final, cost_unknown;
	struct report_stop_count *stops;	/* ordered: known stops first, as ward run lists them */
	size_t nstops;
	uint64_t in, out, cache_read, cache_write;
	double cost_usd;
	/* Nearest rank over the tasks with a result; 0 when there are none. */
	uint64_t p50_ms, p90_ms, p99_ms, max_ms, sum_ms;
};

struct report {
	char *dir;
	struct report_task *t;	/* sorted by id */
	size_t n;
	size_t skipped;		/* entries of DIR that are not task directories */
	char skipped_first[64];
	struct report_totals tot;
};

/* Read every task directory of dir, and with task_file (or NULL) each of
 * its ids that has none, as missing. Only a failure to read dir or
 * task_file (or memory, or too many tasks) is an error; a bad result.json
 * is a task in state REPORT_UNREADABLE. */
int report_read(const char *dir, const char *task_file, struct report *ret, struct err *e);
void report_free(struct report *r);
bool report_done(const struct report_task *t);
