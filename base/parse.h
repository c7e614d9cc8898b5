/* Strict parsers for numbers, durations and sizes from untrusted text. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Decimal unsigned; the whole string must be consumed. */
int parse_u64(const char *s, uint64_t *ret);
/* "500ms", "2s", "1.5s", "3m", "1h30m", "2d": numbers with units, summed;
 * a bare number is refused, but "0". */
int parse_duration_ms(const char *s, int64_t *ret_ms);
/* "512M", "1G", "4096", "64K". */
int parse_size(const char *s, uint64_t *ret_bytes);
/* Does JSON text hold a NUL character: a \u0000 escape in a string, or a
 * raw NUL byte? A JSON parser that returns C strings cuts such a string
 * short without a word, so "a\u0000b" would silently become "a". */
bool parse_json_has_nul(const char *s, size_t n);
/* Where offset at of text (n bytes) is, for a message: its line and its
 * column in characters (UTF-8), both from 1. An at past n is taken as n. */
void parse_line_col(const char *text, size_t n, size_t at, size_t *ret_line, size_t *ret_col);
