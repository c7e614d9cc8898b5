/* ward report's four forms: a table for a person, one JSON object, JUnit
 * XML for CI's test reporters, Markdown for a job summary. Every string a
 * model or a file could have written goes out through put_text, escaped
 * for where it lands. */
#include "cmd/report-out.h"
#include "base/cleanup.h"
#include "base/utf8.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum esc {
	ESC_TERM,	/* one line on a terminal: no control sequence survives */
	ESC_XML_TEXT,
	ESC_XML_ATTR,
	ESC_MD,		/* a cell of a GitHub table: one line, no | and no HTML */
};

static const char *const xml_esc[0x80] = {
	['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;", ['"'] = "&quot;", ['\''] = "&apos;",
};
/* GitHub splits a row at a | that no backslash escapes, and renders HTML. */
static const char *const md_esc[0x80] = {
	['|'] = "\\|", ['\\'] = "\\\\", ['\n'] = "<br>", ['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;",
};

/* The character at s (valid UTF-8, as task/report.c keeps every string). */
static unsigned decode(const unsigned char *s, size_t *len)
{
	size_t n = utf8_seq_len(s, strnlen((const char *)s, 4));
	if (n <= 1) {
		*len = 1;
		return s[0];
	}
	unsigned cp = s[0] & (0xff >> (n + 1));
	for (size_t i = 1; i < n; i++)
		cp = cp << 6 | (s[i] & 0x3f);
	*len = n;
	return cp;
}

/* s, escaped for how; at most max bytes of it, and "…" where it was cut. */
static void put_text(FILE *f, const char *s, size_t max, enum esc how)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t done = 0, n;
	for (; *p; p += n) {
		unsigned cp = decode(p, &n);
		if ((done += n) > max) {
			fputs("…", f);
			return;
		}
		bool ctl = cp < 0x20 || (cp >= 0x7f && cp < 0xa0);
		const char *rep = NULL;
		char num[16];	/* >= UTF8_TERM_REP */
		switch (how) {
		case ESC_TERM:
			/* One line: tab and newline are spaces; the rest is the
			 * terminal rule's (base/utf8.h). */
			if (cp == '\t' || cp == '\n')
				rep = " ";
			else if (utf8_term_char(p, n, num), num[0])
				rep = num;
			break;
		case ESC_XML_TEXT:
		case ESC_XML_ATTR:
			/* XML 1.0 has no way to write these (not even as &#N;). */
			if ((cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || cp == 0xfffe || cp == 0xffff)
				rep = "\xEF\xBF\xBD";
			else if (cp < 0x80)
				rep = xml_esc[cp];
			/* A parser turns a bare CR (and, in an attribute, tab and
			 * LF) into something else; a reference keeps it. */
			if (cp == '\r' || (how == ESC_XML_ATTR && (cp == '\t' || cp == '\n')))
				rep = (snprintf(num, sizeof(num), "&#%u;", cp), num);
			break;
		case ESC_MD:
			rep = cp < 0x80 ? md_esc[cp] : NULL;
			if (!rep && ctl)
				rep = cp == '\t' || cp == '\r' ? " " : "\xEF\xBF\xBD";
			break;
		}
		if (rep)
			fputs(rep, f);
		else
			fwrite(p, 1, n, f);
	}
}

static int finish(FILE *f)
{
	return fflush(f) == 0 && !ferror(f) ? 0 : -(errno ? errno : EIO);
}

/* Seconds from milliseconds, with decimals (1 or 3) and no float rounding. */
static const char *secs(char *b, size_t n, uint64_t ms, int decimals)
{
	if (decimals == 3)
		snprintf(b, n, "%llu.%03llu", (unsigned long long)(ms / 1000), (unsigned long long)(ms % 1000));
	else
		snprintf(b, n, "%llu.%llu", (unsigned long long)((ms + 50) / 100 / 10),
			 (unsigned long long)((ms + 50) / 100 % 10));
	return b;
}

/* The cells of a task's row, as the table and Markdown show them. */
struct cells {
	char exit[8], rounds[24], calls[24], tokens[24], cost[32], dur[32], files[24];
};

static void row_cells(const struct report_task *t, struct cells *c)
{
	if (t->state != REPORT_RESULT) {
		*c = (struct cells){ "-", "-", "-", "-", "-", "-", "-" };
		return;
	}
	snprintf(c->exit, sizeof(c->exit), "%d", t->exit_code);
	snprintf(c->rounds, sizeof(c->rounds), "%llu", (unsigned long long)t->rounds);
	snprintf(c->calls, sizeof(c->calls), "%llu", (unsigned long long)t->calls);
	snprintf(c->tokens, sizeof(c->tokens), "%llu", (unsigned long long)(t->in + t->out));
	if (t->cost_known)
		snprintf(c->cost, sizeof(c->cost), "$%.4f", t->cost_usd);
	else
		strcpy(c->cost, "-");
	char s[24];
	snprintf(c->dur, sizeof(c->dur), "%ss", secs(s, sizeof(s), t->duration_ms, 1));
	snprintf(c->files, sizeof(c->files), "%llu", (unsigned long long)t->files);
}

/* The totals, one line each, as the table and Markdown show them: its
 * label into *label and its text into b; false past the last. The text
 * holds a file name (a skipped entry): the caller escapes it. */
static bool totals_line(const struct report *r, int i, const char **label, char *b, size_t n)
{
	const struct report_totals *T = &r->tot;
	char s1[24], s2[24], s3[24], s4[24], s5[24];
	size_t at = 0;
	switch (i) {
	case 0:
		*label = "tasks";
		at = (size_t)snprintf(b, n, "%zu", T->tasks);
		for (size_t k = 0; k < T->nstops && at < n; k++)
			at += (size_t)snprintf(b + at, n - at, "%s%s %zu", k ? ", " : ": ", T->stops[k].stop,
					       T->stops[k].n);
		return true;
	case 1:
		*label = "done";
		if (T->tasks)
			snprintf(b, n, "%.1f%% (%zu of %zu)", T->done * 100.0 / (double)T->tasks, T->done, T->tasks);
		else
			snprintf(b, n, "- (no tasks)");
		return true;
	case 2:
		*label = "tokens";
		snprintf(b, n, "%llu (in %llu, out %llu)", (unsigned long long)(T->in + T->out),
			 (unsigned long long)T->in, (unsigned long long)T->out);
		return true;
	case 3:
		*label = "cost";
		if (T->with_result > T->cost_unknown)
			at = (size_t)snprintf(b, n, "$%.4f", T->cost_usd);
		else
			at = (size_t)snprintf(b, n, "-");
		if (T->cost_unknown && at < n)
			snprintf(b + at, n - at, " (%zu unknown)", T->cost_unknown);
		return true;
	case 4:
		*label = "duration";
		if (!T->with_result)
			snprintf(b, n, "- (no task finished)");
		else
			snprintf(b, n, "p50 %ss, p90 %ss, p99 %ss; slowest %ss, sum %ss (%zu finished)",
				 secs(s1, sizeof(s1), T->p50_ms, 1), secs(s2, sizeof(s2), T->p90_ms, 1),
				 secs(s3, sizeof(s3), T->p99_ms, 1), secs(s4, sizeof(s4), T->max_ms, 1),
				 secs(s5, sizeof(s5), T->sum_ms, 1), T->with_result);
		return true;
	case 5:
		*label = "rerun";
		if (!T->not_final)
			b[0] = 0;
		else
			snprintf(b, n, "%zu stopped as a rerun may change (cancelled, provider_error, box_error)",
				 T->not_final);
		return true;
	case 6:
		*label = "skipped";
		if (!r->skipped)
			b[0] = 0;
		else
			snprintf(b, n, "%zu entries that are not task directories (the first: %s)", r->skipped,
				 r->skipped_first);
		return true;
	}
	return false;
}

/* After a blank line, a line each: "LABEL     TEXT", or "- **LABEL**: TEXT". */
static void put_totals(const struct report *r, FILE *f, enum esc how)
{
	const char *label;
	char b[1024];
	fputc('\n', f);
	for (int i = 0; totals_line(r, i, &label, b, sizeof(b)); i++) {
		if (!b[0])
			continue;
		fprintf(f, how == ESC_MD ? "- **%s**: " : "%-9s ", label);
		put_text(f, b, sizeof(b), how);
		fputc('\n', f);
	}
}

int report_text(const struct report *r, FILE *f)
{
	int wid = 2, wstop = 4;
	for (size_t i = 0; i < r->n; i++) {
		wid = (int)MAX((size_t)wid, strlen(r->t[i].id));
		wstop = (int)MAX((size_t)wstop, strlen(r->t[i].stop));
	}
	fprintf(f, "%-*s  %-*s  %4s  %6s  %5s  %10s  %9s  %9s  %5s\n", wid, "ID", wstop, "STOP", "EXIT", "ROUNDS",
		"CALLS", "TOKENS", "COST", "DURATION", "FILES");
	bool any = false;
	for (size_t i = 0; i < r->n; i++) {
		struct cells c;
		row_cells(&r->t[i], &c);
		fprintf(f, "%-*s  %-*s  %4s  %6s  %5s  %10s  %9s  %9s  %5s\n", wid, r->t[i].id, wstop, r->t[i].stop,
			c.exit, c.rounds, c.calls, c.tokens, c.cost, c.dur, c.files);
		any |= !report_done(&r->t[i]);
	}
	if (any) {
		fputs("\nwhy, where not done:\n", f);
		for (size_t i = 0; i < r->n; i++) {
			if (report_done(&r->t[i]))
				continue;
			fprintf(f, "  %-*s  %s: ", wid, r->t[i].id, r->t[i].stop);
			put_text(f, r->t[i].why, 200, ESC_TERM);
			fputc('\n', f);
		}
	}
	put_totals(r, f, ESC_TERM);
	return finish(f);
}

int report_markdown(const struct report *r, FILE *f)
{
	fprintf(f, "### ward report: %zu of %zu tasks done\n\n", r->tot.done, r->tot.tasks);
	fputs("| id | stop | exit | rounds | calls | tokens | cost | duration | files | why |\n"
	      "|---|---|--:|--:|--:|--:|--:|--:|--:|---|\n", f);
	for (size_t i = 0; i < r->n; i++) {
		const struct report_task *t = &r->t[i];
		struct cells c;
		row_cells(t, &c);
		fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | ", t->id, t->stop, c.exit, c.rounds, c.calls,
			c.tokens, c.cost, c.dur, c.files);
		put_text(f, t->why, 300, ESC_MD);
		fputs(" |\n", f);
	}
	put_totals(r, f, ESC_MD);
	return finish(f);
}

static void add_str(cJSON *o, const char *k, const char *v)
{
	cJSON_AddItemToObject(o, k, v ? cJSON_CreateString(v) : cJSON_CreateNull());
}

static void add_num(cJSON *o, const char *k, bool known, double v)
{
	cJSON_AddItemToObject(o, k, known ? cJSON_CreateNumber(v) : cJSON_CreateNull());
}

static void add_tokens(cJSON *o, bool known, uint64_t in, uint64_t out, uint64_t cache_read, uint64_t cache_write)
{
	add_num(o, "input_tokens", known, (double)in);
	add_num(o, "output_tokens", known, (double)out);
	add_num(o, "cache_read_tokens", known, (double)cache_read);
	add_num(o, "cache_write_tokens", known, (double)cache_write);
	add_num(o, "tokens", known, (double)(in + out));
}

static cJSON *task_json(const struct report_task *t)
{
	cJSON *o = cJSON_CreateObject();
	bool res = t->state == REPORT_RESULT;
	add_str(o, "id", t->id);
	add_str(o, "stop", t->stop);
	add_str(o, "why", t->why);
	cJSON_AddItemToObject(o, "final", res ? cJSON_CreateBool(t->final) : cJSON_CreateNull());
	add_num(o, "exit_code", res, t->exit_code);
	add_num(o, "index", t->index >= 0, (double)t->index);
	add_str(o, "task", t->task);
	add_str(o, "task_file", t->task_file);
	add_str(o, "session", t->session);
	add_str(o, "model", t->model);
	add_num(o, "rounds", res, (double)t->rounds);
	add_num(o, "calls", res, (double)t->calls);
	add_num(o, "refused", res, (double)t->refused);
	add_num(o, "runs", res, (double)t->runs);
	add_tokens(o, res, t->in, t->out, t->cache_read, t->cache_write);
	add_num(o, "cost_usd", res && t->cost_known, t->cost_usd);
	add_num(o, "duration_ms", res, (double)t->duration_ms);
	add_num(o, "changed_files", res, (double)t->files);
	if (res && t->agents)
		cJSON_AddItemToObject(o, "agents", cJSON_Duplicate(t->agents, 1));
	return o;
}

static cJSON *totals_json(const struct report *r)
{
	const struct report_totals *T = &r->tot;
	cJSON *o = cJSON_CreateObject(), *stops = cJSON_CreateObject(), *d = cJSON_CreateObject();
	bool fin = T->with_result > 0;
	add_num(o, "tasks", true, (double)T->tasks);
	add_num(o, "done", true, (double)T->done);
	add_num(o, "done_pct", T->tasks > 0, T->tasks ? round(T->done * 1000.0 / (double)T->tasks) / 10 : 0);
	for (size_t k = 0; k < T->nstops; k++)
		add_num(stops, T->stops[k].stop, true, (double)T->stops[k].n);
	cJSON_AddItemToObject(o, "stops", stops);
	add_num(o, "finished", true, (double)T->with_result);
	add_num(o, "not_final", true, (double)T->not_final);
	add_tokens(o, true, T->in, T->out, T->cache_read, T->cache_write);
	add_num(o, "cost_usd", T->with_result > T->cost_unknown, T->cost_usd);
	add_num(o, "cost_unknown", true, (double)T->cost_unknown);
	add_num(d, "p50", fin, (double)T->p50_ms);
	add_num(d, "p90", fin, (double)T->p90_ms);
	add_num(d, "p99", fin, (double)T->p99_ms);
	add_num(d, "max", fin, (double)T->max_ms);
	add_num(d, "sum", true, (double)T->sum_ms);
	cJSON_AddItemToObject(o, "duration_ms", d);
	add_num(o, "skipped", true, (double)r->skipped);
	return o;
}

int report_json(const struct report *r, FILE *f)
{
	cJSON *o = cJSON_CreateObject(), *tasks = cJSON_CreateArray();
	cJSON_AddItemToObject(o, "tasks", tasks);
	for (size_t i = 0; i < r->n; i++)
		cJSON_AddItemToArray(tasks, task_json(&r->t[i]));
	cJSON_AddItemToObject(o, "totals", totals_json(r));
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!s)
		return -ENOMEM;
	fputs(s, f);
	fputc('\n', f);
	free(s);
	return finish(f);
}

