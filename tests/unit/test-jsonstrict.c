/* base/jsonstrict.c: each refusal beside its twin, the same document
 * without the defect, which parses; and base/jsonprint.c, which writes
 * what was read back one way, each number as the double it is. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "base/buf.h"
#include "base/jsonprint.h"
#include "base/jsonstrict.h"
#include "tap.h"

static struct err last;

/* 0 or the error; the message in last. */
static int parse_n(const char *s, size_t n, cJSON **ret)
{
	last = (struct err){ 0 };
	cJSON *v = NULL;
	int r = jsonstrict_parse(s, n, &v, &last);
	if (ret)
		*ret = v;
	else
		cJSON_Delete(v);
	return r;
}

static int parse(const char *s)
{
	return parse_n(s, strlen(s), NULL);
}

/* A text as a TAP line can show it. */
static const char *shown(const char *s)
{
	static char out[256];
	size_t k = 0;
	for (; *s && k + 5 < sizeof(out); s++)
		k += (unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f
			     ? (size_t)snprintf(out + k, sizeof(out) - k, "\\x%02x", (unsigned char)*s)
			     : (size_t)snprintf(out + k, sizeof(out) - k, "%c", *s);
	out[k] = 0;
	return out;
}

/* A refusal whose message holds want, and its twin, which parses. */
static void refused(const char *bad, const char *want, const char *twin, const char *what)
{
	int r = parse(bad);
	ok(r == -EINVAL && strstr(last.msg, want), "%s: refused (%s)", what, last.msg);
	if (r != -EINVAL || !strstr(last.msg, want))
		printf("#   want \"%s\" in the message, got %d\n", want, r);
	r = parse(twin);
	ok(r == 0, "twin: %s", shown(twin));
	if (r)
		printf("#   %s\n", last.msg);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void keys(void)
{
	refused("{\"command\":\"echo EVIL > f\",\"command\":\"echo benign\"}", "the key \"command\" is given twice",
		"{\"command\":\"echo EVIL > f\",\"comment\":\"echo benign\"}", "a key given twice");
	parse("{\"command\":\"a\",\"command\":\"b\"}");
	like(last.msg, "(column 16)", "the message says where: the second key's column");
	refused("{\"a\":{\"b\":[1,{\"c\":1,\"d\":{\"e\":[{\"f\":0,\"f\":0}]}}]}}", "the key \"f\" is given twice",
		"{\"a\":{\"b\":[1,{\"c\":1,\"d\":{\"e\":[{\"f\":0,\"g\":0}]}}]}}", "a key given twice, deep down");
	refused("{\"a\":1,\"\\u0061\":2}", "the key \"a\" is given twice", "{\"a\":1,\"\\u0062\":2}",
		"a key given twice, once as an escape");
	refused("[{\"x\":1},{\"y\":1,\"y\":2}]", "\"y\" is given twice", "[{\"x\":1},{\"y\":1,\"x\":2}]",
		"the same key in two objects is not twice; in one it is");
	parse("{\"\\u001b[2J\":1,\"\\u001b[2J\":2}");
	ok(!strchr(last.msg, '\x1b') && strstr(last.msg, "\\u001B[2J"),
	   "a key quoted in the message is escaped, never raw (%s)", last.msg);

	/* 100,000 keys: n log n, not n^2. */
	struct buf b;
	buf_init(&b, 8u << 20);
	buf_append(&b, "{", 1);
	for (int i = 0; i < 100000; i++)
		buf_printf(&b, "%s\"k%d\":%d", i ? "," : "", i, i);
	size_t body = b.len;
	buf_append(&b, "}", 1);
	double t0 = now_s();
	cJSON *v = NULL;
	int r = parse_n(b.data, b.len, &v);
	double dt = now_s() - t0;
	ok(r == 0 && cJSON_GetArraySize(v) == 100000, "an object of 100,000 keys parses");
	ok(dt < 2.0, "in well under 2 s (%.3f s)", dt);
	cJSON_Delete(v);
	b.len = body;
	buf_printf(&b, ",\"k77777\":0}");
	t0 = now_s();
	r = parse_n(b.data, b.len, NULL);
	dt = now_s() - t0;
	ok(r == -EINVAL && strstr(last.msg, "\"k77777\" is given twice"), "and with one key again, at its end: refused (%s)",
	   last.msg);
	ok(dt < 2.0, "as fast (%.3f s)", dt);
	/* The first key given again is the one named. */
	buf_free(&b);
	buf_init(&b, 1u << 20);
	buf_append(&b, "{", 1);
	for (int i = 0; i < 40; i++)
		buf_printf(&b, "\"k%d\":0,", i);
	buf_printf(&b, "\"k30\":1,\"k3\":1}");
	parse_n(b.data, b.len, NULL);
	like(last.msg, "\"k30\" is given twice", "of several given again (sorted), the first again is named");
	buf_free(&b);
}

static void strings(void)
{
	refused("\"a\xff\"", "not UTF-8 (0xFF)", "\"a\xc3\xa9\"", "a byte that is not UTF-8");
	refused("\"\xc0\xaf\"", "not UTF-8", "\"/\"", "an overlong form");
	refused("\"\xed\xa0\x80\"", "not UTF-8", "\"\xee\x80\x80\"", "a surrogate encoded in UTF-8");
	refused("\"\xf4\x90\x80\x80\"", "not UTF-8", "\"\xf4\x8f\xbf\xbf\"", "past U+10FFFF");
	refused("{\"k\xff\":1}", "not UTF-8", "{\"k\":1}", "a key that is not UTF-8");
	refused("\"\\ud800\"", "lone surrogate \\uD800", "\"\\ud83d\\ude00\"", "a lone high surrogate");
	refused("\"\\udc00\"", "lone surrogate \\uDC00", "\"\\u00e9\"", "a lone low surrogate");
	refused("\"\\ud83d\\u0041\"", "lone surrogate \\uD83D", "\"\\ud83d\\udc00\"", "a high surrogate paired with no low one");
	refused("\"\\ude00\\ud83d\"", "lone surrogate", "\"\\ud83d\\ude00\"", "a pair the wrong way round");
	cJSON *v = NULL;
	parse_n("\"\\ud83d\\ude00\\u00e9\"", 20, &v);
	is_str(cJSON_GetStringValue(v), "\xf0\x9f\x98\x80\xc3\xa9", "a pair and a \\u escape decode to their UTF-8");
	cJSON_Delete(v);
	refused("{\"a\\u0000b\":1}", "NUL character", "{\"a\\u0001b\":1}", "a NUL in a key");
	refused("{\"a\":\"x\\u0000y\"}", "NUL character", "{\"a\":\"x\\u0020y\"}", "a NUL in a value");
	ok(parse_n("\"a\0b\"", 5, NULL) == -EINVAL && strstr(last.msg, "NUL"), "a raw NUL byte in a string: refused");
	refused("\"a\nb\"", "control character (0x0A) unescaped", "\"a\\nb\"", "a raw newline in a string");
	refused("\"a\x1b[31m\"", "control character (0x1B)", "\"a\\u001b[31m\"", "a raw ESC in a string");
	refused("\"\\x41\"", "an escape \\ before 'x'", "\"\\u0041\"", "an escape JSON does not have");
	refused("\"\\u12\"", "four hex digits", "\"\\u1234\"", "a short \\u escape");
	refused("'a'", "''' where a value should be", "\"a\"", "single quotes");
	refused("\"abc", "does not end", "\"abc\"", "a string without its end");
	parse_n("\"\\/\\b\\f\\n\\r\\t\\\"\\\\\"", 18, &v);
	is_str(cJSON_GetStringValue(v), "/\b\f\n\r\t\"\\", "JSON's escapes decode");
	cJSON_Delete(v);
}

static void numbers(void)
{
	refused("9007199254740993", "would become 9007199254740992", "9007199254740992", "2^53 + 1 (no double is it)");
	refused("-9007199254740993", "would become", "-9007199254740992", "-(2^53 + 1)");
	refused("12345678901234567890", "would become 1.2345678901234567e+19", "1.2345678901234567e19",
		"20 significant digits");
	refused("{\"n\":0.10000000000000001}", "would become 0.1", "{\"n\":0.1}", "17 digits that name another number than 0.1");
	refused("1e400", "beyond a double's range", "1e300", "a number past a double's range");
	refused("-1e400", "beyond a double's range", "-1.7976931348623157e308", "a negative one past it");
	refused("1e-400", "too small for a double", "1e-300", "a number that would become 0");
	refused("4.9e-324", "would become 5e-324", "5e-324", "a subnormal that would change");
	ok(parse("1152921504606846976") == 0, "2^60 written out in full: a double holds it exactly");
	ok(parse("100000000000000000000") == 0, "1e20 written out in full: held exactly");
	ok(parse("0.30000000000000004") == 0, "0.30000000000000004: the shortest form of its double");
	ok(parse("[0, -0, 0.0, -0.0e-5, 1.5, 1E3, 2e+2, 3e-2, 123456789012345]") == 0,
	   "zeros, fractions, exponents, 15 digits");
	refused("012", "leading zero", "12", "a leading zero");
	refused("-012", "leading zero", "-12", "a negative leading zero");
	refused("+1", "'+' where a value should be", "1", "a plus sign");
	refused(".5", "'.' where a value should be", "0.5", "a point without a digit before it");
	refused("1.", "no digit after its decimal point", "1.0", "a point without a digit after it");
	refused("1e", "no digit in its exponent", "1e0", "an exponent without digits");
	refused("-", "'-' not followed by a digit", "-1", "a minus alone");
	refused("NaN", "'N' where a value should be", "null", "NaN");
	refused("Infinity", "'I' where a value should be", "1e308", "Infinity");
	refused("0x10", "'x' after the JSON value", "16", "a hex number");
	char longnum[200];
	memset(longnum, '1', 150);
	longnum[0] = '1';
	strcpy(longnum + 150, "e-140");
	ok(parse(longnum) == -EINVAL && strstr(last.msg, "more than 100 characters"), "a number of 155 characters: refused");
	cJSON *v = NULL;
	parse_n("[1e20, -0, 2.5]", 15, &v);
	char *s = jsonprint_text(v);
	is_str(s, "[1e+20,-0,2.5]", "numbers print as one form");
	free(s);
	cJSON_Delete(v);
}

static void syntax(void)
{
	refused("[1,2,]", "a comma before ']'", "[1,2]", "a comma after an array's last element");
	refused("{\"a\":1,}", "a comma before '}'", "{\"a\":1}", "a comma after an object's last member");
	refused("[1,,2]", "',' where a value should be", "[1,2]", "two commas");
	refused("{\"a\" 1}", "'1' after an object's key, where a ':' should be", "{\"a\": 1}", "a ':' missing");
	refused("{a:1}", "'a' where an object's key should be", "{\"a\":1}", "a key without quotes");
	refused("{\"a\":1 \"b\":2}", "where a ',' or '}' should be", "{\"a\":1, \"b\":2}", "a ',' missing");
	refused("{} x", "'x' after the JSON value", "{} \n", "text after the value");
	refused("{}{}", "'{' after the JSON value", "{}", "two values");
	refused("\xef\xbb\xbf{}", "byte-order mark", "{}", "a byte-order mark");
	refused("/* hi */ {}", "'/' where a value should be", " {}", "a comment");
	refused("{\f}", "byte 0x0C where an object's key should be", "{\t}", "a form feed as white space");
	refused("[1\v]", "byte 0x0B", "[1\r\n]", "a vertical tab as white space");
	refused("tru", "'t' where a value should be", "true", "a literal cut short");
	refused("[nul]", "'n' where a value should be", "[null]", "null misspelt");
	refused("", "the text ends where a value should be", "0", "an empty text");
	refused(" \n ", "the text ends where a value should be", "\"\"", "white space only");
	refused("[1, 2", "does not end", "[1, 2]", "an array without its end");
	refused("{\"a\": [1, 2}", "'}' after an array's element", "{\"a\": [1, 2]}", "a mismatched bracket");
	ok(parse_n("{}\0", 3, NULL) == -EINVAL && strstr(last.msg, "byte 0x00 after the JSON value"),
	   "a NUL byte after the value: refused");
	parse("{\n  \"a\": 1,\n  \"a\": 2\n}");
	like(last.msg, "(line 3, column 3)", "a text of several lines: line and column");
	cJSON *keep = (cJSON *)0x1;
	struct err e = { 0 };
	jsonstrict_parse("[1,]", 4, &keep, &e);
	ok(keep == (cJSON *)0x1, "a refusal leaves *ret as it was");
}

static void bounds(void)
{
	char deep[400];
	memset(deep, '[', 128);
	memset(deep + 128, ']', 128);
	deep[256] = 0;
	ok(parse(deep) == 0, "arrays nested %d deep parse", JSONSTRICT_DEPTH_MAX);
	memset(deep, '[', 129);
	memset(deep + 129, ']', 129);
	deep[258] = 0;
	ok(parse(deep) == -E2BIG && strstr(last.msg, "nested deeper than 128"), "129 deep: refused (%s)", last.msg);
	/* A million '[' and '{"a":': bounded at once, no stack spent on them. */
	size_t n = 1000000;
	char *big = malloc(n * 5);
	memset(big, '[', n);
	double t0 = now_s();
	int r = parse_n(big, n, NULL);
	ok(r == -E2BIG && now_s() - t0 < 1.0, "a million '[': refused at the bound, fast");
	for (size_t i = 0; i < n; i++)
		memcpy(big + i * 5, "{\"a\":", 5);
	ok(parse_n(big, n * 5, NULL) == -E2BIG, "a million '{\"a\":': refused at the bound");
	free(big);
	ok(parse_n("{}", (size_t)JSONSTRICT_SIZE_MAX + 1, NULL) == -E2BIG, "a text over %u MiB: refused before it is read",
	   JSONSTRICT_SIZE_MAX >> 20);
}

static void canonical(void)
{
	const char *in = "{ \"s\" : \"a\xe2\x80\xa8\\u2029b\\u00e9\\n\", \"n\" : [1.50, 1E2, {\"x\" : null}], \"t\":true }";
	cJSON *v = NULL;
	ok(parse_n(in, strlen(in), &v) == 0, "a document with unicode, numbers and nesting parses");
	char *s = jsonprint_text(v);
	is_str(s, "{\"s\":\"a\\u2028\\u2029b\xc3\xa9\\n\",\"n\":[1.5,100,{\"x\":null}],\"t\":true}",
	       "its one serialisation: no white space, U+2028/2029 escaped, numbers in one form");
	cJSON *w = NULL;
	ok(parse_n(s, strlen(s), &w) == 0, "which the strict parser takes back");
	char *s2 = jsonprint_text(w);
	is_str(s2, s, "and prints the same bytes again");
	free(s);
	free(s2);
	cJSON_Delete(v);
	cJSON_Delete(w);
}

/* Each number reads back as the double it was (cJSON's printer wrote
 * 9007199254740992 as 9.00719925474099e+15). */
static void exact_numbers(void)
{
	static const double ds[] = { 9007199254740992.0, 0.1 + 0.2, 1.0 / 3, 1e20, 1152921504606846976.0, -2.5e-300,
				     5e-324, 1.7976931348623157e308, 123456789.125, -0.0 };
	static const char *const want[] = { "9007199254740992", "0.30000000000000004", "0.3333333333333333",
					    "1e+20", "1.152921504606847e+18", "-2.5e-300", "5e-324",
					    "1.7976931348623157e+308", "123456789.125", "-0" };
	for (size_t i = 0; i < sizeof(ds) / sizeof(ds[0]); i++) {
		cJSON *n = cJSON_CreateNumber(ds[i]);
		char *s = jsonprint_text(n);
		is_str(s, want[i], "the double %.17g prints as %s", ds[i], want[i]);
		ok(s && strtod(s, NULL) == ds[i] && (ds[i] != 0 || signbit(strtod(s, NULL))), "and reads back as itself");
		free(s);
		cJSON_Delete(n);
	}
}

int main(void)
{
	keys();
	strings();
	numbers();
	syntax();
	bounds();
	canonical();
	exact_numbers();
	return tap_done();
}
