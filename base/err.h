/* An error a caller can print once: a negative errno and one line. */
#pragma once
#include <stdarg.h>

struct err {
	int code;		/* negative errno, 0 when unset */
	char msg[512];
};

/* Set e (if not NULL) and return code, so callers can `return err_set(...)`. */
int err_set(struct err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Like err_set, with ": strerror(-code)" appended. */
int err_setc(struct err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* What was being done when e happened, put before it ("what: e's
 * message"), its code kept: each level that adds meaning wraps once, and
 * nobody copies and re-formats the message below. Past the message's
 * room the end is cut, marked "...". Returns e's code (-EIO where e is
 * NULL or was never set). */
int err_wrap(struct err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* What follows from e (what is kept, what to do) appended to its message
 * as written ("; the box still runs"), cut like err_wrap's. Returns e's
 * code as err_wrap does. */
int err_append(struct err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
