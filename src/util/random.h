/* Unpredictable bytes from the kernel's CSPRNG, for memory keys and
 * anything else a peer must not guess.  Nothing is buffered in the
 * process, so a forked child never repeats its parent's values. */
#ifndef UROCE_UTIL_RANDOM_H
#define UROCE_UTIL_RANDOM_H

#include <stddef.h>
#include <stdint.h>

/* Fills buf; 0 or -errno (only if neither getrandom(2) nor /dev/urandom
 * is usable). */
int ur_random_bytes(void *buf, size_t len);

#endif
