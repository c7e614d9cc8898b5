#include "base/err.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int err_vset(struct err *e, int code, bool with_errno, const char *fmt, va_list ap)
{
	if (!e)
		return code;
	e->code = code;
	int n = vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	if (with_errno && n >= 0 && (size_t)n < sizeof(e->msg))
		snprintf(e->msg + n, sizeof(e->msg) - n, ": %s", strerror(-code));
	return code;
}

int err_set(struct err *e, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err_vset(e, code, false, fmt, ap);
	va_end(ap);
	return code;
}

int err_setc(struct err *e, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err_vset(e, code, true, fmt, ap);
	va_end(ap);
	return code;
}

int err_wrap(struct err *e, const char *fmt, ...)
{
	if (!e)
		return -EIO;
	if (!e->code)
		e->code = -EIO;
	char what[sizeof(e->msg)], was[sizeof(e->msg)];
	memcpy(was, e->msg, sizeof(was));
	was[sizeof(was) - 1] = 0;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	int n = snprintf(e->msg, sizeof(e->msg), was[0] ? "%s: %s" : "%s", what, was);
	if (n >= (int)sizeof(e->msg))
		memcpy(e->msg + sizeof(e->msg) - 4, "...", 4);
	return e->code;
}

int err_append(struct err *e, const char *fmt, ...)
{
	if (!e)
		return -EIO;
	if (!e->code)
		e->code = -EIO;
	size_t have = strnlen(e->msg, sizeof(e->msg) - 1);
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(e->msg + have, sizeof(e->msg) - have, fmt, ap);
	va_end(ap);
	if (n >= 0 && have + (size_t)n >= sizeof(e->msg))
		memcpy(e->msg + sizeof(e->msg) - 4, "...", 4);
	return e->code;
}
