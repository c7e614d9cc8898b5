/* Growable arrays: the one place their growth is decided. */
#pragma once
#include <stddef.h>

/* Room for element n of the array at *(T **)vp, of *cap elements of size
 * bytes each: when n == *cap it doubles (from first), checking the size
 * for overflow. 0, or -ENOMEM with the array as it was. */
int array_grow(void *vp, size_t *cap, size_t n, size_t size, size_t first);
