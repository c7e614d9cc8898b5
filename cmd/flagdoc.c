/* The man pages, the README's flag lists and the bash completion, made
 * from the flag tables; ward prints them with --flagdoc (hidden), which
 * the build runs. The binary that parses the flags is the one that
 * documents them: no second copy of the tables is linked anywhere. */
#include "cmd/flagdoc.h"
#include "cmd/cmd.h"
#include "cmd/flags.h"
#include "cmd/run-settings.h"
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FOREACH_FLAG(c, g, f)                                                                               \
	for (const struct flag_group *g = (c)->groups; g < (c)->groups + FLAG_GROUPS_MAX && g->flags; g++) \
		for (const struct flag *f = g->flags; f->name; f++)

/* The config key and the variables of a flag of a settings group. */
static const char *doc_key(const struct flag_group *g, const struct flag *f)
{
	const struct settings_key *k = g->settings ? settings_key_by_flag(f->val) : NULL;
	return k ? k->key : NULL;
}

static void doc_envs(const struct flag_group *g, const struct flag *f, char *buf, size_t n)
{
	buf[0] = 0;
	if (!g->settings)
		return;
	size_t l = 0;
	int c;
	const char *var;
	for (size_t i = 0; (c = settings_env_at(i, &var, NULL)) >= 0; i++) {
		if (c != f->val || strstr(buf, var))
			continue;
		int k = snprintf(buf + l, n - l, "%s%s", l ? " " : "", var);
		if (k > 0 && (size_t)k < n - l)
			l += (size_t)k;
	}
}

/* roff: a backslash, a dash and a line's leading dot or quote escaped. */
static void roff(FILE *out, const char *s)
{
	bool bol = true;
	for (; *s; s++) {
		if (bol && (*s == '.' || *s == '\''))
			fputs("\\&", out);
		bol = *s == '\n';
		if (*s == '\\')
			fputs("\\e", out);
		else if (*s == '-')
			fputs("\\-", out);
		else
			fputc(*s, out);
	}
}

static void man_flags(FILE *out, const struct flag_cmd *c)
{
	FOREACH_FLAG(c, g, f) {
		if (f->hidden)
			continue;
		char d[400], envs[256];
		fputs(".TP\n", out);
		if (f->short_name)
			fprintf(out, "\\fB\\-%c\\fR, ", f->short_name);
		fputs("\\fB\\-\\-", out);
		roff(out, f->name);
		fputs("\\fR", out);
		if (f->arg) {
			fputs(f->optional ? "[=\\fI" : " \\fI", out);
			roff(out, f->arg);
			fputs(f->optional ? "\\fR]" : "\\fR", out);
		}
		fputc('\n', out);
		roff(out, f->help);
		flags_default_text(f, d, sizeof(d));
		if (*d) {
			fputs(" (", out);
			roff(out, d);
			fputc(')', out);
		}
		fputc('\n', out);
		const char *key = doc_key(g, f);
		doc_envs(g, f, envs, sizeof(envs));
		if (key || *envs) {
			fputs(".br\n", out);
			if (key) {
				fputs("Config key: \\fB", out);
				roff(out, key);
				fputs("\\fR.", out);
			}
			if (*envs) {
				fputs(key ? " Environment: \\fB" : "Environment: \\fB", out);
				roff(out, envs);
				fputs("\\fR.", out);
			}
			fputc('\n', out);
		}
	}
}

static void man_text(FILE *out, const char *text)
{
	while (text && *text) {
		size_t l = strcspn(text, "\n");
		char *line = strndup(text, l);
		if (line) {
			roff(out, line);
			fputs("\n.PP\n", out);
			free(line);
		}
		text += l + (text[l] == '\n');
	}
}

static void upper(FILE *out, const char *s)
{
	for (; *s; s++)
		fputc(*s >= 'a' && *s <= 'z' ? *s - 'a' + 'A' : *s, out);
}

