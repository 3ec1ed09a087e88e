/* Static-rate conversions of libibverbs: enum ibv_rate <-> multiples of
 * 2.5 Gb/s and <-> Mb/s.
 *
 * One table gives both directions, so the forward and reverse mappings
 * cannot drift apart.  The numbers are rdma-core 44's exactly:
 *  - the FDR/EDR-era rates (14, 56, 112, 168, 25, 100, 200, 300 Gb/s) are not
 *    multiples of 2.5 Gb/s and have no multiplier (-1 / IBV_RATE_MAX);
 *  - Mb/s values are the 64b/66b data rates, not the marketing names:
 *    IBV_RATE_100_GBPS is 103125, IBV_RATE_50_GBPS is 53125, so
 *    mbps_to_ibv_rate(100000) is IBV_RATE_MAX.  Lookups are exact matches.
 */
#include <infiniband/verbs.h>

#include "util/compiler.h"

struct rate_row {
	enum ibv_rate rate;
	int mult;       /* multiple of 2.5 Gb/s, or -1 */
	int mbps;
};

static const struct rate_row rate_rows[] = {
	{ IBV_RATE_2_5_GBPS, 1, 2500 },
	{ IBV_RATE_5_GBPS, 2, 5000 },
	{ IBV_RATE_10_GBPS, 4, 10000 },
	{ IBV_RATE_20_GBPS, 8, 20000 },
	{ IBV_RATE_30_GBPS, 12, 30000 },
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

static const struct rate_row *row_by_rate(enum ibv_rate rate)
{
	for (size_t i = 0; i < UR_ARRAY_SIZE(rate_rows); i++)
		if (rate_rows[i].rate == rate)
			return &rate_rows[i];
	return NULL;
}

UR_EXPORT int ibv_rate_to_mult(enum ibv_rate rate)
{
	const struct rate_row *row = row_by_rate(rate);

	return row ? row->mult : -1;
}

UR_EXPORT enum ibv_rate mult_to_ibv_rate(int mult)
{
	if (mult <= 0)
		return IBV_RATE_MAX;
	for (size_t i = 0; i < UR_ARRAY_SIZE(rate_rows); i++)
		if (rate_rows[i].mult == mult)
			return rate_rows[i].rate;
	return IBV_RATE_MAX;
}

UR_EXPORT int ibv_rate_to_mbps(enum ibv_rate rate)
{
	const struct rate_row *row = row_by_rate(rate);

	return row ? row->mbps : -1;
}

UR_EXPORT enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	for (size_t i = 0; i < UR_ARRAY_SIZE(rate_rows); i++)
		if (rate_rows[i].mbps == mbps)
			return rate_rows[i].rate;
	return IBV_RATE_MAX;
}
