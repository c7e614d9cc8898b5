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
/* The terminal rule: the one owner of what a person's terminal is sent of
 * text that ward did not write (the model's, a tool's, a file's, a
 * server's). Every printer in cmd/ goes through it (cmd/term.h, and the
 * terminal session's tui_put_safe and tui_short). The rule, per character:
 * - newline and tab are kept;
 * - the other C0 controls and DEL are shown in caret notation, as `cat -v`
 *   does: ESC is "^[", CR "^M", BS "^H", NUL "^@", DEL "^?";
 * - the C1 controls U+0080..U+009F (CSI, OSC, DCS, APC, ... as UTF-8) and
 *   the bidirectional controls (U+061C, U+200E, U+200F, U+202A..U+202E,
 *   U+2066..U+2069) are shown by name: "<U+009B>", "<U+202E>";
 * - a byte that is not part of valid UTF-8 (a raw 0x9b, an overlong form,
 *   a surrogate, a sequence cut short) is shown as U+FFFD, one per byte;
 * - everything else (printable ASCII, accents, CJK, emoji) is as it is.
 * What stands in for a character is printable ASCII or U+FFFD, so the
 * rule applied twice changes nothing more. */
#define UTF8_TERM_REP 9
/* The character at p (avail > 0 bytes): how many bytes it takes (1..4),
 * and in rep what is shown in its place, or "" when it is shown as it is. */
size_t utf8_term_char(const unsigned char *p, size_t avail, char rep[UTF8_TERM_REP]);
/* The rule over a stream fed in pieces: a character split between two
 * pieces is held until its end comes. Start zeroed. */
struct utf8_term {
	unsigned char held[4];
	size_t nheld;
};
/* Append to out what the terminal is shown of in; stops quietly at out's
 * ceiling (4 bytes out for each byte in always fit). */
void utf8_term_feed(struct utf8_term *t, const char *in, size_t len, struct buf *out);
/* The end of the stream: a character still held is cut short (U+FFFD). */
void utf8_term_end(struct utf8_term *t, struct buf *out);
/* A malloc'd copy of in as the terminal rule shows it (NULL on allocation
 * failure). */
char *utf8_term_safe(const char *in, size_t len);
/* The same rule for a command's output, but for its colours: an SGR
 * sequence (ESC [ params m) is kept when what it sets is the text's
 * colour (30-37, 39, 90-97, 38;5;N, 38;2;R;G;B) or its weight, slant,
 * underline or strike-through (0-4, 9, 21-24, 29), and only those of its
 * parameters are kept; a background, reverse video, concealed or
 * blinking text and every other escape are shown as the rule shows them
 * (so output cannot hide its words in the background's colour, or move
 * the cursor). */
char *utf8_term_safe_sgr(const char *in, size_t len);
/* A malloc'd copy of JSON text with U+2028, U+2029 and U+0085 written as
 * \u escapes: the same JSON, but a reader that splits lines on Unicode
 * line breaks (Python's str.splitlines, JavaScript before ES2019) still
 * sees one value a line. Those characters only occur inside strings. */
char *utf8_json_line(const char *json);
