/* Monotonic time in nanoseconds; the engine's timers run on it. */
#ifndef UROCE_UTIL_CLOCK_H
#define UROCE_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t ur_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The same clock at the scheduler tick's resolution (1-4 ms), at a
 * fraction of the cost: for stamps a person reads, not for timers. */
static inline uint64_t ur_coarse_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
