#include "base/jsonstrict.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/parse.h"
#include "base/utf8.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A member's name, kept while its object is read. */
struct key {
	const char *s;		/* as the tree holds it */
	size_t len;
	size_t at;		/* where its text starts */
};

static void tree_freep(cJSON **p)
{
	cJSON_Delete(*p);
}
#define _cleanup_tree_ __attribute__((cleanup(tree_freep)))

struct jp {
	const char *text, *p, *end;
	unsigned depth;
	struct buf str;		/* the string being decoded */
	struct key *keys;	/* the names of the objects being read, innermost last */
	size_t nkeys, kcap;
	struct err *e;
};

static int fail(struct jp *j, const char *at, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(struct jp *j, const char *at, int code, const char *fmt, ...)
{
	char what[420];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	size_t n = (size_t)(j->end - j->text), line, col;
	parse_line_col(j->text, n, (size_t)(at - j->text), &line, &col);
	if (memchr(j->text, '\n', n))
		return err_set(j->e, code, "%s (line %zu, column %zu)", what, line, col);
	return err_set(j->e, code, "%s (column %zu)", what, col);
}

static int nomem(struct jp *j)
{
	return err_set(j->e, -ENOMEM, "out of memory");
}

/* What stands at p, for a message: 'x', byte 0xNN, or the end. */
static const char *what_at(const struct jp *j, const char *p, char *buf, size_t cap)
{
	if (p >= j->end)
		return "the end of the text";
	unsigned char c = (unsigned char)*p;
	if (c > 0x20 && c < 0x7f)
		snprintf(buf, cap, "'%c'", c);
	else
		snprintf(buf, cap, "byte 0x%02X", c);
	return buf;
}

/* A decoded string (a key), safe to quote in a message: printable ASCII
 * as it is, everything else as \u escapes, at most 40 characters. */
static void quote(const char *s, size_t len, char *out, size_t cap)
{
	size_t k = 0, shown = 0;
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < len && k + 16 < cap;) {
		if (shown++ == 40) {
			k += (size_t)snprintf(out + k, cap - k, "...");
			break;
		}
		unsigned char c = p[i];
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			out[k++] = (char)c;
			i++;
			continue;
		}
		if (c < 0x80) {
			k += (size_t)snprintf(out + k, cap - k, "\\u%04X", c);
			i++;
			continue;
		}
		size_t sl = utf8_seq_len(p + i, len - i);
		unsigned cp = sl == 2 ? (c & 0x1fu) : sl == 3 ? (c & 0x0fu) : (c & 0x07u);
		for (size_t m = 1; m < sl; m++)
			cp = cp << 6 | (p[i + m] & 0x3fu);
		k += (size_t)snprintf(out + k, cap - k, "\\u{%X}", cp);
		i += sl ? sl : 1;
	}
	out[k] = 0;
}

static void ws(struct jp *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static int hex4(const char *p, const char *end, unsigned *ret)
{
	if (end - p < 4)
		return -1;
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
			   : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
			   : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
						  : 16u;
		if (d == 16)
			return -1;
		v = v << 4 | d;
	}
	*ret = v;
	return 0;
}

