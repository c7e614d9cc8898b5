/* JSON Schema, the part of it a final answer needs (--output-schema).
 *
 * Debian has no C validator (valijson is C++ over Qt, Poco and
 * std::regex), so this is ward's own, over cJSON, with a known worst case:
 * the schema is the user's, the answer the model's, and checking one
 * answer takes at most SCHEMA_STEPS_MAX steps (a keyword evaluated, or a
 * node of a value compared for const, enum or uniqueItems; anyOf/oneOf
 * nested in arrays multiply; past the budget the answer is refused, saying
 * so), an object's duplicate names are found in n log n, a pattern is
 * compiled once a check and matched by PCRE2 with a match limit, and a
 * $ref that never reaches the answer (a loop) stops at SCHEMA_DEPTH_MAX.
 * Comparing two objects costs what cJSON_Compare does (each member looked
 * up in the other): a step a node is counted, not the lookups.
 *
 * Supported: type, enum, const, properties, required,
 * additionalProperties, minProperties, maxProperties, items, prefixItems,
 * minItems, maxItems, uniqueItems, minLength, maxLength, pattern, minimum,
 * maximum, exclusiveMinimum, exclusiveMaximum, multipleOf, allOf, anyOf,
 * oneOf, not, $ref (within the document: "#", "#/$defs/NAME", any JSON
 * pointer), $defs and definitions; annotations (title, description,
 * default, examples, format, $schema, $id, $comment, ...) are ignored as
 * the specification allows. Any other keyword is refused when the schema
 * is loaded, so nothing the user wrote is silently not checked. */
#pragma once
#include <stddef.h>

#include <cjson/cJSON.h>

#include "base/err.h"

#define SCHEMA_STEPS_MAX 1000000
#define SCHEMA_DEPTH_MAX 256

struct schema;

/* Parse and check a schema; name (its file) goes in messages. */
int schema_load(const char *text, size_t n, const char *name, struct schema **ret, struct err *e);
void schema_free(struct schema *s);
/* The schema as JSON, for the model's instructions. */
const cJSON *schema_json(const struct schema *s);
/* 0: the instance is valid; -1: why says where and what (one line). */
int schema_check(const struct schema *s, const cJSON *instance, char *why, size_t cap);
