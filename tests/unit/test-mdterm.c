/* The terminal session's markdown: what the model writes, as rows of a
 * width, whole or streamed in pieces. With MDTERM_SHOW=FILE it prints
 * FILE rendered at $COLUMNS instead (to look at). */
#include "tap.h"
#include "cmd/mdterm.h"
#include "cmd/term.h"
#include "base/cleanup.h"

#include <locale.h>
#include <stdbool.h>
#include <stdint.h>

static char *render(const char *src, int width)
{
	struct buf b;
	buf_init(&b, 1u << 24);
	buf_append(&b, "", 0);
	mdterm_render(src, strlen(src), width, 0, &b);
	buf_cstr(&b);
	return b.data;
}

/* The same, fed in pieces of k bytes. */
static char *stream(const char *src, int width, size_t k)
{
	struct buf b;
	buf_init(&b, 1u << 24);
	buf_append(&b, "", 0);
	struct mdterm_stream *s = mdterm_stream_new(0);
	for (size_t i = 0, n = strlen(src); i < n; i += k)
		mdterm_stream_feed(s, src + i, MIN(k, n - i), width, &b);
	mdterm_stream_end(s, width, &b);
	mdterm_stream_free(s);
	buf_cstr(&b);
	return b.data;
}

/* Without ward's colours: what a person reads. */
static char *plain(const char *s)
{
	char *o = malloc(strlen(s) + 1), *q = o;
	for (const char *p = s; *p;) {
		if (*p == 033 && p[1] == '[') {
			p += 2;
			while (*p && !(*p >= 0x40 && *p <= 0x7e))
				p++;
			if (*p)
				p++;
			continue;
		}
		*q++ = *p++;
	}
	*q = 0;
	return o;
}

static size_t widest(const char *s)
{
	size_t w = 0;
	for (const char *p = s; *p;) {
		const char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p) : strlen(p);
		w = MAX(w, term_cols(p, l));
		p += l + (nl != NULL);
	}
	return w;
}

static const char answer[] =
	"# Plan\n"
	"\n"
	"Here is **what I found** and *why* it matters, with `calc.py` and a [link](https://example.com/x).\n"
	"\n"
	"- first item\n"
	"- second item\n"
	"  - nested item\n"
	"\n"
	"1. one\n"
	"2. two\n"
	"\n"
	"> quoted words\n"
	"\n"
	"```python\n"
	"def add(a, b):  # the sum\n"
	"    return a + b\n"
	"```\n"
	"\n"
	"| name | value |\n"
	"|------|------:|\n"
	"| alpha | 1 |\n"
	"| beta gamma delta epsilon zeta eta theta | 22 |\n"
	"\n"
	"Done.\n";