static int put_cp(struct buf *b, unsigned cp)
{
	unsigned char u[4];
	size_t n;
	if (cp < 0x80) {
		u[0] = (unsigned char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (unsigned char)(0xc0 | cp >> 6);
		u[1] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (unsigned char)(0xe0 | cp >> 12);
		u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (unsigned char)(0xf0 | cp >> 18);
		u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return buf_append(b, u, n);
}

/* One \uXXXX escape at q (its backslash), or a surrogate pair: the code
 * point into j->str; *ret_next past it. */
static int read_u_escape(struct jp *j, const char *q, const char **ret_next)
{
	unsigned cp, lo;
	if (hex4(q + 2, j->end, &cp) < 0)
		return fail(j, q, -EINVAL, "a \\u escape without four hex digits in a string");
	const char *next = q + 6;
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return fail(j, q, -EINVAL, "a lone surrogate \\u%04X in a string (a low surrogate must follow a high one)",
			    cp);
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (j->end - next < 6 || next[0] != '\\' || next[1] != 'u' || hex4(next + 2, j->end, &lo) < 0 ||
		    lo < 0xdc00 || lo > 0xdfff)
			return fail(j, q, -EINVAL,
				    "a lone surrogate \\u%04X in a string (a high surrogate must be followed by a low "
				    "one, \\uDC00 to \\uDFFF)",
				    cp);
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
		next += 6;
	}
	if (cp == 0)
		return fail(j, q, -EINVAL, "a NUL character (\\u0000) in a string");
	if (put_cp(&j->str, cp) < 0)
		return nomem(j);
	*ret_next = next;
	return 0;
}

/* The string whose opening quote is at j->p, decoded into j->str (and a
 * NUL after it); j->p past its closing quote. */
static int read_string(struct jp *j)
{
	const char *open = j->p, *q = j->p + 1, *run = q;
	j->str.len = 0;
	for (;;) {
		if (q >= j->end)
			return fail(j, open, -EINVAL, "a string that does not end (a '\"' is missing)");
		unsigned char c = (unsigned char)*q;
		if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
			q++;
			continue;
		}
		if (c >= 0x80) {
			size_t sl = utf8_seq_len((const unsigned char *)q, (size_t)(j->end - q));
			if (!sl)
				return fail(j, q, -EINVAL, "bytes that are not UTF-8 (0x%02X) in a string", c);
			q += sl;
			continue;
		}
		if (buf_append(&j->str, run, (size_t)(q - run)) < 0)
			return nomem(j);
		if (c == '"') {
			j->p = q + 1;
			return buf_cstr(&j->str) < 0 ? nomem(j) : 0;
		}
		if (c == 0)
			return fail(j, q, -EINVAL, "a NUL character (a zero byte) in a string");
		if (c < 0x20)
			return fail(j, q, -EINVAL,
				    "a control character (0x%02X) unescaped in a string (JSON writes it as \\n, \\t or "
				    "\\u00%02X)",
				    c, c);
		/* A backslash. */
		static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
		const char *e = q + 1 < j->end && q[1] ? strchr(from, q[1]) : NULL;
		if (e) {
			if (buf_append(&j->str, &to[e - from], 1) < 0)
				return nomem(j);
			q += 2;
		} else if (q + 1 < j->end && q[1] == 'u') {
			int r = read_u_escape(j, q, &q);
			if (r < 0)
				return r;
		} else {
			char w[32];
			return fail(j, q, -EINVAL, "an escape \\ before %s in a string, which JSON does not have",
				    what_at(j, q + 1, w, sizeof(w)));
		}
		run = q;
	}
}

/* A decimal number as int(d) * 10^x, d without leading or trailing
 * zeros (n == 0: zero). The text is a JSON number or printf's %e. */
struct dec {
	char d[800];
	size_t n;
	long x;
};

static void dec_of(const char *s, size_t len, struct dec *out)
{
	const char *p = s, *end = s + len;
	long frac = 0, ex = 0;
	bool point = false;
	out->n = 0;
	if (p < end && (*p == '-' || *p == '+'))
		p++;
	for (; p < end && ((*p >= '0' && *p <= '9') || (*p == '.' && !point)); p++) {
		if (*p == '.') {
			point = true;
			continue;
		}
		frac += point;
		if ((*p != '0' || out->n) && out->n < sizeof(out->d))
			out->d[out->n++] = *p;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		bool neg = p < end && *p == '-';
		if (p < end && (*p == '-' || *p == '+'))
			p++;
		for (; p < end && *p >= '0' && *p <= '9'; p++)
			if (ex < 1000000)	/* past a double's range either way */
				ex = ex * 10 + (*p - '0');
		ex = neg ? -ex : ex;
	}
	long trail = 0;
	while (out->n && out->d[out->n - 1] == '0') {
		out->n--;
		trail++;
	}
	out->x = ex - frac + trail;
}

