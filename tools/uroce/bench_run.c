/* uroce bench: the command.  For each message size: prepare the buffers,
 * meet the peer, run the threads, tell the peer when this side is done
 * sending, exchange and combine the results, check that the data moved,
 * and print the row. */
#include "bench.h"
#include "uroce.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PATTERN(size) ((uint8_t)(0xa0 + __builtin_ctz((size) | 0x8000)))

/* The fixed-size text record each side sends the other after a size. */
#define RECORD_BYTES 512

static void prepare(struct bench *b, struct bench_thread *t)
{
	uint8_t *tx = t->buf, *rx = t->buf + t->rx_off;

	t->tx_done = t->rx_done = 0;
	t->nlat = 0;
	t->bw_peak = 0;
	memset(tx, b->o.op == BENCH_WRITE || b->o.op == BENCH_SEND ? PATTERN(b->size) : 0,
	       b->size);
	/* read: what the peer reads; write: zero, so arrival is visible */
	memset(rx, b->o.op == BENCH_READ ? PATTERN(b->size) : 0, b->size);
}

/* How long a UC target waits for the last WRITE to land: a UC requester
 * completes once its packets are sent, so the peer's "done" on the TCP
 * socket can overtake the packets still in the receive path. */
#define UC_LANDING_NS 2000000000ull

static bool write_landed(const volatile uint8_t *rx, uint32_t size, uint8_t p)
{
	return rx[0] == p && rx[size - 1] == p;
}

static bool wait_landed(const volatile uint8_t *rx, uint32_t size, uint8_t p, bool reliable)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!write_landed(rx, size, p)) {
		if (reliable)
			return false;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((uint64_t)(t.tv_sec - t0.tv_sec) * 1000000000ull + t.tv_nsec - t0.tv_nsec >
		    UC_LANDING_NS)
			return false;
		nanosleep(&(struct timespec){ .tv_nsec = 100000 }, NULL);
	}
	return true;
}

/* What arrived where it should (a partial check: first and last byte of
 * the message, the counter of fetch-and-add). */
static int check_data(struct bench *b, const struct bench_result *peer)
{
	bool target = b->server || b->o.bidir;
	uint64_t sum = 0;

	for (unsigned k = 0; k < b->o.threads; k++) {
		struct bench_thread *t = &b->th[k];
		const uint8_t *tx = t->buf, *rx = t->buf + t->rx_off;
		uint8_t p = PATTERN(b->size);

		if (b->o.op == BENCH_WRITE && target && !b->o.lat &&
		    !wait_landed(rx, b->size, p, b->o.qpt == IBV_QPT_RC)) {
			fprintf(stderr, "thread %u: the peer's RDMA WRITEs of %u bytes did not arrive: "
					"the buffer holds 0x%02x..0x%02x, not 0x%02x\n",
				k, b->size, rx[0], rx[b->size - 1], p);
			return UR_EXIT_FAIL;
		}
		if (b->o.op == BENCH_READ && (!b->server || b->o.bidir) &&
		    (tx[0] != p || tx[b->size - 1] != p)) {
			fprintf(stderr, "thread %u: RDMA READ of %u bytes returned 0x%02x..0x%02x, "
					"not the peer's 0x%02x\n", k, b->size, tx[0], tx[b->size - 1], p);
			return UR_EXIT_FAIL;
		}
		if (b->o.op == BENCH_ATOMIC) {
			uint64_t v;

			memcpy(&v, rx, 8);
			sum += v;
		}
	}
	if (b->o.op == BENCH_ATOMIC && b->o.atomic == BENCH_FAA && target && peer &&
	    sum != peer->msgs) {
		fprintf(stderr, "the peer's %llu FETCH_AND_ADDs of 1 left %llu in this side's "
				"counters\n", (unsigned long long)peer->msgs, (unsigned long long)sum);
		return UR_EXIT_FAIL;
	}
	return 0;
}

