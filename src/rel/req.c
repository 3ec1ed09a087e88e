/* The requester: send WQEs become request packets, segmented at the path
 * MTU, paced by the window, with the PSN bookkeeping the completer and the
 * retransmission logic rely on. */
#include <errno.h>
#include <string.h>

#include "rel/req.h"

#include "core/ah.h"
#include "core/limits.h"
#include "core/mr.h"
#include "core/qp.h"
#include "core/qp_kind.h"
#include "rel/ack.h"
#include "rel/inbox.h"
#include "rel/qp_error.h"
#include "rel/rel_priv.h"
#include "rel/timers.h"
#include "rel/tx.h"
#include "util/log.h"

/* BTH opcode low bits for a work request, by position in the message;
 * the transport bits come from the QP type. */
static uint8_t req_opcode(uint32_t wr_op, bool first, bool last)
{
	switch (wr_op) {
	case IBV_WR_SEND:
		return first ? (last ? UR_OPL_SEND_ONLY : UR_OPL_SEND_FIRST)
			     : (last ? UR_OPL_SEND_LAST : UR_OPL_SEND_MIDDLE);
	case IBV_WR_SEND_WITH_IMM:
		return first ? (last ? UR_OPL_SEND_ONLY_WITH_IMMEDIATE : UR_OPL_SEND_FIRST)
			     : (last ? UR_OPL_SEND_LAST_WITH_IMMEDIATE : UR_OPL_SEND_MIDDLE);
	case IBV_WR_SEND_WITH_INV:
		return first ? (last ? UR_OPL_SEND_ONLY_WITH_INVALIDATE : UR_OPL_SEND_FIRST)
			     : (last ? UR_OPL_SEND_LAST_WITH_INVALIDATE : UR_OPL_SEND_MIDDLE);
	case IBV_WR_RDMA_WRITE:
		return first ? (last ? UR_OPL_RDMA_WRITE_ONLY : UR_OPL_RDMA_WRITE_FIRST)
			     : (last ? UR_OPL_RDMA_WRITE_LAST : UR_OPL_RDMA_WRITE_MIDDLE);
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return first ? (last ? UR_OPL_RDMA_WRITE_ONLY_WITH_IMMEDIATE : UR_OPL_RDMA_WRITE_FIRST)
			     : (last ? UR_OPL_RDMA_WRITE_LAST_WITH_IMMEDIATE : UR_OPL_RDMA_WRITE_MIDDLE);
	case IBV_WR_RDMA_READ:
		return UR_OPL_RDMA_READ_REQUEST;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return UR_OPL_COMPARE_SWAP;
	case IBV_WR_ATOMIC_WRITE:
		return UR_OPL_ATOMIC_WRITE;
	default:
		return UR_OPL_FETCH_ADD;
	}
}

/* A packet left: the high-water mark of PSNs sent moves with it. */
static void note_sent(struct ur_qp *qp)
{
	qp->req.blocked_ns = 0;          /* its requests leave: no longer waiting */
	if (psn_gt(qp->req.psn, qp->req.psn_max))
		qp->req.psn_max = qp->req.psn;
}

_Static_assert(UR_MAX_SGE + 1 <= UR_TX_MAX_IOV, "a packet's pieces hold a WQE's SGEs");

/* Gathers [off, off + len) of the WQE's SGEs into p->iov, each granting
 * access (0: read).  MR read lock held.  -EFAULT: an SGE's lkey is not
 * valid for it. */
static int sges_to_iov(struct ur_qp *qp, struct ur_send_wqe *w, uint32_t off, uint32_t len,
		       struct ur_tx_pkt *p, int access)
{
	p->niov = 0;
	p->paylen = len;
	if (!len)
		return 0;
	if (w->is_inline) {
		p->iov[p->niov++] = (struct iovec){ w->inline_data + off, len };
		return 0;
	}
	for (uint32_t i = 0; i < w->num_sge && len; i++) {
		const struct ibv_sge *s = &w->sge[i];
		uint32_t take;
		void *host;

		if (off >= s->length) {
			off -= s->length;
			continue;
		}
		take = ur_min(s->length - off, len);
		host = ur_mr_check(&qp->ctx->mrs, s->lkey, qp->pd, s->addr + off, take, access);
		if (!host)
			return -EFAULT;
		p->iov[p->niov++] = (struct iovec){ host, take };
		off = 0;
		len -= take;
	}
	return len ? -EFAULT : 0;
}

