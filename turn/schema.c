#include "turn/schema.h"
#include "base/cleanup.h"
#include "base/jsonstrict.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <math.h>
#include <pcre2.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct schema {
	cJSON *root;
};

/* Keywords, by what their value is. */
static const char *const kw_annotation[] = {
	"$schema", "$id", "$comment", "title", "description", "default", "examples", "format", "deprecated",
	"readOnly", "writeOnly", "contentMediaType", "contentEncoding", "$anchor",
};
static const char *const kw_number[] = {
	"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
};
static const char *const kw_count[] = {
	"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
};
static const char *const kw_schema[] = { "additionalProperties", "items", "not" };
static const char *const kw_schema_list[] = { "allOf", "anyOf", "oneOf", "prefixItems" };
static const char *const kw_schema_map[] = { "properties", "$defs", "definitions" };

/* A pattern of the schema's: it compiles as PCRE2 (UTF) takes it. */
static int pattern_compiles(const char *src, const char *path, const char *what, struct err *e)
{
	int ec;
	PCRE2_SIZE off;
	pcre2_code *re = pcre2_compile((PCRE2_SPTR)src, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &ec, &off, NULL);
	if (!re) {
		PCRE2_UCHAR msg[128];
		pcre2_get_error_message(ec, msg, sizeof(msg));
		return err_set(e, -EINVAL, "at %s: %s does not compile: %s (at offset %zu)", path, what,
			       (const char *)msg, (size_t)off);
	}
	pcre2_code_free(re);
	return 0;
}

static bool in(const char *k, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(k, list[i]))
			return true;
	return false;
}
#define IN(k, list) in(k, list, ARRAY_SIZE(list))

static const char *const type_names[] = { "null", "boolean", "object", "array", "number", "string", "integer" };

/* A JSON pointer within the document ("#" or "#/a/b~1c"). */
static const cJSON *resolve(const cJSON *root, const char *ref)
{
	if (ref[0] != '#')
		return NULL;
	const char *p = ref + 1;
	const cJSON *at = root;
	while (*p == '/') {
		p++;
		char tok[256];
		size_t n = 0;
		while (*p && *p != '/' && n + 1 < sizeof(tok)) {
			if (p[0] == '~' && p[1] == '1')
				tok[n++] = '/', p += 2;
			else if (p[0] == '~' && p[1] == '0')
				tok[n++] = '~', p += 2;
			else
				tok[n++] = *p++;
		}
		tok[n] = 0;
		if (*p && *p != '/')
			return NULL;
		if (cJSON_IsArray(at)) {
			char *end;
			long i = strtol(tok, &end, 10);
			at = *end || !*tok ? NULL : cJSON_GetArrayItem(at, (int)i);
		} else {
			at = cJSON_GetObjectItemCaseSensitive(at, tok);
		}
		if (!at)
			return NULL;
	}
	return *p ? NULL : at;
}

