#include "base/utf8.h"

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