static int gather(struct ur_qp *qp, struct ur_send_wqe *w, uint32_t off, uint32_t len,
		  struct ur_tx_pkt *p)
{
	return sges_to_iov(qp, w, off, len, p, 0);
}

static void put_ud_headers(struct ur_qp *qp, struct ur_send_wqe *w, uint8_t *h)
{
	/* A Q_Key with the high bit set means "use the QP's own" (IBA 10.2.5). */
	uint32_t qkey = (w->remote_qkey & 0x80000000u) ? qp->attr.qkey : w->remote_qkey;

	deth_set_qkey(h, qkey);
	deth_set_sqp(h, ur_qp_num(qp));
}

/* XRC requests name the target's SRQ. */
static void put_xrceth(const struct ur_send_wqe *w, struct ur_tx_pkt *p,
		       const struct ur_opcode_info *info)
{
	if (info->mask & UR_OPF_XRCETH)
		xrceth_set_srqn(p->hdr + info->offset[UR_HDR_XRCETH], w->remote_srqn);
}

#define UR_PLACE_WAIT_MIN (64u << 10)   /* waits_to_place */
#define UR_PLACE_PROBE_EVERY 64u
#define UR_PLACE_MISSING_MAX 64u

/* The transport's one-copy operation for w, if w may use one: a WRITE on
 * RC or UC or a READ on RC, on a path whose transport copies between
 * address spaces.  NULL for everything else, at the cost of a few tests. */
static ur_xport_copy_fn *one_copy_op(const struct ur_qp *qp, const struct ur_send_wqe *w)
{
	const struct ur_xport_ops *ops = qp->path.xport ? qp->path.xport->ops : NULL;

	if (!ops || !w->length || !ur_qp_kind_has(qp, UR_KIND_ONE_COPY))
		return NULL;
	if (w->opcode == IBV_WR_RDMA_READ)
		return qp->type == IBV_QPT_RC ? ops->fetch : NULL;
	if (w->opcode != IBV_WR_RDMA_WRITE && w->opcode != IBV_WR_RDMA_WRITE_WITH_IMM)
		return NULL;
	return ops->place;
}

/* Whether every request before w that the responder has not acknowledged
 * has landed already: copied straight in (placed), or a READ (which
 * changes nothing there).  A copy made now must not overtake a SEND, WRITE
 * or atomic that the responder may not have executed: one it dropped
 * behind an RNR NAK or a gap is executed only when resent, and a READ
 * fetched before it would return the old bytes for good (the fetch is not
 * repeated), a WRITE copied before it be overwritten by it. */
static bool earlier_landed(struct ur_qp *qp, const struct ur_send_wqe *w)
{
	for (uint32_t i = qp->sq.head; i != qp->req.wqe; i++) {
		const struct ur_send_wqe *e = ur_sq_wqe(qp, i);

		if (e == w)
			break;
		if (e->state == UR_WQE_DONE || ur_wr_is_local(e->opcode) || e->placed ||
		    e->opcode == IBV_WR_RDMA_READ)
			continue;
		return false;
	}
	return true;
}

/* A WRITE or READ the transport may copy into or out of the responder's
 * memory itself: asked once per WQE (so that a resend keeps its PSNs), and
 * if the bytes are there, the request leaves as one packet of headers (a
 * READ's answer too).  The transport decides by size and by whether the
 * peer is awake. */
/* Whether large copies into this peer succeed, from one offered: a ring
 * not yet emptied of our WRITEs says nothing, and a region not published
 * may be one moving into a memfd (taken from peers for the move, as long
 * as it takes): only a run of UR_PLACE_MISSING_MAX of those says no. */
static void note_place_result(struct ur_qp *qp, int ret)
{
	if (ret == -EBUSY)
		return;
	if (ret == -ENOENT && qp->req.place_ok && ++qp->req.place_missing < UR_PLACE_MISSING_MAX)
		return;
	qp->req.place_ok = ret >= 0;
	qp->req.place_missing = 0;
}

