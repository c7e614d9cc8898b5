/* Lines of a file a stranger may have written (a task file), read with a
 * ceiling: a line longer than it is refused without being held, where
 * getline(3) would grow its buffer to the whole line. */
#pragma once
#include <stdio.h>
#include <sys/types.h>

/* The next line of f, its newline kept, into *buf (NUL-terminated; grown
 * as getline grows it, but never past max + 1 bytes): its length, 0 at
 * the end of f; -E2BIG when it holds more than max bytes (the rest of it
 * is read and dropped, so the next call reads the next line); -EIO on a
 * read error; -ENOMEM. */
ssize_t line_read(FILE *f, char **buf, size_t *cap, size_t max);
