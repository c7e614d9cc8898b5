/* The read tool's text of a file: its lines numbered (cat -n style), the
 * range the model asked for, long lines cut and marked. The guest's read
 * and ward acp's answer from the editor's buffer both format with it. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "tools/tool.h"

/* The lines read gives when the model names no limit. */
#define READ_DEFAULT_LINES 2000

/* data/len: the file's bytes; path: the name the model gave, for the
 * messages; offset (1-based) and limit: the lines; cancel: polled between
 * blocks of lines (NULL: none). 0 with res set. */
int read_lines(const char *path, const char *data, size_t len, int64_t offset, int64_t limit, struct cancel *cancel,
	       struct tool_result *res);
