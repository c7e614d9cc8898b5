#include "base/utf8.h"
#include <string.h>
#include "base/cleanup.h"

size_t utf8_seq_len(const unsigned char *p, size_t avail)
{
	unsigned char c = p[0];
	size_t n;
	unsigned min;
	if (c < 0x80)
		return 1;
	if ((c & 0xe0) == 0xc0)
		n = 2, min = 0x80;
	else if ((c & 0xf0) == 0xe0)
		n = 3, min = 0x800;
	else if ((c & 0xf8) == 0xf0)
		n = 4, min = 0x10000;
	else
		return 0;
	if (avail < n)
		return 0;
	unsigned cp = c & (0xff >> (n + 1));
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void utf8_sanitize(const char *in, size_t len, struct buf *out)
{
	static const char repl[] = "\xef\xbf\xbd";
	const unsigned char *p = (const unsigned char *)in;
	size_t i = 0, run = 0;
	while (i < len) {
		size_t n = p[i] ? utf8_seq_len(p + i, len - i) : 0;
		if (n) {
			i += n;
			run += n;
			continue;
		}
		if (run && buf_append(out, p + i - run, run) < 0)
			return;
		run = 0;
		if (buf_append(out, repl, 3) < 0)
			return;
		i++;
	}
	if (run)
		buf_append(out, p + i - run, run);
	buf_cstr(out);
}

char *utf8_dup(const char *in, size_t len)
{
	struct buf b;
	buf_init(&b, len * 3 + 1);
	buf_append(&b, "", 0);
	utf8_sanitize(in, len, &b);
	return b.data;
}

char *utf8_term_safe(const char *in, size_t len)
{
	_cleanup_free_ char *u = utf8_dup(in, len);
	if (!u)
		return NULL;
	struct buf b;
	buf_init(&b, strlen(u) * 3 + 1);
	buf_append(&b, "", 0);
	const unsigned char *p = (const unsigned char *)u;
	for (size_t i = 0; p[i]; i++) {
		unsigned char c = p[i];
		if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f)) {
			buf_append(&b, &c, 1);
		} else if (c == '\r' && p[i + 1] == '\n') {
			continue;
		} else if (c < 0x20) {
			char caret[2] = { '^', (char)(c + 0x40) };
			buf_append(&b, caret, 2);
		} else if (c == 0x7f || (c == 0xc2 && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f)) {
			buf_append(&b, "\xef\xbf\xbd", 3);
			if (c == 0xc2)
				i++;
		} else {
			buf_append(&b, &c, 1);
		}
	}
	return b.data;
}

char *utf8_json_line(const char *json)
{
	struct buf b;
	size_t n = strlen(json);
	buf_init(&b, n * 3 + 1);
	buf_append(&b, "", 0);
	size_t run = 0;
	for (size_t i = 0; i < n;) {
		const char *esc = NULL;
		size_t k = 0;
		if ((unsigned char)json[i] == 0xe2 && (unsigned char)json[i + 1] == 0x80 &&
		    ((unsigned char)json[i + 2] == 0xa8 || (unsigned char)json[i + 2] == 0xa9)) {
			esc = (unsigned char)json[i + 2] == 0xa8 ? "\\u2028" : "\\u2029";
			k = 3;
		} else if ((unsigned char)json[i] == 0xc2 && (unsigned char)json[i + 1] == 0x85) {
			esc = "\\u0085";
			k = 2;
		}
		if (!esc) {
			run++;
			i++;
			continue;
		}
		buf_append(&b, json + i - run, run);
		buf_append(&b, esc, 6);
		run = 0;
		i += k;
	}
	buf_append(&b, json + n - run, run);
	buf_cstr(&b);
	return b.data;
}
