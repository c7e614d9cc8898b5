/* Where a task's settings come from, each over the one before: the
 * built-in defaults, the user's file ($XDG_CONFIG_HOME/ward/config.json),
 * the project's file (.ward/config.json in the workspace; it may only
 * narrow), the environment, the flags, a task line (it may only narrow).
 * This decides, for every key, what a project's file and a task line may
 * set, and reads each source; what a value does is the target's (ward
 * run's flags: cmd/run-settings.c), through struct settings_target. Nothing
 * here prints: errors come back in a struct err, warnings go to a note. */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "base/note.h"

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
	int c;			/* the flag's letter (run_flag's) */
	enum { SETTINGS_STR, SETTINGS_NUM, SETTINGS_LIST } type;
	enum settings_narrow project;	/* a project's .ward/config.json */
	enum settings_narrow line;	/* a line of ward run --task-file, without --trust-task-file */
	const char *why;	/* NEVER: why not; RANK: why not its loosest value */
	const char *eg;		/* an example value, for a type error */
};
/* The i-th row of the table (flags of one invocation have no key); NULL
 * past the last. */
const struct settings_key *settings_key_at(size_t i);
/* The row of a flag by its letter; NULL: none (a flag of one invocation
 * has a row without a key). */
const struct settings_key *settings_key_by_flag(int c);
/* The i-th environment variable a setting is read from: the flag's
 * letter, its name and the provider it is read with (NULL: any); -1 past
 * the last. */
int settings_env_at(size_t i, const char **ret_var, const char **ret_provider);

enum settings_source { SETTINGS_DEFAULT, SETTINGS_USER, SETTINGS_PROJECT, SETTINGS_ENV, SETTINGS_FLAG, SETTINGS_LINE };

#define SETTINGS_APPLIED_MAX 2048

/* "default", "user file", "project file", "env", "flag", "task line" */
const char *settings_source_name(enum settings_source s);

/* What came from where, for ward config. */
struct settings_report {
	char user[PATH_MAX], project[PATH_MAX];	/* the files looked for ("": none) */
	bool user_found, project_found;
	struct settings_applied {
		int c;			/* the flag's letter */
		const char *value;
		enum settings_source src;
		const char *from;	/* the flag, the variable or the file */
		bool replaced;		/* a later source's network settings replaced it */
	} applied[SETTINGS_APPLIED_MAX];	/* in order; past the end, not recorded */
	size_t n;
};

/* What the values are applied to. */
struct settings_target {
	/* A target is copied whole (memcpy of size bytes): a value from a
	 * source that may only narrow is tried on a copy first. */
	size_t size;
	/* k's value applied as its flag would be (value NULL: a switch);
	 * rule: the source's rule for k (NARROW_ALWAYS for one trusted as
	 * the user). 0, or -errno with e (one line: what is wrong with it). */
	int (*apply)(void *t, const struct settings_key *k, const char *value, enum settings_narrow rule, struct err *e);
	/* Whether then's value of c is looser than now's: 0 no, 1 looser, 2
	 * the loosest, or not comparable; -1 when c has no rank. */
	int (*looser)(const void *now, const void *then, int c);
	/* c's value as a person reads it, when no source set it. */
	const char *(*default_text)(const void *t, int c, char *buf, size_t n);
	/* The network settings back to none: a source's first network
	 * setting replaces those of the sources below it. */
	void (*net_reset)(void *t);
	/* One source's network settings checked together (a mode and hosts
	 * contradict): 0, or -errno with e. */
	int (*net_finish)(void *t, struct err *e);
	/* Whether a network mode is in force: a task line's hosts would
	 * widen it (none) or have no list (host). */
	bool (*net_mode_set)(const void *t);
	/* The provider in force (which base URL variable is read); NULL:
	 * none was set. */
	const char *(*provider)(const void *t);
};

/* A flag of the command line, or a task line's field. */
struct settings_value {
	int c;
	const char *arg;	/* NULL: a switch */
	const char *field;	/* a task line's field as written; NULL: a flag */
};

/* What the values applied point into (the files' texts and parses, the
 * numbers' texts): a target lives no longer than its store. */
struct settings_store;
struct settings_store *settings_store_new(void);
void settings_store_free(struct settings_store *st);

/* The sources that are not files. */
struct settings_in {
	const char *workspace;	/* where .ward/config.json is looked for; NULL: here */
	const char *provider;	/* the command line's provider, or NULL */
	const char *provider_default;
	const struct settings_value *given;	/* the flags, in order */
	size_t ngiven;
	const char *(*flag_name)(int c);	/* a flag's long name, for the report */
	const struct settings_value *line;	/* a task line's fields */
	size_t nline;
	const char *line_from;	/* "FILE:LINE" of that line */
	struct note note;	/* the warnings ("warning: ..."): a key a project's file may not set, a looser value
				 * a task line gave, an unknown key */
	struct settings_store *store;	/* where the values live; NULL: the process's, never freed */
};

/* t (as ops has it, holding the defaults) with every source applied in
 * order. rep (or NULL) gets what came from where. 0, or -errno with e:
 * -ENOMEM, -ENOTRECOVERABLE for a table of ward's that is wrong, any
 * other for a source (a file's JSON, a value, a key it may not set: e
 * names the file, line and column). */
int settings_apply(const struct settings_in *in, const struct settings_target *ops, void *t,
		   struct settings_report *rep, struct err *e);

/* The "hooks" object of the user's file as the last settings_apply read it
 * (a project's file may not set hooks; it lives in that call's store),
 * and the file's path; NULL: none. */
const cJSON *settings_hooks(const char **ret_from);
/* The same for "mcpServers": the project's servers come from its .mcp.json
 * (task/mcpconf.h), which needs the person's trust. */
const cJSON *settings_mcp(const char **ret_from);
