/* What the terminal session prints: the model's answer as markdown
 * (cmd/mdterm.h), its thinking dimmed, a card for each call (its output
 * in rows, the first and the last of them; what it came back with; the
 * diff of a file it changed), and below what is committed the live rows:
 * the answer's open block, the spinner, the draft typed ahead and the
 * footer. Everything untrusted is made term-safe here. */
#include "cmd/tui.h"
#include "base/json.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/timeutil.h"
#include "base/utf8.h"
#include "cmd/cmd.h"
#include "cmd/mdterm.h"
#include "cmd/term.h"
#include "tools/tool.h"
#include "turn/window.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int tui_cols(void)
{
	struct winsize w;
	if (ioctl(1, TIOCGWINSZ, &w) == 0 && w.ws_col >= 20)
		return w.ws_col;
	if (ioctl(1, TIOCGWINSZ, &w) == 0 && w.ws_col > 0)
		return 20;
	return 80;
}

/* Attributes only: the cursor does not move. */
void tui_put_attr(struct tui *u, const char *s)
{
	fputs(s, stdout);
}

void tui_put(struct tui *u, const char *s)
{
	size_t n = strlen(s);
	if (!n)
		return;
	fwrite(s, 1, n, stdout);
	u->bol = s[n - 1] == '\n';
}

void tui_putf(struct tui *u, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n >= 0)
		tui_put(u, s);
	free(s);
}

/* Untrusted text (the model's, a tool's, a file's): no control sequence
 * reaches the terminal. */
void tui_put_safe(struct tui *u, const char *p, size_t n)
{
	_cleanup_free_ char *s = utf8_term_safe(p, n);
	if (s)
		tui_put(u, s);
}

/* The session's one-line form is ward's one (cmd/term.h). */
char *tui_short_n(const char *s, size_t n, size_t max)
{
	return term_line(s, n, max);
}

char *tui_short(const char *s, size_t max)
{
	return tui_short_n(s, strlen(s), max);
}

char *tui_fit(const char *s, int cols)
{
	_cleanup_free_ char *safe = term_line(s, strlen(s), strlen(s));
	if (!safe)
		return NULL;
	size_t n = strlen(safe);
	if (cols < 1 || term_cols(safe, n) <= (size_t)cols)
		return strdup(safe);
	size_t k = term_fit_bytes(safe, n, (size_t)cols - 1);
	char *r = malloc(k + 4);
	if (r) {
		memcpy(r, safe, k);
		memcpy(r + k, "…", 4);
	}
	return r;
}

void tui_say(struct tui *u, const char *prefix, const char *text, int indent)
{
	_cleanup_free_ char *safe = term_line(text, strlen(text), strlen(text));
	if (!safe)
		return;
	int cols = tui_cols() - 1;
	size_t pw = prefix ? term_cols(prefix, strlen(prefix)) : 0;
	if (prefix)
		tui_put(u, prefix);
	int used = (int)pw;
	const char *p = safe;
	bool first = true;
	while (*p) {
		size_t w = strcspn(p, " ");
		size_t wc = term_cols(p, w);
		if (!first && used + 1 + (int)wc > cols) {
			tui_putf(u, "\n%*s", indent, "");
			used = indent;
		} else if (!first) {
			tui_put(u, " ");
			used++;
		}
		/* A word wider than the row is cut where the row ends. */
		while (used + (int)term_cols(p, w) > cols && w) {
			size_t fit = term_fit_bytes(p, w, (size_t)MAX(cols - used, 1));
			if (!fit)
				fit = 1;
			fwrite(p, 1, fit, stdout);
			tui_putf(u, "\n%*s", indent, "");
			used = indent;
			p += fit;
			w -= fit;
		}
		fwrite(p, 1, w, stdout);
		used += (int)term_cols(p, w);
		p += w;
		p += strspn(p, " ");
		first = false;
	}
	tui_put(u, "\n");
}

void tui_newline(struct tui *u)
{
	if (u->thinking_open) {
		tui_put_attr(u, UNDIM);
		u->thinking_open = false;
	}
	if (!u->bol)
		tui_put(u, "\n");
}

/* --- The live rows. */

void tui_live_clear(struct tui *u)
{
	if (!u->live)
		return;
	int cols = tui_cols(), rows = 0;
	/* A row drawn at a greater width takes more rows once the terminal
	 * narrowed and rewrapped it. */
	for (int i = 0; i < u->live_n; i++)
		rows += MAX(1, (u->live_w[i] + cols - 1) / cols);
	if (rows > 1)
		fprintf(stdout, "\r\033[%dA\033[J", rows - 1);
	else
		fputs("\r\033[J", stdout);
	u->live = false;
	u->live_n = 0;
}

void tui_live_row(struct tui *u, struct buf *b, const char *s, int cols)
{
	if (u->live_n >= (int)ARRAY_SIZE(u->live_w))
		return;
	size_t n = strlen(s);
	size_t fit = term_fit_bytes(s, n, (size_t)cols);
	if (u->live_n)
		buf_append(b, "\n", 1);
	buf_append(b, s, fit);
	if (memchr(s, 033, fit))
		buf_append(b, RESET, strlen(RESET));
	u->live_w[u->live_n++] = (int)term_cols(s, fit);
}

