/* Inside SigV4 (net/sigv4.c, net/sigv4-stream.c): the helpers both use. */
#pragma once
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* r, with why[wn] saying why. */
static inline int sigv4_why(char *why, size_t wn, int r, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static inline int sigv4_why(char *why, size_t wn, int r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (why && wn)
		vsnprintf(why, wn, fmt, ap);
	va_end(ap);
	return r;
}

static inline bool sigv4_lower_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* p[0..n) as lowercase hex into out[2n + 1]. */
static inline void sigv4_hex(const unsigned char *p, size_t n, char *out)
{
	static const char d[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = d[p[i] >> 4];
		out[2 * i + 1] = d[p[i] & 15];
	}
	out[2 * n] = 0;
}
