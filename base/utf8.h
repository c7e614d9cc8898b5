#pragma once
#include <stddef.h>
#include "base/buf.h"

/* Copy in to out as valid UTF-8: NUL and invalid sequences become U+FFFD.
 * Stops quietly at out's ceiling. */
void utf8_sanitize(const char *in, size_t len, struct buf *out);
/* Length of the valid UTF-8 sequence at p (1..4), or 0 if invalid. */
size_t utf8_seq_len(const unsigned char *p, size_t avail);
/* A malloc'd valid UTF-8 copy (NULL on allocation failure). */
char *utf8_dup(const char *in, size_t len);
/* A malloc'd copy safe to print on a terminal: valid UTF-8, and no control
 * sequence survives: C0 controls other than tab and newline become caret
 * notation (ESC is "^["), C1 controls and DEL become U+FFFD, and a CR
 * before LF is dropped. */
char *utf8_term_safe(const char *in, size_t len);
/* A malloc'd copy of JSON text with U+2028, U+2029 and U+0085 written as
 * \u escapes: the same JSON, but a reader that splits lines on Unicode
 * line breaks (Python's str.splitlines, JavaScript before ES2019) still
 * sees one value a line. Those characters only occur inside strings. */
char *utf8_json_line(const char *json);
