/* A process that set itself up and then waits, maybe for hours (a box's
 * keeper, one per box), keeps every page its setup touched: its stack as
 * deep as the setup went (a keeper's about 150 KiB: the host view's walk,
 * 64 KiB read buffers) and what malloc was given back. memtrim returns
 * them to the kernel; the next use faults fresh zeroed pages in. */
#pragma once
#include <stddef.h>

/* The stack pages below the caller's frame (less a margin for the calls
 * that follow) and malloc's free memory, given back. Only for a process
 * of one thread whose signals arrive through signalfd, if at all: below
 * its stack pointer nothing is live then. 0 (ret_kib, if given: the KiB
 * of stack that were resident and are not), or -errno. */
int memtrim_idle(size_t *ret_kib);