static int man(FILE *out, const char *page)
{
	const struct flag_cmd *first = NULL;
	size_t n = 0;
	for (const struct flag_cmd *const *c = flagtab_cmds; *c; c++)
		if (!strcmp((*c)->page, page) && (n++, !first))
			first = *c;
	if (!first) {
		cmd_error("--flagdoc man: no page %s (see ward --flagdoc pages)", page);
		return EXIT_USAGE;
	}
	fputs(".TH ", out);
	upper(out, page);
	fprintf(out, " 1 \"\" \"ward %s\" \"ward manual\"\n.SH NAME\n", WARD_VERSION);
	roff(out, page);
	fputs(" \\- ", out);
	/* A command's page is named for the command (ward-box: ward box's summary). */
	const char *summary = first->summary;
	for (const struct command *const *k = cmd_commands; *k; k++)
		if (!strncmp(page, "ward-", 5) && !strcmp(page + 5, (*k)->name))
			summary = (*k)->summary;
	roff(out, summary);
	fputs("\n.nh\n.ad l\n.SH SYNOPSIS\n.nf\n", out);
	for (const struct flag_cmd *const *c = flagtab_cmds; *c; c++)
		if (!strcmp((*c)->page, page)) {
			roff(out, (*c)->synopsis);
			fputc('\n', out);
		}
	fputs(".fi\n", out);
	if (!strcmp(page, "ward")) {
		fputs(".SH COMMANDS\n", out);
		for (const struct command *const *k = cmd_commands; *k; k++) {
			fputs(".TP\n\\fBward ", out);
			roff(out, (*k)->name);
			fputs("\\fR ", out);
			roff(out, (*k)->args);
			fputc('\n', out);
			roff(out, (*k)->summary);
			fputc('\n', out);
		}
	}
	for (const struct flag_cmd *const *c = flagtab_cmds; *c; c++) {
		if (strcmp((*c)->page, page))
			continue;
		fputs(".SH ", out);
		if (n > 1 && *(*c)->name) {
			fputc('"', out);
			upper(out, "ward ");
			upper(out, (*c)->name);
			fputs("\"\n", out);
			roff(out, (*c)->summary);
			fputs(".\n.PP\n", out);
		} else {
			fputs("DESCRIPTION\n", out);
			roff(out, (*c)->summary);
			fputs(".\n.PP\n", out);
		}
		man_text(out, (*c)->about);
		fputs(".SS Flags\n", out);
		man_flags(out, *c);
		if ((*c)->footer) {
			fputs(".PP\n", out);
			man_text(out, (*c)->footer);
		}
	}
	fputs(".SH SEE ALSO\n", out);
	bool any = false;
	for (const struct flag_cmd *const *c = flagtab_cmds; *c; c++) {
		if (!strcmp((*c)->page, page))
			continue;
		bool seen = false;
		for (const struct flag_cmd *const *b = flagtab_cmds; b < c; b++)
			seen |= !strcmp((*b)->page, (*c)->page);
		if (seen)
			continue;
		fprintf(out, "%s\\fB", any ? ",\n" : "");
		roff(out, (*c)->page);
		fputs("\\fR(1)", out);
		any = true;
	}
	fputs("\n", out);
	return 0;
}

static int pages(FILE *out)
{
	for (const struct flag_cmd *const *c = flagtab_cmds; *c; c++) {
		bool seen = false;
		for (const struct flag_cmd *const *b = flagtab_cmds; b < c; b++)
			seen |= !strcmp((*b)->page, (*c)->page);
		if (!seen)
			fprintf(out, "%s\n", (*c)->page);
	}
	return 0;
}

/* One command's flags as a markdown list. */
static void readme_block(FILE *out, const struct flag_cmd *c)
{
	fprintf(out, "`%s`\n\n", c->synopsis);
	FOREACH_FLAG(c, g, f) {
		if (f->hidden)
			continue;
		char d[400], envs[256];
		char sp[200];
		fprintf(out, "- `%s`: %s", flags_spelling(f, sp, sizeof(sp)), f->help);
		flags_default_text(f, d, sizeof(d));
		if (*d)
			fprintf(out, " (%s)", d);
		const char *key = doc_key(g, f);
		doc_envs(g, f, envs, sizeof(envs));
		if (key)
			fprintf(out, "; key `%s`", key);
		if (*envs)
			fprintf(out, "; env `%s`", envs);
		fputs("\n", out);
	}
}

#define README_OPEN "<!-- ward-flags "
#define README_CLOSE "<!-- /ward-flags -->"

static int readme(FILE *out, const char *path)
{
	FILE *in = fopen(path, "re");
	if (!in) {
		cmd_error("--flagdoc readme: cannot open %s", path);
		return EXIT_NOINPUT;
	}
	char *line = NULL;
	size_t cap = 0;
	bool skipping = false;
	int r = 0;
	while (getline(&line, &cap, in) >= 0) {
		if (skipping) {
			if (strncmp(line, README_CLOSE, strlen(README_CLOSE)))
				continue;
			skipping = false;
		}
		fputs(line, out);
		if (strncmp(line, README_OPEN, strlen(README_OPEN)))
			continue;
		char name[64];
		const char *p = line + strlen(README_OPEN);
		size_t l = strcspn(p, "-");
		while (l && p[l - 1] == ' ')
			l--;
		snprintf(name, sizeof(name), "%.*s", (int)l, p);
		const struct flag_cmd *c = flags_cmd(name);
		if (!c) {
			cmd_error("--flagdoc readme: %s: no command \"%s\"", path, name);
			r = EXIT_USAGE;
			break;
		}
		fputc('\n', out);
		readme_block(out, c);
		fputc('\n', out);
		skipping = true;
	}
	if (!r && skipping) {
		cmd_error("--flagdoc readme: %s: a block without its %s", path, README_CLOSE);
		r = EXIT_USAGE;
	}
	free(line);
	fclose(in);
	return r;
}

