/* uroce bench: perftest-style bandwidth and latency of RDMA WRITE, READ,
 * SEND and atomics between two processes, over -q QPs in each of -T
 * threads, with percentiles, JSON/CSV records and an SVG plot of a sweep.
 *
 * One run: connect over TCP, open the device, create every thread's CQ,
 * QPs and buffer, exchange one endpoint record per QP (conn.h), then for
 * each message size: prepare, barrier, run the threads, exchange results,
 * report. */
#ifndef UROCE_TOOLS_BENCH_H
#define UROCE_TOOLS_BENCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "conn.h"
#include "opts.h"

enum bench_op { BENCH_WRITE, BENCH_READ, BENCH_SEND, BENCH_ATOMIC };
enum bench_atomic { BENCH_FAA, BENCH_CAS };

#define BENCH_MAX_QPS 64
#define BENCH_MAX_THREADS 16
#define BENCH_MAX_SIZE (8u << 20)
#define BENCH_MAX_SIZES 24

struct bench_opts {
	enum bench_op op;
	bool lat;                       /* --lat, else --bw */
	const char *server;             /* NULL: this is the server */
	struct ur_conn_opts conn;       /* -d -i -x -p -m */
	enum ibv_qp_type qpt;
	uint32_t sizes[BENCH_MAX_SIZES];
	unsigned nsizes;
	bool all_sizes;                 /* -a */
	uint32_t iters;                 /* per QP (bw) or per thread (lat) */
	unsigned qps, threads;
	bool bidir, gbits, events;
	uint32_t tx_depth;
	uint32_t inline_size;
	enum bench_atomic atomic;
	const char *json, *csv, *plot;  /* FILE, "-" (stdout) or NULL */
};

/* The numbers of one message size, as one side measured them (or the sum
 * over both directions with -b). */
struct bench_result {
	uint32_t size;
	uint32_t iters;                 /* per QP as perftest prints, for the table */
	uint64_t msgs;                  /* messages completed over all QPs and threads */
	double seconds;
	double bw_peak, bw_avg;         /* bytes per second */
	double msg_rate;                /* messages per second */
	/* latency (usec) */
	double t_min, t_max, t_typical, t_avg, t_stdev, p50, p99, p999;
};

/* One thread's QPs, CQ and buffer: [0, BENCH_MAX_SIZE or the largest size)
 * is what it sends/reads into; [rx_off, ...) what the peer writes or
 * sends into. */
struct bench_thread {
	struct bench *b;
	unsigned index;
	struct ibv_comp_channel *channel;
	struct ibv_cq *cq;
	struct ibv_qp *qp[BENCH_MAX_QPS];
	struct ibv_ah *ah[BENCH_MAX_QPS];
	struct ur_ep local[BENCH_MAX_QPS], remote[BENCH_MAX_QPS];
	uint8_t *buf;
	size_t buf_len, rx_off;
	struct ibv_mr *mr;
	uint32_t rx_posted[BENCH_MAX_QPS];   /* receives outstanding per QP */
	/* per size, filled by the loops */
	uint64_t tx_done, rx_done;
	double t_start, t_end;               /* monotonic seconds */
	double bw_peak;                      /* bytes per second */
	double *lat;                         /* latency samples (usec) */
	size_t nlat;
	int rc;
};

struct bench {
	struct bench_opts o;
	bool server;
	FILE *out;                           /* the tables: stdout, or stderr when a
					      * record goes to stdout ("-") */
	int fd;
	struct ur_dev d;
	enum ibv_mtu path_mtu;
	uint32_t max_size;
	uint32_t rx_depth;
	struct bench_thread th[BENCH_MAX_THREADS];
	/* per size */
	uint32_t size;
	atomic_int tx_finished;              /* threads done sending */
	atomic_bool peer_done;               /* the peer said it is done sending */
	struct bench_result res[BENCH_MAX_SIZES];
	unsigned nres;
};

/* bench_opts.c */
const char *bench_op_name(enum bench_op op);       /* "write" */
const char *bench_qpt_name(enum ibv_qp_type t);    /* "RC" */
const char *bench_title(const struct bench_opts *o);   /* "RDMA_Write BW Test" */
/* Parses argv (after "bench"); 0, UR_OPT_HELP after --help, or an exit
 * code. */
int bench_parse(int argc, char **argv, struct bench_opts *o);

/* bench_setup.c */
int bench_setup(struct bench *b);
void bench_teardown(struct bench *b);
/* Reposts receives to fill each QP's receive queue. */
int bench_post_recvs(struct bench_thread *t);

/* bench_wait.c: time, completions */
double bench_now(void);
/* Polls (or waits with -e) T's CQ for up to MAX completions; returns the
 * count, 0 when none arrived within the poll, or -1 after printing a
 * failed completion. */
int bench_poll(struct bench_thread *t, struct ibv_wc *wc, int max, bool block);
/* Posts one operation of SIZE bytes on QP I of T (signaled or not). */
int bench_post_op(struct bench_thread *t, unsigned i, uint32_t size, bool signaled,
		  uint64_t wr_id);
int bench_post_send_msg(struct bench_thread *t, unsigned i, uint32_t size, bool signaled,
			uint64_t wr_id);

/* bench_bw.c / bench_lat.c: one thread's loop for b->size */
void *bench_bw_thread(void *arg);
void *bench_lat_thread(void *arg);



/* bench_stats.c: pure functions */
int bench_cmp_double(const void *a, const void *b);
/* The P-th percentile (0..100) of N sorted samples, nearest rank. */
double bench_percentile(const double *sorted, size_t n, double p);
/* Sorts SAMPLES and fills the latency fields of R. */
void bench_lat_stats(double *samples, size_t n, struct bench_result *r);
/* Peak bandwidth tracker: the best rate over slices of at least MIN_MSGS
 * messages and BENCH_PEAK_MIN_SECONDS that tile the run, so the peak is
 * never below the average. */
#define BENCH_PEAK_MIN_SECONDS 0.001
struct bench_peak {
	double t0, pt0;              /* this slice's start, the previous one's */
	uint64_t n0, pn0, min_msgs;
	double best;                 /* messages per second */
};
void bench_peak_start(struct bench_peak *p, double t0, uint64_t min_msgs);
void bench_peak_update(struct bench_peak *p, double t, uint64_t done);
/* Closes the last partial slice and returns the best rate (msgs/s). */
double bench_peak_finish(struct bench_peak *p, double t, uint64_t done);
/* The unit conversions of the table: MB/sec is 2^20 bytes, Gb/sec 10^9 bits. */
double bench_bw_unit(double bytes_per_sec, bool gbits);

/* bench_report.c: perftest's text */
void bench_print_header(FILE *f, const struct bench *b);
void bench_print_table_head(FILE *f, const struct bench_opts *o);
void bench_print_row(FILE *f, const struct bench_opts *o, const struct bench_result *r);
void bench_print_table_end(FILE *f);

/* bench_export.c: one record per size */
int bench_write_json(FILE *f, const struct bench_opts *o, const char *dev,
		     const struct bench_result *r, unsigned n);
int bench_write_csv(FILE *f, const struct bench_opts *o, const struct bench_result *r,
		    unsigned n);
/* Opens PATH ("-": stdout) and calls the writer; 0 or UR_EXIT_FAIL. */
int bench_export(const struct bench *b);

/* bench_plot.c */
int bench_write_svg(FILE *f, const char *title, bool lat, const struct bench_result *r,
		    unsigned n);

#endif
