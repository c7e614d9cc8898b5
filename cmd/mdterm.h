/* Markdown as the terminal session shows it: the model's answer parsed by
 * md4c (a Debian library, CommonMark with GitHub's tables, strikethrough
 * and task lists) and laid out in rows of a given width: headings bold,
 * emphasis, lists indented, block quotes barred, code blocks set apart
 * with their language named and lightly coloured (cmd/mdcode.h), tables
 * aligned to the width with their cells wrapped (or one cell a line when
 * the width cannot hold them), links as their text and their URL. Words
 * are never cut across rows unless one is wider than a row.
 *
 * Every character of the source goes through the terminal rule
 * (base/utf8.h): a model cannot send an escape sequence through its
 * markdown. The only escapes in what comes out are ward's own colours. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"

/* Everything dimmed (the model's thinking). */
#define MDTERM_DIM 1u

/* A whole piece of markdown rendered into out: rows that end in "\n",
 * each at most width columns. */
void mdterm_render(const char *src, size_t n, int width, unsigned base, struct buf *out);

/* The same for text that arrives in pieces (an answer as it streams):
 * what is known to be finished is rendered once and handed out; the open
 * block is held, never printed twice. A paragraph, a heading, a quote's
 * line and each line of a code block are finished at their newline; a
 * list item when the next line shows whether it goes on (a nested item,
 * an indented line); a table at its end (its widths need every row). */
struct mdterm_stream;
struct mdterm_stream *mdterm_stream_new(unsigned base);
void mdterm_stream_free(struct mdterm_stream *s);
/* Feed n bytes; the rows finished by them are appended to out. */
void mdterm_stream_feed(struct mdterm_stream *s, const char *p, size_t n, int width, struct buf *out);
/* The text is over (a tool call, the end of the message): what is held
 * is rendered into out, and the stream is ready for new text. */
void mdterm_stream_end(struct mdterm_stream *s, int width, struct buf *out);
/* The source held and not yet rendered (for a preview), and its length. */
const char *mdterm_stream_held(const struct mdterm_stream *s, size_t *n);
