/* base/line.c: lines read with a ceiling. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/line.h"
#include "tap.h"

static FILE *file_of(const char *s, size_t n)
{
	FILE *f = tmpfile();
	if (!f || fwrite(s, 1, n, f) != n)
		exit(1);
	rewind(f);
	return f;
}

int main(void)
{
	char *b = NULL;
	size_t cap = 0;
	FILE *f = file_of("one\n\ntwo", 8);
	is_int(line_read(f, &b, &cap, 16), 4, "a line, its newline kept");
	is_str(b, "one\n", "its bytes");
	is_int(line_read(f, &b, &cap, 16), 1, "a blank line is one byte");
	is_int(line_read(f, &b, &cap, 16), 3, "the last line without its newline");
	is_str(b, "two", "its bytes");
	is_int(line_read(f, &b, &cap, 16), 0, "then the end");
	fclose(f);

	/* The ceiling counts the newline, as getline's length does. */
	free(b);
	b = NULL;
	cap = 0;
	f = file_of("12345678\n123456789\nok\n", 23);
	is_int(line_read(f, &b, &cap, 9), 9, "a line of exactly the ceiling is read");
	is_int(line_read(f, &b, &cap, 9), -E2BIG, "one byte more is refused");
	is_int(line_read(f, &b, &cap, 9), 3, "and the next line is read after it");
	is_str(b, "ok\n", "whole");
	ok(cap <= 10, "the buffer never grew past the ceiling (%zu bytes)", cap);
	fclose(f);

	/* A 64 MiB line under a 1 MiB ceiling: refused, never held. */
	size_t big = 64u << 20;
	char *s = malloc(big + 4);
	if (!s)
		return 1;
	memset(s, 'x', big);
	memcpy(s + big, "\nend", 4);
	f = file_of(s, big + 4);
	free(s);
	free(b);
	b = NULL;
	cap = 0;
	is_int(line_read(f, &b, &cap, 1u << 20), -E2BIG, "a 64 MiB line under a 1 MiB ceiling is refused");
	ok(cap <= (1u << 20) + 1, "having held at most the ceiling (%zu bytes)", cap);
	is_int(line_read(f, &b, &cap, 1u << 20), 3, "the line after it is read");
	is_str(b, "end", "whole");
	fclose(f);
	free(b);
	return tap_done();
}
