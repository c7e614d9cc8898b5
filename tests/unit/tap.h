/* A small TAP producer for unit tests. Exit 77 = skip (meson's convention). */
#pragma once
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_n, tap_failed;

#define ok(cond, ...) do { \
	tap_n++; \
	bool _c = (cond); \
	if (!_c) tap_failed++; \
	printf("%sok %d - ", _c ? "" : "not ", tap_n); \
	printf(__VA_ARGS__); \
	printf("\n"); \
	if (!_c) printf("#   failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
} while (0)

#define is_int(a, b, ...) do { \
	long long _a = (long long)(a), _b = (long long)(b); \
	ok(_a == _b, __VA_ARGS__); \
	if (_a != _b) printf("#   got %lld, want %lld\n", _a, _b); \
} while (0)

#define is_str(a, b, ...) do { \
	const char *_a = (a), *_b = (b); \
	bool _e = _a && _b && !strcmp(_a, _b); \
	ok(_e, __VA_ARGS__); \
	if (!_e) printf("#   got \"%s\", want \"%s\"\n", _a ? _a : "(null)", _b ? _b : "(null)"); \
} while (0)

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#define like(s, sub, ...) do { \
	const char *_s = (s), *_sub = (sub); \
	bool _l = _s && strstr(_s, _sub); \
	ok(_l, __VA_ARGS__); \
	if (!_l) printf("#   got \"%.400s\", want it to hold \"%s\"\n", _s ? _s : "(null)", _sub); \
} while (0)

#define unlike(s, sub, ...) do { \
	const char *_s = (s), *_sub = (sub); \
	ok(_s && !strstr(_s, _sub), __VA_ARGS__); \
} while (0)