/* Check a schema's own shape, recursively. path: where, for messages. */
static int check_schema(const cJSON *root, const cJSON *s, const char *path, int depth, struct err *e)
{
	if (cJSON_IsBool(s))
		return 0;
	if (!cJSON_IsObject(s))
		return err_set(e, -EINVAL, "at %s: a schema is an object or true/false", path);
	if (depth > 64)
		return err_set(e, -EINVAL, "at %s: nested more than 64 deep", path);
	const cJSON *k;
	cJSON_ArrayForEach(k, s) {
		const char *n = k->string;
		char sub[1024];
		if (IN(n, kw_annotation))
			continue;
		if (IN(n, kw_number)) {
			if (!cJSON_IsNumber(k) || (!strcmp(n, "multipleOf") && k->valuedouble <= 0))
				return err_set(e, -EINVAL, "at %s: %s must be a%s number", path, n,
					       !strcmp(n, "multipleOf") ? " positive" : "");
		} else if (IN(n, kw_count)) {
			if (!cJSON_IsNumber(k) || k->valuedouble < 0 || k->valuedouble != floor(k->valuedouble))
				return err_set(e, -EINVAL, "at %s: %s must be a whole number, 0 or more", path, n);
		} else if (IN(n, kw_schema)) {
			if (!strcmp(n, "items") && cJSON_IsArray(k))
				return err_set(e, -EINVAL, "at %s: items as an array is draft 4's; use prefixItems", path);
			snprintf(sub, sizeof(sub), "%s/%s", path, n);
			if (check_schema(root, k, sub, depth + 1, e) < 0)
				return -1;
		} else if (IN(n, kw_schema_list)) {
			if (!cJSON_IsArray(k) || !cJSON_GetArraySize(k))
				return err_set(e, -EINVAL, "at %s: %s must be a non-empty array of schemas", path, n);
			int i = 0;
			const cJSON *x;
			cJSON_ArrayForEach(x, k) {
				snprintf(sub, sizeof(sub), "%s/%s/%d", path, n, i++);
				if (check_schema(root, x, sub, depth + 1, e) < 0)
					return -1;
			}
		} else if (IN(n, kw_schema_map)) {
			if (!cJSON_IsObject(k))
				return err_set(e, -EINVAL, "at %s: %s must be an object of schemas", path, n);
			const cJSON *x;
			cJSON_ArrayForEach(x, k) {
				snprintf(sub, sizeof(sub), "%s/%s/%s", path, n, x->string);
				if (check_schema(root, x, sub, depth + 1, e) < 0)
					return -1;
			}
		} else if (!strcmp(n, "type")) {
			const cJSON *t = k;
			bool ok = cJSON_IsString(t) || (cJSON_IsArray(t) && cJSON_GetArraySize(t) > 0);
			const cJSON *x;
			if (cJSON_IsString(t))
				ok = IN(t->valuestring, type_names);
			else if (ok)
				cJSON_ArrayForEach(x, t) ok = ok && cJSON_IsString(x) && IN(x->valuestring, type_names);
			if (!ok)
				return err_set(e, -EINVAL,
					       "at %s: type must be one of null, boolean, object, array, number, string, "
					       "integer, or an array of them", path);
		} else if (!strcmp(n, "enum")) {
			if (!cJSON_IsArray(k))
				return err_set(e, -EINVAL, "at %s: enum must be an array", path);
		} else if (!strcmp(n, "const")) {
			/* any value */
		} else if (!strcmp(n, "required")) {
			const cJSON *x;
			bool ok = cJSON_IsArray(k);
			if (ok)
				cJSON_ArrayForEach(x, k) ok = ok && cJSON_IsString(x);
			if (!ok)
				return err_set(e, -EINVAL, "at %s: required must be an array of names", path);
		} else if (!strcmp(n, "uniqueItems")) {
			if (!cJSON_IsBool(k))
				return err_set(e, -EINVAL, "at %s: uniqueItems must be true or false", path);
		} else if (!strcmp(n, "pattern")) {
			if (!cJSON_IsString(k))
				return err_set(e, -EINVAL, "at %s: pattern must be a string", path);
			if (pattern_compiles(k->valuestring, path, "pattern", e) < 0)
				return -1;
		} else if (!strcmp(n, "patternProperties")) {
			if (!cJSON_IsObject(k))
				return err_set(e, -EINVAL, "at %s: patternProperties must be an object of schemas", path);
			const cJSON *x;
			cJSON_ArrayForEach(x, k) {
				snprintf(sub, sizeof(sub), "%s/%s/%s", path, n, x->string);
				if (pattern_compiles(x->string, sub, "the name's pattern", e) < 0 ||
				    check_schema(root, x, sub, depth + 1, e) < 0)
					return -1;
			}
		} else if (!strcmp(n, "$ref")) {
			if (!cJSON_IsString(k) || !resolve(root, k->valuestring))
				return err_set(e, -EINVAL,
					       "at %s: $ref %s does not name a place in this schema (\"#\" or "
					       "\"#/$defs/NAME\"); other documents are not fetched",
					       path, cJSON_IsString(k) ? k->valuestring : "(not a string)");
		} else {
			return err_set(e, -EINVAL,
				       "at %s: the keyword \"%s\" is not one ward checks (it checks type, enum, const, "
				       "properties, patternProperties, additionalProperties, required, min/maxProperties, items, "
				       "prefixItems, min/maxItems, uniqueItems, min/maxLength, pattern, the number keywords, "
				       "allOf, anyOf, oneOf, not and $ref); take it out or express it with those",
				       path, n);
		}
	}
	return 0;
}

