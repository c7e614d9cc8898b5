/* What cmd/mdterm.c lends cmd/mdterm-stream.c: a code block's head, rows
 * and foot, drawn at the top level. */
#pragma once
#include <stddef.h>

#include "base/buf.h"
#include "cmd/mdcode.h"

void mdterm_fence_head(struct mdcode *mc, int width, unsigned base, struct buf *out);
void mdterm_fence_line(struct mdcode *mc, const char *line, size_t n, int width, unsigned base, struct buf *out);
void mdterm_fence_foot(struct buf *out);
