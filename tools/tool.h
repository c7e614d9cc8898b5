/* The built-in tools: what the model sees (schema), argument checks, the
 * text the model gets back, and for in-process tools the implementation
 * (linked into ward-guest). */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "base/err.h"

#include "proto/outcome.h"
#include "tools/cancel.h"

struct uio;

struct tool_ctx {
	const cJSON *args;
	struct cancel *cancel;
	struct uio *uio;
	int root_fd;		/* the box's root: every path resolves beneath it */
	const char *cwd;	/* where relative paths start, inside the root */
};

struct tool_result {
	enum outcome outcome;
	struct buf text;	/* what the model sees */
};

enum arg_type { ARG_STRING, ARG_INT, ARG_BOOL };
struct arg_spec {
	const char *name;
	enum arg_type type;
	bool required;
	int64_t min, max;	/* ARG_INT bounds, inclusive */
	const char *const *choices; /* ARG_STRING: NULL-terminated allowed values */
};

struct tool {
	const char *name;
	const char *description;
	const struct arg_spec *args;	/* terminated by { .name = NULL } */
	bool inproc;			/* runs on a worker in the guest */
	bool readonly;			/* changes nothing: may run concurrently */
	/* A background job's tool (tools/job.h): ward-guest answers it from
	 * the jobs it keeps. */
	bool job;
	int (*run)(struct tool_ctx *ctx, struct tool_result *res);
	/* Checks the fields' table cannot say (one field's bound depending on
	 * another's); NULL: none. */
	int (*check)(const cJSON *args, struct err *e);
};

extern const struct tool tool_read, tool_write, tool_edit, tool_grep, tool_find, tool_ls, tool_bash;
extern const struct tool tool_job_output, tool_job_kill, tool_job_list, tool_todo;
const struct tool *tool_lookup(const char *name);
/* A tool_use block's key argument, for a one-line card or a title: bash's
 * command, a file tool's path, grep's pattern; "" when none. */
const char *tool_call_arg(const cJSON *call);
/* NULL-terminated list of all tools. */
extern const struct tool *const tool_table[];

/* Unknown fields, wrong types and out-of-range values are bad input; the
 * message names the field and says why. */
int tool_check_args(const struct tool *t, const cJSON *args, struct err *e);
/* JSON schema the model sees: {"name","description","input_schema"}. */
cJSON *tool_schema(const struct tool *t);

/* A call's own time limit, before the task's clamp (proto/budget.h):
 * in-process tools TOOL_FILE_TIMEOUT_MS; bash its timeout argument, or
 * BASH_TIMEOUT_DEFAULT_S; a bash call that starts a job, and the job
 * tools, TOOL_FILE_TIMEOUT_MS (job_output's wait on top). The idle limit:
 * bash's idle_timeout, or none. */
#define TOOL_FILE_TIMEOUT_MS 30000
int64_t tool_limit_ms(const struct tool *t, const cJSON *args);
int64_t tool_idle_ms(const struct tool *t, const cJSON *args);

/* Cap on the text a model gets from one call. */
#define TOOL_TEXT_MAX (64u * 1024)
void tool_result_init(struct tool_result *r);
int tool_result_set(struct tool_result *r, enum outcome o, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A result as JSON, {"outcome", "text"}, for a call that ward answers
 * itself (refused, not run, the box lost). */
cJSON *tool_result_json(const char *outcome, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Argument accessors (after tool_check_args). */
const char *tool_arg_str(const cJSON *args, const char *name, const char *dflt);
int64_t tool_arg_int(const cJSON *args, const char *name, int64_t dflt);
bool tool_arg_bool(const cJSON *args, const char *name, bool dflt);