/* ward.TASKFILE (its name, less .jsonl or .json), or ward. A task with no
 * result (missing, unfinished) has the class of the report's task file
 * (dflt: the first result's), so a CI reporter groups every task of one
 * file together, those that never ran too. */
static void put_classname(FILE *f, const struct report_task *t, const char *dflt)
{
	const char *tf = t->task_file ? t->task_file : dflt;
	const char *base = tf ? strrchr(tf, '/') : NULL;
	base = base ? base + 1 : tf;
	size_t n = base ? strlen(base) : 0;
	if (n > 6 && !strcmp(base + n - 6, ".jsonl"))
		n -= 6;
	else if (n > 5 && !strcmp(base + n - 5, ".json"))
		n -= 5;
	fputs("ward", f);
	if (!n)
		return;
	char name[256];
	snprintf(name, sizeof(name), ".%.*s", (int)n, base);
	put_text(f, name, sizeof(name), ESC_XML_ATTR);
}

int report_junit(const struct report *r, FILE *f)
{
	const struct report_totals *T = &r->tot;
	size_t errors = T->tasks - T->with_result, failures = T->with_result - T->done;
	char s[32];
	secs(s, sizeof(s), T->sum_ms, 3);
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
	fprintf(f, "<testsuites name=\"ward\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" time=\"%s\">\n", T->tasks,
		failures, errors, s);
	fprintf(f, "  <testsuite name=\"ward\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"0\" time=\"%s\">\n",
		T->tasks, failures, errors, s);
	const char *dflt = NULL;
	for (size_t i = 0; i < r->n && !dflt; i++)
		dflt = r->t[i].task_file;
	for (size_t i = 0; i < r->n; i++) {
		const struct report_task *t = &r->t[i];
		bool res = t->state == REPORT_RESULT;
		fputs("    <testcase classname=\"", f);
		put_classname(f, t, dflt);
		fprintf(f, "\" name=\"%s\" time=\"%s\"", t->id, secs(s, sizeof(s), res ? t->duration_ms : 0, 3));
		if (report_done(t)) {
			fputs("/>\n", f);
			continue;
		}
		const char *el = res ? "failure" : "error";
		fprintf(f, ">\n      <%s message=\"%s: ", el, t->stop);
		put_text(f, t->why, REPORT_WHY_MAX * 4, ESC_XML_ATTR);
		fprintf(f, "\" type=\"%s\">", t->stop);
		if (res) {
			fprintf(f, "exit code %d, rounds %llu, calls %llu, refused %llu, runs %llu, session ", t->exit_code,
				(unsigned long long)t->rounds, (unsigned long long)t->calls,
				(unsigned long long)t->refused, (unsigned long long)t->runs);
			put_text(f, t->session ? t->session : "-", 256, ESC_XML_TEXT);
			fputs(", model ", f);
			put_text(f, t->model ? t->model : "-", 256, ESC_XML_TEXT);
			fputs("\ntask: ", f);
			put_text(f, t->task ? t->task : "-", 400, ESC_XML_TEXT);
			fputs("\n", f);
		}
		put_text(f, t->why, REPORT_WHY_MAX * 4, ESC_XML_TEXT);
		fprintf(f, "</%s>\n    </testcase>\n", el);
	}
	fputs("  </testsuite>\n</testsuites>\n", f);
	return finish(f);
}
