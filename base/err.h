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
