/* 24-bit PSN arithmetic: the wrap at 2^24 and the half-way boundary. */
#include <stdint.h>

#include "rel/psn.h"
#include "ut.h"

static uint64_t rnd_state = 0x243f6a8885a308d3ull;

static uint32_t rnd24(void)
{
	rnd_state ^= rnd_state >> 12;
	rnd_state ^= rnd_state << 25;
	rnd_state ^= rnd_state >> 27;
	return (uint32_t)((rnd_state * 0x2545f4914f6cdd1dull) >> 40);
}

static void test_psn_wrap(void)
{
	UT_EQ(psn_inc(0xffffff), 0);
	UT_EQ(psn_add(0xffffff, 1), 0);
	UT_EQ(psn_add(0xfffffe, 5), 3);
	UT_EQ(psn_add(0, 0x1000000), 0);
	UT_EQ(psn_add(10, 0xffffff), 9);	/* adding 2^24 - 1 steps back one */
	UT_EQ(psn_inc(0x123456), 0x123457);

	UT_EQ(psn_diff(0, 0xffffff), 1);
	UT_EQ(psn_diff(0xffffff, 0), -1);
	UT_EQ(psn_diff(5, 0xfffffb), 10);
	UT_EQ(psn_diff(0xfffffb, 5), -10);
	UT_EQ(psn_diff(7, 7), 0);
	UT_CHECK(psn_lt(0xffffff, 0));
	UT_CHECK(psn_gt(0, 0xffffff));
	UT_CHECK(psn_le(0xffffff, 0xffffff));
	UT_CHECK(psn_ge(0, 0));
	UT_CHECK(!psn_lt(0, 0xffffff));
	UT_CHECK(!psn_gt(0xffffff, 0));
	/* Bits above the 24 are ignored. */
	UT_EQ(psn_diff(0x1000005, 3), 2);
}

/* The range is (-2^23, 2^23]: exactly half-way is "ahead" both ways. */
static void test_psn_half_way(void)
{
	UT_EQ(psn_diff(0x800000, 0), 0x800000);
	UT_EQ(psn_diff(0, 0x800000), 0x800000);
	UT_EQ(psn_diff(0x7fffff, 0), 0x7fffff);
	UT_EQ(psn_diff(0, 0x7fffff), -0x7fffff);
	UT_EQ(psn_diff(0x800001, 0), -0x7fffff);
	UT_EQ(psn_diff(0, 0x800001), 0x7fffff);
	UT_CHECK(psn_gt(0x800000, 0) && psn_gt(0, 0x800000));
	UT_EQ(psn_diff(0x123456 + 0x800000, 0x123456), 0x800000);
	UT_EQ(psn_diff(0xffffff, 0x7fffff), 0x800000);
}

static void test_psn_properties(void)
{
	unsigned bad = 0;

	for (int i = 0; i < 200000; i++) {
		uint32_t a = rnd24(), b = rnd24();
		int32_t n = (int32_t)(rnd24() & 0x7fffff) - 0x3fffff;	/* |n| < 2^22 */
		int32_t d = psn_diff(a, b);

		bad += d <= -0x800000 || d > 0x800000;
		bad += psn_add(b, (uint32_t)d) != a;			/* b + (a - b) == a */
		bad += psn_diff(psn_add(a, (uint32_t)n), a) != n;	/* exact for small steps */
		bad += psn_lt(a, b) != (d < 0);
		bad += psn_ge(a, b) == psn_lt(a, b);
		bad += psn_le(a, b) == psn_gt(a, b);
		if (d != 0x800000)					/* antisymmetric off the boundary */
			bad += psn_diff(b, a) != -d;
		bad += psn_add(a, 0) != a || psn_add(a, 0x1000000) != a;
		bad += psn_inc(a) != psn_add(a, 1);
	}
	UT_EQ(bad, 0);

	/* A window sliding across the wrap stays ordered. */
	for (uint32_t base = 0xffff00; base != 0x100; base = psn_inc(base))
		for (uint32_t k = 1; k < 128; k++)
			bad += !psn_lt(base, psn_add(base, k)) || !psn_gt(psn_add(base, k), base);
	UT_EQ(bad, 0);
}

int main(void)
{
	UT_RUN(test_psn_wrap);
	UT_RUN(test_psn_half_way);
	UT_RUN(test_psn_properties);
	return UT_DONE();
}