char *tui_footer(struct tui *u, int cols)
{
	/* Fields by priority: what is dropped first when the row is narrow
	 * comes last. */
	char f[6][160];
	int nf = 0;
	snprintf(f[nf++], sizeof(f[0]), "%s", u->f.cfg.pcfg.model);
	int64_t win = u->f.cfg.context_window;
	if (win <= 0 && !window_for(u->f.cfg.pcfg.model, &win))
		win = 0;
	if (win > 0) {
		int64_t used = u->s.prompt_tokens;
		int left = (int)(100 - MIN(used * 100 / win, 100));
		snprintf(f[nf++], sizeof(f[0]), "%d%% context left", left);
	}
	if (u->priced)
		snprintf(f[nf++], sizeof(f[0]), "$%.4f", price_cost(&u->price, &u->s.usage));
	else
		snprintf(f[nf++], sizeof(f[0]), "%lld tokens", (long long)(usage_prompt(&u->s.usage) + u->s.usage.output));
	snprintf(f[nf++], sizeof(f[0]), "box %s", u->s.box ? (u->call_running ? "running" : "ready") : u->box[0] ? "asleep" : "none");
	snprintf(f[nf++], sizeof(f[0]), "%s", gate_mode_name(u->f.gate.mode));
	snprintf(f[nf++], sizeof(f[0]), "session %.8s", u->s.j.id);
	for (int k = nf; k > 0; k--) {
		struct buf b;
		buf_init(&b, 2048);
		for (int i = 0; i < k; i++) {
			if (i)
				buf_append(&b, " · ", strlen(" · "));
			buf_append(&b, f[i], strlen(f[i]));
		}
		buf_cstr(&b);
		_cleanup_free_ char *safe = term_line(b.data ? b.data : "", b.len, b.len);
		buf_free(&b);
		if (!safe)
			return NULL;
		if ((int)term_cols(safe, strlen(safe)) <= cols || k == 1) {
			char *r = tui_fit(safe, cols);
			return r;
		}
	}
	return NULL;
}

void tui_prompt_footer(struct tui *u)
{
	_cleanup_free_ char *f = tui_footer(u, tui_cols() - 1);
	printf("\n" DIM "%s" UNDIM "\033[1A\r", f ? f : "");
	fflush(stdout);
}

/* What was typed ahead, as it would stand in the prompt. */
static void draft(struct tui *u, struct buf *out)
{
	const unsigned char *p = (const unsigned char *)(u->ahead.data ? u->ahead.data : "");
	for (size_t i = 0; i < u->ahead.len; i++) {
		unsigned char c = p[i];
		if (c == 0x7f || c == 8) {
			while (out->len && ((unsigned char)out->data[out->len - 1] & 0xc0) == 0x80)
				out->len--;
			if (out->len)
				out->len--;
		} else if (c == 0x15) {
			out->len = 0;
		} else if (c == '\r' || c == '\n') {
			buf_append(out, " ⏎ ", strlen(" ⏎ "));
		} else if (c == 033) {
			/* A key's sequence (an arrow): not text. */
			size_t k = i + 1;
			if (k < u->ahead.len && (p[k] == '[' || p[k] == 'O')) {
				k++;
				while (k < u->ahead.len && !(p[k] >= 0x40 && p[k] <= 0x7e))
					k++;
			}
			i = k;
		} else if (c >= 0x20 || c == '\t') {
			buf_append(out, &p[i], 1);
		}
	}
}

