/* 24-bit packet sequence numbers.
 *
 * PSNs wrap at 2^24, so order is only meaningful within half the space:
 * psn_diff() maps the distance a - b into (-2^23, 2^23].  Exactly half-way
 * counts as "ahead" in both directions (psn_gt(a, b) and psn_gt(b, a) both
 * hold); windows of outstanding PSNs are far smaller than 2^23, so callers
 * never meet that case.
 */
#ifndef UROCE_REL_PSN_H
#define UROCE_REL_PSN_H

#include <stdbool.h>
#include <stdint.h>

#define UR_PSN_MASK	0xffffffu
#define UR_PSN_HALF	0x800000u

static inline uint32_t psn_add(uint32_t a, uint32_t n)
{
	return (a + n) & UR_PSN_MASK;
}

static inline uint32_t psn_inc(uint32_t a)
{
	return psn_add(a, 1);
}

/* Signed distance from b to a, in (-2^23, 2^23]. */
static inline int32_t psn_diff(uint32_t a, uint32_t b)
{
	uint32_t d = (a - b) & UR_PSN_MASK;

	return d > UR_PSN_HALF ? (int32_t)d - (int32_t)(UR_PSN_MASK + 1) : (int32_t)d;
}

static inline bool psn_lt(uint32_t a, uint32_t b) { return psn_diff(a, b) < 0; }
static inline bool psn_le(uint32_t a, uint32_t b) { return psn_diff(a, b) <= 0; }
static inline bool psn_gt(uint32_t a, uint32_t b) { return psn_diff(a, b) > 0; }
static inline bool psn_ge(uint32_t a, uint32_t b) { return psn_diff(a, b) >= 0; }

#endif