int schema_load(const char *text, size_t n, const char *name, struct schema **ret, struct err *e)
{
	cJSON *root = NULL;
	struct err pe = { 0 };
	if (jsonstrict_parse(text, n, &root, &pe) < 0)
		return err_set(e, -EINVAL, "%s: not JSON: %s", name, pe.msg);
	struct err e2 = { 0 };
	if (check_schema(root, root, "#", 0, &e2) < 0) {
		cJSON_Delete(root);
		return err_set(e, -EINVAL, "%s: %s", name, e2.msg);
	}
	struct schema *s = calloc(1, sizeof(*s));
	if (!s) {
		cJSON_Delete(root);
		return err_set(e, -ENOMEM, "out of memory");
	}
	s->root = root;
	*ret = s;
	return 0;
}

void schema_free(struct schema *s)
{
	if (!s)
		return;
	cJSON_Delete(s->root);
	free(s);
}

const cJSON *schema_json(const struct schema *s)
{
	return s->root;
}

/* Checking. */

/* A pattern compiled once a check, whatever number of strings it meets. */
#define SCHEMA_PATTERNS_CACHED 64
struct pattern {
	const char *src;	/* the schema's string: its address is the key */
	pcre2_code *re;
	pcre2_match_data *md;
};

struct ctx {
	const cJSON *root;
	struct pattern pat[SCHEMA_PATTERNS_CACHED];
	size_t npat;
	pcre2_match_context *mc;
	long steps;
	char *why;
	size_t cap;
	bool quiet;	/* inside anyOf/oneOf/not: a failure is not the answer's message */
	bool spent;
};

static int fail(struct ctx *c, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct ctx *c, const char *path, const char *fmt, ...)
{
	if ((c->quiet && !c->spent) || (c->spent && c->why[0]))
		return -1;
	char m[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	snprintf(c->why, c->cap, "at %s: %s", *path ? path : "the top", m);
	return -1;
}

/* The step budget is spent: the answer is refused, saying why. */
static int spend(struct ctx *c, const char *path)
{
	if (!c->spent) {
		c->spent = true;
		fail(c, path, "checking this answer took more than %d steps of the schema; simplify the schema "
			      "(anyOf/oneOf inside arrays multiply)", SCHEMA_STEPS_MAX);
	}
	return -1;
}

static const char *type_of(const cJSON *v)
{
	if (cJSON_IsNull(v))
		return "null";
	if (cJSON_IsBool(v))
		return "boolean";
	if (cJSON_IsObject(v))
		return "object";
	if (cJSON_IsArray(v))
		return "array";
	if (cJSON_IsNumber(v))
		return v->valuedouble == floor(v->valuedouble) && isfinite(v->valuedouble) ? "integer" : "number";
	return "string";
}

static bool type_is(const cJSON *v, const char *t)
{
	const char *got = type_of(v);
	return !strcmp(got, t) || (!strcmp(t, "number") && !strcmp(got, "integer"));
}

static size_t utf8_len(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xC0) != 0x80;
	return n;
}

static int check(struct ctx *c, const cJSON *s, const cJSON *v, const char *path, int depth);

/* Whether v is valid under s, without a message (anyOf, oneOf, not). */
static bool passes(struct ctx *c, const cJSON *s, const cJSON *v, const char *path, int depth)
{
	bool q = c->quiet;
	c->quiet = true;
	int r = check(c, s, v, path, depth);
	c->quiet = q;
	return r == 0;
}