void tui_live_draw(struct tui *u)
{
	static const char *const frames[] = { "⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏" };
	if (!u->bol || u->live)
		return;
	int cols = tui_cols() - 1;
	struct buf b;
	buf_init(&b, 1u << 16);
	/* The answer's open block: the last rows of its last line. */
	size_t hn = 0;
	const char *held = u->md ? mdterm_stream_held(u->md, &hn) : "";
	/* A word still coming is shown when it is whole. */
	if (hn && held[hn - 1] != '\n') {
		size_t k = hn;
		while (k && held[k - 1] != ' ' && held[k - 1] != '\n')
			k--;
		hn = k;
	}
	while (hn && (held[hn - 1] == '\n' || held[hn - 1] == ' '))
		hn--;
	if (hn) {
		const char *ls = held + hn;
		while (ls > held && ls[-1] != '\n')
			ls--;
		_cleanup_free_ char *safe = utf8_term_safe(ls, (size_t)(held + hn - ls));
		const char *line = safe ? safe : "";
		/* Rows broken between words, as the rendering will break them;
		 * the last TUI_PREVIEW_ROWS of them. */
		size_t starts[TUI_PREVIEW_ROWS], ends[TUI_PREVIEW_ROWS], nrows = 0;
		for (const char *p = line; *p;) {
			const char *q = p;
			size_t used = 0;
			const char *end = p;
			while (*q) {
				size_t w = strcspn(q, " ");
				size_t wc = term_cols(q, w);
				if (used && used + 1 + wc > (size_t)cols)
					break;
				if (!used && wc > (size_t)cols) {
					w = term_fit_bytes(q, w, (size_t)cols);
					if (!w)
						w = 1;
					wc = (size_t)cols;
				}
				used += (used ? 1 : 0) + wc;
				q += w;
				end = q;
				q += strspn(q, " ");
			}
			starts[nrows % TUI_PREVIEW_ROWS] = (size_t)(p - line);
			ends[nrows % TUI_PREVIEW_ROWS] = (size_t)(end - line);
			nrows++;
			p = q > p ? q : p + 1;
		}
		size_t first = nrows > TUI_PREVIEW_ROWS ? nrows - TUI_PREVIEW_ROWS : 0;
		for (size_t r = first; r < nrows; r++) {
			size_t at = r % TUI_PREVIEW_ROWS;
			char row[4096];
			snprintf(row, sizeof(row), "%.*s", (int)MIN(ends[at] - starts[at], sizeof(row) - 1), line + starts[at]);
			tui_live_row(u, &b, row, cols);
		}
	}
	/* The running call's last rows, while its card shows only the first. */
	if (u->call_running && u->hidden_rows + u->ntail > 0 && u->ntail) {
		size_t k = MIN(u->ntail, (size_t)2);
		for (size_t i = u->ntail - k; i < u->ntail; i++) {
			size_t at = (u->tail_at + TUI_OUT_TAIL - u->ntail + i) % TUI_OUT_TAIL;
			char row[4096];
			snprintf(row, sizeof(row), DIM "%s", u->tail[at].row ? u->tail[at].row : "");
			row[strcspn(row, "\n")] = 0;
			tui_live_row(u, &b, row, cols);
		}
	}
	tui_agents_live(u, &b, cols);
	if (u->waiting || u->call_running) {
		double secs = (double)(now_ms() - u->since) / 1000;
		char left[48] = "", row[512];
		if (u->deadline) {
			int64_t l = u->deadline - now_ms();
			snprintf(left, sizeof(left), " · %llds left", (long long)(l > 0 ? l / 1000 : 0));
		}
		if (u->call_running)
			snprintf(row, sizeof(row), DIM "%s %s %.1fs%s · esc to interrupt" UNDIM, frames[u->spin % 10], u->call_name,
				 secs, left);
		else
			snprintf(row, sizeof(row), DIM "%s waiting for the model %.1fs%s · esc to interrupt" UNDIM,
				 frames[u->spin % 10], secs, left);
		tui_live_row(u, &b, row, cols);
	}
	struct buf d;
	buf_init(&d, TUI_QUEUE * 4);
	draft(u, &d);
	if (d.len) {
		_cleanup_free_ char *safe = utf8_term_safe(d.data, d.len);
		const char *s = safe ? safe : "";
		size_t n = strlen(s), w = term_cols(s, n);
		/* Its end, where the next key goes. */
		size_t skip = w + 3 > (size_t)cols ? w + 3 - (size_t)cols : 0;
		size_t off = skip ? term_fit_bytes(s, n, skip + 1) : 0;
		char row[8192];
		snprintf(row, sizeof(row), "› %s%s", off ? "…" : "", s + off);
		tui_live_row(u, &b, row, cols);
	}
	buf_free(&d);
	_cleanup_free_ char *foot = tui_footer(u, cols);
	if (foot) {
		char row[1024];
		snprintf(row, sizeof(row), DIM "%s" UNDIM, foot);
		tui_live_row(u, &b, row, cols);
	}
	if (b.len) {
		fwrite(b.data, 1, b.len, stdout);
		u->live = true;
	}
	buf_free(&b);
}

void tui_flush(struct tui *u)
{
	fflush(stdout);
}

/* --- The answer. */

static void put_rows(struct tui *u, struct buf *rows, const char *first_prefix)
{
	if (!rows->len)
		return;
	buf_cstr(rows);
	if (first_prefix) {
		tui_put(u, first_prefix);
	}
	tui_put(u, rows->data);
	rows->len = 0;
}

static void think_end(struct tui *u)
{
	if (!u->think)
		return;
	struct buf r;
	buf_init(&r, 1u << 24);
	mdterm_stream_end(u->think, tui_cols() - 3, &r);
	put_rows(u, &r, u->think_first ? DIM "✻ " UNDIM : NULL);
	u->think_first = false;
	buf_free(&r);
	u->thinking_open = false;
}

static void md_end(struct tui *u)
{
	think_end(u);
	if (!u->md)
		return;
	struct buf r;
	buf_init(&r, 1u << 24);
	mdterm_stream_end(u->md, tui_cols() - 1, &r);
	put_rows(u, &r, NULL);
	buf_free(&r);
}

/* --- Cards. */

/* One line of output (without its newline) in rows of cols columns,
 * coloured as it came; each row ends in "\n". */
