#include "base/note.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void note_say(const struct note *n, const char *fmt, ...)
{
	if (!n || !n->fn)
		return;
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	int k = vasprintf(&s, fmt, ap);
	va_end(ap);
	n->fn(n->ud, k >= 0 ? s : "(a warning that could not be written: out of memory)");
	free(s);
}
