/* Growable arrays: an element array, its capacity and its count, kept by
 * the caller; this only makes room. */
#ifndef UROCE_UTIL_ARRAY_H
#define UROCE_UTIL_ARRAY_H

#include <errno.h>
#include <stdlib.h>

/* Room for one more element past n in *base (*cap elements of elem bytes
 * allocated): doubles the capacity, starting at first.  0 or -ENOMEM (the
 * array is left as it was). */
static inline int ur_array_room(void **base, unsigned *cap, unsigned n, size_t elem,
				unsigned first)
{
	unsigned ncap;
	void *nb;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : first;
	nb = realloc(*base, (size_t)ncap * elem);
	if (!nb)
		return -ENOMEM;
	*base = nb;
	*cap = ncap;
	return 0;
}

#define UR_ARRAY_ROOM(arr, cap, n, first) \
	ur_array_room((void **)&(arr), &(cap), (n), sizeof(*(arr)), (first))

#endif
