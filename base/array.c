#include "base/array.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int array_grow(void *vp, size_t *cap, size_t n, size_t size, size_t first)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? *cap : first / 2 ? first / 2 : 1;
	if (c > SIZE_MAX / 2 / size)
		return -ENOMEM;
	c *= 2;
	void *old;
	memcpy(&old, vp, sizeof(old));
	void *nv = realloc(old, c * size);
	if (!nv)
		return -ENOMEM;
	memcpy(vp, &nv, sizeof(nv));
	*cap = c;
	return 0;
}
