#include "base/parse.h"
#include "base/cleanup.h"

#include <errno.h>
#include <string.h>

int parse_u64(const char *s, uint64_t *ret)
{
	if (!s || !*s)
		return -EINVAL;
	uint64_t v = 0;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*ret = v;
	return 0;
}

static int parse_num_suffix(const char *s, uint64_t *ret_num, const char **ret_suffix)
{
	const char *p = s;
	uint64_t v = 0;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*ret_num = v;
	*ret_suffix = p;
	return 0;
}

int parse_duration_ms(const char *s, int64_t *ret_ms)
{
	/* Parts of a number (a fraction allowed) and a unit each: "1h30m",
	 * "1.5s", "250ms", "2m30s". A bare number is refused (seconds or
	 * minutes?), but for "0", which means none. */
	static const struct {
		const char *unit;
		int64_t ms;
	} units[] = { { "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 }, { "d", 86400000 } };
	if (!s || !*s)
		return -EINVAL;
	if (!strcmp(s, "0")) {
		*ret_ms = 0;
		return 0;
	}
	double total = 0;
	const char *p = s;
	while (*p) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		double v = 0, scale = 0;
		for (; (*p >= '0' && *p <= '9') || (*p == '.' && !scale); p++) {
			if (*p == '.')
				scale = 1;
			else if (scale)
				v += (scale /= 10) * (*p - '0');
			else
				v = v * 10 + (*p - '0');
			if (v > 1e15)
				return -ERANGE;
		}
		size_t i = 0, ul = 0;
		for (; i < ARRAY_SIZE(units); i++) {
			ul = strlen(units[i].unit);
			if (!strncmp(p, units[i].unit, ul) && !(p[ul] >= 'a' && p[ul] <= 'z'))
				break;
		}
		if (i == ARRAY_SIZE(units))
			return -EINVAL;	/* no unit, or an unknown one */
		total += v * (double)units[i].ms;
		p += ul;
	}
	if (total > 9e15)
		return -ERANGE;
	*ret_ms = (int64_t)(total + 0.5);
	return 0;
}

int parse_size(const char *s, uint64_t *ret_bytes)
{
	uint64_t v, mul;
	const char *suf;
	if (!s)
		return -EINVAL;
	int r = parse_num_suffix(s, &v, &suf);
	if (r < 0)
		return r;
	if (!*suf)
		mul = 1;
	else if (!strcmp(suf, "K") || !strcmp(suf, "k"))
		mul = 1ULL << 10;
	else if (!strcmp(suf, "M"))
		mul = 1ULL << 20;
	else if (!strcmp(suf, "G"))
		mul = 1ULL << 30;
	else
		return -EINVAL;
	if (v > UINT64_MAX / mul)
		return -ERANGE;
	*ret_bytes = v * mul;
	return 0;
}

bool parse_json_has_nul(const char *s, size_t n)
{
	bool in_str = false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (ch == 0)
			return true;
		if (!in_str) {
			in_str = ch == '"';
			continue;
		}
		if (ch == '"') {
			in_str = false;
		} else if (ch == '\\' && i + 1 < n) {
			if (s[i + 1] == 'u' && i + 5 < n && !memcmp(s + i + 2, "0000", 4))
				return true;
			i++;
		}
	}
	return false;
}

void parse_line_col(const char *text, size_t n, size_t at, size_t *ret_line, size_t *ret_col)
{
	size_t line = 1, col = 1;
	for (size_t i = 0; i < at && i < n && text[i]; i++) {
		if (text[i] == '\n') {
			line++;
			col = 1;
		} else if (((unsigned char)text[i] & 0xC0) != 0x80) {
			col++;
		}
	}
	*ret_line = line;
	*ret_col = col;
}
