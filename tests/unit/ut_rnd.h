/* Deterministic xorshift64* for unit tests: every run sees the same
 * sequence, so a failure replays.  One state per test program. */
#ifndef UROCE_TESTS_UT_RND_H
#define UROCE_TESTS_UT_RND_H

#include <stdint.h>

static uint64_t ut_rnd_state = 0x9e3779b97f4a7c15ull;

static inline uint64_t ut_rnd(void)
{
	ut_rnd_state ^= ut_rnd_state >> 12;
	ut_rnd_state ^= ut_rnd_state << 25;
	ut_rnd_state ^= ut_rnd_state >> 27;
	return ut_rnd_state * 0x2545f4914f6cdd1dull;
}

#endif
