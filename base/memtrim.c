#include "base/memtrim.h"
#include "base/cleanup.h"
#include "base/fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* What stays below the caller's frame: this function's own and madvise's
 * (a few hundred bytes), with room. */
#define MEMTRIM_MARGIN (16u << 10)
/* /proc/self/maps at most: a keeper's has about 60 lines. */
#define MEMTRIM_MAPS_MAX (1u << 20)
/* mincore's vector, in pages per call. */
#define MEMTRIM_VEC 256

/* The start of the mapping that holds addr, from /proc/self/maps. */
static int memtrim_vma_start(uintptr_t addr, uintptr_t *ret)
{
	_cleanup_free_ char *txt = NULL;
	size_t len = 0;
	int r = fdio_read_file(AT_FDCWD, "/proc/self/maps", MEMTRIM_MAPS_MAX, &txt, &len);
	if (r < 0)
		return r;
	for (const char *l = txt; l < txt + len;) {
		char *end;
		errno = 0;
		unsigned long long lo = strtoull(l, &end, 16);
		if (errno || end == l || *end != '-')
			return -EINVAL;
		const char *p = end + 1;
		unsigned long long hi = strtoull(p, &end, 16);
		if (errno || end == p)
			return -EINVAL;
		if (addr >= lo && addr < hi) {
			*ret = (uintptr_t)lo;
			return 0;
		}
		const char *nl = memchr(end, '\n', (size_t)(txt + len - end));
		if (!nl)
			break;
		l = nl + 1;
	}
	return -ENOENT;
}

/* Resident pages of [lo, hi), page-aligned. */
static size_t memtrim_resident(uintptr_t lo, uintptr_t hi, size_t page)
{
	unsigned char vec[MEMTRIM_VEC];
	size_t n = 0;
	for (uintptr_t a = lo; a < hi;) {
		size_t pages = (hi - a) / page < MEMTRIM_VEC ? (hi - a) / page : MEMTRIM_VEC;
		if (mincore((void *)a, pages * page, vec) < 0)
			return 0;
		for (size_t i = 0; i < pages; i++)
			n += vec[i] & 1;
		a += pages * page;
	}
	return n;
}

__attribute__((noinline)) int memtrim_idle(size_t *ret_kib)
{
	malloc_trim(0);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	if (here < MEMTRIM_MARGIN)
		return -EINVAL;
	uintptr_t hi = (here - MEMTRIM_MARGIN) & ~(uintptr_t)(page - 1);
	uintptr_t lo;
	int r = memtrim_vma_start(here, &lo);
	if (r < 0)
		return r;
	if (hi <= lo) {
		if (ret_kib)
			*ret_kib = 0;
		return 0;
	}
	size_t kib = memtrim_resident(lo, hi, page) * (page >> 10);
	if (madvise((void *)lo, hi - lo, MADV_DONTNEED) < 0)
		return -errno;
	if (ret_kib)
		*ret_kib = kib;
	return 0;
}
