/* uroce bench --plot: a hand-written SVG with two panels sharing a log2
 * message-size axis -- bandwidth (MB/s) above, latency (usec) below -- one
 * polyline with markers per series.  No dependencies. */
#include "bench.h"

#include <math.h>
#include <string.h>

#define W 820
#define PANEL_H 250
#define LEFT 80
#define RIGHT 200     /* room for the legend */
#define TOP 50
#define GAP 70

struct series {
	const char *name;
	const char *color;
	double (*get)(const struct bench_result *r);
};

static double s_bw_avg(const struct bench_result *r) { return bench_bw_unit(r->bw_avg, false); }
static double s_bw_peak(const struct bench_result *r) { return bench_bw_unit(r->bw_peak, false); }
static double s_msg_time(const struct bench_result *r) { return r->msg_rate > 0 ? 1e6 / r->msg_rate : 0; }
static double s_pp_bw(const struct bench_result *r)
{
	return r->t_typical > 0 ? bench_bw_unit(r->size / (r->t_typical * 1e-6), false) : 0;
}
static double s_p50(const struct bench_result *r) { return r->p50; }
static double s_p99(const struct bench_result *r) { return r->p99; }
static double s_p999(const struct bench_result *r) { return r->p999; }
static double s_max(const struct bench_result *r) { return r->t_max; }

static const struct series bw_top[] = {
	{ "BW average", "#1f77b4", s_bw_avg },
	{ "BW peak", "#ff7f0e", s_bw_peak },
};
static const struct series bw_bottom[] = {
	{ "1/MsgRate per message", "#2ca02c", s_msg_time },
};
static const struct series lat_top[] = {
	{ "size / t_typical", "#1f77b4", s_pp_bw },
};
static const struct series lat_bottom[] = {
	{ "p50", "#2ca02c", s_p50 },
	{ "p99", "#ff7f0e", s_p99 },
	{ "p99.9", "#d62728", s_p999 },
	{ "max", "#9467bd", s_max },
};

struct axes {
	double x0, x1;           /* log2 of the size range */
	double ymax;
	int top;                 /* panel's top pixel */
};

static double px(const struct axes *a, uint32_t size)
{
	return LEFT + (log2((double)size) - a->x0) / (a->x1 - a->x0) * (W - LEFT - RIGHT);
}

static double py(const struct axes *a, double v)
{
	return a->top + PANEL_H - v / a->ymax * PANEL_H;
}

/* A round step giving about 5 ticks up to MAX. */
static double nice_step(double max)
{
	double raw = max / 5, mag = pow(10, floor(log10(raw))), f = raw / mag;

	return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

static void size_label(char *s, size_t len, uint32_t size)
{
	if (size >= (1u << 20) && !(size & ((1u << 20) - 1)))
		snprintf(s, len, "%uM", size >> 20);
	else if (size >= 1024 && !(size & 1023))
		snprintf(s, len, "%uK", size >> 10);
	else
		snprintf(s, len, "%u", size);
}

static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++)
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else
			fputc(*s, f);
}

static void panel(FILE *f, struct axes *a, const char *ylabel, const struct series *s,
		  size_t ns, const struct bench_result *r, unsigned n)
{
	double step;
	int x_right = W - RIGHT;

	a->ymax = 0;
	for (size_t k = 0; k < ns; k++)
		for (unsigned i = 0; i < n; i++)
			if (s[k].get(&r[i]) > a->ymax)
				a->ymax = s[k].get(&r[i]);
	if (a->ymax <= 0)
		a->ymax = 1;
	step = nice_step(a->ymax * 1.05);
	a->ymax = ceil(a->ymax * 1.05 / step) * step;

	fprintf(f, "<g class=\"panel\">\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
		   "fill=\"none\" stroke=\"#000\"/>\n", LEFT, a->top, x_right - LEFT, PANEL_H);
	for (double v = 0; v <= a->ymax + step / 2; v += step)
		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>"
			   "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%g</text>\n",
			LEFT, py(a, v), x_right, py(a, v), LEFT - 6, py(a, v) + 4, v);
	/* a label every power of two, every other one on a long sweep */
	int every = a->x1 - a->x0 > 12 ? 2 : 1;

	for (int e = a->x0 < 0 ? 0 : (int)ceil(a->x0); e <= (int)floor(a->x1); e += every) {
		char lab[16];
		uint32_t size = 1u << e;

		size_label(lab, sizeof(lab), size);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#000\"/>"
			   "<text x=\"%.1f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%s</text>\n",
			px(a, size), a->top + PANEL_H, px(a, size), a->top + PANEL_H + 5, px(a, size),
			a->top + PANEL_H + 17, lab);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\" "
		   "transform=\"rotate(-90 %d %d)\">%s</text>\n",
		20, a->top + PANEL_H / 2, 20, a->top + PANEL_H / 2, ylabel);
	fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">"
		   "message size [bytes] (log2)</text>\n",
		(LEFT + x_right) / 2, a->top + PANEL_H + 34);
	for (size_t k = 0; k < ns; k++) {
		fprintf(f, "<polyline class=\"series\" data-name=\"%s\" fill=\"none\" stroke=\"%s\" "
			   "stroke-width=\"2\" points=\"", s[k].name, s[k].color);
		for (unsigned i = 0; i < n; i++)
			fprintf(f, "%s%.1f,%.1f", i ? " " : "", px(a, r[i].size), py(a, s[k].get(&r[i])));
		fprintf(f, "\"/>\n");
		for (unsigned i = 0; i < n; i++)
			fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
				px(a, r[i].size), py(a, s[k].get(&r[i])), s[k].color);
		fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
			   "stroke-width=\"2\"/><text x=\"%d\" y=\"%d\" font-size=\"11\">%s</text>\n",
			x_right + 10, a->top + 12 + (int)k * 18, x_right + 30, a->top + 12 + (int)k * 18,
			s[k].color, x_right + 35, a->top + 16 + (int)k * 18, s[k].name);
	}
	fprintf(f, "</g>\n");
}

int bench_write_svg(FILE *f, const char *title, bool lat, const struct bench_result *r,
		    unsigned n)
{
	struct axes a = { 0 };
	int h = TOP + 2 * PANEL_H + GAP + 50;
	uint32_t lo = n ? r[0].size : 1, hi = lo;

	for (unsigned i = 0; i < n; i++) {
		if (r[i].size < lo)
			lo = r[i].size;
		if (r[i].size > hi)
			hi = r[i].size;
	}
	/* one size still gets an axis: a power of two either side */
	a.x0 = floor(log2((double)lo)) - (lo == hi);
	a.x1 = ceil(log2((double)hi)) + (lo == hi);
	if (a.x1 <= a.x0)
		a.x1 = a.x0 + 1;

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		   "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n"
		   "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n<title>", W, h, W, h);
	xml_text(f, title);
	fprintf(f, "</title>\n<text x=\"%d\" y=\"28\" font-size=\"15\" text-anchor=\"middle\">",
		W / 2);
	xml_text(f, title);
	fprintf(f, "</text>\n");
	a.top = TOP;
	panel(f, &a, lat ? "bandwidth [MB/s] (size / t_typical)" : "bandwidth [MB/s]",
	      lat ? lat_top : bw_top, lat ? 1 : 2, r, n);
	a.top = TOP + PANEL_H + GAP;
	panel(f, &a, lat ? "latency [usec]" : "time per message [usec]",
	      lat ? lat_bottom : bw_bottom, lat ? 4 : 1, r, n);
	fprintf(f, "</svg>\n");
	return ferror(f) ? -1 : 0;
}
