/* Progress of a stream rsocket: its completions (data and credits that
 * arrived, sends that finished), the receives put back, credits granted to
 * the peer, and sleeping until there is news.  rs->lock held throughout
 * (rs_sleep drops it while it sleeps). */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>

#include "rsocket/dgram.h"
#include "rsocket/rsocket.h"
#include "util/clock.h"

#define RS_WR_RECV   (1ull << 63)
#define RS_POLL_BATCH 16

UR_ENUM_NAMES(RS_STATE_LIST, RS_NSTATES, rs_state_names);

bool rs_have_rdata(const struct rsock *rs)
{
	return rs->rmsg && rs->rmsg_head != rs->rmsg_tail;
}

bool rs_ctrl_avail(const struct rsock *rs)
{
	return rs->ctrl_seqno != rs->ctrl_max_seqno;
}

bool rs_can_send(const struct rsock *rs)
{
	return rs->state == RS_CONNECTED && rs->sqe_avail > 0 &&
	       rs->sbuf_bytes_avail >= RS_SNDLOWAT && rs->sseq_no != rs->sseq_comp &&
	       rs->target_sgl[rs->target_sge].length != 0;
}

bool rs_all_sends_done(const struct rsock *rs)
{
	return rs->state != RS_CONNECTED ||
	       (rs->sqe_avail == rs->sq_size - (int)RS_QP_CTRL_SIZE &&
		rs->ctrl_seqno == rs->ctrl_max_seqno - RS_QP_CTRL_SIZE);
}

/* A signalled RDMA WRITE of sgl to addr/rkey, inline if flags say so; with
 * msg as its immediate data when opcode is IBV_WR_RDMA_WRITE_WITH_IMM. */