static bool dec_same(const struct dec *a, const struct dec *b)
{
	return a->n == b->n && a->x == b->x && !memcmp(a->d, b->d, a->n);
}

/* The rule of jsonstrict.h: does d, the double nearest to the number a,
 * stand for it? shown gets d written back, shortest. */
static bool num_same(const struct dec *a, double d, char *shown, size_t cap)
{
	long top = a->x + (long)a->n;	/* the power of ten above the first digit */
	if (a->n == 0 || (a->n <= 15 && top > -290 && top < 300))
		return true;
	char sh[40];
	int prec = 1;
	for (; prec < 17; prec++) {
		snprintf(sh, sizeof(sh), "%.*e", prec - 1, d);
		if (strtod(sh, NULL) == d)
			break;
	}
	snprintf(sh, sizeof(sh), "%.*e", prec - 1, d);
	snprintf(shown, cap, "%.*g", prec, d);
	struct dec b;
	dec_of(sh, strlen(sh), &b);
	if (dec_same(a, &b))
		return true;
	/* Exactly: a double's decimal expansion has at most 767 significant
	 * digits, and glibc's printf writes it exactly. */
	char full[820];
	snprintf(full, sizeof(full), "%.*e", 790, d);
	dec_of(full, strlen(full), &b);
	return dec_same(a, &b);
}

