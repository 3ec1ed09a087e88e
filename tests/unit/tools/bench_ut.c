/* Unit tests of uroce bench's pure code: percentiles and the latency
 * summary, the peak-bandwidth slices, units, option parsing (sweeps, QP
 * type rules, exit codes) and the JSON, CSV and SVG writers. */
#include "ut.h"

#include "../../../tools/uroce/bench_stats.c"
#include "../../../tools/uroce/opts.c"
#include "../../../tools/uroce/bench_opts.c"
#include "../../../tools/uroce/bench_export.c"
#include "../../../tools/uroce/bench_plot.c"

/* The connection layer's helpers opts.c, bench_opts.c and bench_export.c call. */
int ur_mtu_bytes(enum ibv_mtu mtu)
{
	return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128 << mtu : 0;
}

enum ibv_mtu ur_mtu_from_bytes(int bytes)
{
	for (enum ibv_mtu m = IBV_MTU_256; m <= IBV_MTU_4096; m++)
		if (ur_mtu_bytes(m) == bytes)
			return m;
	return 0;
}

const char *ur_dev_name(const struct ur_dev *d)
{
	(void)d;
	return "uroce0";
}

static void test_percentile(void)
{
	double s[1000];

	for (int i = 0; i < 1000; i++)
		s[i] = i + 1;
	UT_EQ(bench_percentile(s, 1000, 50), 500);
	UT_EQ(bench_percentile(s, 1000, 99), 990);
	UT_EQ(bench_percentile(s, 1000, 99.9), 999);
	UT_EQ(bench_percentile(s, 1000, 100), 1000);
	UT_EQ(bench_percentile(s, 1000, 0), 1);
	UT_EQ(bench_percentile(s, 1, 99.9), 1);
	UT_EQ(bench_percentile(s, 0, 50), 0);
	/* 10 samples: p99 and p99.9 are the largest */
	UT_EQ(bench_percentile(s, 10, 99), 10);
	UT_EQ(bench_percentile(s, 10, 50), 5);
}

static void test_lat_stats(void)
{
	double s[] = { 9, 4, 2, 5, 4, 7, 5, 4 };
	struct bench_result r;

	bench_lat_stats(s, 8, &r);
	UT_EQ(r.t_min, 2);
	UT_EQ(r.t_max, 9);
	UT_EQ(r.t_avg, 5);
	UT_EQ(r.t_stdev, 2);
	UT_EQ(r.p50, 4);
	UT_EQ(r.t_typical, 4);
	UT_EQ(r.p99, 9);
	UT_EQ(s[0], 2);           /* sorted in place */

	/* ordering holds on any data */
	double big[5000];
	unsigned x = 12345;

	for (int i = 0; i < 5000; i++) {
		x = x * 1103515245 + 12345;
		big[i] = (x >> 8) % 100000 / 7.0;
	}
	bench_lat_stats(big, 5000, &r);
	UT_CHECK(r.t_min <= r.p50 && r.p50 <= r.p99 && r.p99 <= r.p999 && r.p999 <= r.t_max);
	UT_CHECK(r.t_min <= r.t_avg && r.t_avg <= r.t_max);

	bench_lat_stats(big, 0, &r);
	UT_EQ(r.t_max, 0);
}

static void test_peak(void)
{
	struct bench_peak p;
	double peak;

	/* steady: 1000 msgs/s for 1 s -> peak equals the average */
	bench_peak_start(&p, 0, 10);
	for (int i = 1; i <= 1000; i++)
		bench_peak_update(&p, i / 1000.0, (uint64_t)i);
	peak = bench_peak_finish(&p, 1.0, 1000);
	UT_CHECK(peak > 999 && peak < 1001);

	/* a stall in the middle: the peak is the fast part, above the average */
	bench_peak_start(&p, 0, 10);
	for (int i = 1; i <= 500; i++)
		bench_peak_update(&p, i / 1000.0, (uint64_t)i);
	for (int i = 501; i <= 1000; i++)
		bench_peak_update(&p, 1.5 + i / 1000.0, (uint64_t)i);
	peak = bench_peak_finish(&p, 2.5, 1000);
	UT_CHECK(peak > 999 && peak < 1001);
	UT_CHECK(peak >= 1000 / 2.5);

	/* everything reaped by one poll at once: no infinite rate */
	bench_peak_start(&p, 0, 1);
	bench_peak_update(&p, 0.5, 100);
	bench_peak_update(&p, 0.5, 200);
	peak = bench_peak_finish(&p, 0.5, 200);
	UT_CHECK(peak > 399 && peak < 401);

	UT_EQ(bench_bw_unit(1048576.0 * 3, false), 3);
	UT_EQ(bench_bw_unit(125e6, true), 1);
}

static int parse(struct bench_opts *o, const char *line)
{
	char buf[256], *argv[32];
	int argc = 0;

	snprintf(buf, sizeof(buf), "bench %s", line);
	for (char *t = strtok(buf, " "); t && argc < 31; t = strtok(NULL, " "))
		argv[argc++] = t;
	argv[argc] = NULL;
	return bench_parse(argc, argv, o);
}