static void try_place(struct ur_qp *qp, struct ur_send_wqe *w, struct ur_tx_pkt *scratch)
{
	ur_xport_copy_fn *copy = one_copy_op(qp, w);
	bool read = w->opcode == IBV_WR_RDMA_READ;

	w->place_tried = true;
	if (!copy || !earlier_landed(qp, w))
		return;
	ur_mr_read_lock(&qp->ctx->mrs);
	/* A bad lkey: the packets' own checks fail it as usual. */
	if (!sges_to_iov(qp, w, 0, w->length, scratch, read ? IBV_ACCESS_LOCAL_WRITE : 0)) {
		int ret;

		/* ACKs arriving meanwhile wait in the inbox, not for the lock:
		 * the run step closes it (run.c). */
		if (qp->type == IBV_QPT_RC)
			ur_inbox_open(qp);
		ret = copy(qp->path.xport, &qp->path, qp->attr.dest_qp_num, w->rkey,
			       w->remote_addr, scratch->iov, scratch->niov, w->length);

		w->placed = ret >= 0;
		if (w->placed)
			UR_QP_COUNT(qp, ret ? UR_CNT_COPY_MAPPED : UR_CNT_COPY_KERNEL);
		if (w->length >= UR_PLACE_WAIT_MIN)
			note_place_result(qp, ret);
	}
	ur_mr_read_unlock(&qp->ctx->mrs);
}

/* Whether w, a large WRITE or READ on RC that the transport may copy
 * straight into place, waits for the requests before it to land (be
 * acknowledged) instead of going in packets behind them: a round trip,
 * against a megabyte through the ring.  Without it a stream that once went
 * by packets (a peer's region moving into a memfd, revoked meanwhile)
 * would stay there, each packet WRITE keeping the next from being placed.
 * Only while copies into this peer succeed, and now and then to try again
 * (a peer that never takes them would otherwise serialise the stream). */
static bool waits_to_place(struct ur_qp *qp, struct ur_send_wqe *w)
{
	if (w->offset || w->place_tried || w->length < UR_PLACE_WAIT_MIN ||
	    qp->type != IBV_QPT_RC || !one_copy_op(qp, w))
		return false;
	/* Decided once per WR: it is asked again at every run until it
	 * leaves. */
	if (!w->place_wait) {
		if (!qp->req.place_ok && ++qp->req.place_probe % UR_PLACE_PROBE_EVERY)
			return false;
		w->place_wait = true;
	}
	return !earlier_landed(qp, w);
}

/* Whether another WR waits right behind the one being sent and will leave
 * at once as a packet of its own: its ACK then covers this one's too, so
 * a stream of small messages asks for one ACK every UR_ACK_EVERY packets,
 * not one per message, and the message queued last always asks.  Not
 * behind a local WR (it sends nothing), a fence, or on a kind that
 * connects before a WQE (a DC initiator waits for its ACKs before it
 * changes targets). */
static bool followed_at_once(struct ur_qp *qp)
{
	const struct ur_send_wqe *next;

	if (qp->req.wqe + 1 == qp->sq.tail || qp->kind->connect)
		return false;
	next = ur_sq_wqe(qp, qp->req.wqe + 1);
	/* A large WRITE or READ that may wait for this one to land
	 * (waits_to_place) needs its ACK. */
	return !ur_wr_is_local(next->opcode) && !(next->send_flags & IBV_SEND_FENCE) &&
	       !(next->length >= UR_PLACE_WAIT_MIN && one_copy_op(qp, next));
}