static int read_number(struct jp *j, cJSON **ret)
{
	const char *s = j->p, *p = j->p, *end = j->end;
	if (p < end && *p == '-')
		p++;
	if (p >= end || *p < '0' || *p > '9') {
		char w[32];
		return fail(j, s, -EINVAL, "a '-' not followed by a digit but by %s", what_at(j, p, w, sizeof(w)));
	}
	if (*p == '0' && p + 1 < end && p[1] >= '0' && p[1] <= '9')
		return fail(j, s, -EINVAL, "a number with a leading zero, which JSON does not allow");
	while (p < end && *p >= '0' && *p <= '9')
		p++;
	if (p < end && *p == '.') {
		p++;
		if (p >= end || *p < '0' || *p > '9')
			return fail(j, s, -EINVAL, "a number with no digit after its decimal point");
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (p >= end || *p < '0' || *p > '9')
			return fail(j, s, -EINVAL, "a number with no digit in its exponent");
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	size_t len = (size_t)(p - s);
	if (len > JSONSTRICT_NUMBER_MAX)
		return fail(j, s, -EINVAL, "a number of more than %d characters", JSONSTRICT_NUMBER_MAX);
	char lit[JSONSTRICT_NUMBER_MAX + 1];
	memcpy(lit, s, len);
	lit[len] = 0;
	double d = strtod(lit, NULL);
	char shown[40] = "";
	struct dec a;
	dec_of(lit, len, &a);
	if (isinf(d))
		return fail(j, s, -EINVAL, "the number %.40s is beyond a double's range", lit);
	if (d == 0 && a.n)
		return fail(j, s, -EINVAL, "the number %.40s is too small for a double (it would become 0)", lit);
	if (!num_same(&a, d, shown, sizeof(shown)))
		return fail(j, s, -EINVAL,
			    "the number %.40s would become %s in a double, which keeps 15 to 17 significant digits; "
			    "write it with fewer digits, or as a string",
			    lit, shown[0] ? shown : "another number");
	if (!(*ret = cJSON_CreateNumber(d)))
		return nomem(j);
	j->p = p;
	return 0;
}

static int read_value(struct jp *j, cJSON **ret);

static int deeper(struct jp *j)
{
	if (++j->depth > JSONSTRICT_DEPTH_MAX)
		return fail(j, j->p, -E2BIG, "arrays and objects nested deeper than %d", JSONSTRICT_DEPTH_MAX);
	return 0;
}

static int read_array(struct jp *j, cJSON **ret)
{
	const char *open = j->p;
	int r = deeper(j);
	if (r < 0)
		return r;
	_cleanup_tree_ cJSON *a = cJSON_CreateArray();
	if (!a)
		return nomem(j);
	j->p++;
	ws(j);
	if (j->p < j->end && *j->p == ']') {
		j->p++;
		goto done;
	}
	for (;;) {
		cJSON *v = NULL;
		if ((r = read_value(j, &v)) < 0)
			return r;
		cJSON_AddItemToArray(a, v);
		ws(j);
		if (j->p >= j->end)
			return fail(j, open, -EINVAL, "an array that does not end (a ']' is missing)");
		if (*j->p == ']') {
			j->p++;
			break;
		}
		char w[32];
		if (*j->p != ',')
			return fail(j, j->p, -EINVAL, "%s after an array's element, where a ',' or ']' should be",
				    what_at(j, j->p, w, sizeof(w)));
		j->p++;
		ws(j);
		if (j->p < j->end && *j->p == ']')
			return fail(j, j->p, -EINVAL, "a comma before ']', after an array's last element");
	}
done:
	j->depth--;
	*ret = TAKE_PTR(a);
	return 0;
}

static bool key_same(const struct key *a, const struct key *b)
{
	return a->len == b->len && !memcmp(a->s, b->s, a->len);
}

static int key_cmp(const void *x, const void *y)
{
	const struct key *a = x, *b = y;
	int c = a->len != b->len ? (a->len < b->len ? -1 : 1) : memcmp(a->s, b->s, a->len);
	return c ? c : a->at < b->at ? -1 : a->at > b->at;
}

/* Of the keys from base on (one object's), the first given again: its
 * second place. A few are compared pairwise; more are sorted, so that an
 * object of 100,000 keys costs n log n, not n^2. */
static const struct key *key_twice(struct jp *j, size_t base)
{
	struct key *k = j->keys + base;
	size_t n = j->nkeys - base;
	const struct key *first = NULL;
	if (n <= 16) {
		for (size_t b = 1; b < n && !first; b++)
			for (size_t a = 0; a < b && !first; a++)
				if (key_same(&k[a], &k[b]))
					first = &k[b];
		return first;
	}
	qsort(k, n, sizeof(*k), key_cmp);
	/* Sorted by name, then place: a name's second place follows its first. */
	for (size_t i = 1; i < n; i++)
		if (key_same(&k[i], &k[i - 1]) && (i < 2 || !key_same(&k[i - 1], &k[i - 2])) &&
		    (!first || k[i].at < first->at))
			first = &k[i];
	return first;
}

static int key_push(struct jp *j, const char *s, size_t len, size_t at)
{
	if (j->nkeys == j->kcap) {
		size_t cap = j->kcap ? j->kcap * 2 : 64;
		struct key *nk = realloc(j->keys, cap * sizeof(*nk));
		if (!nk)
			return nomem(j);
		j->keys = nk;
		j->kcap = cap;
	}
	j->keys[j->nkeys++] = (struct key){ s, len, at };
	return 0;
}

static int read_object(struct jp *j, cJSON **ret)
{
	const char *open = j->p;
	size_t base = j->nkeys;
	int r = deeper(j);
	if (r < 0)
		return r;
	_cleanup_tree_ cJSON *o = cJSON_CreateObject();
	if (!o)
		return nomem(j);
	j->p++;
	ws(j);
	if (j->p < j->end && *j->p == '}') {
		j->p++;
		goto done;
	}
	for (;;) {
		char w[32];
		if (j->p >= j->end || *j->p != '"')
			return fail(j, j->p, -EINVAL, "%s where an object's key should be (a string in double quotes)",
				    what_at(j, j->p, w, sizeof(w)));
		const char *kat = j->p;
		if ((r = read_string(j)) < 0)
			return r;
		size_t klen = j->str.len;
		char *key = cJSON_malloc(klen + 1);
		if (!key)
			return nomem(j);
		memcpy(key, j->str.data, klen + 1);
		ws(j);
		if (j->p >= j->end || *j->p != ':') {
			cJSON_free(key);
			return fail(j, j->p, -EINVAL, "%s after an object's key, where a ':' should be",
				    what_at(j, j->p, w, sizeof(w)));
		}
		j->p++;
		cJSON *v = NULL;
		if ((r = read_value(j, &v)) < 0) {
			cJSON_free(key);
			return r;
		}
		/* The tree owns the name from here (cJSON_Delete frees it). */
		v->string = key;
		cJSON_AddItemToArray(o, v);
		if ((r = key_push(j, key, klen, (size_t)(kat - j->text))) < 0)
			return r;
		ws(j);
		if (j->p >= j->end)
			return fail(j, open, -EINVAL, "an object that does not end (a '}' is missing)");
		if (*j->p == '}') {
			j->p++;
			break;
		}
		if (*j->p != ',')
			return fail(j, j->p, -EINVAL, "%s after an object's member, where a ',' or '}' should be",
				    what_at(j, j->p, w, sizeof(w)));
		j->p++;
		ws(j);
		if (j->p < j->end && *j->p == '}')
			return fail(j, j->p, -EINVAL, "a comma before '}', after an object's last member");
	}
	const struct key *twice = key_twice(j, base);
	if (twice) {
		char q[400];
		quote(twice->s, twice->len, q, sizeof(q));
		return fail(j, j->text + twice->at, -EINVAL, "the key \"%s\" is given twice in one object", q);
	}
done:
	j->nkeys = base;
	j->depth--;
	*ret = TAKE_PTR(o);
	return 0;
}

static int read_literal(struct jp *j, const char *word, cJSON *(*make)(void), cJSON **ret)
{
	size_t n = strlen(word);
	if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n)) {
		char w[32];
		return fail(j, j->p, -EINVAL, "%s where a value should be", what_at(j, j->p, w, sizeof(w)));
	}
	if (!(*ret = make()))
		return nomem(j);
	j->p += n;
	return 0;
}

