#include "tools/glob.h"

#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <string.h>

/* A split string: its segments one after another, each NUL-terminated
 * where a '/' was, ending at end. */
struct glob_segs {
	char *start, *end;
};

static bool glob_split(const char *s, char *buf, size_t cap, struct glob_segs *ret)
{
	size_t l = strnlen(s, cap);
	if (l >= cap)
		return false;
	for (size_t i = 0; i <= l; i++)
		buf[i] = s[i] == '/' ? 0 : s[i];
	*ret = (struct glob_segs){ .start = buf, .end = buf + l + 1 };
	return true;
}

static const char *glob_next(const char *seg)
{
	return seg + strlen(seg) + 1;
}

static bool glob_is_any(const char *seg)
{
	return !strcmp(seg, "**");
}

/* The greedy wildcard match, over segments: a `**` is tried at the first
 * place that works and moved one segment on only when what follows it
 * fails; an earlier `**` is never retried once a later one is reached (a
 * non-`**` segment matches exactly one segment, so nothing can be gained
 * by it). Each (pattern, text) pair of segments is tried at most once. */
static bool glob_segs_match(const struct glob_segs *pat, const struct glob_segs *path)
{
	const char *p = pat->start, *t = path->start;
	const char *any = NULL, *any_t = NULL;
	while (t < path->end) {
		if (p < pat->end && glob_is_any(p)) {
			any = p;
			any_t = t;
			p = glob_next(p);
			if (p == pat->end)
				return true;	/* a last `**`: all that is left, and there is some */
		} else if (p < pat->end && fnmatch(p, t, 0) == 0) {
			p = glob_next(p);
			t = glob_next(t);
		} else if (any) {
			p = glob_next(any);
			any_t = glob_next(any_t);
			t = any_t;
		} else {
			return false;
		}
	}
	/* The path is used up: what is left may be `**`s matching nothing, but
	 * not a last one (dir then `**` does not match dir). */
	while (p < pat->end && glob_is_any(p) && glob_next(p) < pat->end)
		p = glob_next(p);
	return p == pat->end;
}

bool glob_match(const char *pat, const char *path)
{
	char pbuf[GLOB_PATTERN_MAX + 1], tbuf[PATH_MAX];
	struct glob_segs ps, ts;
	if (!glob_split(pat, pbuf, sizeof(pbuf), &ps) || !glob_split(path, tbuf, sizeof(tbuf), &ts))
		return false;
	return glob_segs_match(&ps, &ts);
}

bool glob_match_text(const char *pat, const char *text)
{
	if (strnlen(pat, GLOB_PATTERN_MAX + 1) > GLOB_PATTERN_MAX)
		return false;
	return fnmatch(pat, text, 0) == 0;
}

int glob_escape(const char *s, size_t n, char *out, size_t cap)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (k + 3 > cap)
			return -ENAMETOOLONG;
		if (strchr("*?[\\", s[i]))
			out[k++] = '\\';
		out[k++] = s[i];
	}
	if (k >= cap)
		return -ENAMETOOLONG;
	out[k] = 0;
	return 0;
}