static void test_parse(void)
{
	struct bench_opts o;
	UT_EQ(parse(&o, "write"), 0);
	UT_EQ(o.nsizes, 1);
	UT_EQ(o.sizes[0], 65536);
	UT_EQ(o.iters, 5000);
	UT_EQ(o.tx_depth, 128);
	UT_CHECK(!o.server && !o.lat && o.qpt == IBV_QPT_RC);

	UT_EQ(parse(&o, "send --lat -a -c UD -n 7 10.0.0.1"), 0);
	UT_EQ(o.nsizes, 12);              /* 2 .. 4096 */
	UT_EQ(o.sizes[11], 4096);
	UT_EQ(o.iters, 7);
	UT_EQ(o.tx_depth, 1);
	UT_CHECK(o.server && !strcmp(o.server, "10.0.0.1"));

	UT_EQ(parse(&o, "read -a"), 0);
	UT_EQ(o.nsizes, 23);
	UT_EQ(o.sizes[0], 2);
	UT_EQ(o.sizes[22], 8u << 20);

	UT_EQ(parse(&o, "atomic -a -A CMP_AND_SWAP -q 4 -T 2 -F"), 0);
	UT_EQ(o.nsizes, 1);
	UT_EQ(o.sizes[0], 8);
	UT_EQ(o.atomic, BENCH_CAS);
	UT_EQ(o.qps, 4);
	UT_EQ(o.threads, 2);

	UT_EQ(parse(&o, "write -c UD"), UR_EXIT_USAGE);
	UT_EQ(parse(&o, "read -c UC"), UR_EXIT_USAGE);
	UT_EQ(parse(&o, "atomic -s 16"), UR_EXIT_USAGE);
	UT_EQ(parse(&o, "send -b --lat"), UR_EXIT_USAGE);
	UT_EQ(parse(&o, "write -A CMP_AND_SWAP"), UR_EXIT_USAGE);
	UT_EQ(parse(&o, "write -q 0"), UR_EXIT_USAGE);
	UT_EQ(parse(&o, "write -m 1000"), UR_EXIT_USAGE);
	UT_EQ(parse(&o, "write --nope"), UR_EXIT_USAGE);
	UT_EQ(parse(&o, "write -x"), UR_EXIT_USAGE);
	UT_EQ(parse(&o, "fly"), UR_EXIT_USAGE);
	UT_EQ(parse(&o, "write a b"), UR_EXIT_USAGE);
}

static unsigned count(const char *s, const char *what)
{
	unsigned n = 0;

	for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
		n++;
	return n;
}

static struct bench_result results[3] = {
	{ .size = 2, .iters = 10, .msgs = 10, .seconds = 0.5, .bw_peak = 50, .bw_avg = 40,
	  .msg_rate = 20, .t_min = 1, .t_max = 9, .t_typical = 2, .t_avg = 3, .p50 = 2,
	  .p99 = 8, .p999 = 9 },
	{ .size = 4, .iters = 10, .msgs = 10, .seconds = 0.5, .bw_peak = 90, .bw_avg = 80 },
	{ .size = 1024, .iters = 10, .msgs = 10, .seconds = 0.5, .bw_peak = 1e9, .bw_avg = 5e8 },
};

static void test_json_csv(void)
{
	struct bench_opts o = { .op = BENCH_SEND, .qpt = IBV_QPT_UD, .qps = 2, .threads = 1 };
	char *s;
	size_t len;
	FILE *f = open_memstream(&s, &len);

	UT_EQ(bench_write_json(f, &o, "uroce0", results, 3), 0);
	fclose(f);
	UT_EQ(count(s, "\"size_bytes\":"), 3);
	UT_EQ(count(s, "{"), 4);
	UT_EQ(count(s, "}"), 4);
	UT_CHECK(strstr(s, "\"bw_avg_MBps\":") != NULL);
	UT_CHECK(strstr(s, "\"lat_p99_usec\"") == NULL);    /* bw mode */
	UT_CHECK(strstr(s, "\"connection\":\"UD\"") != NULL);
	free(s);

	o.lat = true;
	f = open_memstream(&s, &len);
	UT_EQ(bench_write_csv(f, &o, results, 3), 0);
	fclose(f);
	UT_EQ(count(s, "\n"), 4);                   /* header + 3 rows */
	UT_CHECK(!strncmp(s, "size_bytes,iterations,messages,seconds,lat_min_usec", 51));
	/* every row has as many fields as the header */
	UT_EQ(count(s, ","), 4 * 11);
	free(s);
}

static void test_svg(void)
{
	char *s;
	size_t len;
	FILE *f = open_memstream(&s, &len);

	UT_EQ(bench_write_svg(f, "uroce bench write --bw, RC <uroce0>", false, results, 3), 0);
	fclose(f);
	UT_CHECK(!strncmp(s, "<?xml", 5));
	UT_CHECK(strstr(s, "</svg>\n") != NULL);
	UT_EQ(count(s, "<polyline"), 3);            /* avg, peak; time per message */
	UT_CHECK(strstr(s, "&lt;uroce0&gt;") != NULL);
	UT_CHECK(strstr(s, "nan") == NULL && strstr(s, "inf") == NULL);
	free(s);

	f = open_memstream(&s, &len);       /* one size, latency: still renders */
	UT_EQ(bench_write_svg(f, "lat", true, results, 1), 0);
	fclose(f);
	UT_EQ(count(s, "<polyline"), 5);
	UT_CHECK(strstr(s, "nan") == NULL && strstr(s, "inf") == NULL);
	free(s);
}

int main(void)
{
	UT_RUN(test_percentile);
	UT_RUN(test_lat_stats);
	UT_RUN(test_peak);
	UT_RUN(test_parse);
	UT_RUN(test_json_csv);
	UT_RUN(test_svg);
	return UT_DONE();
}
