/* The one way cmd/ shows a person text that ward did not write: through
 * the terminal rule of base/utf8.h, on stdout and stderr alike (either
 * may be a terminal). What is data stays exact: --json lines, patches,
 * `ward diff` to a pipe or file, `ward box exec`'s output. The terminal
 * session's coloured lines use tui_put_safe and tui_short, the same rule. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* f is a terminal. */
bool term_is(FILE *f);
/* n bytes of s, as the rule shows them. */
void term_write(FILE *f, const char *s, size_t n);
/* A line of ward's own that holds others' words (names, paths, messages):
 * formatted, then all of it shown by the rule (ward's own text passes
 * unchanged). */
void term_printf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* term_printf for a message of ward's (an error, a warning): at a
 * terminal it wraps at words to the terminal's width, the rows after the
 * first indented two columns; elsewhere it is term_printf. */
void term_sayf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A malloc'd one-line form of n bytes of s: at most max of them, cut at a
 * character's start and "…" where cut, each newline shown as "⏎", then
 * the rule. For a name or an argument in a line of ward's own, where a
 * newline would start a line that looks like ward's. */
char *term_line(const char *s, size_t n, size_t max);
/* A stream whose every byte reaches f as the rule shows it, a character
 * split between two writes included; fclose it (f stays open). NULL when
 * out of memory. */
FILE *term_stream(FILE *f);
/* The columns n bytes of s take on a terminal: a character's width by
 * wcwidth(3) in the locale (1 where it does not know), an escape sequence
 * (ward's own colours: ESC [ ... m) none. */
size_t term_cols(const char *s, size_t n);
/* How many bytes of s (n of them) fit in cols columns: a character and an
 * escape sequence are never cut. */
size_t term_fit_bytes(const char *s, size_t n, size_t cols);
/* The columns of the one code point at s (avail bytes; its length in
 * *len), 0..2. */
int term_char_cols(const char *s, size_t avail, size_t *len);