static const struct pattern *pattern_get(struct ctx *c, const char *src)
{
	for (size_t i = 0; i < c->npat; i++)
		if (c->pat[i].src == src)
			return &c->pat[i];
	struct pattern p = { .src = src };
	int ec;
	PCRE2_SIZE off;
	p.re = pcre2_compile((PCRE2_SPTR)src, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &ec, &off, NULL);
	p.md = p.re ? pcre2_match_data_create_from_pattern(p.re, NULL) : NULL;
	if (!p.md) {
		pcre2_code_free(p.re);
		return NULL;
	}
	if (c->npat == SCHEMA_PATTERNS_CACHED) {
		/* More patterns than the cache: the oldest goes. */
		pcre2_match_data_free(c->pat[0].md);
		pcre2_code_free(c->pat[0].re);
		memmove(c->pat, c->pat + 1, sizeof(c->pat[0]) * (SCHEMA_PATTERNS_CACHED - 1));
		c->npat--;
	}
	c->pat[c->npat] = p;
	return &c->pat[c->npat++];
}

static bool pattern_matches(struct ctx *c, const char *pat, const char *str, bool *bad)
{
	const struct pattern *p = pattern_get(c, pat);
	if (!c->mc) {
		c->mc = pcre2_match_context_create(NULL);
		if (c->mc) {
			pcre2_set_match_limit(c->mc, 100000);
			pcre2_set_depth_limit(c->mc, 10000);
		}
	}
	int r = p && c->mc ? pcre2_match(p->re, (PCRE2_SPTR)str, strlen(str), 0, 0, p->md, c->mc) : -1;
	/* No match, a match limit hit, or bad UTF-8: not a match. */
	*bad = r < 0 && r != PCRE2_ERROR_NOMATCH;
	return r >= 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A member name twice in one object: sorted, so n log n however many. */
static const char *duplicate_name(const cJSON *v, int n)
{
	if (n < 2)
		return NULL;
	const char **names = malloc((size_t)n * sizeof(*names));
	if (!names)
		return NULL;
	int k = 0;
	for (const cJSON *p = v->child; p && k < n; p = p->next)
		names[k++] = p->string;
	qsort(names, (size_t)k, sizeof(*names), cmp_names);
	const char *dup = NULL;
	for (int i = 1; i < k && !dup; i++)
		if (!strcmp(names[i - 1], names[i]))
			dup = names[i];
	free(names);
	return dup;
}

/* The nodes of a value: what comparing it costs, in steps. */
static long nodes(const cJSON *x)
{
	long n = 1;
	for (const cJSON *y = x->child; y; y = y->next)
		n += nodes(y);
	return n;
}

static int check(struct ctx *c, const cJSON *s, const cJSON *v, const char *path, int depth)
{
	if (++c->steps > SCHEMA_STEPS_MAX)
		return spend(c, path);
	if (c->spent)
		return -1;
	if (depth > SCHEMA_DEPTH_MAX)
		return fail(c, path, "the schema refers to itself more than %d times without reaching the answer",
			    SCHEMA_DEPTH_MAX);
	if (cJSON_IsBool(s))
		return cJSON_IsTrue(s) ? 0 : fail(c, path, "nothing is allowed here (the schema is false)");
	char sub[1024];
	const cJSON *k;
	/* $ref first: in 2020-12 it applies beside the other keywords. */
	if ((k = cJSON_GetObjectItemCaseSensitive(s, "$ref")) && cJSON_IsString(k)) {
		const cJSON *t = resolve(c->root, k->valuestring);
		if (!t || check(c, t, v, path, depth + 1) < 0)
			return t ? -1 : fail(c, path, "$ref %s names nothing", k->valuestring);
	}
	if ((k = cJSON_GetObjectItemCaseSensitive(s, "type"))) {
		bool ok = false;
		if (cJSON_IsString(k)) {
			ok = type_is(v, k->valuestring);
		} else {
			const cJSON *x;
			cJSON_ArrayForEach(x, k) ok = ok || type_is(v, x->valuestring);
		}
		if (!ok)
			return fail(c, path, "expected %s, got %s", cJSON_IsString(k) ? k->valuestring : "one of the types listed",
				    type_of(v));
	}
	if ((k = cJSON_GetObjectItemCaseSensitive(s, "const"))) {
		if ((c->steps += nodes(k)) > SCHEMA_STEPS_MAX)
			return spend(c, path);
		if (!cJSON_Compare(k, v, 1))
			return fail(c, path, "must be the schema's const value");
	}
	if ((k = cJSON_GetObjectItemCaseSensitive(s, "enum"))) {
		bool ok = false;
		const cJSON *x;
		cJSON_ArrayForEach(x, k) {
			if ((c->steps += nodes(x)) > SCHEMA_STEPS_MAX)
				return spend(c, path);
			ok = ok || cJSON_Compare(x, v, 1);
		}
		if (!ok)
			return fail(c, path, "not one of the enum's %d values", cJSON_GetArraySize(k));
	}
	if (cJSON_IsNumber(v)) {
		double d = v->valuedouble;
		if ((k = cJSON_GetObjectItemCaseSensitive(s, "minimum")) && d < k->valuedouble)
			return fail(c, path, "%g is less than the minimum %g", d, k->valuedouble);
		if ((k = cJSON_GetObjectItemCaseSensitive(s, "maximum")) && d > k->valuedouble)
			return fail(c, path, "%g is more than the maximum %g", d, k->valuedouble);
		if ((k = cJSON_GetObjectItemCaseSensitive(s, "exclusiveMinimum")) && d <= k->valuedouble)
			return fail(c, path, "%g is not more than %g", d, k->valuedouble);
		if ((k = cJSON_GetObjectItemCaseSensitive(s, "exclusiveMaximum")) && d >= k->valuedouble)
			return fail(c, path, "%g is not less than %g", d, k->valuedouble);
		if ((k = cJSON_GetObjectItemCaseSensitive(s, "multipleOf"))) {
			double q = d / k->valuedouble;
			if (fabs(q - round(q)) > 1e-9)
				return fail(c, path, "%g is not a multiple of %g", d, k->valuedouble);
		}
	}
	if (cJSON_IsString(v)) {
		size_t n = utf8_len(v->valuestring);
		if ((k = cJSON_GetObjectItemCaseSensitive(s, "minLength")) && (double)n < k->valuedouble)
			return fail(c, path, "%zu characters, fewer than minLength %g", n, k->valuedouble);
		if ((k = cJSON_GetObjectItemCaseSensitive(s, "maxLength")) && (double)n > k->valuedouble)
			return fail(c, path, "%zu characters, more than maxLength %g", n, k->valuedouble);
		if ((k = cJSON_GetObjectItemCaseSensitive(s, "pattern"))) {
			bool bad = false;
			if (!pattern_matches(c, k->valuestring, v->valuestring, &bad))
				return fail(c, path, "%s the pattern %s", bad ? "could not be matched against" : "does not match",
					    k->valuestring);
		}
	}
	if (cJSON_IsArray(v)) {
		int n = cJSON_GetArraySize(v);
		if ((k = cJSON_GetObjectItemCaseSensitive(s, "minItems")) && n < k->valuedouble)
			return fail(c, path, "%d items, fewer than minItems %g", n, k->valuedouble);
		if ((k = cJSON_GetObjectItemCaseSensitive(s, "maxItems")) && n > k->valuedouble)
			return fail(c, path, "%d items, more than maxItems %g", n, k->valuedouble);
		const cJSON *pre = cJSON_GetObjectItemCaseSensitive(s, "prefixItems");
		const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items");
		int np = cJSON_GetArraySize(pre), i = 0;
		const cJSON *x;
		cJSON_ArrayForEach(x, v) {
			const cJSON *is = i < np ? cJSON_GetArrayItem(pre, i) : items;
			snprintf(sub, sizeof(sub), "%s/%d", path, i);
			if (is && check(c, is, x, sub, depth + 1) < 0)
				return -1;
			i++;
		}
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "uniqueItems"))) {
			int a = 0;
			for (const cJSON *p = v->child; p; p = p->next, a++) {
				int b = a + 1;
				long pn = nodes(p);
				for (const cJSON *q = p->next; q; q = q->next, b++) {
					if ((c->steps += pn) > SCHEMA_STEPS_MAX)
						return spend(c, path);
					if (cJSON_Compare(p, q, 1))
						return fail(c, path, "items %d and %d are the same (uniqueItems)", a, b);
				}
			}
		}
	}
	if (cJSON_IsObject(v)) {
		int n = cJSON_GetArraySize(v);
		if ((k = cJSON_GetObjectItemCaseSensitive(s, "minProperties")) && n < k->valuedouble)
			return fail(c, path, "%d members, fewer than minProperties %g", n, k->valuedouble);
		if ((k = cJSON_GetObjectItemCaseSensitive(s, "maxProperties")) && n > k->valuedouble)
			return fail(c, path, "%d members, more than maxProperties %g", n, k->valuedouble);
		const cJSON *x;
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(s, "required")) {
			c->steps++;
			if (!cJSON_GetObjectItemCaseSensitive(v, x->valuestring))
				return fail(c, path, "\"%s\" is required and missing", x->valuestring);
		}
		const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
		const cJSON *add = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
		/* A name twice in one object is refused: which one a reader
		 * believes is not defined. */
		const char *dup = duplicate_name(v, n);
		if (dup) {
			snprintf(sub, sizeof(sub), "%s/%s", path, dup);
			return fail(c, sub, "the member \"%s\" appears twice", dup);
		}
		const cJSON *pprops = cJSON_GetObjectItemCaseSensitive(s, "patternProperties");
		for (const cJSON *p = v->child; p; p = p->next) {
			snprintf(sub, sizeof(sub), "%s/%s", path, p->string);
			const cJSON *ps = cJSON_GetObjectItemCaseSensitive(props, p->string);
			/* Each pattern that matches the name applies too; only a
			 * name that neither names nor patterns cover is additional. */
			bool matched = false;
			const cJSON *pp;
			cJSON_ArrayForEach(pp, pprops) {
				bool bad = false;
				c->steps++;
				if (pattern_matches(c, pp->string, p->string, &bad)) {
					matched = true;
					if (check(c, pp, p, sub, depth + 1) < 0)
						return -1;
				} else if (bad) {
					return fail(c, sub, "the name could not be matched against the pattern %s", pp->string);
				}
			}
			if (ps) {
				if (check(c, ps, p, sub, depth + 1) < 0)
					return -1;
			} else if (matched) {
				continue;
			} else if (cJSON_IsFalse(add)) {
				return fail(c, path, "\"%s\" is not allowed (additionalProperties is false)", p->string);
			} else if (cJSON_IsObject(add) && check(c, add, p, sub, depth + 1) < 0) {
				return -1;
			}
		}
	}
	if ((k = cJSON_GetObjectItemCaseSensitive(s, "allOf"))) {
		const cJSON *x;
		cJSON_ArrayForEach(x, k) if (check(c, x, v, path, depth + 1) < 0) return -1;
	}
	if ((k = cJSON_GetObjectItemCaseSensitive(s, "anyOf"))) {
		bool ok = false;
		const cJSON *x;
		cJSON_ArrayForEach(x, k) {
			if (passes(c, x, v, path, depth + 1)) {
				ok = true;
				break;
			}
		}
		if (c->spent)
			return -1;
		if (!ok)
			return fail(c, path, "matches none of the %d schemas of anyOf", cJSON_GetArraySize(k));
	}
	if ((k = cJSON_GetObjectItemCaseSensitive(s, "oneOf"))) {
		int hits = 0;
		const cJSON *x;
		cJSON_ArrayForEach(x, k) hits += passes(c, x, v, path, depth + 1);
		if (c->spent)
			return -1;
		if (hits != 1)
			return fail(c, path, "matches %d of the %d schemas of oneOf, not exactly one", hits,
				    cJSON_GetArraySize(k));
	}
	if ((k = cJSON_GetObjectItemCaseSensitive(s, "not"))) {
		bool p = passes(c, k, v, path, depth + 1);
		if (c->spent)
			return -1;
		if (p)
			return fail(c, path, "matches the schema under not");
	}
	return 0;
}

int schema_check(const struct schema *s, const cJSON *instance, char *why, size_t cap)
{
	struct ctx c = { .root = s->root, .why = why, .cap = cap };
	why[0] = 0;
	int r = check(&c, s->root, instance, "", 0) < 0 ? -1 : 0;
	for (size_t i = 0; i < c.npat; i++) {
		pcre2_match_data_free(c.pat[i].md);
		pcre2_code_free(c.pat[i].re);
	}
	pcre2_match_context_free(c.mc);
	return r;
}
