/* Inside SigV4 (net/sigv4.c, net/sigv4-stream.c): the helpers both use. */
#pragma once
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "base/buf.h"

/* A head's lines at most. */
#define SIGV4_LINES 128

/* The head's lines: the request line, then "Name: value" each. */
struct sigv4_line {
	const char *p;
	size_t n;	/* without the CRLF */
};
/* head's lines up to the blank one, at most max: how many. */
size_t sigv4_lines_of(const char *head, size_t n, struct sigv4_line *l, size_t max);
/* The request line's method and target (an absolute target's path and
 * query): 0, or -EBADMSG. */
int sigv4_request_line(const struct sigv4_line *l, const char **m, size_t *ml, const char **t, size_t *tl);
/* Each byte encoded once, canonically: an unreserved byte as itself (a
 * %XX of one decoded), every other as %XX in capitals; '/' kept where a
 * path's separator. */
int sigv4_enc_once(struct buf *o, const char *p, size_t n, bool path);
/* How many times the query q[0..n) has name (exactly, as AWS's names are
 * matched); the first one's value (as it is, encoded) in ret_*. */
int sigv4_query_param(const char *q, size_t n, const char *name, const char **ret_v, size_t *ret_vn);

struct net_sigv4_auth;
/* The path rule (enum net_sigv4_path) under which a's signature of head
 * holds with secret: it, -ENOENT where it holds under neither, or the
 * signature's own -errno with why. */
int sigv4_path_match(const char *head, size_t n, const struct net_sigv4_auth *a, const char *secret,
		     const char *body_hash, char *why, size_t wn);

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