/* One request packet of a SEND or WRITE. */
static int send_data_packet(struct ur_qp *qp, struct ur_send_wqe *w, bool *done)
{
	struct ur_tx_pkt p;
	const struct ur_path *path = qp->type == IBV_QPT_UD ? &w->ah->path : &qp->path;
	uint32_t len, dqpn = qp->type == IBV_QPT_UD ? w->remote_qpn : qp->attr.dest_qp_num;
	const struct ur_opcode_info *info;
	bool first, last, ackreq = false;
	uint8_t op;
	int ret;

	if (w->offset == 0 && !w->place_tried)
		try_place(qp, w, &p);
	len = w->placed ? w->length - w->offset : ur_min(w->length - w->offset, qp->mtu);
	first = w->offset == 0;
	last = w->offset + len == w->length;
	op = ur_qp_op_base(qp) | req_opcode(w->opcode, first, last);
	info = &ur_opcode[op];

	if (ur_qp_is_reliable(qp)) {
		/* Ask for an ACK every so often, and always when this packet
		 * fills the window: with a window smaller than UR_ACK_EVERY
		 * (after losses) the responder would otherwise wait for an
		 * AckReq that only a retransmission timeout brings. */
		uint32_t window = ur_min(qp->req.cwnd, UR_MAX_UNACKED_PSNS);
		uint32_t every = ur_min(UR_ACK_EVERY, ur_max(window / 2, 1u));
		uint32_t inflight = (uint32_t)psn_diff(qp->req.psn, qp->comp.psn) + 1;

		ackreq = (last && !followed_at_once(qp)) || qp->req.noack + 1 >= every ||
			 inflight >= window || qp->req.force_ackreq || qp->req.ask_ack;
	}
	ur_tx_init(qp, &p, op, w->placed ? 0 : len, last && (w->send_flags & IBV_SEND_SOLICITED),
		   dqpn, ackreq, qp->req.psn);
	if (info->mask & UR_OPF_RETH) {
		uint8_t *r = p.hdr + info->offset[UR_HDR_RETH];

		reth_set_va(r, w->remote_addr);
		reth_set_rkey(r, w->rkey);
		reth_set_len(r, w->length);
	}
	if (info->mask & UR_OPF_IMMDT)
		immdt_set(p.hdr + info->offset[UR_HDR_IMMDT], w->imm);
	if (info->mask & UR_OPF_IETH)
		ieth_set_rkey(p.hdr + info->offset[UR_HDR_IETH], w->imm);
	if ((info->mask & UR_OPF_DETH) && qp->type == IBV_QPT_UD)
		put_ud_headers(qp, w, p.hdr + info->offset[UR_HDR_DETH]);
	put_xrceth(w, &p, info);

	ur_mr_read_lock(&qp->ctx->mrs);
	if (w->placed) {
		p.niov = 0;
		p.placed = len;
		ret = 0;
	} else {
		ret = gather(qp, w, w->offset, len, &p);
		p.write_data = len && (info->mask & UR_OPF_WRITE);
	}
	if (!ret)
		ret = ur_tx_send(qp, path, &p);
	ur_mr_read_unlock(&qp->ctx->mrs);
	if (ret)
		return ret;
	if (first)
		w->first_psn = qp->req.psn;
	if (last)
		w->last_psn = qp->req.psn;
	qp->req.noack = ackreq ? 0 : qp->req.noack + 1;
	if (ackreq)
		qp->req.ask_ack = false;
	qp->req.psn = psn_inc(qp->req.psn);
	note_sent(qp);
	w->offset += len;
	*done = last;
	return 0;
}

/* One READ request: the whole rest of the WQE, or a chunk of it.  Chunks
 * are fixed slices of the WQE (and of its PSNs); a request resuming inside
 * one after a loss ends where that chunk ends, so that it asks again only
 * for PSNs the responder has seen and the next chunk keeps the PSN the
 * responder expects. */
static int send_read_request(struct ur_qp *qp, struct ur_send_wqe *w, bool *done)
{
	struct ur_tx_pkt p;
	uint8_t op = ur_qp_op_base(qp) | UR_OPL_RDMA_READ_REQUEST;
	const struct ur_opcode_info *info = &ur_opcode[op];
	uint32_t chunk = UR_READ_CHUNK_PKTS * qp->mtu;
	uint32_t len, npkts;
	uint8_t *r;
	int ret;

	if (w->offset == 0 && !w->place_tried)
		try_place(qp, w, &p);
	/* Fetched already: one request, answered by one response. */
	len = w->placed ? w->length - w->offset : ur_min(w->length - w->offset, chunk - w->offset % chunk);
	npkts = w->placed || !len ? 1 : (len + qp->mtu - 1) / qp->mtu;
	ur_tx_init(qp, &p, op, 0, false, qp->attr.dest_qp_num, true, qp->req.psn);
	p.placed = w->placed ? len : 0;
	put_xrceth(w, &p, info);
	r = p.hdr + info->offset[UR_HDR_RETH];
	reth_set_va(r, w->remote_addr + w->offset);
	reth_set_rkey(r, w->rkey);
	reth_set_len(r, len);
	ret = ur_tx_send(qp, &qp->path, &p);
	if (ret)
		return ret;
	if (w->offset == 0)
		w->first_psn = qp->req.psn;
	qp->req.psn = psn_add(qp->req.psn, npkts);
	note_sent(qp);
	w->offset += len;
	qp->req.rd_atomic++;
	qp->req.noack = 0;
	*done = w->offset == w->length;
	if (*done)
		w->last_psn = psn_add(qp->req.psn, UR_PSN_MASK);   /* req.psn - 1 */
	return 0;
}

