#pragma once
#include <stdint.h>
#include <time.h>

static inline int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The wall clock as the file system stamps a file (its coarse clock): a
 * file changed at or after this moment has a ctime at or after it, which
 * the precise clock cannot promise (a change a few ms after a precise
 * reading may be stamped before it). */
static inline int64_t now_file_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
