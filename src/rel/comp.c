/* The completer: ACKs, NAKs, READ responses and atomic ACKs turn send WQEs
 * into completions; losses turn into go-back-N retransmission from the
 * oldest unacknowledged PSN. */
#include <errno.h>
#include <string.h>

#include "core/context.h"
#include "core/cq.h"
#include "core/mr.h"
#include "engine/engine.h"
#include "rel/rel.h"
#include "rel/rel_priv.h"
#include "util/clock.h"
#include "util/log.h"

#define QP_DEV(qp) ((qp)->ctx->dev->ibdev.name)

uint64_t ur_rel_timeout_ns(uint8_t timeout)
{
	uint64_t ns;

	if (!timeout)
		return 0;
	ns = 4096ull << timeout;
	return ns < UR_MIN_RETRANS_NS ? UR_MIN_RETRANS_NS : ns;
}

uint64_t ur_rel_rnr_timer_ns(uint8_t code)
{
	/* IBA table 45, microseconds; code 0 means 655.36 ms. */
	static const uint32_t us[32] = {
		655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
		1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
		40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
	};

	return (uint64_t)us[code & 31] * 1000ull;
}

void ur_comp_arm_retrans(struct ur_qp *qp)
{
	uint64_t t = ur_rel_timeout_ns(qp->attr.timeout);

	if (!t || qp->comp.psn == qp->req.psn) {
		qp->comp.retrans_deadline = 0;
	} else {
		qp->comp.retrans_deadline = ur_now_ns() + t;
	}
	ur_engine_timers_changed(qp);
}

/* Has the requester put packets of this WQE on the wire?  (A zero-length
 * message is done after its one packet with offset still 0.) */
static bool wqe_started(const struct ur_send_wqe *w)
{
	return w->offset || w->state == UR_WQE_SENT;
}

/* One past the newest WQE with packets on the wire: req.wqe itself counts
 * once the requester has started it. */
static uint32_t inflight_end(struct ur_qp *qp)
{
	if (qp->req.wqe != qp->sq.tail && wqe_started(ur_sq_wqe(qp, qp->req.wqe)))
		return qp->req.wqe + 1;
	return qp->req.wqe;
}

/* The oldest WQE not yet completed among those with packets out. */
static struct ur_send_wqe *head_wqe(struct ur_qp *qp)
{
	uint32_t end = inflight_end(qp);

	while (qp->sq.head != end) {
		struct ur_send_wqe *w = ur_sq_wqe(qp, qp->sq.head);

		if (w->state != UR_WQE_DONE)
			return w;
		qp->sq.head++;
	}
	return NULL;
}

