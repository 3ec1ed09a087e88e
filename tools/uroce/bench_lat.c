/* uroce bench --lat: one sample per iteration.
 *   write: both sides write into each other's buffer in turn and poll its
 *          last byte for the value of this iteration (perftest); half the
 *          round trip.
 *   send:  send/recv ping-pong; half the round trip.
 *   read, atomic: the client's operation, start to completion (the server
 *          is passive); the whole round trip.
 * Iteration K runs on QP K % q; each thread pairs with the peer's thread
 * of the same index. */
#include "bench.h"

#include <stdio.h>

/* How long a side waits for its peer's message before giving up: UC and
 * UD lose messages for good; RC retransmits but the peer may have died.
 * Checked every 1024 polls, or every wait with -e (each may sleep 100 ms). */
#define LAT_STALL_UNRELIABLE 2.0
#define LAT_STALL_RC 30.0

struct lat_state {
	unsigned sends_out;          /* signaled sends not yet completed */
	unsigned recvs;              /* receive completions not yet consumed */
	double stall_limit;
};

static uint8_t iter_mark(uint32_t k)
{
	return (uint8_t)(k % 255 + 1);   /* never 0, the cleared buffer */
}

/* Reaps completions: sends free a slot, receives are counted and
 * reposted.  0, or -1 after a failed completion. */
static int reap(struct bench_thread *t, struct lat_state *s)
{
	struct ibv_wc wc[16];
	/* write polls memory: sleeping on the CQ would only add a delay */
	int n = bench_poll(t, wc, 16, t->b->o.op != BENCH_WRITE);

	if (n < 0)
		return -1;
	for (int k = 0; k < n; k++) {
		if (wc[k].opcode & IBV_WC_RECV) {
			t->rx_posted[wc[k].wr_id]--;
			s->recvs++;
		} else {
			s->sends_out--;
		}
	}
	if (n && s->recvs && bench_post_recvs(t))
		return -1;
	return 0;
}

static bool stalled(struct bench_thread *t, struct lat_state *s, double since, uint32_t k)
{
	double waited = bench_now() - since;

	if (waited < s->stall_limit &&
	    !(atomic_load(&t->b->peer_done) && waited > 0.5))
		return false;
	fprintf(stderr, "thread %u: no answer from the peer at iteration %u of %u after %.1f s%s\n",
		t->index, k + 1, t->b->o.iters, waited,
		t->b->o.qpt == IBV_QPT_RC ? " (has the peer stopped?)"
					  : ": UC and UD do not retransmit a lost message");
	return true;
}

/* Waits until the last byte of the receive half holds MARK (write) or a
 * receive completed (send), reaping send completions meanwhile. */
static int wait_peer(struct bench_thread *t, struct lat_state *s, uint8_t mark, uint32_t k)
{
	/* The peer's RDMA WRITE lands in this memory behind the program's
	 * back (a NIC's DMA, or uroce's engine thread), as in perftest: a
	 * volatile read, then a fence before anything else is read. */
	volatile uint8_t *last = t->buf + t->rx_off + t->b->size - 1;
	double since = bench_now();
	unsigned spins = 0;

	for (;;) {
		if (t->b->o.op == BENCH_WRITE ? *last == mark : s->recvs > 0)
			break;
		if (reap(t, s))
			return -1;
		if ((t->channel || ++spins % 1024 == 0) && stalled(t, s, since, k))
			return -1;
	}
	atomic_thread_fence(memory_order_acquire);
	if (t->b->o.op == BENCH_SEND)
		s->recvs--;
	return 0;
}

/* Posts the message of iteration K (its last byte is K's mark). */
static int post_turn(struct bench_thread *t, struct lat_state *s, uint32_t k)
{
	unsigned i = k % t->b->o.qps;

	while (s->sends_out >= t->b->o.tx_depth)
		if (reap(t, s))
			return -1;
	t->buf[t->b->size - 1] = iter_mark(k);
	if (bench_post_op(t, i, t->b->size, true, i))
		return -1;
	s->sends_out++;
	return 0;
}

static int pingpong(struct bench_thread *t, struct lat_state *s)
{
	const struct bench *b = t->b;

	for (uint32_t k = 0; k < b->o.iters; k++) {
		double t0 = bench_now();

		if (b->server) {
			if (wait_peer(t, s, iter_mark(k), k) || post_turn(t, s, k))
				return -1;
			continue;
		}
		if (post_turn(t, s, k) || wait_peer(t, s, iter_mark(k), k))
			return -1;
		t->lat[t->nlat++] = (bench_now() - t0) * 1e6 / 2;
	}
	while (s->sends_out)            /* the last answer's completion */
		if (reap(t, s))
			return -1;
	return 0;
}

/* read, atomic: the client alone, one operation at a time. */
static int round_trips(struct bench_thread *t, struct lat_state *s)
{
	const struct bench *b = t->b;

	for (uint32_t k = 0; k < b->o.iters; k++) {
		double t0 = bench_now(), since = t0;
		unsigned spins = 0;

		if (bench_post_op(t, k % b->o.qps, b->size, true, k % b->o.qps))
			return -1;
		s->sends_out = 1;
		while (s->sends_out) {
			if (reap(t, s))
				return -1;
			if ((t->channel || ++spins % 1024 == 0) && stalled(t, s, since, k))
				return -1;
		}
		t->lat[t->nlat++] = (bench_now() - t0) * 1e6;
	}
	return 0;
}

void *bench_lat_thread(void *arg)
{
	struct bench_thread *t = arg;
	struct bench *b = t->b;
	struct lat_state s = {
		.stall_limit = b->o.qpt == IBV_QPT_RC ? LAT_STALL_RC : LAT_STALL_UNRELIABLE,
	};
	int rc = 0;

	t->nlat = 0;
	t->t_start = bench_now();
	if (b->o.op == BENCH_WRITE || b->o.op == BENCH_SEND)
		rc = pingpong(t, &s);
	else if (!b->server)
		rc = round_trips(t, &s);
	t->t_end = bench_now();
	t->tx_done = t->nlat;
	t->rc = rc ? 1 : 0;
	atomic_fetch_add(&b->tx_finished, 1);
	return NULL;
}
