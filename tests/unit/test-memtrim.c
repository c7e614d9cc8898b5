#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/memtrim.h"
#include "tap.h"

/* How deep the setup went: 256 KiB of stack written, as a keeper's host
 * view walk and read buffers do. */
#define DEEP (256u << 10)

/* The Rss of [stack] in /proc/self/smaps, KiB. */
static long stack_rss(void)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	bool in = false;
	long kb = -1;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
			in = strstr(line, "[stack]") != NULL;	/* a mapping's first line */
			continue;
		}
		if (in && !strncmp(line, "Rss:", 4)) {
			kb = strtol(line + 4, NULL, 10);
			break;
		}
	}
	if (f)
		fclose(f);
	return kb;
}

static __attribute__((noinline)) unsigned deep(unsigned seed)
{
	volatile unsigned char buf[DEEP];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * seed);
	unsigned sum = 0;
	for (size_t i = 0; i < sizeof(buf); i += 4093)
		sum += buf[i];
	return sum;
}

static __attribute__((noinline)) unsigned want(unsigned seed)
{
	unsigned sum = 0;
	for (size_t i = 0; i < DEEP; i += 4093)
		sum += (unsigned char)(i * seed);
	return sum;
}

int main(void)
{
	/* The caller's own frame holds what it still uses: kept. */
	unsigned char mine[8192];
	for (size_t i = 0; i < sizeof(mine); i++)
		mine[i] = (unsigned char)(i ^ 0x5a);
	is_int(deep(3), want(3), "a deep call works");
	long before = stack_rss();
	ok(before >= (long)(DEEP >> 10), "the deep call's pages are resident (%ld KiB of stack)", before);
	size_t kib = 0;
	is_int(memtrim_idle(&kib), 0, "memtrim_idle");
	long after = stack_rss();
	ok(kib >= (DEEP >> 10) - 32, "it says it gave back the deep call's pages (%zu KiB)", kib);
	ok(after >= 0 && after <= before - (long)(DEEP >> 10) + 32, "the stack's Rss fell by as much (%ld -> %ld KiB)",
	   before, after);
	bool same = true;
	for (size_t i = 0; i < sizeof(mine); i++)
		same = same && mine[i] == (unsigned char)(i ^ 0x5a);
	ok(same, "the caller's frame is as it was");
	size_t again = 1;
	is_int(memtrim_idle(&again), 0, "a second memtrim_idle");
	ok(again < 32, "with nothing more to give back (%zu KiB)", again);
	is_int(deep(7), want(7), "and a deep call works again after it");
	ok(stack_rss() >= (long)(DEEP >> 10), "its pages faulted back in");
	ok(memtrim_idle(NULL) == 0, "no count asked for: 0 all the same");
	return tap_done();
}