static void line_rows(const char *p, size_t n, int cols, struct buf *out, size_t *ret_rows)
{
	_cleanup_free_ char *safe = utf8_term_safe_sgr(p, n);
	struct buf t;
	buf_init(&t, (safe ? strlen(safe) : 0) * 8 + 16);
	for (const char *q = safe ? safe : ""; *q; q++)
		buf_append(&t, *q == '\t' ? "    " : q, *q == '\t' ? 4 : 1);
	const char *s = t.data ? t.data : "";
	size_t left = t.len, rows = 0;
	char last[64] = "";
	do {
		size_t fit = term_fit_bytes(s, left, (size_t)cols);
		if (!fit && left)
			fit = left;
		buf_append(out, DIM "  │ " UNDIM, strlen(DIM "  │ " UNDIM));
		buf_append(out, last, strlen(last));
		buf_append(out, s, fit);
		buf_append(out, RESET "\n", strlen(RESET "\n"));
		for (size_t i = 0; i < fit; i++)
			if (s[i] == 033) {
				size_t e = i + 1;
				while (e < fit && s[e] != 'm')
					e++;
				snprintf(last, sizeof(last), "%.*s", (int)MIN(e + 1 - i, sizeof(last) - 1), s + i);
			}
		s += fit;
		left -= fit;
		rows++;
	} while (left);
	buf_free(&t);
	*ret_rows = rows;
}

int tui_card_rows(struct tui *u, const char *p, size_t n, struct buf *out)
{
	int cols = MAX(tui_cols() - 5, 10), rows = 0;
	for (size_t i = 0; i < n;) {
		const char *nl = memchr(p + i, '\n', n - i);
		size_t l = nl ? (size_t)(nl - (p + i)) : n - i;
		size_t r;
		line_rows(p + i, l, cols, out, &r);
		rows += (int)r;
		i += l + 1;
	}
	return rows;
}

static void tail_clear(struct tui *u)
{
	for (size_t i = 0; i < TUI_OUT_TAIL; i++) {
		free(u->tail[i].row);
		u->tail[i].row = NULL;
	}
	u->ntail = u->tail_at = 0;
}

static void card_reset(struct tui *u)
{
	u->card.len = 0;
	u->card_line.len = 0;
	u->card_total = 0;
	u->card_lines = 0;
	u->head_rows = 0;
	u->head_line = 0;
	u->hidden_rows = 0;
	tail_clear(u);
}

/* A whole line of the card: its rows shown while the head has room, then
 * kept as the tail (the rows it pushes out counted). */
static void card_line(struct tui *u, const char *p, size_t n)
{
	struct buf r;
	buf_init(&r, n * 8 + 256);
	int cols = MAX(tui_cols() - 5, 10);
	size_t rows;
	line_rows(p, n, cols, &r, &rows);
	u->card_lines++;
	buf_cstr(&r);
	for (char *q = r.data; q && *q;) {
		char *nl = strchr(q, '\n');
		size_t l = nl ? (size_t)(nl - q) + 1 : strlen(q);
		if (u->head_rows < TUI_OUT_HEAD) {
			fwrite(q, 1, l, stdout);
			u->bol = true;
			u->head_rows++;
			u->head_line = u->card_lines;
		} else {
			if (u->ntail == TUI_OUT_TAIL) {
				free(u->tail[u->tail_at].row);
				u->hidden_rows++;
			} else {
				u->ntail++;
			}
			u->tail[u->tail_at].row = strndup(q, l);
			u->tail[u->tail_at].line = u->card_lines;
			u->tail_at = (u->tail_at + 1) % TUI_OUT_TAIL;
		}
		q += l;
	}
	buf_free(&r);
}

static void card_output(struct tui *u, const char *p, size_t n)
{
	u->card_total += n;
	if (u->card.len + n <= TUI_CARD_MAX)
		buf_append(&u->card, p, n);
	const char *end = p + n;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t seg = nl ? (size_t)(nl - p) : (size_t)(end - p);
		buf_append(&u->card_line, p, seg);
		/* A line with no end in sight is laid out in pieces. */
		if (nl || u->card_line.len >= (1u << 16)) {
			card_line(u, u->card_line.data ? u->card_line.data : "", u->card_line.len);
			u->card_line.len = 0;
		}
		p += seg + (nl != NULL);
	}
}

static void num_commas(char *out, size_t n, unsigned long long v)
{
	char d[32];
	int k = snprintf(d, sizeof(d), "%llu", v), o = 0;
	for (int i = 0; i < k && o + 2 < (int)n; i++) {
		if (i && (k - i) % 3 == 0)
			out[o++] = ',';
		out[o++] = d[i];
	}
	out[o] = 0;
}

/* The card's end: the line still open, what was left out between the
 * head and the tail, and the tail. */
