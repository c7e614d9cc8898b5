/* turn/schema: --output-schema's validator. Each keyword with a valid and
 * an invalid answer; schemas refused at load; the worst cases bounded. */
#include <stdbool.h>

#include <stdlib.h>

#include "base/buf.h"
#include "tap.h"
#include "base/timeutil.h"
#include "turn/schema.h"

static struct schema *load(const char *js, char *msg, size_t n)
{
	struct schema *s = NULL;
	struct err e = { 0 };
	if (schema_load(js, strlen(js), "s.json", &s, &e) < 0)
		snprintf(msg, n, "%s", e.msg);
	else
		msg[0] = 0;
	return s;
}

/* "" when v is valid under schema, else the reason. */
static const char *verdict(const char *schema, const char *v)
{
	static char why[600];
	char msg[600];
	struct schema *s = load(schema, msg, sizeof(msg));
	if (!s) {
		snprintf(why, sizeof(why), "LOAD: %s", msg);
		return why;
	}
	cJSON *j = cJSON_Parse(v);
	if (schema_check(s, j, why, sizeof(why)) == 0)
		why[0] = 0;
	cJSON_Delete(j);
	schema_free(s);
	return why;
}

static char *exp_schema(int depth)
{
	char *sch = malloc(8192);
	int o = snprintf(sch, 8192, "{\"$defs\":{\"f0\":{\"type\":\"string\"}");
	for (int k = 1; k <= depth; k++)
		o += snprintf(sch + o, 8192 - (size_t)o,
			      ",\"f%d\":{\"anyOf\":[{\"$ref\":\"#/$defs/f%d\"},{\"$ref\":\"#/$defs/f%d\"}]}", k, k - 1, k - 1);
	snprintf(sch + o, 8192 - (size_t)o,
		 "},\"type\":\"array\",\"items\":{\"anyOf\":[{\"$ref\":\"#/$defs/f%d\"},{\"type\":\"boolean\"}]}}", depth);
	return sch;
}

#define VALID(s, v, name) is_str(verdict(s, v), "", "valid: %s", name)
#define INVALID(s, v, sub, name) like(verdict(s, v), sub, "invalid: %s", name)

