/* uroce bench: machine-readable results, one record per message size with
 * every number; the units are in the field names (MBps is 2^20 bytes per
 * second, Gbps 10^9 bits, usec microseconds). */
#include "bench.h"
#include "uroce.h"

#include <errno.h>
#include <string.h>

struct field {
	const char *name;
	double (*get)(const struct bench_result *r);
	const char *fmt;
};

#define GETTER(fn, expr) \
	static double fn(const struct bench_result *r) { return (expr); }
GETTER(g_size, r->size)
GETTER(g_iters, r->iters)
GETTER(g_msgs, (double)r->msgs)
GETTER(g_secs, r->seconds)
GETTER(g_peak_mb, bench_bw_unit(r->bw_peak, false))
GETTER(g_avg_mb, bench_bw_unit(r->bw_avg, false))
GETTER(g_peak_gb, bench_bw_unit(r->bw_peak, true))
GETTER(g_avg_gb, bench_bw_unit(r->bw_avg, true))
GETTER(g_rate, r->msg_rate / 1e6)
GETTER(g_min, r->t_min)
GETTER(g_max, r->t_max)
GETTER(g_typ, r->t_typical)
GETTER(g_avg, r->t_avg)
GETTER(g_stdev, r->t_stdev)
GETTER(g_p50, r->p50)
GETTER(g_p99, r->p99)
GETTER(g_p999, r->p999)

static const struct field common[] = {
	{ "size_bytes", g_size, "%.0f" },
	{ "iterations", g_iters, "%.0f" },
	{ "messages", g_msgs, "%.0f" },
	{ "seconds", g_secs, "%.6f" },
};
static const struct field bw_fields[] = {
	{ "bw_peak_MBps", g_peak_mb, "%.3f" },
	{ "bw_avg_MBps", g_avg_mb, "%.3f" },
	{ "bw_peak_Gbps", g_peak_gb, "%.5f" },
	{ "bw_avg_Gbps", g_avg_gb, "%.5f" },
	{ "msg_rate_Mpps", g_rate, "%.6f" },
};
static const struct field lat_fields[] = {
	{ "lat_min_usec", g_min, "%.3f" },
	{ "lat_max_usec", g_max, "%.3f" },
	{ "lat_typical_usec", g_typ, "%.3f" },
	{ "lat_avg_usec", g_avg, "%.3f" },
	{ "lat_stdev_usec", g_stdev, "%.3f" },
	{ "lat_p50_usec", g_p50, "%.3f" },
	{ "lat_p99_usec", g_p99, "%.3f" },
	{ "lat_p999_usec", g_p999, "%.3f" },
};

#define NF(a) (sizeof(a) / sizeof((a)[0]))

/* Calls FN for every field of the mode, in order. */
static void each_field(const struct bench_opts *o,
		       void (*fn)(const struct field *, void *), void *arg)
{
	for (size_t i = 0; i < NF(common); i++)
		fn(&common[i], arg);
	if (o->lat)
		for (size_t i = 0; i < NF(lat_fields); i++)
			fn(&lat_fields[i], arg);
	else
		for (size_t i = 0; i < NF(bw_fields); i++)
			fn(&bw_fields[i], arg);
}

struct emit {
	FILE *f;
	const struct bench_result *r;
	bool json, first;
};

static void emit_name(const struct field *fd, void *arg)
{
	struct emit *e = arg;

	fprintf(e->f, "%s%s", e->first ? "" : ",", fd->name);
	e->first = false;
}

static void emit_value(const struct field *fd, void *arg)
{
	struct emit *e = arg;

	fprintf(e->f, "%s", e->first ? "" : ",");
	if (e->json)
		fprintf(e->f, "\"%s\":", fd->name);
	fprintf(e->f, fd->fmt, fd->get(e->r));
	e->first = false;
}

int bench_write_json(FILE *f, const struct bench_opts *o, const char *dev,
		     const struct bench_result *r, unsigned n)
{
	fprintf(f, "{\"tool\":\"uroce bench\",\"op\":\"%s\",\"test\":\"%s\",\"connection\":\"%s\","
		   "\"device\":\"%s\",\"qps_per_thread\":%u,\"threads\":%u,\"bidirectional\":%s,",
		bench_op_name(o->op), o->lat ? "lat" : "bw", bench_qpt_name(o->qpt), dev, o->qps,
		o->threads, o->bidir ? "true" : "false");
	if (o->op == BENCH_ATOMIC)
		fprintf(f, "\"atomic_type\":\"%s\",",
			o->atomic == BENCH_CAS ? "CMP_AND_SWAP" : "FETCH_AND_ADD");
	fprintf(f, "\"results\":[");
	for (unsigned i = 0; i < n; i++) {
		struct emit e = { .f = f, .r = &r[i], .json = true, .first = true };

		fprintf(f, "%s\n  {", i ? "," : "");
		each_field(o, emit_value, &e);
		fprintf(f, "}");
	}
	fprintf(f, "\n]}\n");
	return ferror(f) ? -1 : 0;
}

int bench_write_csv(FILE *f, const struct bench_opts *o, const struct bench_result *r,
		    unsigned n)
{
	struct emit e = { .f = f, .first = true };

	each_field(o, emit_name, &e);
	fputc('\n', f);
	for (unsigned i = 0; i < n; i++) {
		e = (struct emit){ .f = f, .r = &r[i], .first = true };
		each_field(o, emit_value, &e);
		fputc('\n', f);
	}
	return ferror(f) ? -1 : 0;
}

static FILE *open_out(const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;

	if (!f)
		fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
	return f;
}

static int close_out(FILE *f, const char *path, int rc)
{
	if (f != stdout) {
		if (fclose(f))
			rc = -1;
	} else {
		fflush(f);
	}
	if (rc)
		fprintf(stderr, "writing %s failed\n", path);
	return rc;
}

int bench_export(const struct bench *b)
{
	const struct bench_opts *o = &b->o;
	char title[160];
	FILE *f;
	int rc = 0;

	if (o->json) {
		f = open_out(o->json);
		if (!f)
			return UR_EXIT_FAIL;
		rc |= close_out(f, o->json, bench_write_json(f, o, ur_dev_name(&b->d), b->res, b->nres));
	}
	if (o->csv) {
		f = open_out(o->csv);
		if (!f)
			return UR_EXIT_FAIL;
		rc |= close_out(f, o->csv, bench_write_csv(f, o, b->res, b->nres));
	}
	if (o->plot) {
		f = open_out(o->plot);
		if (!f)
			return UR_EXIT_FAIL;
		snprintf(title, sizeof(title), "uroce bench %s --%s, %s, %u QP%s x %u thread%s, %s",
			 bench_op_name(o->op), o->lat ? "lat" : "bw", bench_qpt_name(o->qpt), o->qps,
			 o->qps > 1 ? "s" : "", o->threads, o->threads > 1 ? "s" : "",
			 ur_dev_name(&b->d));
		rc |= close_out(f, o->plot, bench_write_svg(f, title, o->lat, b->res, b->nres));
	}
	return rc ? UR_EXIT_FAIL : 0;
}
