#include "base/line.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

ssize_t line_read(FILE *f, char **buf, size_t *cap, size_t max)
{
	size_t n = 0;
	bool over = false;
	int c;
	while ((c = getc(f)) != EOF) {
		if (n == max) {
			over = true;
		} else if (!over) {
			if (n + 2 > *cap) {
				size_t want = *cap ? *cap * 2 : 256;
				if (want > max + 1)
					want = max + 1;
				if (want < n + 2)
					want = n + 2;
				char *g = realloc(*buf, want);
				if (!g)
					return -ENOMEM;
				*buf = g;
				*cap = want;
			}
			(*buf)[n++] = (char)c;
		}
		if (c == '\n')
			break;
	}
	if (ferror(f))
		return -EIO;
	if (over)
		return -E2BIG;
	if (*buf)
		(*buf)[n] = 0;
	return (ssize_t)n;
}
