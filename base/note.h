/* A line for a person from a part of ward that does not print (no
 * newline): the caller's function prints it, logs it or drops it. Each
 * interface that takes one says what its lines are. */
#pragma once

typedef void note_fn(void *ud, const char *line);

struct note {
	note_fn *fn;	/* NULL: the lines are dropped */
	void *ud;
};

/* One line to n (NULL, or n->fn NULL: nobody wants it). */
void note_say(const struct note *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