static void card_finish(struct tui *u)
{
	if (u->card_line.len) {
		card_line(u, u->card_line.data, u->card_line.len);
		u->card_line.len = 0;
	}
	if (u->hidden_rows) {
		size_t first_tail = u->tail[(u->tail_at + TUI_OUT_TAIL - u->ntail) % TUI_OUT_TAIL].line;
		size_t lines = first_tail > u->head_line + 1 ? first_tail - u->head_line - 1 : 0;
		char a[32], b[32], m[160];
		num_commas(a, sizeof(a), lines);
		num_commas(b, sizeof(b), u->hidden_rows);
		if (lines && lines != u->hidden_rows)
			snprintf(m, sizeof(m), "… %s line%s (%s rows) · ctrl-t shows all", a, lines == 1 ? "" : "s", b);
		else if (lines)
			snprintf(m, sizeof(m), "… %s line%s · ctrl-t shows all", a, lines == 1 ? "" : "s");
		else
			snprintf(m, sizeof(m), "… %s rows of this line · ctrl-t shows all", b);
		_cleanup_free_ char *fit = tui_fit(m, MAX(tui_cols() - 5, 10));
		tui_putf(u, DIM "  │ %s" UNDIM "\n", fit ? fit : "");
	}
	for (size_t i = 0; i < u->ntail; i++) {
		size_t at = (u->tail_at + TUI_OUT_TAIL - u->ntail + i) % TUI_OUT_TAIL;
		tui_put(u, u->tail[at].row ? u->tail[at].row : "");
	}
	tail_clear(u);
}

void tui_show_last(struct tui *u)
{
	if (!u->last_title[0]) {
		tui_put(u, "No call's output to show yet.\n");
		return;
	}
	tui_putf(u, BOLD "%s" RESET DIM " · the whole output" UNDIM "\n", u->last_title);
	struct buf r;
	buf_init(&r, (size_t)u->last_out.len * 16 + 4096);
	tui_card_rows(u, u->last_out.data ? u->last_out.data : "", u->last_out.len, &r);
	if (r.len)
		fwrite(r.data, 1, r.len, stdout);
	buf_free(&r);
	if (u->last_cut)
		tui_putf(u, DIM "  │ … cut at %u MiB; the journal has what the model was told" UNDIM "\n", TUI_CARD_MAX >> 20);
	/* Its name again at the end, where the person is. */
	_cleanup_free_ char *t = tui_fit(u->last_title, MAX(tui_cols() - 24, 10));
	tui_putf(u, DIM "  ⎿ the whole output of " UNDIM "%s\n", t ? t : "");
	u->bol = true;
}

static size_t count_lines(const char *t)
{
	size_t n = 0;
	for (const char *p = t; p && *p;) {
		size_t l = strcspn(p, "\n");
		n += l > 0 && *p != '[';
		p += l + (p[l] == '\n');
	}
	return n;
}

/* What a call came back with, in a few words. */
static void summary(const char *tool, const cJSON *input, const char *text, char *out, size_t n)
{
	out[0] = 0;
	if (!text)
		return;
	if (!strcmp(tool, "read")) {
		size_t k = 0;
		for (const char *p = text; *p;) {
			size_t l = strcspn(p, "\n");
			size_t d = strspn(p, " ");
			k += l > d && p[d] >= '0' && p[d] <= '9' && memchr(p, '\t', l);
			p += l + (p[l] == '\n');
		}
		snprintf(out, n, "read %zu line%s", k, k == 1 ? "" : "s");
	} else if (!strcmp(tool, "grep")) {
		if (!strncmp(text, "no matches", 10)) {
			snprintf(out, n, "no matches");
			return;
		}
		const char *mode = json_str(input, "mode");
		size_t k = 0, files = 0;
		char last[512] = "";
		for (const char *p = text; *p;) {
			size_t l = strcspn(p, "\n");
			if (l && *p != '[' && *p != '-') {
				k++;
				size_t f = strcspn(p, ":");
				if (f < l && (f != strlen(last) || strncmp(p, last, f))) {
					files++;
					snprintf(last, sizeof(last), "%.*s", (int)MIN(f, sizeof(last) - 1), p);
				}
			}
			p += l + (p[l] == '\n');
		}
		if (mode && !strcmp(mode, "content"))
			snprintf(out, n, "%zu match%s in %zu file%s", k, k == 1 ? "" : "es", files, files == 1 ? "" : "s");
		else
			snprintf(out, n, "%zu file%s", k, k == 1 ? "" : "s");
	} else if (!strcmp(tool, "find") || !strcmp(tool, "ls")) {
		size_t k = count_lines(text);
		snprintf(out, n, "%zu %s", k, !strcmp(tool, "ls") ? (k == 1 ? "entry" : "entries") : k == 1 ? "path" : "paths");
	}
}

/* Lines of what the model was told that the card did not show already. */
static void result_text(struct tui *u, const char *t, int max)
{
	int lines = 0;
	const char *out = u->card.data;
	size_t olen = u->card.len;
	while (t && *t && lines < max) {
		size_t l = strcspn(t, "\n");
		bool shown = olen && l && memmem(out, olen, t, l);
		if (l && !shown) {
			_cleanup_free_ char *s = tui_short_n(t, l, (size_t)MAX(tui_cols() - 6, 10));
			tui_putf(u, DIM "    %s" UNDIM "\n", s ? s : "");
			lines++;
		}
		t += l + (t[l] == '\n');
	}
}

