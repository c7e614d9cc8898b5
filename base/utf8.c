#include "base/utf8.h"
#include <stdbool.h>
#include <stdio.h>
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

static bool term_hidden(unsigned cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

size_t utf8_term_char(const unsigned char *p, size_t avail, char rep[UTF8_TERM_REP])
{
	unsigned char c = p[0];
	rep[0] = 0;
	if (c < 0x80) {
		if (c == 0x7f || (c < 0x20 && c != '\n' && c != '\t')) {
			rep[0] = '^';
			rep[1] = c == 0x7f ? '?' : (char)(c + 0x40);
			rep[2] = 0;
		}
		return 1;
	}
	size_t n = utf8_seq_len(p, avail);
	if (!n) {
		memcpy(rep, "\xef\xbf\xbd", 4);
		return 1;
	}
	unsigned cp = c & (0xff >> (n + 1));
	for (size_t i = 1; i < n; i++)
		cp = cp << 6 | (p[i] & 0x3f);
	if (term_hidden(cp))
		snprintf(rep, UTF8_TERM_REP, "<U+%04X>", cp);
	return n;
}

/* p starts a UTF-8 sequence that avail bytes do not finish. */
static bool term_unfinished(const unsigned char *p, size_t avail)
{
	unsigned char c = p[0];
	size_t n = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
	if (avail >= n)
		return false;
	for (size_t i = 1; i < avail; i++)
		if ((p[i] & 0xc0) != 0x80)
			return false;
	return true;
}

/* The characters of p[0..len), all but an unfinished one at the end:
 * how many bytes were taken. */
static size_t term_run(const unsigned char *p, size_t len, struct buf *out)
{
	size_t i = 0, run = 0;
	char rep[UTF8_TERM_REP];
	while (i < len && !term_unfinished(p + i, len - i)) {
		size_t n = utf8_term_char(p + i, len - i, rep);
		if (!rep[0]) {
			i += n;
			run += n;
			continue;
		}
		if ((run && buf_append(out, p + i - run, run) < 0) || buf_append(out, rep, strlen(rep)) < 0)
			return len;
		run = 0;
		i += n;
	}
	if (run)
		buf_append(out, p + i - run, run);
	return i;
}

void utf8_term_feed(struct utf8_term *t, const char *in, size_t len, struct buf *out)
{
	const unsigned char *p = (const unsigned char *)in;
	/* A character the last piece cut: its first bytes and this piece's. */
	while (t->nheld && len) {
		unsigned char w[8];
		size_t add = MIN(len, sizeof(w) - t->nheld);
		memcpy(w, t->held, t->nheld);
		memcpy(w + t->nheld, p, add);
		if (term_unfinished(w, t->nheld + add)) {
			memcpy(t->held + t->nheld, p, add);
			t->nheld += add;
			return;
		}
		char rep[UTF8_TERM_REP];
		size_t n = utf8_term_char(w, t->nheld + add, rep);
		buf_append(out, rep[0] ? rep : (const char *)w, rep[0] ? strlen(rep) : n);
		if (n >= t->nheld) {
			p += n - t->nheld;
			len -= n - t->nheld;
			t->nheld = 0;
		} else {
			memmove(t->held, t->held + n, t->nheld - n);
			t->nheld -= n;
		}
	}
	size_t done = term_run(p, len, out);
	memcpy(t->held, p + done, len - done);
	t->nheld = len - done;
}

void utf8_term_end(struct utf8_term *t, struct buf *out)
{
	for (size_t i = 0; i < t->nheld; i++)
		buf_append(out, "\xef\xbf\xbd", 3);
	t->nheld = 0;
	buf_cstr(out);
}

char *utf8_term_safe(const char *in, size_t len)
{
	struct buf b;
	buf_init(&b, len * 4 + 16);
	if (buf_append(&b, "", 0) < 0)
		return NULL;
	struct utf8_term t = { 0 };
	utf8_term_feed(&t, in, len, &b);
	utf8_term_end(&t, &b);
	return b.data;
}

/* The SGR parameters at p (n bytes, between "ESC [" and "m") that are
 * kept, written as a sequence to out; false when the sequence is not one
 * of SGR's (a byte that is not a digit, ';' or ':'). */
static bool sgr_keep(const char *p, size_t n, struct buf *out)
{
	unsigned v[32];
	size_t nv = 0;
	unsigned cur = 0;
	bool digits = false;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || p[i] == ';' || p[i] == ':') {
			if (nv < ARRAY_SIZE(v))
				v[nv++] = digits ? cur : 0;
			cur = 0;
			digits = false;
			continue;
		}
		if (p[i] < '0' || p[i] > '9' || cur > 100000)
			return false;
		cur = cur * 10 + (unsigned)(p[i] - '0');
		digits = true;
	}
	char seq[160] = "\033[";
	size_t k = 2;
	bool any = false;
	for (size_t i = 0; i < nv && k < sizeof(seq) - 24; i++) {
		unsigned c = v[i];
		char one[40] = "";
		if (c == 38 && i + 2 < nv && v[i + 1] == 5) {
			snprintf(one, sizeof(one), "38;5;%u", v[i + 2] & 0xff);
			i += 2;
		} else if (c == 38 && i + 4 < nv && v[i + 1] == 2) {
			snprintf(one, sizeof(one), "38;2;%u;%u;%u", v[i + 2] & 0xff, v[i + 3] & 0xff, v[i + 4] & 0xff);
			i += 4;
		} else if (c == 48 && i + 1 < nv) {
			i += v[i + 1] == 5 ? 2 : v[i + 1] == 2 ? 4 : 1;	/* a background: dropped */
		} else if (c <= 4 || c == 9 || (c >= 21 && c <= 24) || c == 29 || (c >= 30 && c <= 37) || c == 39 ||
			   (c >= 90 && c <= 97)) {
			snprintf(one, sizeof(one), "%u", c);
		}
		if (one[0]) {
			k += (size_t)snprintf(seq + k, sizeof(seq) - k, "%s%s", any ? ";" : "", one);
			any = true;
		}
	}
	if (any) {
		snprintf(seq + k, sizeof(seq) - k, "m");
		buf_append(out, seq, strlen(seq));
	}
	return true;
}

char *utf8_term_safe_sgr(const char *in, size_t len)
{
	struct buf b;
	buf_init(&b, len * 4 + 16);
	if (buf_append(&b, "", 0) < 0)
		return NULL;
	size_t from = 0;
	for (size_t i = 0; i < len; i++) {
		if (in[i] != 033 || i + 1 >= len || in[i + 1] != '[')
			continue;
		size_t e = i + 2;
		while (e < len && e - i < 64 && ((in[e] >= '0' && in[e] <= '9') || in[e] == ';' || in[e] == ':'))
			e++;
		if (e >= len || in[e] != 'm')
			continue;
		struct buf keep;
		buf_init(&keep, 256);
		if (!sgr_keep(in + i + 2, e - i - 2, &keep)) {
			buf_free(&keep);
			continue;
		}
		/* The text before it by the rule, then what of it is kept. */
		struct utf8_term t = { 0 };
		utf8_term_feed(&t, in + from, i - from, &b);
		utf8_term_end(&t, &b);
		if (keep.len)
			buf_append(&b, keep.data, keep.len);
		buf_free(&keep);
		from = i = e;
		from++;
	}
	struct utf8_term t = { 0 };
	utf8_term_feed(&t, in + from, len - from, &b);
	utf8_term_end(&t, &b);
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
