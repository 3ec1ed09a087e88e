/* uroce bench: the clock, posting one operation, and reaping completions
 * (busy polling, or sleeping on the thread's completion channel with -e). */
#include "bench.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>

double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int bench_post_op(struct bench_thread *t, unsigned i, uint32_t size, bool signaled,
		  uint64_t wr_id)
{
	const struct bench_opts *o = &t->b->o;
	const struct ur_ep *r = &t->remote[i];
	struct ibv_sge sge = { .addr = (uintptr_t)t->buf, .length = size, .lkey = t->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.send_flags = signaled ? IBV_SEND_SIGNALED : 0,
	}, *bad;
	int rc;

	switch (o->op) {
	case BENCH_SEND:
		return bench_post_send_msg(t, i, size, signaled, wr_id);
	case BENCH_WRITE:
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = r->addr;
		wr.wr.rdma.rkey = r->rkey;
		if (size <= o->inline_size)
			wr.send_flags |= IBV_SEND_INLINE;
		break;
	case BENCH_READ:
		wr.opcode = IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = r->addr;
		wr.wr.rdma.rkey = r->rkey;
		break;
	case BENCH_ATOMIC:
		sge.length = 8;
		wr.opcode = o->atomic == BENCH_CAS ? IBV_WR_ATOMIC_CMP_AND_SWP
						   : IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr = r->addr;
		wr.wr.atomic.rkey = r->rkey;
		wr.wr.atomic.compare_add = o->atomic == BENCH_CAS ? 0 : 1;
		wr.wr.atomic.swap = 0;
		break;
	}
	rc = ibv_post_send(t->qp[i], &wr, &bad);
	if (rc)
		fprintf(stderr, "ibv_post_send (%s, %u bytes, QP 0x%06x) failed: %s\n",
			bench_op_name(o->op), size, t->qp[i]->qp_num, strerror(rc));
	return rc;
}

int bench_post_send_msg(struct bench_thread *t, unsigned i, uint32_t size, bool signaled,
			uint64_t wr_id)
{
	const struct bench_opts *o = &t->b->o;
	struct ibv_sge sge = { .addr = (uintptr_t)t->buf, .length = size, .lkey = t->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = signaled ? IBV_SEND_SIGNALED : 0,
	}, *bad;
	int rc;

	if (size <= o->inline_size)
		wr.send_flags |= IBV_SEND_INLINE;
	if (o->qpt == IBV_QPT_UD) {
		wr.wr.ud.ah = t->ah[i];
		wr.wr.ud.remote_qpn = t->remote[i].qpn;
		wr.wr.ud.remote_qkey = UR_UD_QKEY;
	}
	rc = ibv_post_send(t->qp[i], &wr, &bad);
	if (rc)
		fprintf(stderr, "ibv_post_send (send, %u bytes, QP 0x%06x) failed: %s\n", size,
			t->qp[i]->qp_num, strerror(rc));
	return rc;
}

int bench_post_recvs(struct bench_thread *t)
{
	struct bench *b = t->b;
	/* the largest size of the run: receives left posted by one size of a
	 * sweep must hold the next one's messages */
	uint32_t len = b->max_size + (b->o.qpt == IBV_QPT_UD ? UR_GRH_BYTES : 0);
	struct ibv_sge sge = { .addr = (uintptr_t)(t->buf + t->rx_off), .length = len,
			       .lkey = t->mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	int rc;

	for (unsigned i = 0; i < b->o.qps; i++) {
		wr.wr_id = i;
		while (t->rx_posted[i] < b->rx_depth) {
			rc = ibv_post_recv(t->qp[i], &wr, &bad);
			if (rc) {
				fprintf(stderr, "ibv_post_recv (QP 0x%06x) failed: %s\n",
					t->qp[i]->qp_num, strerror(rc));
				return rc;
			}
			t->rx_posted[i]++;
		}
	}
	return 0;
}

static int check_wcs(struct bench_thread *t, const struct ibv_wc *wc, int n)
{
	for (int k = 0; k < n; k++)
		if (wc[k].status != IBV_WC_SUCCESS) {
			fprintf(stderr, "thread %u: completion failed: %s (status %d, opcode %d, "
					"QP 0x%06x, vendor error 0x%x)\n",
				t->index, ibv_wc_status_str(wc[k].status), wc[k].status,
				wc[k].opcode, wc[k].qp_num, wc[k].vendor_err);
			return -1;
		}
	return n;
}

/* Sleeps on the channel for at most 100 ms (so a caller waiting for a
 * message that UD or UC lost can still give up), then re-arms. */
static int wait_event(struct bench_thread *t)
{
	struct pollfd pfd = { .fd = t->channel->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *ctx;
	int rc = poll(&pfd, 1, 100);

	if (rc <= 0)
		return rc < 0 && errno != EINTR ? -1 : 0;
	if (ibv_get_cq_event(t->channel, &cq, &ctx)) {
		fprintf(stderr, "waiting for a completion event failed: %s\n", strerror(errno));
		return -1;
	}
	ibv_ack_cq_events(cq, 1);
	if (ibv_req_notify_cq(cq, 0)) {
		fprintf(stderr, "cannot re-arm the CQ: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

int bench_poll(struct bench_thread *t, struct ibv_wc *wc, int max, bool block)
{
	int n = ibv_poll_cq(t->cq, max, wc);

	if (n < 0) {
		fprintf(stderr, "ibv_poll_cq failed\n");
		return -1;
	}
	if (n || !block || !t->channel)
		return check_wcs(t, wc, n);
	if (wait_event(t) < 0)
		return -1;
	n = ibv_poll_cq(t->cq, max, wc);
	return n < 0 ? -1 : check_wcs(t, wc, n);
}
