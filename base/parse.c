#include "base/parse.h"

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
	uint64_t v, mul;
	const char *suf;
	if (!s)
		return -EINVAL;
	int r = parse_num_suffix(s, &v, &suf);
	if (r < 0)
		return r;
	if (!*suf || !strcmp(suf, "s"))
		mul = 1000;
	else if (!strcmp(suf, "ms"))
		mul = 1;
	else if (!strcmp(suf, "m"))
		mul = 60000;
	else if (!strcmp(suf, "h"))
		mul = 3600000;
	else
		return -EINVAL;
	if (v > (uint64_t)INT64_MAX / mul)
		return -ERANGE;
	*ret_ms = (int64_t)(v * mul);
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