static int send_atomic(struct ur_qp *qp, struct ur_send_wqe *w, bool *done)
{
	struct ur_tx_pkt p;
	uint8_t op = ur_qp_op_base(qp) | req_opcode(w->opcode, true, true);
	const struct ur_opcode_info *info = &ur_opcode[op];
	uint8_t *a;
	int ret;

	ur_tx_init(qp, &p, op, 0, false, qp->attr.dest_qp_num, true, qp->req.psn);
	put_xrceth(w, &p, info);
	a = p.hdr + info->offset[UR_HDR_ATMETH];
	atmeth_set_va(a, w->remote_addr);
	atmeth_set_rkey(a, w->rkey);
	if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
		atmeth_set_swap_add(a, w->swap);
		atmeth_set_comp(a, w->compare_add);
	} else {
		atmeth_set_swap_add(a, w->compare_add);
		atmeth_set_comp(a, 0);
	}
	ret = ur_tx_send(qp, &qp->path, &p);
	if (ret)
		return ret;
	w->first_psn = w->last_psn = qp->req.psn;
	qp->req.psn = psn_inc(qp->req.psn);
	note_sent(qp);
	qp->req.rd_atomic++;
	qp->req.noack = 0;
	w->offset = w->length;
	*done = true;
	return 0;
}

/* A BIND_MW or LOCAL_INV: executed once, in order, and completed once
 * everything posted before it is acknowledged.  False if the QP failed. */
static bool run_local(struct ur_qp *qp, struct ur_send_wqe *w)
{
	enum ibv_wc_status status = IBV_WC_SUCCESS;

	if (w->state == UR_WQE_POSTED) {
		status = ur_mw_local_op(qp, w);
		w->first_psn = w->last_psn = psn_add(qp->req.psn, UR_PSN_MASK);
		w->state = UR_WQE_SENT;
	}
	qp->req.wqe++;
	if (status != IBV_WC_SUCCESS) {
		ur_qp_complete_send(qp, w, status);
		ur_qp_to_error(qp, false);
		return false;
	}
	if (ur_qp_is_reliable(qp))
		ur_ack_retire(qp);
	else
		ur_qp_complete_send(qp, w, IBV_WC_SUCCESS);
	return true;
}

static bool window_full(struct ur_qp *qp)
{
	uint32_t inflight = (uint32_t)psn_diff(qp->req.psn, qp->comp.psn);

	return inflight >= ur_min(qp->req.cwnd, UR_MAX_UNACKED_PSNS);
}

static bool rd_atomic_full(struct ur_qp *qp)
{
	/* Everything sent is answered: nothing is outstanding, whatever was
	 * counted (a count left too high would hold READs back for good,
	 * with no timer running to go back and reset it). */
	if (!psn_lt(qp->comp.psn, qp->req.psn))
		qp->req.rd_atomic = 0;
	return qp->req.rd_atomic >= (uint32_t)ur_max(qp->attr.max_rd_atomic, (uint8_t)1);
}

static void req_run(struct ur_qp *qp);

void ur_req_run(struct ur_qp *qp)
{
	/* A packet to resend alone goes before anything new. */
	if (qp->req.sel_pending && !qp->req.blocked && qp->state == IBV_QPS_RTS) {
		int ret = ur_req_resend_one(qp, qp->comp.sel_psn);

		if (ret != -EAGAIN)
			qp->req.sel_pending = false;
		if (ret && ret != -EAGAIN)
			ur_timers_arm_retrans(qp);   /* gone meanwhile: the timer decides */
	}
	req_run(qp);
	ur_tx_flush(qp);
}