int main(void)
{
	setlocale(LC_CTYPE, "C.UTF-8");
	const char *show = getenv("MDTERM_SHOW");
	if (show) {
		FILE *f = fopen(show, "r");
		static char src[1 << 20];
		size_t n = f ? fread(src, 1, sizeof(src) - 1, f) : 0;
		src[n] = 0;
		const char *c = getenv("COLUMNS");
		char *r = stream(src, c ? atoi(c) : 80, 7);
		fputs(r, stdout);
		free(r);
		return 0;
	}

	char *r = render(answer, 80), *p = plain(r);
	unlike(p, "# Plan", "a heading is shown without its marks");
	like(r, "\033[0;1;4mPlan", "a first-level heading is bold and underlined");
	like(r, "\033[0;1mwhat", "strong text is bold");
	unlike(p, "**", "and its asterisks are gone");
	like(r, "\033[0;3mwhy", "emphasis is italic");
	like(r, "\033[0;36mcalc.py", "inline code is coloured");
	like(p, "a link\n(https://example.com/x).", "a link: its text, then its URL");
	like(p, "• first item\n• second item\n  ◦ nested item\n", "lists: bullets, a nested one indented");
	like(p, "1. one\n2. two\n", "an ordered list keeps its numbers");
	like(p, "│ quoted words", "a block quote is barred");
	like(p, "╭─ python\n│ def add(a, b):  # the sum\n│     return a + b\n╰─", "a code block: its language named, set apart");
	like(r, "\033[35mdef\033[0m", "a keyword is coloured");
	like(r, "\033[2;37m# the sum", "and a comment");
	like(p, "│ alpha                                   │     1 │", "a table: columns aligned, a right-aligned one to the right");
	like(p, "├──", "the header set apart");
	ok(widest(p) <= 80, "nothing is wider than 80 columns (%zu)", widest(p));
	free(r);
	free(p);

	/* Narrow: the table's cells wrap, words stay whole. */
	r = render(answer, 40);
	p = plain(r);
	ok(widest(p) <= 40, "at 40 columns nothing is wider (%zu)", widest(p));
	like(p, "│ beta gamma delta epsilon ", "a long cell wraps at a word");
	like(p, "│    22 │\n│ zeta eta theta ", "and goes on in the cell's next row");
	free(r);
	free(p);
	r = render("| a | b | c | d | e | f | g |\n|---|---|---|---|---|---|---|\n| 1 | 2 | 3 | 4 | 5 | 6 | 7 |\n", 20);
	p = plain(r);
	like(p, "a\n  1\nb\n  2\n", "too narrow for its columns: one cell a line under its header");
	ok(widest(p) <= 20, "and within 20 columns");
	free(r);
	free(p);
	r = render("A paragraph of several words that must wrap at a word boundary and never in a word.\n", 30);
	p = plain(r);
	is_str(p, "A paragraph of several words\nthat must wrap at a word\nboundary and never in a word.\n", "a paragraph wraps between words");
	free(r);
	free(p);

	/* Streamed in pieces of any size: the same as whole, and nothing twice. */
	char *whole = render(answer, 80);
	char *wp = plain(whole);
	bool same = true;
	for (size_t k = 1; k <= 64; k *= 2) {
		char *s = stream(answer, 80, k), *sp = plain(s);
		if (strcmp(sp, wp)) {
			same = false;
			printf("# pieces of %zu:\n%s\n# whole:\n%s\n", k, sp, wp);
		}
		free(s);
		free(sp);
	}
	ok(same, "streamed in pieces of 1 to 64 bytes: the same rows as rendered whole");
	free(whole);
	free(wp);

	/* What is finished is handed out as it comes; the open block is held. */
	struct buf b;
	buf_init(&b, 1u << 20);
	buf_append(&b, "", 0);
	struct mdterm_stream *s = mdterm_stream_new(0);
	mdterm_stream_feed(s, "First paragraph.\n\nSecond one, still ", 36, 80, &b);
	buf_cstr(&b);
	like(b.data, "First paragraph.", "a finished paragraph is out at once");
	unlike(b.data, "Second", "the open one is held");
	size_t hn;
	const char *h = mdterm_stream_held(s, &hn);
	ok(hn == strlen("Second one, still ") && !memcmp(h, "Second one, still ", hn), "and offered as a preview");
	size_t was = b.len;
	mdterm_stream_feed(s, "coming.\n```sh\nmake\n", 19, 80, &b);
	buf_cstr(&b);
	like(b.data + was, "Second one, still coming.", "it is out at its newline");
	like(b.data, "make", "a code line is out at its newline");
	unlike(b.data, "╰─", "the block is not closed yet");
	mdterm_stream_end(s, 80, &b);
	buf_cstr(&b);
	like(b.data, "╰─", "the end closes it");
	mdterm_stream_free(s);
	buf_free(&b);

	/* The terminal rule holds: no escape of the model's reaches the
	 * terminal, in text, code, a table or a link. */
	r = render("text \033[2J here\n\n```\ncode \033]0;x\007\n```\n\n| a\033[31m | b |\n|---|---|\n| c | d |\n\n[x](http://e/\033[1m)\n", 80);
	bool clean = true;
	for (const char *q = r; *q; q++)
		if (*q == 033 && (q[1] != '[' || !strchr("0123456789;", q[2])))
			clean = false;
	/* ward's own escapes are colours only: ESC [ digits ; m. */
	for (const char *q = r; (q = strstr(q, "\033[")); q += 2) {
		const char *e = q + 2;
		while (*e && strchr("0123456789;", *e))
			e++;
		if (*e != 'm')
			clean = false;
	}
	ok(clean, "the model's escapes never reach the terminal as escapes");
	like(r, "^[[2J", "they are shown in caret notation");
	like(r, "^[]0;x^G", "in code too");
	free(r);
	r = render("\xe2\x80\xae reversed and \xc2\x9b csi\n", 80);
	like(r, "<U+202E>", "bidirectional controls by name");
	like(r, "<U+009B>", "C1 controls by name");
	free(r);

	/* A 2,000-line answer: bounded work per row. */
	struct buf big;
	buf_init(&big, 1u << 24);
	for (int i = 0; i < 200; i++)
		buf_printf(&big, "## Part %d\n\nSome **bold** text and `code` %d.\n\n- a\n- b\n\n```c\nint x = %d;\n```\n", i, i, i);
	buf_cstr(&big);
	r = stream(big.data, 100, 13);
	ok(strlen(r) > big.len, "a long answer renders whole");
	free(r);
	buf_free(&big);
	return tap_done();
}
