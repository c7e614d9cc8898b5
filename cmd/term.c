#include "cmd/term.h"
#include "base/buf.h"
#include "base/utf8.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <wchar.h>

bool term_is(FILE *f)
{
	return isatty(fileno(f)) == 1;
}

/* Through the rule, in pieces of a bounded size. */
static int term_put(FILE *f, struct utf8_term *t, const char *s, size_t n)
{
	while (n) {
		size_t k = n < 16384 ? n : 16384;
		struct buf b;
		buf_init(&b, k * 4 + 16);
		utf8_term_feed(t, s, k, &b);
		size_t w = b.len ? fwrite(b.data, 1, b.len, f) : 0;
		bool bad = w != b.len;
		buf_free(&b);
		if (bad)
			return -1;
		s += k;
		n -= k;
	}
	return 0;
}

void term_write(FILE *f, const char *s, size_t n)
{
	struct utf8_term t = { 0 };
	term_put(f, &t, s, n);
	struct buf b;
	buf_init(&b, 64);
	utf8_term_end(&t, &b);
	if (b.len)
		fwrite(b.data, 1, b.len, f);
	buf_free(&b);
}

void term_printf(FILE *f, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n >= 0)
		term_write(f, s, (size_t)n);
	free(s);
}

void term_sayf(FILE *f, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	struct winsize w;
	char *safe = term_is(f) && ioctl(fileno(f), TIOCGWINSZ, &w) == 0 && w.ws_col >= 20 ? utf8_term_safe(s, (size_t)n) : NULL;
	if (!safe) {
		term_write(f, s, (size_t)n);
		free(s);
		return;
	}
	free(s);
	/* Rows of at most cols - 1 columns, broken between words. */
	size_t cols = (size_t)w.ws_col - 1, used = 0;
	for (char *p = safe; *p;) {
		if (*p == '\n') {
			fputc('\n', f);
			used = 0;
			p++;
			continue;
		}
		size_t k = strcspn(p, " \n");
		size_t wc = term_cols(p, k);
		if (used && used + 1 + wc > cols) {
			fputs("\n  ", f);
			used = 2;
		} else if (used) {
			fputc(' ', f);
			used++;
		}
		while (k && used + term_cols(p, k) > cols) {
			size_t fit = term_fit_bytes(p, k, cols > used ? cols - used : 1);
			if (!fit)
				fit = 1;
			fwrite(p, 1, fit, f);
			fputs("\n  ", f);
			used = 2;
			p += fit;
			k -= fit;
		}
		fwrite(p, 1, k, f);
		used += term_cols(p, k);
		p += k;
		while (*p == ' ')
			p++;
	}
	free(safe);
}

char *term_line(const char *s, size_t n, size_t max)
{
	size_t k = n;
	if (k > max) {
		k = max;
		while (k > 0 && ((unsigned char)s[k] & 0xc0) == 0x80)
			k--;
	}
	struct buf b;
	buf_init(&b, max * 3 + 16);
	for (size_t i = 0; i < k; i++) {
		if (s[i] == '\n')
			buf_append(&b, "⏎", strlen("⏎"));
		else
			buf_append(&b, &s[i], 1);
	}
	if (k < n)
		buf_append(&b, "…", strlen("…"));
	char *r = utf8_term_safe(b.data ? b.data : "", b.len);
	buf_free(&b);
	return r;
}

struct term_cookie {
	FILE *to;
	struct utf8_term t;
};

static ssize_t cookie_write(void *c, const char *p, size_t n)
{
	struct term_cookie *k = c;
	if (term_put(k->to, &k->t, p, n) < 0 || fflush(k->to) == EOF) {
		if (!errno)
			errno = EIO;
		return -1;
	}
	return (ssize_t)n;
}

static int cookie_close(void *c)
{
	struct term_cookie *k = c;
	struct buf b;
	buf_init(&b, 64);
	utf8_term_end(&k->t, &b);
	int r = b.len && fwrite(b.data, 1, b.len, k->to) != b.len ? -1 : 0;
	buf_free(&b);
	if (fflush(k->to) == EOF)
		r = -1;
	free(k);
	return r;
}

FILE *term_stream(FILE *f)
{
	struct term_cookie *k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	k->to = f;
	FILE *s = fopencookie(k, "w", (cookie_io_functions_t){ .write = cookie_write, .close = cookie_close });
	if (!s)
		free(k);
	return s;
}

/* An escape sequence at s: its length (ESC [ params final), or 0. */
static size_t esc_len(const char *s, size_t n)
{
	if (n < 2 || s[0] != 033 || s[1] != '[')
		return 0;
	for (size_t i = 2; i < n && i < 64; i++)
		if ((unsigned char)s[i] >= 0x40 && (unsigned char)s[i] <= 0x7e)
			return i + 1;
	return 0;
}

int term_char_cols(const char *s, size_t avail, size_t *len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t k = utf8_seq_len(p, avail);
	if (!k) {
		*len = 1;
		return 1;
	}
	*len = k;
	if (k == 1)
		return p[0] >= 0x20 && p[0] != 0x7f ? 1 : 0;
	unsigned cp = p[0] & (0xff >> (k + 1));
	for (size_t i = 1; i < k; i++)
		cp = cp << 6 | (p[i] & 0x3f);
	int w = wcwidth((wchar_t)cp);
	return w < 0 ? 1 : w;
}

size_t term_cols(const char *s, size_t n)
{
	size_t cols = 0;
	for (size_t i = 0; i < n;) {
		size_t e = esc_len(s + i, n - i);
		if (e) {
			i += e;
			continue;
		}
		size_t k;
		cols += (size_t)term_char_cols(s + i, n - i, &k);
		i += k;
	}
	return cols;
}

size_t term_fit_bytes(const char *s, size_t n, size_t cols)
{
	size_t used = 0, i = 0;
	while (i < n) {
		size_t e = esc_len(s + i, n - i);
		if (e) {
			i += e;
			continue;
		}
		size_t k;
		int w = term_char_cols(s + i, n - i, &k);
		if (used + (size_t)w > cols)
			break;
		used += (size_t)w;
		i += k;
	}
	return i;
}
