/* Streaming markdown (cmd/mdterm.h): lines as they come, finished blocks
 * rendered once, the open one held. The stream's own fences (a code block
 * at the top level) are drawn a line at a time, as they come. */
#include "cmd/mdterm.h"
#include "base/cleanup.h"
#include "cmd/mdcode.h"
#include "cmd/mdterm-int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct mdterm_stream {
	unsigned base;
	struct buf line;	/* the line being received */
	struct buf held;	/* finished lines of the open block */
	bool held_item;		/* it is a list item (what follows may go on with it) */
	bool held_table;	/* it is a table, or a line that may head one */
	bool blank;		/* a blank line came after the last block rendered */
	bool any;		/* something was rendered */
	bool held_fence;	/* the item holds a fence still open */
	struct buf view;	/* mdterm_stream_held's */
	/* A fence at the top level: its lines are rendered as they come. */
	bool fence;
	char fch;
	size_t flen;
	struct mdcode mc;
};

struct mdterm_stream *mdterm_stream_new(unsigned base)
{
	struct mdterm_stream *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->base = base;
	buf_init(&s->line, SIZE_MAX / 2);
	buf_init(&s->held, SIZE_MAX / 2);
	buf_init(&s->view, SIZE_MAX / 2);
	return s;
}

void mdterm_stream_free(struct mdterm_stream *s)
{
	if (!s)
		return;
	buf_free(&s->line);
	buf_free(&s->held);
	buf_free(&s->view);
	free(s);
}

const char *mdterm_stream_held(const struct mdterm_stream *s, size_t *n)
{
	/* The held lines, then the one still coming. */
	struct buf *b = (struct buf *)&s->view;
	b->len = 0;
	if (s->held.len)
		buf_append(b, s->held.data, s->held.len);
	if (s->line.len)
		buf_append(b, s->line.data, s->line.len);
	*n = b->len;
	return b->len ? b->data : "";
}

static size_t indent_of(const char *p, size_t n)
{
	size_t i = 0;
	while (i < n && p[i] == ' ')
		i++;
	return i;
}

static bool is_blank(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
			return false;
	return true;
}

/* A fence's opening (``` or ~~~, three or more, indented three at most):
 * its character and length. */
static bool is_fence(const char *p, size_t n, char *ch, size_t *len)
{
	size_t i = indent_of(p, n);
	if (i > 3 || i >= n || (p[i] != '`' && p[i] != '~'))
		return false;
	size_t k = i;
	while (k < n && p[k] == p[i])
		k++;
	if (k - i < 3)
		return false;
	if (p[i] == '`' && memchr(p + k, '`', n - k))
		return false;
	*ch = p[i];
	*len = k - i;
	return true;
}

static bool is_item(const char *p, size_t n)
{
	size_t i = indent_of(p, n);
	if (i < n && (p[i] == '-' || p[i] == '*' || p[i] == '+') && (i + 1 == n || p[i + 1] == ' '))
		return true;
	size_t d = i;
	while (d < n && d - i < 9 && p[d] >= '0' && p[d] <= '9')
		d++;
	return d > i && d < n && (p[d] == '.' || p[d] == ')') && (d + 1 == n || p[d + 1] == ' ');
}

/* |---|:--:| and the like: a table's second line. */
static bool is_delim_row(const char *p, size_t n)
{
	bool dash = false, bar = false;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '-')
			dash = true;
		else if (p[i] == '|')
			bar = true;
		else if (p[i] != ':' && p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
			return false;
	}
	return dash && bar;
}

static void put(struct buf *b, const char *s)
{
	buf_append(b, s, strlen(s));
}

static void emit(struct mdterm_stream *s, const char *p, size_t n, int width, struct buf *out)
{
	if (s->any && s->blank)
		put(out, "\n");
	mdterm_render(p, n, width, s->base, out);
	s->any = true;
	s->blank = false;
}

static void commit(struct mdterm_stream *s, int width, struct buf *out)
{
	if (s->held.len)
		emit(s, s->held.data, s->held.len, width, out);
	s->held.len = 0;
	s->held_item = s->held_table = s->held_fence = false;
}

static void hold(struct mdterm_stream *s, const char *p, size_t n)
{
	buf_append(&s->held, p, n);
	buf_append(&s->held, "\n", 1);
}

static void stream_line(struct mdterm_stream *s, const char *p, size_t n, int width, struct buf *out)
{
	if (n && p[n - 1] == '\r')
		n--;
	if (s->fence) {
		size_t i = indent_of(p, n), k = i;
		while (k < n && p[k] == s->fch)
			k++;
		if (i <= 3 && k - i >= s->flen && is_blank(p + k, n - k)) {
			mdterm_fence_foot(out);
			s->fence = false;
			s->blank = false;
			return;
		}
		mdterm_fence_line(&s->mc, p, n, width, s->base, out);
		return;
	}
	char ch;
	size_t fl;
	if (s->held_fence) {
		/* An item's fence: everything up to its end goes with the item. */
		if (is_fence(p, n, &ch, &fl))
			s->held_fence = false;
		hold(s, p, n);
		return;
	}
	if (is_fence(p, n, &ch, &fl) && s->held_item && indent_of(p, n) > 0) {
		s->held_fence = true;
		hold(s, p, n);
		return;
	}
	if (is_fence(p, n, &ch, &fl)) {
		commit(s, width, out);
		if (s->any && s->blank)
			put(out, "\n");
		s->fence = true;
		s->fch = ch;
		s->flen = fl;
		size_t k = indent_of(p, n) + fl;
		while (k < n && p[k] == ' ')
			k++;
		mdcode_begin(&s->mc, p + k, n - k);
		mdterm_fence_head(&s->mc, width, s->base, out);
		s->any = true;
		s->blank = false;
		return;
	}
	if (is_blank(p, n)) {
		commit(s, width, out);
		s->blank = true;
		return;
	}
	bool indented = p[0] == ' ' || p[0] == '\t';
	if (s->held_table) {
		/* A line that may head a table: this line says whether it does. */
		bool bar = memchr(p, '|', n) != NULL;
		if (bar || is_delim_row(p, n)) {
			hold(s, p, n);
			return;
		}
		commit(s, width, out);
	}
	if (s->held_item && (indented || (!is_item(p, n) && !is_fence(p, n, &ch, &fl) && p[0] != '>' && p[0] != '#'))) {
		/* Goes on with the item: a nested item, an indented line, a lazy
		 * continuation. */
		hold(s, p, n);
		return;
	}
	commit(s, width, out);
	hold(s, p, n);
	if (memchr(p, '|', n)) {
		s->held_table = true;
	} else if (is_item(p, n)) {
		s->held_item = true;
	} else {
		/* A paragraph's line, a heading, a quote's line, a rule: done. */
		commit(s, width, out);
	}
}

void mdterm_stream_feed(struct mdterm_stream *s, const char *p, size_t n, int width, struct buf *out)
{
	while (n) {
		const char *nl = memchr(p, '\n', n);
		size_t k = nl ? (size_t)(nl - p) : n;
		buf_append(&s->line, p, k);
		if (!nl)
			return;
		stream_line(s, s->line.data ? s->line.data : "", s->line.len, width, out);
		s->line.len = 0;
		p += k + 1;
		n -= k + 1;
	}
}

void mdterm_stream_end(struct mdterm_stream *s, int width, struct buf *out)
{
	if (s->line.len) {
		stream_line(s, s->line.data, s->line.len, width, out);
		s->line.len = 0;
	}
	commit(s, width, out);
	if (s->fence) {
		mdterm_fence_foot(out);
		s->fence = false;
	}
	s->blank = false;
	s->any = false;
}
