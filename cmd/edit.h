/* The prompt line, on libedit (a Debian library, loaded when a terminal
 * session starts so that ward's other commands do not pay for it): emacs
 * keys, and a history kept across sessions. Bytes come from the caller's
 * source, so the caller can watch signals and other fds while a person
 * types, and can turn a paste into one piece of input. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

struct editor;

/* The next byte of input, blocking: 1, or 0 at the end of input (the line
 * being edited is then given up). */
typedef int edit_byte_fn(void *ud, unsigned char *c);

/* A byte the source sends after it printed something over the prompt
 * (Ctrl-T, Tab's list, a resume after Ctrl-Z): the line is drawn again. */
#define EDITOR_REDRAW_BYTE 0x1d
#define EDITOR_REDRAW_KEY "^]"

int editor_open(struct editor **ret, const char *history_path, edit_byte_fn *byte, void *ud, struct err *e);
/* The line being edited (while the byte source is asked for a byte):
 * its bytes, the cursor's offset and the length. */
const char *editor_buffer(struct editor *ed, size_t *cursor, size_t *len);
/* Add s to the history (a message as sent: a paste's text, not its tag). */
void editor_history_add(struct editor *ed, const char *s);
/* One line, malloc'd, without its newline; NULL at the end of input (or
 * Ctrl-D on an empty line). With history, a non-blank line is added. */
char *editor_line(struct editor *ed, const char *prompt, bool history);
/* Save the history (0600) and let go of the terminal. */
void editor_close(struct editor *ed);