static void req_run(struct ur_qp *qp)
{
	if (qp->state != IBV_QPS_RTS || qp->req.blocked || qp->req.rnr_wait)
		return;
	while (qp->req.wqe != qp->sq.tail) {
		struct ur_send_wqe *w = ur_sq_wqe(qp, qp->req.wqe);
		uint32_t psn = qp->req.psn;
		/* A PSN never sent before: a round trip may be timed on it. */
		bool fresh = !psn_lt(psn, qp->req.psn_max);
		bool done = false;
		int ret;

		if (ur_wr_is_local(w->opcode)) {
			if (!run_local(qp, w))
				return;
			continue;
		}
		if (w->offset == 0 && qp->kind->connect && !qp->kind->connect(qp, w))
			break;
		if (ur_qp_is_reliable(qp)) {
			if (window_full(qp))
				break;
			if ((w->send_flags & IBV_SEND_FENCE) && w->offset == 0 &&
			    qp->req.rd_atomic)
				break;
			if (ur_wr_is_rd_atomic(w->opcode) && rd_atomic_full(qp))
				break;
			if (waits_to_place(qp, w))
				break;
		}
		if (w->opcode == IBV_WR_RDMA_READ)
			ret = send_read_request(qp, w, &done);
		else if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
			 w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
			ret = send_atomic(qp, w, &done);
		else
			ret = send_data_packet(qp, w, &done);

		if (ret == -EAGAIN) {
			ur_tx_blocked(qp);
			break;
		}
		if (ret == -EFAULT) {
			ur_dbg(ur_qp_dev(qp), "QP 0x%06x: WR 0x%llx: an SGE is outside its "
			       "memory region or its lkey is invalid", ur_qp_num(qp),
			       (unsigned long long)w->wr_id);
			qp->req.wqe++;
			ur_qp_complete_send(qp, w, IBV_WC_LOC_PROT_ERR);
			ur_qp_to_error(qp, false);
			return;
		}
		if (ur_qp_is_reliable(qp)) {
			if (fresh && !qp->comp.rtt_sent_ns)
				ur_timers_sent(qp, psn);
			if (!qp->comp.retrans_deadline)
				ur_timers_arm_retrans(qp);
		}
		if (!done)
			continue;
		w->state = UR_WQE_SENT;
		qp->req.wqe++;
		if (!ur_qp_is_reliable(qp))
			ur_qp_complete_send(qp, w, IBV_WC_SUCCESS);   /* no ACKs to wait for */
	}
}

void ur_req_rewind(struct ur_qp *qp)
{
	uint32_t old_end = ur_ack_inflight_end(qp);
	bool found = false, first_data = true;

	qp->req.psn = qp->comp.psn;
	qp->req.noack = 0;
	qp->req.rd_atomic = 0;
	qp->req.blocked = false;
	qp->req.sel_pending = false;   /* everything from comp.psn goes again */
	qp->comp.sel_run = 0;
	ur_rs_forget(&qp->comp, 0, UR_MAX_UNACKED_PSNS);
	for (uint32_t i = qp->sq.head; i != old_end; i++) {
		struct ur_send_wqe *w = ur_sq_wqe(qp, i);

		if (w->state == UR_WQE_DONE)
			continue;
		if (ur_wr_is_local(w->opcode)) {
			/* Already executed: never again; the requester steps over it. */
			if (!found) {
				found = true;
				qp->req.wqe = i;
			}
			continue;
		}
		if (!found || first_data) {
			first_data = false;
			/* The oldest open WQE holds comp.psn: resume inside it. */
			uint32_t done_pkts = psn_lt(qp->comp.psn, w->first_psn) ? 0 :
					     (uint32_t)psn_diff(qp->comp.psn, w->first_psn);

			if (!found) {
				found = true;
				qp->req.wqe = i;
			}
			if (w->opcode == IBV_WR_RDMA_READ)
				w->offset = w->read_done;
			else if (ur_wr_is_rd_atomic(w->opcode))
				w->offset = 0;
			else
				w->offset = ur_min(done_pkts * qp->mtu, w->length);
			if (w->offset == w->length && w->length)
				w->offset = 0;   /* every packet acked but the WQE open: resend */
		} else {
			w->offset = 0;
			w->read_done = 0;
		}
		w->state = UR_WQE_POSTED;
	}
	if (!found)
		qp->req.wqe = old_end;
}

/* READ and atomic requests whose answers end within the take packets of w
 * from its offset on (a READ's answer ends with each chunk and with the
 * WQE). */
