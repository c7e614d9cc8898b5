/* ward run --task-file FILE --task-index I --out DIR: one task of a JSON
 * Lines file, as an array job (Slurm, a Kubernetes Indexed Job, GNU
 * parallel) runs it. Line I (counting the lines that are not blank) is
 * {"id", "task", "workspace"?, and ward run's long flags with "_" for "-":
 * "model", "max_rounds", "allow_hosts" (a list), ...}. Without
 * --trust-task-file a line only narrows what the command line allows: its
 * workspace (and a replay: model's script) lies under the task root (the
 * task file's directory, or --task-root), each setting is taken only where
 * it is no looser than the one in force (the settings' line rule, which
 * the flag function applies: a looser bound is a warning and the command
 * line's stays), its hosts are public ones, and any other flag is
 * refused. With it, a field is applied
 * as the command line's flag would be, after them (a value replaces
 * theirs, a rule is added to theirs). DIR/ID/ gets events.jsonl (the --json
 * stream), journal.jsonl, patch.diff and result.json, written last and
 * atomically. A task whose result.json holds a final stop is skipped (exit
 * 0), so a requeue redoes nothing; one with a journal but no final result
 * resumes its session. The index comes from --task-index, else
 * SLURM_ARRAY_TASK_ID, else JOB_COMPLETION_INDEX. */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "base/note.h"
#include "task/report.h"

#define FLEET_ID_MAX 64
/* A task file's line, at most (task/report.h: ward report reads the
 * file by the same bound). */
#define FLEET_LINE_MAX REPORT_TASK_LINE_MAX

struct fleet {
	const char *file;	/* --task-file */
	const char *root_arg;	/* --task-root, or NULL: the task file's directory */
	char root[PATH_MAX];	/* that, resolved: every path a line names lies under it */
	char where[PATH_MAX + 24];	/* "FILE:LINE" of the task's line, for the messages */
	const char *index_arg;	/* --task-index, or NULL */
	const char *out;	/* --out */
	bool trusted;		/* --trust-task-file: a line may set any of run's flags, any path */
	long index;
	char id[FLEET_ID_MAX + 1];
	char dir[PATH_MAX];	/* DIR/ID */
	char *task;		/* the line's task text */
	char workspace[PATH_MAX];	/* the line's, resolved (realpath); "" none */
	char resume[64];	/* a session an earlier run left unfinished; "" none */
	int runs;		/* this run included */
	int lock_fd;		/* DIR/ID/.lock, held while the task runs */
	char **args;		/* the fields' values, as flags keep them (to the end) */
	size_t nargs;
	int64_t t0_ms;
	char started_at[32];
	struct note note;	/* lines for the person: what became of the task, warnings ("warning: ...") */
};

/* A flag of ward run by its long name ("max-rounds"): with field NULL
 * applied as the command line would (a trusted file's), else as a task
 * line's field of that name, which may only narrow. 0, or -errno with e
 * (its message says what is wrong with the value; fleet_load puts where
 * before it); -ENOENT (e not set) when ward run has no such flag. With arg
 * == fleet_probe only whether it has: 0, -ENOENT, or (field not NULL)
 * -EPERM for a flag a task line may not set. */
typedef int fleet_flag_fn(void *ud, const char *name, const char *arg, const char *field, struct err *e);
extern const char fleet_probe[];

/* Read the task (the index, the line, its fields applied through flag):
 * 0, or -errno with e saying what is wrong and where (-ENOMEM: out of
 * memory; any other: the file, the line or a field). */
int fleet_load(struct fleet *fl, fleet_flag_fn *flag, void *ud, struct err *e);
/* DIR/ID made and locked: 0 to run (fl->resume set when an earlier run
 * left the task unfinished), 1 when it is already finished (a note said
 * so), or -errno with e: -EBUSY when another ward runs it now, -EEXIST
 * when DIR/ID holds another task's results, -ENAMETOOLONG for a path too
 * long, any other when DIR/ID could not be made or locked. */
int fleet_prepare(struct fleet *fl, struct err *e);
/* The session's journal, kept in DIR/ID/journal.jsonl (a hard link where
 * the file systems allow, else copied at the end by fleet_finish), and the
 * session's id recorded for a later resume. */
void fleet_session(struct fleet *fl, const char *id, const char *journal_path);
/* The events file's path (DIR/ID/events.jsonl). */
void fleet_events_path(const struct fleet *fl, char *out, size_t n);
/* The patch's path (DIR/ID/patch.diff). */
void fleet_patch_path(const struct fleet *fl, char *out, size_t n);
/* result (ward run's result object) completed with the task's fields and
 * written to DIR/ID/result.json atomically (fsynced, renamed); a note says
 * where. 0, or -errno with e. */
int fleet_finish(struct fleet *fl, cJSON *result, const char *journal_path, struct err *e);
/* A task that ended before its model was asked (no box, its MCP servers
 * lost the box): result.json says so, with stop (box_error: not final, a
 * rerun tries again) and why. */
int fleet_finish_early(struct fleet *fl, const char *stop, const char *why, int code, const char *session,
		       const char *journal_path, struct err *e);
void fleet_free(struct fleet *fl);
/* Whether a stop is final: a rerun would end the same (done, a bound, a
 * refusal); cancelled, provider_error and box_error are not. */
bool fleet_stop_final(const char *stop);