/* This side's threads, combined: bandwidth sums, latency samples pool. */
static void combine(struct bench *b, struct bench_result *r)
{
	double t0 = b->th[0].t_start, t1 = b->th[0].t_end, peak = 0;
	bool measured_rx = b->o.op == BENCH_SEND && b->server && !b->o.bidir && !b->o.lat;
	size_t nlat = 0;
	double *all;

	memset(r, 0, sizeof(*r));
	r->size = b->size;
	for (unsigned k = 0; k < b->o.threads; k++) {
		struct bench_thread *t = &b->th[k];

		if (t->t_start < t0)
			t0 = t->t_start;
		if (t->t_end > t1)
			t1 = t->t_end;
		r->msgs += measured_rx ? t->rx_done : t->tx_done;
		peak += t->bw_peak;
		nlat += t->nlat;
	}
	r->seconds = t1 - t0;
	if (b->o.lat) {
		r->iters = b->o.iters;
		all = malloc((nlat ? nlat : 1) * sizeof(*all));
		if (!all)
			return;
		nlat = 0;
		for (unsigned k = 0; k < b->o.threads; k++) {
			memcpy(all + nlat, b->th[k].lat, b->th[k].nlat * sizeof(*all));
			nlat += b->th[k].nlat;
		}
		r->msgs = nlat;
		bench_lat_stats(all, nlat, r);
		free(all);
		return;
	}
	r->iters = (uint32_t)(r->msgs / ((uint64_t)b->o.qps * b->o.threads));
	if (r->seconds > 0) {
		r->bw_avg = (double)r->msgs * b->size / r->seconds;
		r->msg_rate = (double)r->msgs / r->seconds;
	}
	r->bw_peak = peak > r->bw_avg ? peak : r->bw_avg;
}

static int send_record(int fd, int status, const struct bench_result *r)
{
	char rec[RECORD_BYTES] = "";

	snprintf(rec, sizeof(rec),
		 "%d %u %u %llu %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g "
		 "%.17g %.17g %.17g\n", status, r->size, r->iters, (unsigned long long)r->msgs,
		 r->seconds, r->bw_peak, r->bw_avg, r->msg_rate, r->t_min, r->t_max, r->t_typical,
		 r->t_avg, r->t_stdev, r->p50, r->p99, r->p999, 0.0);
	return ur_tcp_write_all(fd, rec, sizeof(rec));
}

static int recv_record(int fd, int *status, struct bench_result *r)
{
	char rec[RECORD_BYTES + 1];
	unsigned long long msgs;
	double unused;

	if (ur_tcp_read_all(fd, rec, RECORD_BYTES))
		return -1;
	rec[RECORD_BYTES] = 0;
	if (sscanf(rec, "%d %u %u %llu %lg %lg %lg %lg %lg %lg %lg %lg %lg %lg %lg %lg %lg",
		   status, &r->size, &r->iters, &msgs, &r->seconds, &r->bw_peak, &r->bw_avg,
		   &r->msg_rate, &r->t_min, &r->t_max, &r->t_typical, &r->t_avg, &r->t_stdev,
		   &r->p50, &r->p99, &r->p999, &unused) != 17) {
		fprintf(stderr, "the peer sent a malformed result record\n");
		return -1;
	}
	r->msgs = msgs;
	return 0;
}

static int run_threads(struct bench *b)
{
	pthread_t tid[BENCH_MAX_THREADS];
	unsigned started = 0;
	char done = 'D', peer;
	int rc = 0;

	atomic_store(&b->tx_finished, 0);
	atomic_store(&b->peer_done, false);
	for (; started < b->o.threads; started++) {
		rc = pthread_create(&tid[started], NULL, b->o.lat ? bench_lat_thread : bench_bw_thread,
				    &b->th[started]);
		if (rc) {
			fprintf(stderr, "cannot start a thread: %s\n", strerror(rc));
			break;
		}
	}
	/* Tell the peer once every thread is done sending; a receiver waiting
	 * for messages UC/UD lost stops on that word. */
	while (atomic_load(&b->tx_finished) < (int)started)
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	if (ur_tcp_write_all(b->fd, &done, 1) || ur_tcp_read_all(b->fd, &peer, 1)) {
		fprintf(stderr, "the peer closed the connection during the test\n");
		rc = 1;
	}
	atomic_store(&b->peer_done, true);
	for (unsigned k = 0; k < started; k++)
		pthread_join(tid[k], NULL);
	for (unsigned k = 0; k < started; k++)
		if (b->th[k].rc)
			rc = 1;
	return rc || started < b->o.threads ? UR_EXIT_FAIL : 0;
}