static uint32_t answers_ending(const struct ur_qp *qp, const struct ur_send_wqe *w, uint32_t take)
{
	uint32_t first, total, n = 0;

	if (!ur_wr_is_rd_atomic(w->opcode))
		return 0;
	if (w->opcode != IBV_WR_RDMA_READ || w->placed)
		return take;
	total = w->length ? (w->length + qp->mtu - 1) / qp->mtu : 1;
	first = w->offset / qp->mtu;
	for (uint32_t i = first; i < first + take; i++)
		if ((i + 1) % UR_READ_CHUNK_PKTS == 0 || i + 1 == total)
			n++;
	return n;
}

/* An ACK or NAK past what was resent since going back (go-back-N lowered
 * req.psn; the first transmission had gone further, up to req.psn_max): the
 * responder has every request before next.  The requester moves there as
 * if it had resent them: WQEs are segmented the same way every time, so
 * they get the PSNs of their first transmission. */
void ur_req_fast_forward(struct ur_qp *qp, uint32_t next)
{
	while (psn_lt(qp->req.psn, next) && qp->req.wqe != qp->sq.tail) {
		struct ur_send_wqe *w = ur_sq_wqe(qp, qp->req.wqe);
		uint32_t left = w->length - w->offset, pkts, take;

		if (ur_wr_is_local(w->opcode)) {
			if (w->state == UR_WQE_POSTED)
				break;          /* not executed yet: in order only */
			qp->req.wqe++;
			continue;
		}
		if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
		    w->placed)
			pkts = w->offset ? 0 : 1;
		else
			pkts = left ? (left + qp->mtu - 1) / qp->mtu : (w->offset ? 0 : 1);
		if (w->offset == 0)
			w->first_psn = qp->req.psn;
		take = ur_min(pkts, (uint32_t)psn_diff(next, qp->req.psn));
		/* The responder has these READs/atomics and their answers are
		 * still to come: they count against max_rd_atomic as if
		 * resent (each answer's last packet counts one off). */
		qp->req.rd_atomic += answers_ending(qp, w, take);
		if (take < pkts) {
			w->offset += take * qp->mtu;
			qp->req.psn = psn_add(qp->req.psn, take);
			break;
		}
		w->offset = w->length;
		w->last_psn = psn_add(qp->req.psn, pkts - 1);
		w->state = UR_WQE_SENT;
		qp->req.psn = psn_add(qp->req.psn, pkts);
		qp->req.wqe++;
	}
}

/* The WQE whose packets include psn, among those with packets out. */
static struct ur_send_wqe *wqe_of_psn(struct ur_qp *qp, uint32_t psn)
{
	uint32_t end = ur_ack_inflight_end(qp);

	for (uint32_t i = qp->sq.head; i != end; i++) {
		struct ur_send_wqe *w = ur_sq_wqe(qp, i);

		if (w->state == UR_WQE_DONE || ur_wr_is_local(w->opcode) || psn_lt(psn, w->first_psn))
			continue;
		if (w->state == UR_WQE_SENT ? psn_le(psn, w->last_psn) : i == qp->req.wqe)
			return w;
	}
	return NULL;
}

int ur_req_resend_one(struct ur_qp *qp, uint32_t psn)
{
	struct ur_send_wqe *w;
	uint32_t psn_now, offset_now, noack_now, off;
	bool done;
	int ret;

	if (!psn_lt(psn, qp->req.psn))
		return -EINVAL;          /* not sent since going back: it will be */
	w = wqe_of_psn(qp, psn);
	if (!w || ur_wr_is_rd_atomic(w->opcode) || w->placed || !w->place_tried)
		return -EINVAL;
	off = (uint32_t)psn_diff(psn, w->first_psn) * qp->mtu;
	if (off >= w->length && w->length)
		return -EINVAL;
	/* Build it where it was, then put the requester back. */
	psn_now = qp->req.psn;
	offset_now = w->offset;
	noack_now = qp->req.noack;
	qp->req.psn = psn;
	w->offset = off;
	qp->req.force_ackreq = true;
	ret = send_data_packet(qp, w, &done);
	qp->req.force_ackreq = false;
	qp->req.psn = psn_now;
	w->offset = offset_now;
	qp->req.noack = noack_now;
	if (ret == -EAGAIN)
		ur_tx_blocked(qp);
	if (ret)
		return ret;
	UR_QP_COUNT(qp, UR_CNT_SELECTIVE_RESENDS);
	ur_rs_set(&qp->comp, psn);
	ur_tx_flush(qp);
	return 0;
}
