#include "base/err.h"

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