int main(void)
{
	const char *obj = "{\"type\":\"object\",\"properties\":{\"ok\":{\"type\":\"boolean\"},\"files\":{\"type\":\"integer\","
			  "\"minimum\":0}},\"required\":[\"ok\",\"files\"],\"additionalProperties\":false}";
	VALID(obj, "{\"ok\":true,\"files\":2}", "an object with its members");
	INVALID(obj, "{\"ok\":\"yes\",\"files\":2}", "at /ok: expected boolean, got string", "a member of the wrong type");
	INVALID(obj, "{\"ok\":true}", "\"files\" is required", "a required member missing");
	INVALID(obj, "{\"ok\":true,\"files\":2,\"x\":1}", "\"x\" is not allowed", "additionalProperties false");
	INVALID(obj, "{\"ok\":true,\"files\":-1}", "less than the minimum", "minimum");
	INVALID(obj, "{\"ok\":true,\"files\":2.5}", "expected integer, got number", "integer");
	INVALID(obj, "{\"ok\":true,\"ok\":false,\"files\":1}", "appears twice", "a member twice");
	INVALID(obj, "[1]", "at the top: expected object, got array", "the top's type");

	VALID("{\"type\":[\"string\",\"null\"]}", "null", "a type list");
	INVALID("{\"type\":[\"string\",\"null\"]}", "1", "one of the types", "a type list, neither");
	VALID("{\"enum\":[\"a\",1,{\"b\":[]}]}", "{\"b\":[]}", "enum, deep equality");
	INVALID("{\"enum\":[\"a\",1]}", "\"b\"", "enum", "enum");
	VALID("{\"const\":\"x\"}", "\"x\"", "const");
	INVALID("{\"const\":\"x\"}", "\"y\"", "const", "const");
	VALID("{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}", "\"\xc3\xa9t\xc3\xa9\"", "lengths in characters, not bytes");
	INVALID("{\"type\":\"string\",\"maxLength\":2}", "\"abc\"", "maxLength", "maxLength");
	INVALID("{\"type\":\"string\",\"minLength\":2}", "\"a\"", "minLength", "minLength");
	VALID("{\"pattern\":\"^[a-z]+-[0-9]+$\"}", "\"ab-12\"", "pattern");
	INVALID("{\"pattern\":\"^[a-z]+-[0-9]+$\"}", "\"AB-12\"", "does not match the pattern", "pattern");
	VALID("{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":1,\"maxItems\":3,\"uniqueItems\":true}",
	      "[1,2,3]", "items, counts, unique");
	INVALID("{\"items\":{\"type\":\"integer\"}}", "[1,\"a\"]", "at /1: expected integer", "items: the item's path");
	INVALID("{\"maxItems\":1}", "[1,2]", "maxItems", "maxItems");
	INVALID("{\"uniqueItems\":true}", "[{\"a\":1},{\"a\":1}]", "items 0 and 1 are the same", "uniqueItems");
	VALID("{\"prefixItems\":[{\"type\":\"string\"},{\"type\":\"integer\"}],\"items\":false}", "[\"a\",1]", "prefixItems");
	INVALID("{\"prefixItems\":[{\"type\":\"string\"}],\"items\":false}", "[\"a\",1]", "nothing is allowed",
		"items false after prefixItems");
	VALID("{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "3", "anyOf");
	INVALID("{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "true", "none of the 2 schemas of anyOf", "anyOf");
	INVALID("{\"oneOf\":[{\"type\":\"number\"},{\"type\":\"integer\"}]}", "3", "matches 2 of the 2", "oneOf, two match");
	VALID("{\"oneOf\":[{\"type\":\"number\"},{\"type\":\"integer\"}]}", "3.5", "oneOf, one matches");
	INVALID("{\"allOf\":[{\"minimum\":1},{\"maximum\":2}]}", "3", "maximum", "allOf");
	INVALID("{\"not\":{\"type\":\"null\"}}", "null", "under not", "not");
	VALID("{\"multipleOf\":0.5}", "2.5", "multipleOf");
	INVALID("{\"multipleOf\":0.5}", "2.3", "not a multiple", "multipleOf");
	INVALID("{\"exclusiveMaximum\":3}", "3", "not less than", "exclusiveMaximum");
	VALID("{\"$defs\":{\"n\":{\"type\":\"integer\"}},\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#/$defs/n\"}}}",
	      "{\"a\":1}", "$ref to $defs");
	INVALID("{\"$defs\":{\"n\":{\"type\":\"integer\"}},\"properties\":{\"a\":{\"$ref\":\"#/$defs/n\"}}}", "{\"a\":\"x\"}",
		"at /a: expected integer", "$ref to $defs");
	VALID("{\"title\":\"t\",\"description\":\"d\",\"format\":\"email\",\"$schema\":\"x\",\"default\":1}", "\"not an email\"",
	      "annotations are not checked (format included, as the specification allows)");
	VALID("true", "{\"anything\":1}", "the schema true");
	/* patternProperties: each pattern that matches a name applies; a
	 * name no pattern or property covers is additional. */
	const char *pp = "{\"type\":\"object\",\"patternProperties\":{\"^x-\":{\"type\":\"string\"},\"^n_\":{\"type\":\"integer\"}},"
			 "\"properties\":{\"id\":{\"type\":\"integer\"}},\"additionalProperties\":false}";
	VALID(pp, "{\"id\":1,\"x-a\":\"s\",\"n_b\":2}", "patternProperties: names its patterns match");
	INVALID(pp, "{\"x-a\":3}", "at /x-a: expected string", "patternProperties: a matched name's schema holds");
	INVALID(pp, "{\"other\":3}", "\"other\" is not allowed", "patternProperties: an unmatched name is additional");
	INVALID("{\"patternProperties\":{\"a\":{\"minimum\":5},\"b\":{\"maximum\":1}}}", "{\"ab\":3}", "at /ab: 3",
		"patternProperties: every pattern that matches applies");
	INVALID("false", "1", "nothing is allowed", "the schema false");

	/* Refused at load: nothing the user wrote goes unchecked. */
	like(verdict("{\"propertyNames\":{}}", "1"), "LOAD: s.json: at #: the keyword \"propertyNames\" is not one",
	     "a keyword ward does not check is refused, naming it");
	ok(!strstr(verdict("{\"propertyNames\":{}}", "1"), ".h"), "and the line names the keywords it checks, not a source file");
	like(verdict("{\"patternProperties\":{\"(\":{}}}", "1"), "at #/patternProperties/(: the name's pattern does not compile",
	     "a patternProperties name that does not compile");
	like(verdict("{\"properties\":{\"a\":{\"if\":{}}}}", "1"), "at #/properties/a: the keyword \"if\"",
	     "and where it is");
	like(verdict("{\"$ref\":\"other.json#/x\"}", "1"), "other documents are not fetched", "a $ref to another document");
	like(verdict("{\"$ref\":\"#/$defs/none\"}", "1"), "does not name a place", "a $ref to nothing");
	like(verdict("{\"pattern\":\"(\"}", "1"), "pattern does not compile", "a pattern that does not compile");
	like(verdict("{\"type\":\"str\"}", "1"), "type must be one of", "an unknown type");
	like(verdict("{\"items\":[{}]}", "1"), "draft 4", "items as an array");
	like(verdict("{\"minLength\":-1}", "1"), "whole number", "a negative count");
	like(verdict("{\n  \"type\": \"string\",\n  \"minLength\": tru\n}", "1"), "s.json: not JSON: 't' where a value should be (line 3, column",
	     "a schema that is not JSON: its line and column");

	/* Worst cases, with their time. */
	int64_t t0 = now_us();
	like(verdict("{\"$ref\":\"#\"}", "1"), "refers to itself more than 256 times", "a $ref loop stops");
	int64_t t1 = now_us();
	ok(t1 - t0 < 100000, "  within 100 ms (%lld us)", (long long)(t1 - t0));
	/* A small schema with exponential work: f_k = anyOf[f_k-1, f_k-1]
	 * fails after 2^k steps; s = anyOf[f_K, boolean] passes after them. */
	char *sch = exp_schema(20);
	char arr[4096] = "[";
	for (int i = 0; i < 300; i++)
		strcat(arr, i ? ",true" : "true");
	strcat(arr, "]");
	t0 = now_us();
	const char *w = verdict(sch, arr);
	t1 = now_us();
	like(w, "more than 1000000 steps", "an answer whose check would take exponential time is refused, saying why (%s)", w);
	ok(t1 - t0 < 2000000, "  within 2 s (%lld ms)", (long long)((t1 - t0) / 1000));
	is_str(verdict(sch, "[]"), "", "twin: an empty list passes the same schema");
	free(sch);
	sch = exp_schema(8);
	is_str(verdict(sch, "[true, true, true]"), "", "twin: the same shape 8 deep (256 steps an item) passes");
	like(verdict(sch, "[true, 1]"), "at /1: matches none of the 2 schemas of anyOf", "and refuses a wrong item for itself");
	free(sch);
	/* A catastrophic pattern against a long string: PCRE2's match limit. */
	char big[20000];
	big[0] = '"';
	memset(big + 1, 'a', 10000);
	strcpy(big + 10001, "!\"");
	t0 = now_us();
	like(verdict("{\"pattern\":\"^(a+)+$\"}", big), "could not be matched against the pattern",
	     "a backtracking pattern stops at the match limit, and the answer is refused");
	t1 = now_us();
	ok(t1 - t0 < 2000000, "  within 2 s (%lld ms)", (long long)((t1 - t0) / 1000));
	VALID("{\"pattern\":\"^(a+)+$\"}", "\"aaaa\"", "twin: the same pattern matches a short string");

	/* An object of 100,000 members, each checked with a pattern: the
	 * duplicate-name check and the pattern are not quadratic (they were:
	 * 13 s). */
	struct buf wide;
	buf_init(&wide, 8u << 20);
	buf_append(&wide, "{", 1);
	for (int i = 0; i < 100000; i++)
		buf_printf(&wide, "%s\"k%d\":\"v%d\"", i ? "," : "", i, i);
	buf_append(&wide, "}", 1);
	buf_cstr(&wide);
	const char *each = "{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\",\"pattern\":\"^v[0-9]+$\"}}";
	t0 = now_us();
	is_str(verdict(each, wide.data), "", "100,000 members, each matched against a pattern: valid");
	t1 = now_us();
	/* Linear work is ~0.3 s under ASan on a quiet machine; a quadratic
	 * walk of 100,000 members would take minutes: 3 s leaves a loaded
	 * machine room and still tells the two apart. */
	ok(t1 - t0 < 3000000, "  within 3 s (%lld ms)", (long long)((t1 - t0) / 1000));
	wide.len--;	/* the "}": one more member, named as an earlier one */
	buf_append(&wide, ",\"k7\":\"v7\"}", 11);
	buf_cstr(&wide);
	like(verdict(each, wide.data), "appears twice", "a name twice among them is found");
	buf_free(&wide);
	return tap_done();
}