/* The row this side prints: its own measure, the peer's (the passive side
 * of one-sided operations prints the requester's, as perftest does), or
 * both directions summed (-b). */
static void choose(struct bench *b, const struct bench_result *mine,
		   const struct bench_result *peer, struct bench_result *out)
{
	bool measured = !b->server || (b->o.op == BENCH_SEND && !b->o.lat) || b->o.bidir;

	*out = measured ? *mine : *peer;
	if (b->o.bidir) {
		out->bw_peak += peer->bw_peak;
		out->bw_avg += peer->bw_avg;
		out->msg_rate += peer->msg_rate;
		out->msgs += peer->msgs;
	}
}

static int run_size(struct bench *b, uint32_t size, struct bench_result *out)
{
	struct bench_result mine, peer = { 0 };
	int rc, peer_status = 0;

	b->size = size;
	for (unsigned k = 0; k < b->o.threads; k++) {
		prepare(b, &b->th[k]);
		if (b->o.op == BENCH_SEND && bench_post_recvs(&b->th[k]))
			return UR_EXIT_FAIL;
	}
	if (ur_tcp_barrier(b->fd))
		return UR_EXIT_FAIL;
	rc = run_threads(b);
	combine(b, &mine);
	if (send_record(b->fd, rc, &mine) || recv_record(b->fd, &peer_status, &peer))
		return UR_EXIT_FAIL;
	if (rc)
		return rc;
	if (peer_status) {
		fprintf(stderr, "the peer failed during the %u-byte test (see its output)\n", size);
		return UR_EXIT_FAIL;
	}
	rc = check_data(b, &peer);
	if (rc)
		return rc;
	choose(b, &mine, &peer, out);
	if (!b->o.lat && out->msgs < (uint64_t)b->o.iters * b->o.qps * b->o.threads *
					      (b->o.bidir ? 2 : 1))
		fprintf(stderr, "note: %llu of %llu messages arrived (%s does not retransmit)\n",
			(unsigned long long)out->msgs,
			(unsigned long long)b->o.iters * b->o.qps * b->o.threads * (b->o.bidir ? 2 : 1),
			bench_qpt_name(b->o.qpt));
	return 0;
}

static int run_sizes(struct bench *b)
{
	for (unsigned k = 0; k < b->o.threads; k++) {
		b->th[k].lat = calloc(b->o.lat ? b->o.iters : 1, sizeof(double));
		if (!b->th[k].lat) {
			fprintf(stderr, "out of memory for %u latency samples\n", b->o.iters);
			return UR_EXIT_FAIL;
		}
	}
	bench_print_table_head(b->out, &b->o);
	for (unsigned i = 0; i < b->o.nsizes; i++) {
		int rc = run_size(b, b->o.sizes[i], &b->res[b->nres]);

		if (rc) {
			bench_print_table_end(b->out);
			return rc;
		}
		bench_print_row(b->out, &b->o, &b->res[b->nres++]);
		fflush(b->out);
	}
	bench_print_table_end(b->out);
	return 0;
}

int cmd_bench(int argc, char **argv)
{
	static struct bench b;
	int rc;

	rc = bench_parse(argc, argv, &b.o);
	if (rc)
		return rc < 0 ? UR_EXIT_OK : rc;
	b.server = !b.o.server;
	b.out = stdout;
	if ((b.o.json && !strcmp(b.o.json, "-")) || (b.o.csv && !strcmp(b.o.csv, "-")) ||
	    (b.o.plot && !strcmp(b.o.plot, "-")))
		b.out = stderr;
	rc = bench_setup(&b);
	if (!rc)
		rc = run_sizes(&b);
	if (!rc || b.nres)
		rc = bench_export(&b) ? UR_EXIT_FAIL : rc;
	bench_teardown(&b);
	return rc;
}
