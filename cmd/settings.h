/* Where the settings of ward run, the terminal session and ward config
 * come from, each over the one before: the built-in defaults, the user's
 * file ($XDG_CONFIG_HOME/ward/config.json), the project's file
 * (.ward/config.json in the workspace; it may only narrow), the
 * environment, the flags. Every value goes through run_flag, exactly as
 * its flag would. */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "cmd/session.h"

/* How a source that is not trusted as the user (a project's file, a task
 * line) may set a key. NARROW_NEVER is 0, so a row that names no rule
 * refuses. */
enum settings_narrow {
	NARROW_NEVER,	/* not at all: it would widen what the user allows */
	NARROW_ALWAYS,	/* every value narrows: a deny rule */
	NARROW_RANK,	/* only to a value no looser than the one in force */
	NARROW_PUBLIC,	/* a task line's allow_hosts: hosts added, none that a rule names at an address that is
			 * not public (net/addr.h), and none where a network mode is in force */
	NARROW_ROOT,	/* the box's image: any value (a root for the box, nothing of the host), but one that
			 * must be pulled is pulled only from a public registry (image_resolve) */
};

/* A config key: the flag it is read as, and how a project's file and a
 * task line may set it. */
struct settings_key {
	const char *key;	/* "section.name" for a nested one; NULL: a flag only */
	int c;			/* run_flag's letter */
	enum { SETTINGS_STR, SETTINGS_NUM, SETTINGS_LIST } type;
	enum settings_narrow project;	/* a project's .ward/config.json */
	enum settings_narrow line;	/* a line of ward run --task-file, without --trust-task-file */
	const char *why;	/* NEVER: why not; RANK: why not its loosest value */
	const char *eg;		/* an example value, for a type error */
};
/* The i-th row of the table (flags of one invocation have no key); NULL
 * past the last. */
const struct settings_key *settings_key_at(size_t i);
/* A shared flag's long name, without the dashes. */
const char *settings_flag_name(int c);
/* The row of a shared flag by its letter; NULL: none (a flag of one
 * invocation has a row without a key). */
const struct settings_key *settings_key_by_flag(int c);
/* The i-th environment variable ward reads a setting from: the flag's
 * letter, its name and the provider it is read with (NULL: any); -1 past
 * the last. */
int settings_env_at(size_t i, const char **ret_var, const char **ret_provider);
/* The default of a setting as ward config shows it, with f's defaults
 * (the command's approval mode, the model's window): the flag table's
 * constant, else its note in parentheses, else "(none)". */
const char *settings_default_text(const struct run_flags *f, int c, char *buf, size_t n);
/* The row of a shared flag by its long name ("max-rounds"); NULL when it is
 * not one of them (a flag of ward run alone: --approve-cmd, --patch, ...). */
const struct settings_key *settings_key_of_flag(const char *name);

enum settings_source { SETTINGS_DEFAULT, SETTINGS_USER, SETTINGS_PROJECT, SETTINGS_ENV, SETTINGS_FLAG, SETTINGS_LINE };

#define SETTINGS_APPLIED_MAX 2048

/* "default", "user file", "project file", "env", "flag", "task line" */
const char *settings_source_name(enum settings_source s);

/* What came from where, for ward config. */
struct settings_report {
	char user[PATH_MAX], project[PATH_MAX];	/* the files looked for ("": none) */
	bool user_found, project_found;
	struct settings_applied {
		int c;			/* the run_flag letter */
		const char *value;
		enum settings_source src;
		const char *from;	/* the flag, the variable or the file */
		bool replaced;		/* a later source's network settings replaced it */
	} applied[SETTINGS_APPLIED_MAX];	/* in order; past the end, not recorded */
	size_t n;
};

/* Rebuild f's settings from f->mode_default and the other defaults: the
 * user's file, the project's file (only what narrows: one warning line for
 * each key it may not set), the environment, f->given, then a task line's
 * f->line (likewise only what narrows, by each key's line rule: a value
 * looser than the one in force is one warning line and the tighter one
 * stays). rep (or NULL) gets what came from where. 0, or an exit code
 * after an error line. */
int settings_apply(struct run_flags *f, struct settings_report *rep);

/* The "hooks" object of the user's file as the last settings_apply read it
 * (a project's file may not set hooks), and the file's path; NULL: none. */
const cJSON *settings_hooks(const char **ret_from);
/* Those hooks (task/hook.h) installed in cfg, bounded by the deadline
 * *deadline_ms holds when one runs: 0 (*ret NULL when there are none;
 * hooks_free it), or EXIT_USAGE after an error line; their warnings are
 * lines on stderr. ward run, the terminal session and ward acp start so. */
struct hooks;
int settings_hooks_install(struct turn_cfg *cfg, const int64_t *deadline_ms, struct hooks **ret);
/* The same for "mcpServers": the project's servers come from its .mcp.json
 * (task/mcpconf.h), which needs the person's trust. */
const cJSON *settings_mcp(const char **ret_from);
