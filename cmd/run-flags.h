/* The flags ward run and the terminal session share: the model, the gate,
 * the budgets and the box. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cmd/netflag.h"
#include "task/settings.h"
#include "turn/gate.h"
#include "turn/turn.h"

#define RUN_DEFAULT_ANTHROPIC_MODEL "claude-sonnet-4-20250514"
#define RUN_DEFAULT_OPENAI_MODEL "gpt-4o"
/* A reasoning model: its reasoning is what the Responses API carries. */
#define RUN_DEFAULT_OPENAI_RESPONSES_MODEL "gpt-5"

#define RUN_DEFAULT_PROVIDER "anthropic"
#define RUN_DEFAULT_CACHE_TTL "5m"
/* The approval mode of ward run and of the session (and ward acp). */
#define RUN_APPROVE_DEFAULT GATE_AUTO
#define CHAT_APPROVE_DEFAULT GATE_EDITS

/* The flags run_flag handles are the settings groups of cmd/flagtab.c. */

#define RUN_GIVEN_MAX 512
#define RUN_LINE_MAX 256

struct run_flags {
	struct turn_cfg cfg;
	struct gate gate;
	const char *provider, *model, *base_url, *box_name, *workspace, *resume;
	char box_labels[4096];	/* --box: its labels as JSON ({key: value}), for the journal; "" none */
	bool rw;
	bool allow_git;		/* --allow-git-changes: .git writable in the box, and applied */
	bool no_instructions;	/* --no-project-instructions */
	uint64_t disk;		/* the box's --disk; 0: the default */
	const char *image;	/* the box's --image REF; NULL: the host's view */
	const char *backend;	/* the box's --backend (ns, vm, auto); NULL: the default */
	/* It came from a project's file or a task line, not from the user:
	 * a pull for it reaches only a public registry (image_resolve). */
	bool image_untrusted;
	bool quiet;		/* --json: nothing on stderr but errors (an image's pull says nothing) */
	struct netflag net;	/* the box's --net and --allow-host */
	int64_t deadline_ms;	/* from now; 0: none */
	enum gate_mode mode_default;	/* the command's approval mode */
	/* The shared flags the command line gave, in order: run_flags_finish
	 * applies them last, over the config files and the environment. */
	struct settings_value given[RUN_GIVEN_MAX];
	size_t ngiven;
	/* A task line's fields (ward run --task-file without
	 * --trust-task-file): applied after the flags, each only to narrow
	 * what they, the files and the defaults allow. */
	struct settings_value line[RUN_LINE_MAX];
	size_t nline;
	const char *line_from;	/* "FILE:LINE", for the messages */
};

void run_flags_init(struct run_flags *f, enum gate_mode mode);
/* One of the shared flags, by its getopt_long value (see the option
 * letters in run-flags.c), applied to f: 1 handled, 0 not one of them, -1
 * after an error line (exit EXIT_USAGE). A config file's key or an
 * environment variable is applied through this too (cmd/run-settings.c). */
int run_flag(struct run_flags *f, int c, const char *arg);
/* The same from the command line: checked and applied at once, and kept
 * in f->given for run_flags_finish. */
int run_flag_given(struct run_flags *f, int c, const char *arg);
/* The same from a task line's field (field: its name as written): checked
 * at once, and kept in f->line, which run_flags_finish applies after the
 * flags, only where it narrows them (run_settings_apply). */
int run_flag_line(struct run_flags *f, int c, const char *arg, const char *field);
/* A task file's field by its flag's long name, as fleet_flag_fn asks:
 * the flag is looked up in opts (arg == fleet_probe: only whether it is
 * there, and with field, whether a line may set it: a setting with a line
 * rule, task/settings.c); with field NULL (a trusted file) it is applied as
 * the command line's, by given (<0 after an error line), else as the
 * line's field from where ("FILE:LINE"), which only narrows
 * (run_flag_line). 0, -EINVAL with e (the flag's error line), -EPERM (a
 * probe of a flag no line may set), or -ENOENT when opts has no such
 * flag. */
struct option;
struct err;
int run_flag_named(struct run_flags *f, const struct option *opts, const char *name, const char *arg, const char *field,
		   const char *where, int (*given)(void *ud, int c, const char *arg), void *ud, struct err *e);
/* After the flags: the settings rebuilt from the defaults, the config
 * files, the environment and the flags (run_settings_apply); then the provider,
 * its key, the prices. Set the gate's ask after this. 0, or an exit code
 * after an error line. */
int run_flags_finish(struct run_flags *f);
/* The model in force: f->model, or the provider's default. */
const char *run_flags_model(const struct run_flags *f);
