/* The flags of ward's commands, one table per command (cmd/flagtab.c),
 * after curl's docs/cmdline-opts: each flag's name, short name, argument,
 * default (the constant itself, formatted here) and help text. Parsing
 * (the getopt_long entries), --help, ward config's defaults, the man
 * pages, the README's flag lists and the shell completion are all made
 * from it, so none of them can say what the code does not do. The config
 * key and the environment variables a flag maps to are task/settings.c's
 * (its table, by the flag's letter); the documents look them up there. */
#pragma once
#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum flag_default {
	FLAG_DEFAULT_NONE,	/* none said (dnote alone, when set) */
	FLAG_DEFAULT_TEXT,	/* dtext: a word of the flag's own (a string constant) */
	FLAG_DEFAULT_NUM,	/* dnum */
	FLAG_DEFAULT_SIZE,	/* dnum bytes, said as 512M, 10G */
	FLAG_DEFAULT_MS,	/* dnum milliseconds, said as 2s, 30m, 8h */
	FLAG_DEFAULT_GATE,	/* dnum an enum gate_mode */
};

struct flag {
	const char *name;	/* the long name, without the dashes; NULL ends a group */
	char short_name;	/* -o; 0: none */
	int val;		/* what getopt_long returns for it */
	const char *arg;	/* its argument's name ("DUR"); NULL: it takes none */
	enum flag_default dkind;
	const char *dtext;
	int64_t dnum;
	const char *dnote;	/* what the default is where it is no one constant ("the provider's"); said
				 * before the constant when both are set */
	const char *help;	/* one sentence or a few; wrapped where it is shown */
	bool hidden;		/* parsed, not shown: a subagent's, from its parent */
	bool optional;		/* the argument may be left out (--tls-verify, --tls-verify=false) */
};

/* A group of flags several commands share (the run flags, the network's):
 * with settings, its letters are task/settings.c's (a config key, an
 * environment variable). */
struct flag_group {
	const struct flag *flags;
	bool settings;
};

#define FLAG_GROUPS_MAX 10

struct flag_cmd {
	const char *name;	/* "run", "box create"; "" for ward itself */
	const char *page;	/* its man page ("ward-box"); the command's own when it is a subcommand's */
	const char *synopsis;	/* after "usage: " */
	const char *summary;	/* one line, the man page's NAME */
	const char *about;	/* paragraphs after the usage line; may be NULL */
	struct flag_group groups[FLAG_GROUPS_MAX];
	const char *footer;	/* after the flags (exit codes, where settings come from); may be NULL */
	const char *optprefix;	/* getopt's: "+:" (stop at the first operand) or ":" */
};

/* The tables (cmd/flagtab.c); flagtab_cmds ends with NULL. */
extern const struct flag_cmd *const flagtab_cmds[];

/* getopt_long's view of a table: the entries and the short options
 * string. */
#define FLAGS_OPTS_MAX 96
struct flags_getopt {
	struct option opts[FLAGS_OPTS_MAX + 1];
	char shorts[64];
};
/* Fill g from c; it is a bug (abort) when the table is over the limits. */
void flags_getopt_init(struct flags_getopt *g, const struct flag_cmd *c);
/* A table by its command's name ("box run"); NULL: none. */
const struct flag_cmd *flags_cmd(const char *name);
/* A flag of c by its getopt value; NULL: none. */
const struct flag *flags_find(const struct flag_cmd *c, int val);
/* A flag of the settings groups (ward run's) by its letter; NULL: none. */
const struct flag *flags_setting(int val);
/* The default as a word ("10G", "2m", "anthropic"): "" when the table
 * gives no constant. */
const char *flags_default_value(const struct flag *f, char *buf, size_t n);
/* The whole default as --help says it ("default 10G", "default: the
 * provider's"): "" when none. */
const char *flags_default_text(const struct flag *f, char *buf, size_t n);
/* "-o, --output-last-message FILE", "--tls-verify[=BOOL]". */
const char *flags_spelling(const struct flag *f, char *buf, size_t n);
/* --help: the usage line, the about text, the flags, the footer. */
void flags_help(FILE *out, const struct flag_cmd *c);
/* The flags alone, one a line or a few. */
void flags_help_flags(FILE *out, const struct flag_cmd *c);
