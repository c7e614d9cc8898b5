/* The terminal session's markdown: a 2,000-line answer of the shapes
 * models write (headings, paragraphs, lists, code, tables, quotes)
 * streamed through cmd/mdterm.h in pieces of a token's size (12 bytes),
 * as text deltas come, at 100 columns. Prints the microseconds per screen
 * of output (50 rows), the median of 9 runs, then the rows and the whole
 * run's milliseconds.
 * usage: bench-md [LINES] */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/timeutil.h"
#include "cmd/mdterm.h"

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	setlocale(LC_CTYPE, "C.UTF-8");
	int want = argc > 1 ? atoi(argv[1]) : 2000;
	struct buf src;
	buf_init(&src, 64u << 20);
	int lines = 0;
	for (int i = 0; lines < want; i++) {
		buf_printf(&src,
			   "## Step %d: what changes\n\n"
			   "The function **parse_%d** reads the input and `returns` a value; see [the docs](https://example.com/%d) "
			   "for *why* it matters, and what the tests cover when the edge cases come up.\n\n"
			   "- first point about item %d\n- second point, longer, so that it wraps at the width of the terminal "
			   "when it is shown\n  - a nested detail\n\n"
			   "```python\ndef parse_%d(s):  # a comment\n    return int(s) + %d\n```\n\n"
			   "| name | value | note |\n|------|------:|------|\n| a%d | %d | short |\n| b%d | %d | a longer note in a cell |\n\n"
			   "> a quoted line %d\n\n",
			   i, i, i, i, i, i, i, i, i, i * 2, i);
		lines += 24;
	}
	double runs[9];
	size_t rows = 0;
	double total = 0;
	for (int r = 0; r < 9; r++) {
		struct buf out;
		buf_init(&out, 256u << 20);
		struct mdterm_stream *s = mdterm_stream_new(0);
		int64_t t0 = now_us();
		for (size_t i = 0; i < src.len; i += 12)
			mdterm_stream_feed(s, src.data + i, src.len - i < 12 ? src.len - i : 12, 100, &out);
		mdterm_stream_end(s, 100, &out);
		int64_t t1 = now_us();
		rows = 0;
		for (size_t i = 0; i < out.len; i++)
			rows += out.data[i] == '\n';
		total = (double)(t1 - t0) / 1e3;
		runs[r] = (double)(t1 - t0) / ((double)rows / 50);
		mdterm_stream_free(s);
		buf_free(&out);
	}
	qsort(runs, 9, sizeof(runs[0]), cmp);
	printf("%.1f %zu %.1f %d\n", runs[4], rows, total, lines);
	buf_free(&src);
	return 0;
}