static int post_write(struct rsock *rs, enum ibv_wr_opcode opcode, struct ibv_sge *sgl,
		      int nsge, uint32_t wr_id, int flags, uint64_t addr, uint32_t rkey)
{
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = sgl;
	wr.num_sge = nsge;
	wr.opcode = opcode;
	wr.send_flags = IBV_SEND_SIGNALED | (flags & IBV_SEND_INLINE);
	if (opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
		wr.imm_data = htobe32(wr_id);
	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	return -ibv_post_send(rs->id->qp, &wr, &bad);
}

int rs_post_write(struct rsock *rs, struct ibv_sge *sgl, int nsge, uint32_t wr_msg, int flags,
		  uint64_t addr, uint32_t rkey)
{
	return post_write(rs, IBV_WR_RDMA_WRITE, sgl, nsge, wr_msg, flags, addr, rkey);
}

int rs_post_write_msg(struct rsock *rs, struct ibv_sge *sgl, int nsge, uint32_t msg, int flags,
		      uint64_t addr, uint32_t rkey)
{
	return post_write(rs, IBV_WR_RDMA_WRITE_WITH_IMM, sgl, nsge, msg, flags, addr, rkey);
}

int rs_post_ctrl(struct rsock *rs, enum rs_ctrl ctrl)
{
	rs->ctrl_seqno++;
	return rs_post_write_msg(rs, NULL, 0, rs_msg(RS_OP_CTRL, ctrl), 0, 0, 0);
}

/* Grants credits up to rseq_no + rq_size and, when half the receive
 * buffer is free, hands it to the peer in its next target SGE. */
static void send_credits(struct rsock *rs)
{
	uint32_t half = rs->rbuf_size >> 1;
	uint32_t msg = rs_msg(RS_OP_SGL, (uint16_t)(rs->rseq_no + rs->rq_size));
	struct rs_sge sge;
	struct ibv_sge ib;
	int flags = IBV_SEND_INLINE;

	rs->ctrl_seqno++;
	rs->rseq_comp = (uint16_t)(rs->rseq_no + (rs->rq_size >> 1));
	if (rs->rbuf_bytes_avail < (int)half) {
		rs_post_write_msg(rs, NULL, 0, msg, 0, 0, 0);
		return;
	}
	sge.addr = (uintptr_t)&rs->rbuf[rs->rbuf_free_offset];
	sge.key = rs->rmr->rkey;
	sge.length = half;
	if (rs->swap_sgl) {
		sge.addr = __builtin_bswap64(sge.addr);
		sge.key = __builtin_bswap32(sge.key);
		sge.length = __builtin_bswap32(sge.length);
	}
	ib.length = sizeof(sge);
	if (rs->sq_inline >= sizeof(sge)) {
		ib.addr = (uintptr_t)&sge;
		ib.lkey = 0;
	} else {
		/* A slot of its own past sbuf's end, one per control message
		 * in flight. */
		uint8_t *slot = rs->sbuf + rs->sbuf_size +
				sizeof(sge) * (rs->ctrl_seqno & (RS_QP_CTRL_SIZE - 1));

		memcpy(slot, &sge, sizeof(sge));
		ib.addr = (uintptr_t)slot;
		ib.lkey = rs->smr->lkey;
		flags = 0;
	}
	rs_post_write_msg(rs, &ib, 1, msg, flags,
			  rs->remote_sgl.addr + (uint64_t)rs->remote_sge * sizeof(struct rs_sge),
			  rs->remote_sgl.key);
	rs->rbuf_bytes_avail -= (int)half;
	rs->rbuf_free_offset += half;
	if (rs->rbuf_free_offset >= rs->rbuf_size)
		rs->rbuf_free_offset = 0;
	if (++rs->remote_sge == (int)rs->remote_sgl.length)
		rs->remote_sge = 0;
}

void rs_update_credits(struct rsock *rs)
{
	if (rs->state != RS_CONNECTED || !rs_ctrl_avail(rs))
		return;
	if (rs->rbuf_bytes_avail >= (int)(rs->rbuf_size >> 1) ||
	    (int16_t)(rs->rseq_no - rs->rseq_comp) >= 0)
		send_credits(rs);
}

static void on_ctrl(struct rsock *rs, uint32_t ctrl)
{
	if (ctrl == RS_CTRL_DISCONNECT) {
		rs->state = RS_DISCONNECTED;
		rs->rd_open = rs->wr_open = false;
	} else if (ctrl == RS_CTRL_SHUTDOWN) {
		if (rs->wr_open) {
			rs->rd_open = false;
		} else {
			rs->state = RS_DISCONNECTED;
			rs->rd_open = false;
		}
	}
}

static void on_recv(struct rsock *rs, const struct ibv_wc *wc)
{
	uint32_t msg;

	if (wc->status != IBV_WC_SUCCESS || !(wc->wc_flags & IBV_WC_WITH_IMM))
		return;
	msg = be32toh(wc->imm_data);
	switch (rs_msg_op(msg)) {
	case RS_OP_DATA:
		rs->rmsg[rs->rmsg_tail] = rs_msg_data(msg);
		if (++rs->rmsg_tail == rs->rmsg_size)
			rs->rmsg_tail = 0;
		break;
	case RS_OP_SGL:
		/* The target SGE it may carry is in place already: the
		 * write came before its immediate. */
		rs->sseq_comp = (uint16_t)rs_msg_data(msg);
		break;
	case RS_OP_CTRL:
		if (rs->state == RS_CONNECTED)
			on_ctrl(rs, rs_msg_data(msg));
		break;
	default:   /* RS_OP_IOMAP_SGL: the entry is in place; the rest reserved */
		break;
	}
}

static void on_send(struct rsock *rs, const struct ibv_wc *wc)
{
	uint32_t msg = (uint32_t)wc->wr_id;

	switch (rs_msg_op(msg)) {
	case RS_OP_SGL:
	case RS_OP_CTRL:
		rs->ctrl_max_seqno++;
		break;
	case RS_OP_IOMAP_SGL:
		rs->sqe_avail++;
		rs->sbuf_bytes_avail += sizeof(struct rs_iomap);
		break;
	default:   /* RS_OP_DATA, RS_OP_WRITE */
		rs->sqe_avail++;
		rs->sbuf_bytes_avail += rs_msg_data(msg);
		break;
	}
	if (wc->status != IBV_WC_SUCCESS && rs->state == RS_CONNECTED) {
		rs->state = RS_ERROR;
		rs->err = EIO;
	}
}

static void poll_cq(struct rsock *rs)
{
	struct ibv_wc wc[RS_POLL_BATCH];
	int n, recvs = 0;

	while ((n = ibv_poll_cq(rs->cq, RS_POLL_BATCH, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (wc[i].wr_id & RS_WR_RECV) {
				recvs++;
				on_recv(rs, &wc[i]);
			} else {
				on_send(rs, &wc[i]);
			}
		}
	}
	if (rs->state == RS_CONNECTED) {
		while (recvs--) {
			if (rs_post_recv(rs)) {
				rs->state = RS_ERROR;
				rs->err = EIO;
				break;
			}
		}
	}
}

static void drain_cq_events(struct rsock *rs)
{
	struct ibv_cq *cq;
	void *ctx;

	while (ibv_get_cq_event(rs->cc, &cq, &ctx) == 0) {
		ibv_ack_cq_events(cq, 1);
		rs->cq_armed = false;
	}
}

void rs_progress(struct rsock *rs)
{
	if (rs->type == SOCK_DGRAM) {
		rs_ds_progress(rs);
		return;
	}
	/* A connected socket reads its channel only when poll() said it
	 * has news: an empty read is a system call per progress. */
	if (rs->state != RS_CONNECTED || rs->cm_pending) {
		rs->cm_pending = false;
		rs_cm_events(rs);
	}
	if (!rs->cq)
		return;
	poll_cq(rs);
	if (rs->state == RS_CONNECTED)
		rs_update_credits(rs);
}

void rs_sleep(struct rsock *rs, int timeout_ms)
{
	struct pollfd p[2] = { { .fd = -1, .events = POLLIN } };
	nfds_t n = 1;

	if (timeout_ms < 0 || timeout_ms > rs_config()->nap_ms)
		timeout_ms = rs_config()->nap_ms;
	if (rs->type == SOCK_DGRAM) {
		rs_ds_sleep(rs, timeout_ms);
		return;
	}
	p[0].fd = rs->ch->fd;
	if (rs->cq) {
		p[1].fd = rs->cc->fd;
		p[1].events = POLLIN;
		n = 2;
	}
	pthread_mutex_unlock(&rs->lock);
	poll(p, n, timeout_ms);
	pthread_mutex_lock(&rs->lock);
	rs_poll_drain(rs, p[0].revents, n > 1 ? p[1].revents : 0);
}

/* Arms the CQs not armed yet, so that a completion wakes a sleeper:
 * whether it armed one (the caller looks at the CQs again first). */
static bool arm(struct rsock *rs)
{
	if (rs->type == SOCK_DGRAM)
		return rs_ds_arm(rs);
	if (rs->cq && !rs->cq_armed && ibv_req_notify_cq(rs->cq, 0) == 0)
		return rs->cq_armed = true;
	return false;
}

static void sleep_until_news(struct rsock *rs)
{
	rs_sleep(rs, -1);
}

static const struct rs_wait_ops wait_ops = {
	.progress = rs_progress,
	.arm = arm,
	.sleep = sleep_until_news,
};

int rs_wait(struct rsock *rs, bool (*done)(const struct rsock *), bool nonblock)
{
	return rs_wait_loop(rs, &wait_ops, done, nonblock, false);
}

int rs_wait_recv(struct rsock *rs, bool (*done)(const struct rsock *), bool nonblock)
{
	return rs_wait_loop(rs, &wait_ops, done, nonblock, true);
}

short rs_poll_events(struct rsock *rs)
{
	if (rs->type == SOCK_DGRAM)
		return rs_ds_poll_events(rs);
	switch (rs->state) {
	case RS_LISTENING:
		return rs_listen_ready(rs) ? POLLIN : 0;
	case RS_CONNECTED: {
		short ev = 0;

		if (rs_have_rdata(rs) || !rs->rd_open)
			ev |= POLLIN;
		if (rs_can_send(rs) || !rs->wr_open)
			ev |= POLLOUT;
		return ev;
	}
	case RS_CONNECT_ERROR:
		return POLLOUT | POLLERR;
	case RS_DISCONNECTED:
		/* Hung up once what the peer sent before it left is read:
		 * a reader polling for the last bytes gets them first. */
		return POLLIN | POLLOUT | (rs_have_rdata(rs) ? 0 : POLLHUP);
	case RS_ERROR:
		return POLLIN | POLLOUT | POLLERR;
	case RS_IDLE:
	case RS_BOUND:
		return POLLOUT | POLLHUP;
	default:
		return 0;
	}
}

void rs_poll_arm(struct rsock *rs, struct pollfd *cm, struct pollfd *cq)
{
	if (rs->type == SOCK_DGRAM) {
		rs_ds_poll_arm(rs, cm);
		cq->fd = -1;
		return;
	}
	arm(rs);
	cm->fd = rs->ch->fd;
	cm->events = POLLIN;
	cq->fd = rs->cq ? rs->cc->fd : -1;
	cq->events = POLLIN;
}

void rs_poll_drain(struct rsock *rs, short cm_revents, short cq_revents)
{
	if (rs->type == SOCK_DGRAM) {
		if (cm_revents)
			rs_ds_drain(rs);
		return;
	}
	if (cm_revents)
		rs->cm_pending = true;
	if (cq_revents && rs->cq)
		drain_cq_events(rs);
}
