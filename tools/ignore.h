/* .gitignore rules, one struct ignore per directory level that has a
 * .gitignore, each pointing at the level above. Patterns are globs
 * (tools/glob.h); git's rules: a pattern without '/' (but a trailing one)
 * matches a name at any depth, one with '/' is anchored at its file's
 * directory, a trailing '/' matches directories only, '!' re-includes, the
 * last matching rule wins and a deeper file overrides. */
#pragma once
#include <stdbool.h>

#include "tools/tool.h"

/* Rules kept from one level and those above it together; the rest are
 * dropped (their files are then shown, not hidden). Every entry of a walk
 * is tried against each kept rule, so this bounds a walk's cost per entry:
 * a 1 MiB .gitignore of one-character lines would be half a million rules,
 * while large real trees hold a few hundred on any one path. */
#define IGNORE_RULES_MAX 10000

struct ignore;
/* The rules of dirfd's .gitignore (read up to 1 MiB) over parent's, with
 * reldir the directory relative to the walk's root ("" for the root).
 * Returns parent itself when there is no .gitignore (or no memory). */
struct ignore *ignore_load(int dirfd, const char *reldir, struct ignore *parent);
/* Frees the level ignore_load made (ignore_load adds at most one). */
void ignore_free(struct ignore *ig);
/* relpath is relative to the walk's root. cancel (or NULL) is polled
 * before each rule, as one match can take milliseconds (tools/glob.h) and
 * a path may meet thousands of rules; once it is set the answer means
 * nothing, and the caller checks cancel before using it. */
bool ignore_match(const struct ignore *ig, const char *relpath, bool is_dir, struct cancel *cancel);
