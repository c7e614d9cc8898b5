/* The flag tables (cmd/flagtab.c) as getopt_long takes them and as --help
 * says them. */
#include "cmd/flags.h"
#include "turn/gate.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define FOREACH_FLAG(c, g, f)                                                                               \
	for (const struct flag_group *g = (c)->groups; g < (c)->groups + FLAG_GROUPS_MAX && g->flags; g++) \
		for (const struct flag *f = g->flags; f->name; f++)

void flags_getopt_init(struct flags_getopt *g, const struct flag_cmd *c)
{
	size_t n = 0, s = 0;
	size_t pl = strlen(c->optprefix);
	memcpy(g->shorts, c->optprefix, pl);
	s = pl;
	FOREACH_FLAG(c, gr, f) {
		if (n == FLAGS_OPTS_MAX || s + 3 >= sizeof(g->shorts))
			abort();
		g->opts[n++] = (struct option){ f->name, !f->arg ? no_argument : f->optional ? optional_argument : required_argument,
						NULL, f->val };
		if (f->short_name) {
			g->shorts[s++] = f->short_name;
			if (f->arg)
				g->shorts[s++] = ':';
		}
	}
	g->opts[n] = (struct option){ 0 };
	g->shorts[s] = 0;
}

const struct flag_cmd *flags_cmd(const char *name)
{
	for (const struct flag_cmd *const *c = flagtab_cmds; *c; c++)
		if (!strcmp((*c)->name, name))
			return *c;
	return NULL;
}

const struct flag *flags_find(const struct flag_cmd *c, int val)
{
	FOREACH_FLAG(c, g, f)
		if (f->val == val)
			return f;
	return NULL;
}

const struct flag *flags_setting(int val)
{
	for (const struct flag_cmd *const *c = flagtab_cmds; *c; c++)
		FOREACH_FLAG(*c, g, f)
			if (g->settings && f->val == val)
				return f;
	return NULL;
}

/* ms as the largest unit that says it exactly: 8h, 30m, 2s, 500ms. */
static void say_ms(char *buf, size_t n, int64_t ms)
{
	static const struct {
		int64_t ms;
		const char *unit;
	} units[] = { { 3600000, "h" }, { 60000, "m" }, { 1000, "s" }, { 1, "ms" } };
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (ms == 0 || ms % units[i].ms == 0) {
			snprintf(buf, n, "%" PRId64 "%s", ms / units[i].ms, ms ? units[i].unit : "");
			return;
		}
}

static void say_size(char *buf, size_t n, int64_t b)
{
	static const char units[] = "TGMK";
	for (int i = 0; units[i]; i++) {
		int64_t u = (int64_t)1 << (10 * (4 - i));
		if (b && b % u == 0) {
			snprintf(buf, n, "%" PRId64 "%c", b / u, units[i]);
			return;
		}
	}
	snprintf(buf, n, "%" PRId64, b);
}

const char *flags_default_value(const struct flag *f, char *buf, size_t n)
{
	buf[0] = 0;
	switch (f->dkind) {
	case FLAG_DEFAULT_NONE:
		break;
	case FLAG_DEFAULT_TEXT:
		snprintf(buf, n, "%s", f->dtext);
		break;
	case FLAG_DEFAULT_NUM:
		snprintf(buf, n, "%" PRId64, f->dnum);
		break;
	case FLAG_DEFAULT_SIZE:
		say_size(buf, n, f->dnum);
		break;
	case FLAG_DEFAULT_MS:
		say_ms(buf, n, f->dnum);
		break;
	case FLAG_DEFAULT_GATE:
		snprintf(buf, n, "%s", gate_mode_name((enum gate_mode)f->dnum));
		break;
	}
	return buf;
}

const char *flags_default_text(const struct flag *f, char *buf, size_t n)
{
	char v[128];
	flags_default_value(f, v, sizeof(v));
	if (f->dnote)
		snprintf(buf, n, "default: %s%s%s", f->dnote, *v ? " " : "", v);
	else if (*v)
		snprintf(buf, n, "default %s", v);
	else
		buf[0] = 0;
	return buf;
}

#define HELP_COL 21
#define HELP_WIDTH 100

/* text from column col, words wrapped at HELP_WIDTH, later lines at
 * HELP_COL. */
static void wrap(FILE *out, const char *text, size_t col)
{
	const char *p = text;
	while (*p) {
		size_t word = strcspn(p, " ");
		if (col > HELP_COL && col + word > HELP_WIDTH) {
			fprintf(out, "\n%*s", HELP_COL, "");
			col = HELP_COL;
		}
		fwrite(p, 1, word, out);
		col += word;
		p += word;
		if (*p == ' ') {
			p++;
			if (*p && col + 1 + strcspn(p, " ") <= HELP_WIDTH) {
				fputc(' ', out);
				col++;
			} else if (*p) {
				fprintf(out, "\n%*s", HELP_COL, "");
				col = HELP_COL;
			}
		}
	}
	fputc('\n', out);
}

/* Paragraphs (lines ending \n) wrapped from column 0. */
static void paragraphs(FILE *out, const char *text)
{
	while (text && *text) {
		size_t l = strcspn(text, "\n");
		char *line = strndup(text, l);
		if (line) {
			const char *p = line;
			size_t col = 0;
			while (*p) {
				size_t word = strcspn(p, " ");
				if (col && col + 1 + word > HELP_WIDTH) {
					fputc('\n', out);
					col = 0;
				} else if (col) {
					fputc(' ', out);
					col++;
				}
				fwrite(p, 1, word, out);
				col += word;
				p += word;
				p += strspn(p, " ");
			}
			fputc('\n', out);
			free(line);
		}
		text += l + (text[l] == '\n');
	}
}

const char *flags_spelling(const struct flag *f, char *buf, size_t n)
{
	char sh[8] = "";
	if (f->short_name)
		snprintf(sh, sizeof(sh), "-%c, ", f->short_name);
	snprintf(buf, n, "%s--%s%s%s%s", sh, f->name, !f->arg ? "" : f->optional ? "[=" : " ", f->arg ? f->arg : "",
		 f->arg && f->optional ? "]" : "");
	return buf;
}

void flags_help(FILE *out, const struct flag_cmd *c)
{
	fprintf(out, "usage: %s\n", c->synopsis);
	paragraphs(out, c->about);
	flags_help_flags(out, c);
	paragraphs(out, c->footer);
}

void flags_help_flags(FILE *out, const struct flag_cmd *c)
{
	FOREACH_FLAG(c, g, f) {
		if (f->hidden)
			continue;
		char left[160], d[400], text[2048];
		int l = snprintf(left, sizeof(left), "  %s", flags_spelling(f, text, sizeof(text)));
		flags_default_text(f, d, sizeof(d));
		snprintf(text, sizeof(text), "%s%s%s%s", f->help, *d ? " (" : "", d, *d ? ")" : "");
		fputs(left, out);
		size_t col = (size_t)l;
		if (col < HELP_COL - 1) {
			fprintf(out, "%*s", (int)(HELP_COL - col), "");
			col = HELP_COL;
		} else {
			fputs("  ", out);
			col += 2;
		}
		wrap(out, text, col);
	}
}
