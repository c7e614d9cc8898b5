#pragma once
#include <stddef.h>
#include "base/buf.h"

/* Copy in to out as valid UTF-8: NUL and invalid sequences become U+FFFD.
 * Stops quietly at out's ceiling. */
void utf8_sanitize(const char *in, size_t len, struct buf *out);
/* Length of the valid UTF-8 sequence at p (1..4), or 0 if invalid. */
size_t utf8_seq_len(const unsigned char *p, size_t avail);
