#include "cmd/term.h"
#include "base/buf.h"
#include "base/utf8.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
