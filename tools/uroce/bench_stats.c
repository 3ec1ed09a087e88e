/* uroce bench: statistics as pure functions (unit-tested in
 * tests/unit/tools/bench_ut.c): percentiles, the latency summary, the peak
 * bandwidth and the table's units. */
#include "bench.h"

#include <math.h>
#include <stdlib.h>

int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank, as perftest does: the smallest sample with at least P% of
 * the samples at or below it. */
double bench_percentile(const double *sorted, size_t n, double p)
{
	size_t rank;

	if (!n)
		return 0;
	if (p <= 0)
		return sorted[0];
	rank = (size_t)ceil(p / 100.0 * (double)n - 1e-9);   /* 99.9% of 1000 is 999 */
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1];
}

void bench_lat_stats(double *s, size_t n, struct bench_result *r)
{
	double sum = 0, var = 0;

	r->t_min = r->t_max = r->t_typical = r->t_avg = r->t_stdev = 0;
	r->p50 = r->p99 = r->p999 = 0;
	if (!n)
		return;
	qsort(s, n, sizeof(*s), bench_cmp_double);
	for (size_t i = 0; i < n; i++)
		sum += s[i];
	r->t_avg = sum / (double)n;
	for (size_t i = 0; i < n; i++)
		var += (s[i] - r->t_avg) * (s[i] - r->t_avg);
	r->t_stdev = sqrt(var / (double)n);
	r->t_min = s[0];
	r->t_max = s[n - 1];
	/* perftest's "typical" is the median */
	r->t_typical = r->p50 = bench_percentile(s, n, 50);
	r->p99 = bench_percentile(s, n, 99);
	r->p999 = bench_percentile(s, n, 99.9);
	/* rounding in the sum can put the mean a hair outside [min, max] */
	if (r->t_avg < r->t_min)
		r->t_avg = r->t_min;
	if (r->t_avg > r->t_max)
		r->t_avg = r->t_max;
}

void bench_peak_start(struct bench_peak *p, double t0, uint64_t min_msgs)
{
	p->t0 = p->pt0 = t0;
	p->n0 = p->pn0 = 0;
	p->min_msgs = min_msgs ? min_msgs : 1;
	p->best = 0;
}

static void close_slice(struct bench_peak *p, double t, uint64_t done)
{
	if (t > p->t0 && done > p->n0) {
		double rate = (double)(done - p->n0) / (t - p->t0);

		if (rate > p->best)
			p->best = rate;
	}
	p->pt0 = p->t0;
	p->pn0 = p->n0;
	p->t0 = t;
	p->n0 = done;
}

/* DONE messages had completed at time T (both non-decreasing).  A slice
 * lasts at least BENCH_PEAK_MIN_SECONDS, so a batch of completions reaped
 * by one poll cannot pass for an absurd rate. */
void bench_peak_update(struct bench_peak *p, double t, uint64_t done)
{
	if (done - p->n0 >= p->min_msgs && t - p->t0 >= BENCH_PEAK_MIN_SECONDS)
		close_slice(p, t, done);
}

double bench_peak_finish(struct bench_peak *p, double t, uint64_t done)
{
	/* A tail too short to time joins the slice before it (the slices
	 * must still cover the whole run for the peak to bound the average). */
	if (t - p->t0 < BENCH_PEAK_MIN_SECONDS && p->pt0 < p->t0) {
		p->t0 = p->pt0;
		p->n0 = p->pn0;
	}
	close_slice(p, t, done);
	return p->best;
}

double bench_bw_unit(double bytes_per_sec, bool gbits)
{
	return gbits ? bytes_per_sec * 8 / 1e9 : bytes_per_sec / (1024.0 * 1024.0);
}