/* The words after "ward" that name a table ("box create"): the completion's cases. */
static int bash(FILE *out)
{
	fputs("# bash completion for ward, made from its flag tables (ward --flagdoc bash)\n"
	      "_ward() {\n"
	      "\tlocal cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]} sub=${COMP_WORDS[2]} words\n"
	      "\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n"
	      "\t\twords=\"",
	      out);
	for (const struct command *const *k = cmd_commands; *k; k++)
		fprintf(out, "%s%s", k == cmd_commands ? "" : " ", (*k)->name);
	fputs("\"\n\telse\n\t\tcase \"$cmd $sub\" in\n", out);
	for (const struct flag_cmd *const *c = flagtab_cmds; *c; c++) {
		if (!*(*c)->name)
			continue;
		bool sub = strchr((*c)->name, ' ') != NULL;
		fprintf(out, "\t\t\"%s\"%s) words=\"", (*c)->name, sub ? "" : "\\ *");
		bool first = true;
		FOREACH_FLAG(*c, g, f) {
			if (f->hidden)
				continue;
			fprintf(out, "%s--%s", first ? "" : " ", f->name);
			first = false;
		}
		fputs("\" ;;\n", out);
	}
	fputs("\t\tesac\n\tfi\n"
	      "\tCOMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
	      "}\n"
	      "complete -o default -F _ward ward\n",
	      out);
	return 0;
}

static int list(FILE *out, const char *name)
{
	const struct flag_cmd *c = flags_cmd(name);
	if (!c) {
		cmd_error("--flagdoc list: no command \"%s\"", name);
		return EXIT_USAGE;
	}
	FOREACH_FLAG(c, g, f) {
		if (f->hidden)
			continue;
		char v[128], d[400], envs[256], sp[200];
		const char *key = doc_key(g, f);
		doc_envs(g, f, envs, sizeof(envs));
		fprintf(out, "%s\t%c\t%s\t%s\t%s\t%s\t%s\t%s\n", f->name, f->short_name ? f->short_name : '-',
			f->arg ? f->arg : "-", *flags_default_value(f, v, sizeof(v)) ? v : "-",
			*flags_default_text(f, d, sizeof(d)) ? d : "-", key ? key : "-", *envs ? envs : "-",
			flags_spelling(f, sp, sizeof(sp)));
	}
	return 0;
}

/* Each table: no name or getopt value twice, every row with help unless
 * hidden, every settings row with its row in task/settings.c. */
static int check(FILE *out)
{
	int bad = 0;
	for (const struct flag_cmd *const *c = flagtab_cmds; *c; c++)
		FOREACH_FLAG(*c, g, f) {
			FOREACH_FLAG(*c, g2, f2) {
				if (f2 == f)
					break;
				if (!strcmp(f2->name, f->name) || f2->val == f->val) {
					fprintf(out, "ward %s: --%s and --%s: the same %s\n", (*c)->name, f2->name, f->name,
						f2->val == f->val ? "getopt value" : "name");
					bad = 1;
				}
			}
			if (!f->hidden && !f->help) {
				fprintf(out, "ward %s: --%s has no help\n", (*c)->name, f->name);
				bad = 1;
			}
			if (g->settings && !settings_key_by_flag(f->val)) {
				fprintf(out, "ward %s: --%s has no row in task/settings.c\n", (*c)->name, f->name);
				bad = 1;
			}
		}
	return bad ? EXIT_FAIL : 0;
}

int flagdoc_main(int argc, char **argv)
{
	const char *kind = argc > 1 ? argv[1] : "";
	if (!strcmp(kind, "man") && argc == 3)
		return man(stdout, argv[2]);
	if (!strcmp(kind, "pages") && argc == 2)
		return pages(stdout);
	if (!strcmp(kind, "cmds") && argc == 2) {
		for (const struct flag_cmd *const *c = flagtab_cmds; *c; c++)
			printf("%s\t%s\n", (*c)->page, (*c)->name);
		return 0;
	}
	if (!strcmp(kind, "readme") && argc == 3)
		return readme(stdout, argv[2]);
	if (!strcmp(kind, "check") && argc == 2)
		return check(stdout);
	if (!strcmp(kind, "bash") && argc == 2)
		return bash(stdout);
	if (!strcmp(kind, "list") && argc == 3)
		return list(stdout, argv[2]);
	cmd_error("usage: ward --flagdoc man PAGE | pages | cmds | readme FILE | bash | list CMD | check");
	return EXIT_USAGE;
}