void ur_req_rewind(struct ur_qp *qp)
{
	uint32_t old_end = inflight_end(qp);
	bool found = false, first_data = true;

	qp->req.psn = qp->comp.psn;
	qp->req.noack = 0;
	qp->req.rd_atomic = 0;
	qp->req.blocked = false;
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

static void progressed(struct ur_qp *qp, uint32_t new_psn);

/* A WQE acknowledged, explicitly or implied by a later response: comp.psn
 * moves past it too.  Otherwise a retry would start before it and resend
 * what follows it at PSNs the responder already used for other requests. */
static void complete_ok(struct ur_qp *qp, struct ur_send_wqe *w)
{
	if (ur_wr_is_rd_atomic(w->opcode) && qp->req.rd_atomic)
		qp->req.rd_atomic--;
	ur_qp_complete_send(qp, w, IBV_WC_SUCCESS);
	if (psn_ge(w->last_psn, qp->comp.psn) && psn_lt(w->last_psn, qp->req.psn_max))
		progressed(qp, psn_inc(w->last_psn));
}

/* Progress: window growth, fresh retry budget, timer restart. */
static void progressed(struct ur_qp *qp, uint32_t new_psn)
{
	uint32_t acked = (uint32_t)psn_diff(new_psn, qp->comp.psn);

	qp->comp.psn = new_psn;
	qp->comp.retrying = false;
	qp->comp.retry_left = qp->attr.retry_cnt;
	qp->comp.rnr_retry_left = qp->attr.rnr_retry;
	if (qp->req.cwnd < UR_MAX_UNACKED_PSNS) {
		qp->req.cwnd += ur_max(acked / ur_max(qp->req.cwnd, 1u), 1u);
		qp->req.cwnd = ur_min(qp->req.cwnd, UR_MAX_UNACKED_PSNS);
	}
	ur_comp_arm_retrans(qp);
}

static void shrink_cwnd(struct ur_qp *qp)
{
	qp->req.cwnd = ur_max(qp->req.cwnd / 2, UR_CWND_MIN);
}

/* An error that ends the QP: the WQE at the head completes with status. */
static void fail(struct ur_qp *qp, struct ur_send_wqe *w, enum ibv_wc_status status)
{
	ur_err(QP_DEV(qp), "QP 0x%06x: WR 0x%llx failed: %s", ur_qp_num(qp),
	       (unsigned long long)(w ? w->wr_id : 0), ibv_wc_status_str(status));
	if (w)
		ur_qp_complete_send(qp, w, status);
	ur_qp_to_error(qp, false);
}

static void retry(struct ur_qp *qp)
{
	struct ur_send_wqe *w = head_wqe(qp);

	if (!qp->comp.retry_left) {
		UR_QP_COUNT(qp, UR_CNT_RETRY_EXCEEDED_ERR);
		fail(qp, w, IBV_WC_RETRY_EXC_ERR);
		return;
	}
	ur_dbg(QP_DEV(qp), "QP 0x%06x: retry from PSN 0x%06x (sent up to 0x%06x, cwnd %u, %u left)",
	       ur_qp_num(qp), qp->comp.psn, qp->req.psn, qp->req.cwnd, qp->comp.retry_left);
	qp->comp.retry_left--;
	qp->comp.retrying = true;
	UR_QP_COUNT(qp, UR_CNT_COMPLETER_RETRY_ERR);
	shrink_cwnd(qp);
	ur_req_rewind(qp);
	ur_comp_arm_retrans(qp);
	ur_req_run(qp);
}

/* Everything up to and including psn is acknowledged.  Returns false if a
 * READ/ATOMIC in that range still lacks its response: the responder has
 * executed it, so its responses were lost.  comp.psn never passes the
 * first response PSN a READ/ATOMIC still waits for. */
static bool ack_through(struct ur_qp *qp, uint32_t psn)
{
	struct ur_send_wqe *w;

	while ((w = head_wqe(qp))) {
		if (ur_wr_is_rd_atomic(w->opcode)) {
			if (psn_ge(psn, w->first_psn)) {
				/* What precedes the READ/ATOMIC is acknowledged:
				 * a retry resumes at the READ/ATOMIC's own PSN. */
				if (psn_gt(w->first_psn, qp->comp.psn))
					progressed(qp, w->first_psn);
				return false;
			}
			break;
		}
		if (w->state != UR_WQE_SENT || psn_lt(psn, w->last_psn))
			break;
		complete_ok(qp, w);
	}
	if (psn_ge(psn, qp->comp.psn) && psn_lt(psn, qp->req.psn))
		progressed(qp, psn_inc(psn));
	return true;
}

void ur_comp_retire(struct ur_qp *qp)
{
	ack_through(qp, psn_add(qp->comp.psn, UR_PSN_MASK));
}

static void on_ack(struct ur_qp *qp, const struct ur_pkt_view *pkt)
{
	uint8_t syn = aeth_syn(pkt->bth + ur_opcode[pkt->opcode].offset[UR_HDR_AETH]);
	uint32_t psn = pkt->psn;
	struct ur_send_wqe *w;

	switch (syn & UR_AETH_TYPE_MASK) {
	case UR_AETH_ACK:
		/* Past a READ/ATOMIC still waiting: its response was lost.  Every
		 * later ACK says so again; one retry answers them all. */
		if (!ack_through(qp, psn) && !qp->comp.retrying)
			retry(qp);
		return;
	case UR_AETH_RNR_NAK:
		UR_QP_COUNT(qp, UR_CNT_RCVD_RNR_ERR);
		/* What precedes the NAKed PSN is acknowledged, up to a READ/ATOMIC
		 * still waiting for its response: comp.psn stops there (never
		 * past a request that must be sent again at its own PSN). */
		ack_through(qp, psn_add(psn, UR_PSN_MASK));
		if (!qp->comp.rnr_retry_left) {
			UR_QP_COUNT(qp, UR_CNT_RETRY_RNR_EXCEEDED_ERR);
			fail(qp, head_wqe(qp), IBV_WC_RNR_RETRY_EXC_ERR);
			return;
		}
		if (qp->attr.rnr_retry != 7)
			qp->comp.rnr_retry_left--;
		ur_req_rewind(qp);
		qp->comp.retrying = true;   /* a NAK for the same PSN is no news */
		qp->req.rnr_wait = true;
		qp->comp.retrans_deadline = 0;
		qp->comp.rnr_deadline = ur_now_ns() + ur_rel_rnr_timer_ns(syn & 0x1f);
		ur_engine_timers_changed(qp);
		return;
	case UR_AETH_NAK:
		UR_QP_COUNT(qp, UR_CNT_RCVD_NAK);
		ack_through(qp, psn_add(psn, UR_PSN_MASK));   /* as for RNR */
		if (syn == UR_NAK_PSN_SEQ_ERR) {
			UR_QP_COUNT(qp, UR_CNT_RCVD_SEQ_ERR);
			/* A new gap comes with progress (ack_through clears
			 * retrying); one for where we went back to already is
			 * stale: packets sent before going back met the gap. */
			if (!qp->comp.retrying)
				retry(qp);
			return;
		}
		w = head_wqe(qp);
		fail(qp, w, syn == UR_NAK_REM_ACCESS_ERR ? IBV_WC_REM_ACCESS_ERR :
			     syn == UR_NAK_INVALID_REQ ? IBV_WC_REM_INV_REQ_ERR :
			     IBV_WC_REM_OP_ERR);
		return;
	default:
		return;   /* reserved syndrome: ignore */
	}
}

/* The READ WQE owning a response PSN, after completing what precedes it. */
static struct ur_send_wqe *read_wqe_for(struct ur_qp *qp, uint32_t psn)
{
	struct ur_send_wqe *w;

	while ((w = head_wqe(qp))) {
		if (w->opcode == IBV_WR_RDMA_READ && wqe_started(w))
			return psn_ge(psn, w->first_psn) ? w : NULL;
		/* A response implicitly acknowledges every earlier request. */
		if (w->state != UR_WQE_SENT || ur_wr_is_rd_atomic(w->opcode) ||
		    !psn_lt(w->last_psn, psn))
			return NULL;
		complete_ok(qp, w);
	}
	return NULL;
}

static void on_read_response(struct ur_qp *qp, const struct ur_pkt_view *pkt)
{
	uint32_t psn = pkt->psn, off;
	struct ur_send_wqe *w;
	bool last = pkt->mask & UR_OPF_LAST;
	bool ok;

	w = read_wqe_for(qp, psn);
	if (!w)
		return;
	/* The requests before the READ are acknowledged by its response. */
	if (psn_gt(w->first_psn, qp->comp.psn))
		progressed(qp, w->first_psn);
	if (psn != qp->comp.psn) {
		/* A gap: responses were lost.  One retry per gap: the rest of
		 * the old response stream is still arriving behind this one. */
		if (psn_gt(psn, qp->comp.psn) && !qp->req.rnr_wait && !qp->comp.retrying)
			retry(qp);
		return;
	}
	off = (uint32_t)psn_diff(psn, w->first_psn) * qp->mtu;
	if (off != w->read_done || off + pkt->paylen > w->length ||
	    (!last && pkt->paylen != qp->mtu)) {
		fail(qp, w, IBV_WC_BAD_RESP_ERR);
		return;
	}
	ur_mr_read_lock(&qp->ctx->mrs);
	ok = ur_copy_to_sges(qp, w->sge, w->num_sge, off, pkt->payload, pkt->paylen);
	ur_mr_read_unlock(&qp->ctx->mrs);
	if (!ok) {
		fail(qp, w, IBV_WC_LOC_PROT_ERR);
		return;
	}
	w->read_done += pkt->paylen;
	if (last && qp->req.rd_atomic)
		qp->req.rd_atomic--;         /* one READ request answered */
	progressed(qp, psn_inc(psn));
	if (w->read_done == w->length && w->state == UR_WQE_SENT && last) {
		ur_qp_complete_send(qp, w, IBV_WC_SUCCESS);
	}
}

static void on_atomic_ack(struct ur_qp *qp, const struct ur_pkt_view *pkt)
{
	const struct ur_opcode_info *info = &ur_opcode[pkt->opcode];
	uint64_t orig = atmack_orig(pkt->bth + info->offset[UR_HDR_ATMACK]);
	struct ur_send_wqe *w;
	bool ok;

	while ((w = head_wqe(qp))) {
		if (ur_wr_is_rd_atomic(w->opcode))
			break;
		if (w->state != UR_WQE_SENT || !psn_lt(w->last_psn, pkt->psn))
			return;
		complete_ok(qp, w);
	}
	if (!w || w->state != UR_WQE_SENT || psn_lt(pkt->psn, w->first_psn))
		return;
	/* The requests before the oldest READ/ATOMIC are acknowledged. */
	if (psn_gt(w->first_psn, qp->comp.psn))
		progressed(qp, w->first_psn);
	if (w->opcode == IBV_WR_RDMA_READ || w->first_psn != pkt->psn) {
		/* Responses come in order: the older READ/ATOMIC's was lost.
		 * Ask again now rather than at the timeout (once per loss). */
		if (!qp->comp.retrying)
			retry(qp);
		return;
	}
	ur_mr_read_lock(&qp->ctx->mrs);
	ok = ur_copy_to_sges(qp, w->sge, w->num_sge, 0, (const uint8_t *)&orig, 8);
	ur_mr_read_unlock(&qp->ctx->mrs);
	if (!ok) {
		fail(qp, w, IBV_WC_LOC_PROT_ERR);
		return;
	}
	progressed(qp, psn_inc(pkt->psn));
	complete_ok(qp, w);
}

/* An ACK or NAK past what was resent since going back (go-back-N lowered
 * req.psn; the first transmission had gone further, up to req.psn_max): the
 * responder has every request before next.  The requester moves there as
 * if it had resent them: WQEs are segmented the same way every time, so
 * they get the PSNs of their first transmission. */
static void fast_forward(struct ur_qp *qp, uint32_t next)
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
		if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
			pkts = w->offset ? 0 : 1;
		else
			pkts = left ? (left + qp->mtu - 1) / qp->mtu : (w->offset ? 0 : 1);
		if (w->offset == 0)
			w->first_psn = qp->req.psn;
		take = ur_min(pkts, (uint32_t)psn_diff(next, qp->req.psn));
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

void ur_comp_rx(struct ur_qp *qp, const struct ur_pkt_view *pkt)
{
	uint8_t low = pkt->opcode & 0x1f;

	if (!ur_qp_is_reliable(qp) || (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD))
		return;
	/* Only responses to what is outstanding count.  An ACK/NAK may
	 * acknowledge what was sent before going back (a duplicate is
	 * acknowledged with the newest PSN the responder has). */
	if (psn_lt(pkt->psn, qp->comp.psn) ||
	    psn_ge(pkt->psn, low == UR_OPL_ACKNOWLEDGE ? qp->req.psn_max : qp->req.psn)) {
		UR_QP_COUNT(qp, UR_CNT_DROPPED);
		return;
	}
	if (low == UR_OPL_ACKNOWLEDGE && psn_ge(pkt->psn, qp->req.psn)) {
		uint8_t syn = aeth_syn(pkt->bth + ur_opcode[pkt->opcode].offset[UR_HDR_AETH]);

		/* An ACK covers its own PSN; a NAK what precedes it. */
		fast_forward(qp, ur_aeth_type(syn) == UR_AETH_ACK ? psn_inc(pkt->psn) : pkt->psn);
	}
	if (low == UR_OPL_ACKNOWLEDGE)
		on_ack(qp, pkt);
	else if (low == UR_OPL_ATOMIC_ACKNOWLEDGE)
		on_atomic_ack(qp, pkt);
	else
		on_read_response(qp, pkt);
	/* Local operations (BIND_MW, LOCAL_INV) behind what just completed
	 * complete now: no ACK may ever come for them, when a READ or an
	 * atomic was the last request before them. */
	if (qp->state == IBV_QPS_RTS || qp->state == IBV_QPS_SQD)
		ur_comp_retire(qp);
	if (qp->state == IBV_QPS_RTS)
		ur_req_run(qp);
}

void ur_comp_timers(struct ur_qp *qp, uint64_t now)
{
	if (qp->state != IBV_QPS_RTS)
		return;
	if (qp->comp.rnr_deadline && qp->comp.rnr_deadline <= now) {
		qp->comp.rnr_deadline = 0;
		qp->req.rnr_wait = false;
		ur_comp_arm_retrans(qp);
		ur_req_run(qp);
	}
	if (qp->comp.retrans_deadline && qp->comp.retrans_deadline <= now) {
		qp->comp.retrans_deadline = 0;
		if (qp->comp.psn != qp->req.psn)
			retry(qp);
	}
}