static void card_result(struct tui *u, const cJSON *call, const cJSON *result)
{
	const char *id = json_str(call, "id") ? json_str(call, "id") : "";
	const char *tool = json_str(call, "name") ? json_str(call, "name") : "?";
	const cJSON *input = cJSON_GetObjectItemCaseSensitive(call, "input");
	bool mine = !strcmp(id, u->card_id);
	if (mine)
		card_finish(u);
	/* Calls side by side: every result names its call. */
	bool label = !mine || u->side_by_side;
	if (u->pending > 0 && --u->pending == 0)
		u->side_by_side = false;
	const char *outcome = json_str(result, "outcome");
	const char *text = json_str(result, "text");
	const cJSON *ec = cJSON_GetObjectItemCaseSensitive(result, "exit_code");
	const cJSON *ms = cJSON_GetObjectItemCaseSensitive(result, "elapsed_ms");
	bool ok = outcome && !strcmp(outcome, "ok") && (!cJSON_IsNumber(ec) || ec->valueint == 0);
	bool cancelled = outcome && !strcmp(outcome, "cancelled");
	struct buf line;
	buf_init(&line, 4096);
	if (label) {
		/* Calls that ran side by side: say whose result this is. */
		_cleanup_free_ char *n = tui_short(tool, 31);
		_cleanup_free_ char *a = tui_short(tool_call_arg(call), 50);
		buf_printf(&line, BOLD "%s" RESET " %s ", n ? n : "", a ? a : "");
	}
	buf_printf(&line, "%s%s" RESET, ok ? GREEN : cancelled ? YELLOW : RED,
		   !outcome ? "?" : !strcmp(outcome, "ok") && !ok ? "failed" : !strcmp(outcome, "timed_out") ? "timed out" : outcome);
	if (cJSON_IsNumber(ec))
		buf_printf(&line, " (exit %d)", ec->valueint);
	if (cJSON_IsNumber(ms))
		buf_printf(&line, " in %.1f s", ms->valuedouble / 1000);
	char sum[200];
	summary(tool, input, ok ? text : NULL, sum, sizeof(sum));
	if (sum[0])
		buf_printf(&line, " · %s", sum);
	buf_cstr(&line);
	tui_put(u, "  ⎿ ");
	/* ward's own words and colours, and names already term-safe. */
	size_t fit = term_fit_bytes(line.data ? line.data : "", line.len, (size_t)MAX(tui_cols() - 5, 10));
	fwrite(line.data ? line.data : "", 1, fit, stdout);
	tui_put(u, RESET "\n");
	buf_free(&line);
	if (ok && (!strcmp(tool, "write") || !strcmp(tool, "edit"))) {
		struct buf d;
		buf_init(&d, 1u << 22);
		tui_diff_call(tool, input, u->before, u->before_len, tui_cols() - 1, TUI_DIFF_ROWS, &d);
		buf_cstr(&d);
		tui_put(u, d.data ? d.data : "");
		if (!u->before && !strcmp(tool, "write"))
			tui_put(u, DIM "    (what the file held before is not known here)" UNDIM "\n");
		buf_free(&d);
	} else if (ok && !strncmp(tool, "mcp__", 5) && text) {
		/* An MCP tool: the first lines of what it returned. */
		int k = 0;
		for (const char *p = text; *p && k < 3; k++) {
			size_t l = strcspn(p, "\n");
			_cleanup_free_ char *s = tui_short_n(p, l, (size_t)MAX(tui_cols() - 6, 10));
			tui_putf(u, DIM "    %s" UNDIM "\n", s ? s : "");
			p += l + (p[l] == '\n');
		}
	} else if (!ok && !(outcome && !strcmp(outcome, "refused") && !strcmp(id, u->denied_id))) {
		/* What the model was told (the reason, the tail, the hint), less
		 * what the card showed already. */
		result_text(u, text, 8);
	}
	free(u->before);
	u->before = NULL;
	if (mine) {
		/* Kept for Ctrl-T. */
		struct buf t = u->last_out;
		u->last_out = u->card;
		u->card = t;
		u->card.len = 0;
		u->last_cut = u->card_total > TUI_CARD_MAX;
		_cleanup_free_ char *n = tui_short(tool, 31);
		_cleanup_free_ char *a = tui_short(tool_call_arg(call), 120);
		snprintf(u->last_title, sizeof(u->last_title), "%s %s", n ? n : "", a ? a : "");
		if (!u->last_out.len && text) {
			u->last_out.len = 0;
			buf_append(&u->last_out, text, strlen(text));
		}
		card_reset(u);
	}
}

