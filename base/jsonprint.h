/* The one serialisation of a JSON value that every reader of it is given
 * (a hook, an approver, the journal, --json, the box, an MCP server, the
 * provider): no white space, members in their order, strings as cJSON
 * writes them (", \ and control characters escaped, other bytes as they
 * are) but with U+2028, U+2029 and U+0085 as \u escapes too, so that a
 * reader that splits lines on them still sees one value a line; and each
 * number so that it reads back as the same double, which cJSON's printer
 * does not promise (it wrote 9007199254740992 as 9.00719925474099e+15, a
 * number within its epsilon, but another one). */
#pragma once
#include <cjson/cJSON.h>

#define JSONPRINT_MAX (1u << 30)

/* v as text: malloc'd; NULL when out of memory, past JSONPRINT_MAX, or v
 * is NULL. */
char *jsonprint_text(const cJSON *v);