static int read_value(struct jp *j, cJSON **ret)
{
	ws(j);
	if (j->p >= j->end)
		return fail(j, j->p, -EINVAL, "the text ends where a value should be");
	char c = *j->p;
	if (c == '{')
		return read_object(j, ret);
	if (c == '[')
		return read_array(j, ret);
	if (c == '-' || (c >= '0' && c <= '9'))
		return read_number(j, ret);
	if (c == 't')
		return read_literal(j, "true", cJSON_CreateTrue, ret);
	if (c == 'f')
		return read_literal(j, "false", cJSON_CreateFalse, ret);
	if (c == 'n')
		return read_literal(j, "null", cJSON_CreateNull, ret);
	if (c != '"') {
		char w[32];
		return fail(j, j->p, -EINVAL, "%s where a value should be", what_at(j, j->p, w, sizeof(w)));
	}
	int r = read_string(j);
	if (r < 0)
		return r;
	if (!(*ret = cJSON_CreateString(j->str.data)))
		return nomem(j);
	return 0;
}

int jsonstrict_parse(const char *text, size_t n, cJSON **ret, struct err *e)
{
	struct jp j = { .text = text, .p = text, .end = text + n, .e = e };
	if (n > JSONSTRICT_SIZE_MAX)
		return err_set(e, -E2BIG, "more than %u MiB of JSON", JSONSTRICT_SIZE_MAX >> 20);
	buf_init(&j.str, n + 1);
	cJSON *v = NULL;
	int r;
	if (n >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3))
		r = fail(&j, text, -EINVAL, "a byte-order mark before the JSON value");
	else if ((r = read_value(&j, &v)) == 0) {
		ws(&j);
		if (j.p < j.end) {
			char w[32];
			r = fail(&j, j.p, -EINVAL, "%s after the JSON value, where the text should end",
				 what_at(&j, j.p, w, sizeof(w)));
		}
	}
	buf_free(&j.str);
	free(j.keys);
	if (r < 0) {
		cJSON_Delete(v);
		return r;
	}
	*ret = v;
	return 0;
}
