/* uroce bench --bw: one thread keeps up to -t operations in flight on each
 * of its QPs until -n completed on each (the requester), and/or reaps and
 * reposts receives until the peer's sends arrived (send's receiver). */
#include "bench.h"

#include <stdlib.h>

#define BW_POLL_BATCH 64
/* After the peer said it is done, a receiver stops once nothing arrived
 * for this long: only UC and UD lose messages, RC's are all in the CQ. */
#define BW_QUIET_SECONDS 0.3

struct bw_state {
	uint64_t posted[BENCH_MAX_QPS], completed[BENCH_MAX_QPS];
	uint64_t tx_total, tx_goal, rx_goal;
	uint32_t signal_every;
	bool tx, rx;
	double last_rx;
	struct bench_peak peak;
};

static int post_some(struct bench_thread *t, struct bw_state *s)
{
	const struct bench_opts *o = &t->b->o;

	for (unsigned i = 0; i < o->qps; i++)
		while (s->posted[i] < o->iters && s->posted[i] - s->completed[i] < o->tx_depth) {
			uint64_t next = s->posted[i] + 1;
			/* one completion per signal_every operations, and for the last */
			bool sig = next % s->signal_every == 0 || next == o->iters;

			if (bench_post_op(t, i, t->b->size, sig, (uint64_t)i << 40 | next))
				return -1;
			s->posted[i] = next;
		}
	return 0;
}

static int reap(struct bench_thread *t, struct bw_state *s, bool block)
{
	struct ibv_wc wc[BW_POLL_BATCH];
	int n = bench_poll(t, wc, BW_POLL_BATCH, block);
	double now;
	bool got_rx = false;

	if (n <= 0)
		return n;
	now = bench_now();
	for (int k = 0; k < n; k++) {
		if (wc[k].opcode & IBV_WC_RECV) {
			t->rx_posted[wc[k].wr_id]--;
			t->rx_done++;
			got_rx = true;
			continue;
		}
		unsigned i = (unsigned)(wc[k].wr_id >> 40);
		uint64_t upto = wc[k].wr_id & ((1ull << 40) - 1);

		s->tx_total += upto - s->completed[i];
		s->completed[i] = upto;
	}
	if (got_rx) {
		s->last_rx = now;
		if (!s->tx)
			bench_peak_update(&s->peak, now, t->rx_done);
		if (t->rx_done < s->rx_goal && bench_post_recvs(t))
			return -1;
	}
	if (s->tx)
		bench_peak_update(&s->peak, now, s->tx_total);
	t->t_end = now;
	return n;
}

void *bench_bw_thread(void *arg)
{
	struct bench_thread *t = arg;
	struct bench *b = t->b;
	const struct bench_opts *o = &b->o;
	struct bw_state s = {
		.tx = !b->server || o->bidir,
		.rx = o->op == BENCH_SEND && (b->server || o->bidir),
		.signal_every = o->tx_depth < 16 ? o->tx_depth : 16,
	};
	bool tx_reported = false;

	s.tx_goal = s.tx ? (uint64_t)o->iters * o->qps : 0;
	s.rx_goal = s.rx ? (uint64_t)o->iters * o->qps : 0;
	t->rc = 0;
	t->t_start = t->t_end = s.last_rx = bench_now();
	bench_peak_start(&s.peak, t->t_start, (s.tx ? s.tx_goal : s.rx_goal) / 16);
	for (;;) {
		bool tx_left = s.tx_total < s.tx_goal, rx_left = t->rx_done < s.rx_goal;

		if (!tx_left && !tx_reported) {
			tx_reported = true;
			atomic_fetch_add(&b->tx_finished, 1);
		}
		if (!tx_left && !rx_left)
			break;
		if (!tx_left && atomic_load(&b->peer_done) &&
		    bench_now() - s.last_rx > BW_QUIET_SECONDS)
			break;              /* UC/UD: the rest was lost */
		if (tx_left && post_some(t, &s))
			goto fail;
		if (reap(t, &s, true) < 0)
			goto fail;
	}
	t->tx_done = s.tx_total;
	t->bw_peak = bench_peak_finish(&s.peak, t->t_end, s.tx ? s.tx_total : t->rx_done) * b->size;
	return NULL;
fail:
	t->rc = 1;
	t->tx_done = s.tx_total;
	if (!tx_reported)
		atomic_fetch_add(&b->tx_finished, 1);
	return NULL;
}
