/* A light colouring of code for the terminal session's code blocks: the
 * languages models write most (Python, JavaScript and TypeScript, C and
 * C++, Go, Rust, Java, shell, JSON, YAML, TOML, SQL, diffs). Per line:
 * keywords, strings, numbers and comments, a block comment or a
 * triple-quoted string carried to the next line. Not a parser: a line it
 * does not understand is shown plain. Every byte goes through the
 * terminal rule (base/utf8.h); the only escapes in what comes out are
 * ward's own colours. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"

struct mdcode {
	int lang;		/* an index into mdcode.c's table; -1: plain */
	char open[4];		/* what closes the block comment or string the last line left open: "*" "/", "\"\"\"" */
};

/* The language named by a fence's info string (its first word): "py",
 * "python", "sh", ...; anything else is plain. */
void mdcode_begin(struct mdcode *c, const char *lang, size_t n);
/* One line of code (without its newline) appended to out, coloured. */
void mdcode_line(struct mdcode *c, const char *line, size_t n, struct buf *out);
/* The language's name as shown above the block, or NULL for plain. */
const char *mdcode_name(const struct mdcode *c);