static void card_begin(struct tui *u, const cJSON *call)
{
	const char *name = json_str(call, "name");
	/* The name is the model's: term-safe, also for the live line. */
	_cleanup_free_ char *n = tui_short(name ? name : "?", 24);
	snprintf(u->call_name, sizeof(u->call_name), "%s", n ? n : "?");
	const cJSON *input = cJSON_GetObjectItemCaseSensitive(call, "input");
	const char *a = tool_call_arg(call);
	_cleanup_free_ char *args = NULL;
	if (name && !strncmp(name, "mcp__", 5)) {
		/* An MCP tool's arguments, on one line. */
		args = cJSON_PrintUnformatted(input);
		a = args ? args : "";
	}
	int room = MAX(tui_cols() - 1 - (int)term_cols(u->call_name, strlen(u->call_name)) - 3, 8);
	_cleanup_free_ char *s = tui_fit(a, room);
	snprintf(u->card_id, sizeof(u->card_id), "%s", json_str(call, "id") ? json_str(call, "id") : "");
	u->streamed = false;
	tui_putf(u, CYAN "●" RESET " " BOLD "%s" RESET " %s\n", u->call_name, s ? s : "");
	if (++u->pending > 1)
		u->side_by_side = true;
	card_reset(u);
	free(u->before);
	u->before = NULL;
	if (name && (!strcmp(name, "write") || !strcmp(name, "edit"))) {
		char *d = NULL;
		size_t dl = 0;
		int r = tui_file_read(u, json_str(input, "path"), &d, &dl);
		if (r == 0) {
			u->before = d;
			u->before_len = dl;
		} else if (r == -ENOENT) {
			u->before = strdup("");
			u->before_len = 0;
		}
	}
}

/* Hints for the person where an error has a usual cause. */
static void stop_hints(struct tui *u, const struct turn_stop *st)
{
	const char *w = st->why;
	const char *prov = u->f.provider ? u->f.provider : "anthropic";
	bool openai = !strncmp(prov, "openai", 6);
	if (st->kind == TURN_AUTH_ERROR) {
		tui_putf(u, "  Check %s: the key for %s%s%s, then /retry.\n",
			 openai ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY", prov,
			 u->f.cfg.pcfg.base_url ? " at " : "", u->f.cfg.pcfg.base_url ? u->f.cfg.pcfg.base_url : "");
	} else if (strstr(w, "connect") || strstr(w, "resolve") || strstr(w, "refused")) {
		_cleanup_free_ char *url = tui_short(u->f.cfg.pcfg.base_url ? u->f.cfg.pcfg.base_url
									  : openai ? "https://api.openai.com" : "https://api.anthropic.com", 200);
		tui_putf(u, "  Could not reach %s: is it up, and is it the right URL (--base-url)?\n", url ? url : "");
	}
	if (u->retries)
		tui_putf(u, DIM "  (after %d retr%s)" UNDIM "\n", u->retries, u->retries == 1 ? "y" : "ies");
	/* A stream cut by the error: whether what it showed is in the
	 * conversation, as the journal has it. */
	const cJSON *last = cJSON_GetArrayItem(u->s.messages, cJSON_GetArraySize(u->s.messages) - 1);
	const char *role = json_str(last, "role");
	if (u->streamed && !(role && !strcmp(role, "assistant")))
		tui_put(u, DIM "  The partial answer above is not in the conversation." UNDIM "\n");
	tui_put(u, DIM "  /retry sends your message again." UNDIM "\n");
}

