/* Rate conversions: rdma-core 44's numbers for every enum ibv_rate value,
 * round trips, exhaustive reverse lookups, and (where present) agreement with
 * the system library. */
#include "ut.h"
#include "sysref.h"

#include "verbs/rates.c"

/* The expected values, written out per enum value 0..24 (IBV_RATE_MAX = 0
 * is "no rate"): multiple of 2.5 Gb/s, Mb/s. */
static const struct {
	int rate, mult, mbps;
} expect[] = {
	{ IBV_RATE_MAX, -1, -1 },
	{ 1, -1, -1 },                  /* no enum value */
	{ IBV_RATE_2_5_GBPS, 1, 2500 },
	{ IBV_RATE_10_GBPS, 4, 10000 },
	{ IBV_RATE_30_GBPS, 12, 30000 },
	{ IBV_RATE_5_GBPS, 2, 5000 },
	{ IBV_RATE_20_GBPS, 8, 20000 },
	{ IBV_RATE_40_GBPS, 16, 40000 },
	{ IBV_RATE_60_GBPS, 24, 60000 },
	{ IBV_RATE_80_GBPS, 32, 80000 },
	{ IBV_RATE_120_GBPS, 48, 120000 },
	{ IBV_RATE_14_GBPS, -1, 14062 },
	{ IBV_RATE_56_GBPS, -1, 56250 },
	{ IBV_RATE_112_GBPS, -1, 112500 },
	{ IBV_RATE_168_GBPS, -1, 168750 },
	{ IBV_RATE_25_GBPS, -1, 25781 },
	{ IBV_RATE_100_GBPS, -1, 103125 },
	{ IBV_RATE_200_GBPS, -1, 206250 },
	{ IBV_RATE_300_GBPS, -1, 309375 },
	{ IBV_RATE_28_GBPS, 11, 28125 },
	{ IBV_RATE_50_GBPS, 20, 53125 },
	{ IBV_RATE_400_GBPS, 160, 425000 },
	{ IBV_RATE_600_GBPS, 240, 637500 },
	{ IBV_RATE_800_GBPS, 320, 850000 },
	{ IBV_RATE_1200_GBPS, 480, 1275000 },
};

#define LAST_RATE IBV_RATE_1200_GBPS

static void test_forward(void)
{
	UT_EQ(UR_ARRAY_SIZE(expect), LAST_RATE + 1);
	for (size_t i = 0; i < UR_ARRAY_SIZE(expect); i++) {
		UT_EQ(expect[i].rate, (int)i);  /* table is indexed by value */
		UT_EQ(ibv_rate_to_mult(expect[i].rate), expect[i].mult);
		UT_EQ(ibv_rate_to_mbps(expect[i].rate), expect[i].mbps);
	}
	UT_EQ(ibv_rate_to_mult(LAST_RATE + 1), -1);
	UT_EQ(ibv_rate_to_mbps(LAST_RATE + 1), -1);
	UT_EQ(ibv_rate_to_mult(-1), -1);
	UT_EQ(ibv_rate_to_mbps(-1), -1);
}

static void test_round_trips(void)
{
	for (int r = 0; r <= LAST_RATE; r++) {
		int mult = ibv_rate_to_mult(r), mbps = ibv_rate_to_mbps(r);

		if (mult != -1)
			UT_EQ(mult_to_ibv_rate(mult), r);
		if (mbps != -1)
			UT_EQ(mbps_to_ibv_rate(mbps), r);
	}
}

/* Reverse lookups hit exactly the table's values and nothing else: every
 * multiple 0..1000 and every Mb/s value 0..2,000,000. */
static void test_reverse_exhaustive(void)
{
	int hits = 0;

	for (int m = -8; m <= 1000; m++) {
		enum ibv_rate r = mult_to_ibv_rate(m);

		if (r != IBV_RATE_MAX) {
			hits++;
			UT_EQ(ibv_rate_to_mult(r), m);
		}
	}
	UT_EQ(hits, 15);

	hits = 0;
	for (int mbps = -8; mbps <= 2000000; mbps++) {
		enum ibv_rate r = mbps_to_ibv_rate(mbps);

		if (r != IBV_RATE_MAX) {
			hits++;
			if (ibv_rate_to_mbps(r) != mbps)
				UT_EQ(ibv_rate_to_mbps(r), mbps);
		}
	}
	UT_EQ(hits, 23);
	/* the marketing numbers are not the table's */
	UT_EQ(mbps_to_ibv_rate(100000), IBV_RATE_MAX);
	UT_EQ(mbps_to_ibv_rate(50000), IBV_RATE_MAX);
	UT_EQ(mbps_to_ibv_rate(25000), IBV_RATE_MAX);
}

static void test_against_system_library(void)
{
	void *h = sysref_open();
	int (*to_mult)(int), (*to_mbps)(int), (*from_mult)(int),
		(*from_mbps)(int);

	if (!h)
		return;
	to_mult = (int (*)(int))sysref_sym(h, "ibv_rate_to_mult", "IBVERBS_1.0");
	from_mult = (int (*)(int))sysref_sym(h, "mult_to_ibv_rate", "IBVERBS_1.0");
	to_mbps = (int (*)(int))sysref_sym(h, "ibv_rate_to_mbps", "IBVERBS_1.1");
	from_mbps = (int (*)(int))sysref_sym(h, "mbps_to_ibv_rate", "IBVERBS_1.1");
	UT_CHECK(to_mult && from_mult && to_mbps && from_mbps);
	if (!(to_mult && from_mult && to_mbps && from_mbps))
		goto out;
	for (int v = -64; v <= 4096; v++) {
		if (ibv_rate_to_mult(v) != to_mult(v))
			UT_EQ(ibv_rate_to_mult(v), to_mult(v));
		if (ibv_rate_to_mbps(v) != to_mbps(v))
			UT_EQ(ibv_rate_to_mbps(v), to_mbps(v));
		if ((int)mult_to_ibv_rate(v) != from_mult(v))
			UT_EQ(mult_to_ibv_rate(v), from_mult(v));
	}
	for (int v = -64; v <= 2000000; v++)
		if ((int)mbps_to_ibv_rate(v) != from_mbps(v))
			UT_EQ(mbps_to_ibv_rate(v), from_mbps(v));
	ut_checks++;
out:
	dlclose(h);
}

int main(void)
{
	UT_RUN(test_forward);
	UT_RUN(test_round_trips);
	UT_RUN(test_reverse_exhaustive);
	UT_RUN(test_against_system_library);
	return UT_DONE();
}
