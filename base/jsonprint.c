#include "base/jsonprint.h"
#include "base/buf.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A number written so that it reads back as the same double: an integer
 * below 1e17 in full, anything else in the fewest significant digits that
 * read back exactly. (cJSON's own printer takes 15 digits when they read
 * back within an epsilon: 9007199254740992 became 9.00719925474099e+15,
 * another number than the one ward had checked.) */
static int print_number(struct buf *b, double d)
{
	char s[40];
	if (isnan(d) || isinf(d))
		return buf_append(b, "null", 4);
	if (d == floor(d) && fabs(d) < 1e17) {
		snprintf(s, sizeof(s), "%.0f", d);
		if (d == 0 && signbit(d))
			snprintf(s, sizeof(s), "-0");
	} else {
		for (int prec = 1; prec <= 17; prec++) {
			snprintf(s, sizeof(s), "%.*g", prec, d);
			if (strtod(s, NULL) == d)
				break;
		}
	}
	return buf_append(b, s, strlen(s));
}

/* As cJSON writes a string (", \ and control characters escaped, the rest
 * as it is), with U+2028, U+2029 and U+0085 as \u escapes too. */
static int print_string(struct buf *b, const char *str)
{
	const unsigned char *p = (const unsigned char *)(str ? str : ""), *run = p;
	int r = buf_append(b, "\"", 1);
	for (; r == 0 && *p; p++) {
		const char *esc = NULL;
		char u[8];
		size_t skip = 1;
		if (*p == '"')
			esc = "\\\"";
		else if (*p == '\\')
			esc = "\\\\";
		else if (*p < 0x20) {
			static const char *const named[0x20] = { ['\b'] = "\\b", ['\f'] = "\\f", ['\n'] = "\\n",
								 ['\r'] = "\\r", ['\t'] = "\\t" };
			esc = named[*p];
			if (!esc) {
				snprintf(u, sizeof(u), "\\u%04x", *p);
				esc = u;
			}
		} else if (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) {
			esc = p[2] == 0xa8 ? "\\u2028" : "\\u2029";
			skip = 3;
		} else if (p[0] == 0xc2 && p[1] == 0x85) {
			esc = "\\u0085";
			skip = 2;
		}
		if (!esc)
			continue;
		if ((r = buf_append(b, run, (size_t)(p - run))) == 0)
			r = buf_append(b, esc, strlen(esc));
		p += skip - 1;
		run = p + 1;
	}
	if (r == 0)
		r = buf_append(b, run, (size_t)(p - run));
	return r ? r : buf_append(b, "\"", 1);
}

static int print_value(struct buf *b, const cJSON *v)
{
	int r = 0;
	switch (v->type & 0xff) {
	case cJSON_False:
		return buf_append(b, "false", 5);
	case cJSON_True:
		return buf_append(b, "true", 4);
	case cJSON_NULL:
		return buf_append(b, "null", 4);
	case cJSON_Number:
		return print_number(b, v->valuedouble);
	case cJSON_String:
		return print_string(b, v->valuestring);
	case cJSON_Array:
	case cJSON_Object: {
		bool obj = cJSON_IsObject(v);
		r = buf_append(b, obj ? "{" : "[", 1);
		for (const cJSON *c = v->child; c && r == 0; c = c->next) {
			if (c != v->child)
				r = buf_append(b, ",", 1);
			if (r == 0 && obj && (r = print_string(b, c->string)) == 0)
				r = buf_append(b, ":", 1);
			if (r == 0)
				r = print_value(b, c);
		}
		return r ? r : buf_append(b, obj ? "}" : "]", 1);
	}
	default:	/* cJSON_Invalid, cJSON_Raw: ward makes neither */
		return buf_append(b, "null", 4);
	}
}

char *jsonprint_text(const cJSON *v)
{
	if (!v)
		return NULL;
	struct buf b;
	buf_init(&b, JSONPRINT_MAX);
	if (print_value(&b, v) < 0) {
		buf_free(&b);
		return NULL;
	}
	return b.data;
}