void tui_on_event(void *ud, const struct turn_event *ev)
{
	struct tui *u = ud;
	tui_live_clear(u);
	switch (ev->type) {
	case EV_ROUND:
		u->pending = 0;
		u->side_by_side = false;
		u->streamed = false;
		u->waiting = true;
		u->since = now_ms();
		break;
	case EV_TEXT: {
		u->waiting = false;
		think_end(u);
		if (!u->md)
			u->md = mdterm_stream_new(0);
		struct buf r;
		buf_init(&r, 1u << 24);
		if (u->md)
			mdterm_stream_feed(u->md, ev->text, ev->len, tui_cols() - 1, &r);
		put_rows(u, &r, NULL);
		buf_free(&r);
		u->streamed = true;
		break;
	}
	case EV_THINKING: {
		u->waiting = false;
		if (!u->think)
			u->think = mdterm_stream_new(MDTERM_DIM);
		if (!u->thinking_open) {
			u->thinking_open = true;
			u->think_first = true;
		}
		struct buf r;
		buf_init(&r, 1u << 24);
		if (u->think)
			mdterm_stream_feed(u->think, ev->text, ev->len, tui_cols() - 3, &r);
		bool out = r.len > 0;
		put_rows(u, &r, u->think_first && out ? DIM "✻ " UNDIM : NULL);
		if (out)
			u->think_first = false;
		buf_free(&r);
		break;
	}
	case EV_RETRY: {
		md_end(u);
		u->retries++;
		_cleanup_free_ char *s = tui_short(ev->text, 300);
		char line[600];
		snprintf(line, sizeof(line), "%s; retry %d in %.1f s", s ? s : "", u->retries, (double)ev->n / 1000);
		tui_put(u, YELLOW);
		tui_say(u, "↻ ", line, 2);
		tui_put(u, RESET);
		break;
	}
	case EV_TOOL_CALL:
		u->waiting = false;
		md_end(u);
		card_begin(u, ev->call);
		break;
	case EV_APPROVAL:
		if (ev->n == GATE_ALLOW) {
			u->call_running = true;
			u->since = now_ms();
		} else {
			snprintf(u->denied_id, sizeof(u->denied_id), "%s", json_str(ev->call, "id") ? json_str(ev->call, "id") : "");
			_cleanup_free_ char *s = tui_short(ev->text, 400);
			tui_put(u, RED);
			tui_say(u, "  ✗ ", s ? s : "", 4);
			tui_put(u, RESET);
		}
		break;
	case EV_TOOL_OUTPUT:
		card_output(u, ev->text, ev->len);
		break;
	case EV_TOOL_RESULT:
		u->call_running = false;
		tui_agents_result(u, ev->result);
		card_result(u, ev->call, ev->result);
		break;
	case EV_USAGE:
		u->usage = *ev->usage;
		break;
	case EV_BOX: {
		const char *what = json_str(ev->result, "event");
		const cJSON *ms = cJSON_GetObjectItemCaseSensitive(ev->result, "ms");
		if (what && !strcmp(what, "woken"))
			tui_putf(u, DIM "  ⏻ box woken from hibernation in %.0f ms" UNDIM "\n",
				 cJSON_IsNumber(ms) ? ms->valuedouble : 0);
		break;
	}
	case EV_JOB: {
		/* A job's end, as the model is told of it. */
		const char *what = json_str(ev->result, "event"), *how = json_str(ev->result, "how");
		const cJSON *job = cJSON_GetObjectItemCaseSensitive(ev->result, "job");
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(job, "id");
		const char *cmd = json_str(job, "command");
		if (what && !strcmp(what, "ended")) {
			_cleanup_free_ char *c = tui_short(cmd ? cmd : "", 120), *h = tui_short(how ? how : "ended", 200);
			tui_putf(u, DIM "  ⚙ job %d %s: %s" UNDIM "\n", cJSON_IsNumber(id) ? id->valueint : 0,
				 h ? h : "", c ? c : "");
		}
		break;
	}
	case EV_AGENT:
		tui_agents_event(u, ev);
		break;
	case EV_NET: {
		/* Between a card's output and its result: what the box reached. */
		const char *host = json_str(ev->result, "host"), *why = json_str(ev->result, "why");
		const cJSON *port = cJSON_GetObjectItemCaseSensitive(ev->result, "port");
		if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(ev->result, "allowed"))) {
			_cleanup_free_ char *s = tui_short(why ? why : "", 400);
			tui_putf(u, RED "  ✗ network: %s" RESET "\n", s ? s : "");
		} else {
			_cleanup_free_ char *s = tui_short(host ? host : "?", 200);
			tui_putf(u, DIM "  ⇄ %s:%d" UNDIM "\n", s ? s : "", cJSON_IsNumber(port) ? port->valueint : 0);
		}
		break;
	}
	case EV_COMPACT: {
		md_end(u);
		_cleanup_free_ char *s = tui_short(ev->text ? ev->text : "", 300);
		char line[600];
		snprintf(line, sizeof(line), "compacted: %lld messages replaced by a summary (%s)", (long long)ev->n, s ? s : "");
		tui_put(u, DIM);
		tui_say(u, "⋯ ", line, 2);
		tui_put(u, UNDIM);
		break;
	}
	case EV_HOOK:	/* the terminal session runs no hooks yet */
		break;
	case EV_STOP: {
		const struct turn_stop *st = ev->stop;
		md_end(u);
		tui_agents_end(u);
		if (st->kind == TURN_CANCELLED && u->streamed)
			tui_put(u, DIM "[interrupted: the partial answer is kept]" UNDIM "\n");
		tui_newline(u);
		u->waiting = u->call_running = false;
		u->turn_failed = st->kind == TURN_PROVIDER_ERROR || st->kind == TURN_BOX_ERROR || st->kind == TURN_AUTH_ERROR;
		if (st->kind != TURN_DONE) {
			_cleanup_free_ char *s = tui_short(st->why, 400);
			char line[600];
			snprintf(line, sizeof(line), "%s: %s", turn_stop_name(st->kind), s ? s : "");
			tui_put(u, st->kind == TURN_CANCELLED ? YELLOW : RED);
			tui_say(u, "■ ", line, 2);
			tui_put(u, RESET);
			if (u->turn_failed)
				stop_hints(u, st);
		}
		break;
	}
	}
	tui_live_draw(u);
	tui_flush(u);
}

void tui_show_field(struct tui *u, const char *label, const char *v)
{
	size_t n = strlen(v);
	size_t k = MIN(n, (size_t)TUI_ASK_SHOW);
	while (k > 0 && k < n && ((unsigned char)v[k] & 0xc0) == 0x80)
		k--;
	/* The key is the model's too. */
	_cleanup_free_ char *l = tui_short(label ? label : "?", 60);
	tui_putf(u, "  %s:\n", l ? l : "");
	const char *p = v, *end = v + k;
	int cols = MAX(tui_cols() - 5, 10);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		_cleanup_free_ char *s = utf8_term_safe(p, l);
		const char *q = s ? s : "";
		size_t left = strlen(q);
		do {
			size_t fit = term_fit_bytes(q, left, (size_t)cols);
			if (!fit && left)
				fit = left;
			tui_put(u, "    ");
			fwrite(q, 1, fit, stdout);
			tui_put(u, "\n");
			q += fit;
			left -= fit;
		} while (left);
		p += l + (nl != NULL);
	}
	if (k < n)
		tui_putf(u, DIM "    … cut here: %zu more bytes not shown" UNDIM "\n", n - k);
}
