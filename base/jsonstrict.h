/* One reading of JSON text that cannot mean two things.
 *
 * cJSON's own parser is lenient where readers disagree: it keeps a key
 * given twice (its lookups take the first; Python's json, jq and most
 * others take the last), passes bytes that are not UTF-8, skips a byte-
 * order mark, reads "012", "+1", ".5" and "1." as numbers, takes control
 * characters raw inside strings and, by length, stops quietly before text
 * after the value. A document that one program reads one way and another
 * program reads another way is two documents; jsonstrict_parse takes only
 * RFC 8259 JSON with one meaning, and says what and where when not:
 *
 * - a key given twice in one object, at any depth (after decoding: "a"
 *   and "\u0061" are the same key);
 * - bytes that are not UTF-8 (overlong forms, encoded surrogates, past
 *   U+10FFFF), a \u escape of a lone or mispaired surrogate;
 * - NUL, raw or as \u0000, anywhere in a string or a key (a C string
 *   would end there: "a\u0000b" would become "a" without a word);
 * - a number a double does not hold: past a double's range, one that
 *   would become 0, and one that would change. The rule: a number is
 *   taken when the double nearest to it, written back with the fewest
 *   significant digits that read back as that double (at most 17), is
 *   the same number (0.1, 1e20, 0.30000000000000004), or when that
 *   double is the number exactly (2^60 written out in full). So
 *   9007199254740993 (2^53 + 1) and 0.10000000000000001 are refused:
 *   each names a number that no double is, and a reader that keeps the
 *   text (a decimal type, a big integer) would see another value than
 *   one that reads a double. Any number of at most 15 significant
 *   digits between 1e-290 and 1e300 passes (DBL_DIG);
 * - what RFC 8259 does not allow: leading zeros, a sign '+', a point
 *   without digits on both sides, a comma before ']' or '}', a control
 *   character unescaped in a string, an unknown escape, white space other
 *   than space, tab, CR and LF, a byte-order mark, comments, single
 *   quotes, NaN and Infinity, and anything after the one value;
 * - nesting deeper than JSONSTRICT_DEPTH_MAX and text longer than
 *   JSONSTRICT_SIZE_MAX.
 *
 * It is linear in the text but for sorting the keys of an object of more
 * than a few (n log n), and builds the cJSON tree itself: there is no
 * second parse whose reading could differ. Numbers are read in the C
 * locale's form (ward never sets LC_NUMERIC). What is read is written
 * back one way, by base/jsonprint.h. */
#pragma once
#include <stddef.h>

#include <cjson/cJSON.h>

#include "base/err.h"

#define JSONSTRICT_DEPTH_MAX 128
#define JSONSTRICT_SIZE_MAX (64u << 20)
/* A number's text; longer ones are refused (a double needs 17 digits). */
#define JSONSTRICT_NUMBER_MAX 100

/* Text (n bytes, which need not end in a NUL) as one JSON value: 0 and
 * *ret (the caller's, cJSON_Delete), or <0 with e's message saying what
 * was wrong and where: "the key \"command\" is given twice (column 28)";
 * "(line L, column C)" where the text has more than one line. -EINVAL
 * for a text that is not one unambiguous JSON value, -E2BIG past the
 * bounds, -ENOMEM. */
int jsonstrict_parse(const char *text, size_t n, cJSON **ret, struct err *e);
