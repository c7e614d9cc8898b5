/* The one glob dialect of find's pattern, grep's glob, .gitignore and the
 * gate's rules: `*` (any run of characters), `?` (one character), `[...]`
 * (a class; `[!...]` or `[^...]` negated), a backslash escapes the next
 * character. `*` and `?` match a leading dot too (no FNM_PERIOD), as git's
 * .gitignore matching does. Each segment is matched with fnmatch(3), so in
 * a UTF-8 locale (the terminal front end) `?` is one character, elsewhere
 * (the guest) one byte.
 *
 * Worst case: glibc's fnmatch (2.36) commits to each later `*` once the
 * text before it has matched, so one segment costs O(pattern x text), not
 * an exponential; `**` is matched the same way over whole segments, each
 * pair of segments tried at most once, so a whole match is O(pattern x
 * path) too. Measured (tests/unit/test-glob.c): `*a*a*a*a*a*a*a*a*a*ab`
 * over 4,000 'a's takes under 0.1 ms (the old recursive matcher took 0.2 s
 * over 30, 51 s over 50); the worst found, `**` then 1,000 `?` segments
 * over 2,048 segments (4 KiB each way), about 15 ms; 45 ms in a UTF-8
 * locale, where fnmatch works on wide characters. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

/* Longer patterns never match: the tools refuse them as bad input first.
 * A path is at most PATH_MAX, and a longer glob buys nothing; with it a
 * match over a path stays within 4 KiB x 4 KiB steps. */
#define GLOB_PATTERN_MAX 4096

/* pat over a path: '/' separates segments, in the pattern too (even
 * escaped or inside [...]), and `*`, `?` and classes never match it. A
 * segment that is exactly `**` matches zero or more whole segments; as the
 * last segment one or more, so "dir" "/" "**" is what is below dir, not dir
 * itself. Elsewhere `**` is `*`. */
bool glob_match(const char *pat, const char *path);

/* pat over a string in which '/' is an ordinary character (bash's command
 * line, for the gate): `*` and `?` match '/' too, and `**` is `*`. */
bool glob_match_text(const char *pat, const char *text);

/* s[0..n) as a pattern that matches only itself, into out (cap bytes);
 * -ENAMETOOLONG when it does not fit. */
int glob_escape(const char *s, size_t n, char *out, size_t cap);
