#include "rel/resp_out.h"

#include <errno.h>
#include <string.h>

#include "core/cq.h"
#include "core/mr.h"
#include "rel/qp_error.h"
#include "rel/rel_priv.h"
#include "rel/tx.h"
#include "util/log.h"

static int send_ack(struct ur_qp *qp)
{
	struct ur_tx_pkt p;
	uint8_t *a;

	ur_tx_init(qp, &p, ur_qp_op_base(qp) | UR_OPL_ACKNOWLEDGE, 0, false, qp->attr.dest_qp_num,
		   false, qp->resp.ack_psn);
	a = ur_tx_hdr(&p, UR_HDR_AETH);
	aeth_set_syn(a, qp->resp.ack_syn);
	aeth_set_msn(a, qp->resp.ack_msn);
	return ur_tx_send(qp, &qp->path, &p);
}

void ur_resp_queue_ack(struct ur_qp *qp, uint8_t syn, uint32_t psn)
{
	struct ur_resp_state *r = &qp->resp;

	/* An ACK held for the batch's end (resp_batch.h) leaves before a NAK
	 * or a gap report takes its place (a gap report acknowledges
	 * nothing); not ahead of responses still queued, which it would
	 * acknowledge. */
	if (syn != UR_AETH_ACK_UNLIMITED && r->ack_held && r->ack_pending &&
	    r->ack_syn == UR_AETH_ACK_UNLIMITED && r->res_tx == r->res_next && !qp->req.blocked)
		send_ack(qp);   /* if refused, as if lost: a later ACK covers it */
	r->ack_pending = true;
	r->ack_syn = syn;
	r->ack_psn = psn;
	r->ack_msn = r->msn;
}

/* One READ response packet from resource res. */
static int send_read_response(struct ur_qp *qp, struct ur_resp_res *res)
{
	uint32_t len = res->placed ? res->resid : ur_min(res->resid, qp->mtu);
	bool first = res->resid == res->length, last = res->placed || res->resid <= qp->mtu;
	uint8_t low = first ? (last ? UR_OPL_RDMA_READ_RESPONSE_ONLY : UR_OPL_RDMA_READ_RESPONSE_FIRST)
			    : (last ? UR_OPL_RDMA_READ_RESPONSE_LAST : UR_OPL_RDMA_READ_RESPONSE_MIDDLE);
	uint8_t op = ur_qp_op_base(qp) | low;
	struct ur_tx_pkt p;
	void *src = NULL;
	int ret;

	ur_tx_init(qp, &p, op, res->placed ? 0 : len, false, qp->attr.dest_qp_num, false,
		   res->cur_psn);
	if (ur_opcode[op].mask & UR_OPF_AETH) {
		uint8_t *a = ur_tx_hdr(&p, UR_HDR_AETH);

		aeth_set_syn(a, UR_AETH_ACK_UNLIMITED);
		aeth_set_msn(a, res->msn);
	}
	ur_mr_read_lock(&qp->ctx->mrs);
	if (len) {
		src = ur_mr_check_remote(&qp->ctx->mrs, res->rkey, res->pd, qp, res->va, len,
				  IBV_ACCESS_REMOTE_READ);
		if (!src) {
			/* Deregistered while the read was being answered. */
			ur_mr_read_unlock(&qp->ctx->mrs);
			return -EFAULT;
		}
		p.iov[0] = (struct iovec){ src, len };
		p.niov = 1;
	}
	p.paylen = len;
	if (res->placed) {
		p.niov = 0;
		p.paylen = 0;
		p.placed = len;
	}
	ret = ur_tx_send(qp, &qp->path, &p);
	ur_mr_read_unlock(&qp->ctx->mrs);
	if (ret)
		return ret;
	res->cur_psn = psn_inc(res->cur_psn);
	res->va += len;
	res->resid -= len;
	if (last) {
		res->pending = false;
		res->answered = true;
	}
	return 0;
}

static int send_atomic_ack(struct ur_qp *qp, struct ur_resp_res *res)
{
	struct ur_tx_pkt p;
	int ret;

	ur_tx_init(qp, &p, ur_qp_op_base(qp) | UR_OPL_ATOMIC_ACKNOWLEDGE, 0, false,
		   qp->attr.dest_qp_num, false, res->first_psn);
	aeth_set_syn(ur_tx_hdr(&p, UR_HDR_AETH), UR_AETH_ACK_UNLIMITED);
	aeth_set_msn(ur_tx_hdr(&p, UR_HDR_AETH), res->msn);
	atmack_set_orig(ur_tx_hdr(&p, UR_HDR_ATMACK), res->atomic_orig);
	ret = ur_tx_send(qp, &qp->path, &p);
	if (!ret) {
		res->pending = false;
		res->answered = true;
	}
	return ret;
}

void ur_resp_tx(struct ur_qp *qp)
{
	struct ur_resp_state *r = &qp->resp;
	bool failed = false;
	int ret = 0;

	if (!ur_qp_is_reliable(qp) || qp->req.blocked)
		return;
	/* READ/ATOMIC answers leave in PSN order, then the newest ACK (an ACK
	 * must not overtake the responses to earlier requests). */
	while (r->res_tx != r->res_next) {
		struct ur_resp_res *res = &r->res[r->res_tx % r->nres];

		while (res->pending && !ret)
			ret = res->type == UR_RES_READ ? send_read_response(qp, res)
						       : send_atomic_ack(qp, res);
		if (ret == -EFAULT) {
			/* The region was deregistered while the READ was being
			 * answered: a remote access error like any other (NAK,
			 * then ERROR), and nothing after it goes out. */
			res->pending = false;
			ur_resp_queue_ack(qp, UR_NAK_REM_ACCESS_ERR, res->cur_psn);
			failed = true;
			ret = 0;
			break;
		}
		if (ret)
			break;
		r->res_tx++;
	}
	if (!ret && r->ack_pending) {
		ret = send_ack(qp);
		if (!ret)
			r->ack_pending = false;
	}
	if (ret == -EAGAIN)
		ur_tx_blocked(qp);
	ur_tx_flush(qp);
	if (failed && qp->state != IBV_QPS_ERR)
		ur_qp_to_error(qp, false);
}

struct ur_resp_res *ur_resp_take_res(struct ur_qp *qp)
{
	struct ur_resp_state *r = &qp->resp;
	struct ur_resp_res *res;

	if (!r->nres)
		return NULL;
	if (r->res_next - r->res_tx >= r->nres) {
		uint32_t k = r->res_tx;

		/* Every slot still has output.  A slot whose answer went out
		 * once, or that a duplicate took (a repeat), gives way: the
		 * requester had that answer and counts it no more, or asks
		 * again for what it still misses.  The oldest such goes; the
		 * slots before it move up one, keeping the order answers leave
		 * in.  If none was ever answered, the requester went over its
		 * limit.  (A late duplicate may sit in any slot, not only the
		 * oldest: one behind an answer still waiting to leave made the
		 * next new request look like one too many.) */
		while (k != r->res_next && !r->res[k % r->nres].answered)
			k++;
		if (k == r->res_next)
			return NULL;
		for (; k != r->res_tx; k--)
			r->res[k % r->nres] = r->res[(k - 1) % r->nres];
		r->res_tx++;
	}
	res = &r->res[r->res_next % r->nres];
	r->res_next++;
	memset(res, 0, sizeof(*res));
	return res;
}

bool ur_resp_res_again(struct ur_qp *qp, uint8_t type, uint32_t psn, uint64_t va, uint32_t len)
{
	struct ur_resp_state *r = &qp->resp;

	/* Newest first: the slots res_next - 1 back to res_next - nres hold
	 * the last nres requests. */
	for (uint32_t k = 1; k <= r->nres && k <= r->res_next; k++) {
		uint32_t slot = r->res_next - k;
		struct ur_resp_res *res = &r->res[slot % r->nres];

		if (res->type != type || psn_lt(psn, res->first_psn) || psn_gt(psn, res->last_psn))
			continue;
		if (type == UR_RES_READ) {
			/* The requester asks for the rest from psn on: a new
			 * FIRST there, as for a request of its own. */
			res->cur_psn = psn;
			res->va = va;
			res->resid = len;
			res->length = len;
		} else if (psn != res->first_psn) {
			return false;
		}
		res->pending = true;
		if ((int32_t)(slot - r->res_tx) < 0)
			r->res_tx = slot;   /* earlier slots already sent stay skipped */
		return true;
	}
	return false;
}

/* A tag-matching SRQ's receive: its opcode and flags (core/srq_tm.h). */
static void tm_fill(const struct ur_tm_match *m, struct ibv_wc *wc, enum ibv_wc_status status)
{
	if (m->kind == UR_TM_NONE || status != IBV_WC_SUCCESS)
		return;
	wc->opcode = m->kind == UR_TM_NO_TAG ? IBV_WC_TM_NO_TAG : IBV_WC_TM_RECV;
	if (m->kind == UR_TM_EAGER)
		wc->wc_flags |= IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID;
	else if (m->kind == UR_TM_RNDV)
		wc->wc_flags |= IBV_WC_TM_MATCH;
}

void ur_resp_complete_recv(struct ur_qp *qp, enum ibv_wc_status status,
			   const struct ur_pkt_view *pkt, uint32_t byte_len, bool write_imm)
{
	struct ibv_wc wc = {
		.wr_id = qp->resp.rwqe->wr_id,
		.status = status,
		.opcode = write_imm ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
		.byte_len = byte_len,
		.qp_num = ur_qp_num(qp),
		.src_qp = qp->attr.dest_qp_num,
	};
	bool se = false;

	if (pkt && status == IBV_WC_SUCCESS) {
		const struct ur_opcode_info *info = &ur_opcode[pkt->opcode];

		if (info->mask & UR_OPF_IMMDT) {
			wc.imm_data = immdt_get(pkt->bth + info->offset[UR_HDR_IMMDT]);
			wc.wc_flags |= IBV_WC_WITH_IMM;
		}
		if (info->mask & UR_OPF_IETH) {
			wc.invalidated_rkey = ieth_rkey(pkt->bth + info->offset[UR_HDR_IETH]);
			wc.wc_flags |= IBV_WC_WITH_INV;
		}
		se = bth_se(pkt->bth);
	}
	tm_fill(&qp->resp.tm, &wc, status);
	qp->resp.recv_active = false;
	UR_QP_COUNT(qp, UR_CNT_RDMA_RECVS);
	if (ur_cq_push_tm(ur_resp_cq(qp), &wc, se, qp->resp.tm.tag, qp->resp.tm.priv) == -ENOSPC)
		qp->cq_overrun = true;
	qp->resp.tm.kind = UR_TM_NONE;
	qp->resp.tm_skip = 0;
}

void ur_resp_refuse(struct ur_qp *qp, uint8_t nak, const char *what)
{
	if (!ur_qp_is_reliable(qp)) {
		qp->resp.drop_msg = true;
		qp->resp.opcode = -1;
		UR_QP_COUNT(qp, UR_CNT_DROPPED);
		return;
	}
	ur_dbg(ur_qp_dev(qp), "QP 0x%06x: %s: NAK 0x%02x", ur_qp_num(qp), what, nak);
	ur_resp_queue_ack(qp, nak, qp->resp.psn);
	ur_resp_tx(qp);
	if (qp->resp.recv_active)
		ur_resp_complete_recv(qp, nak == UR_NAK_INVALID_REQ ? IBV_WC_REM_INV_REQ_ERR
							     : IBV_WC_REM_ACCESS_ERR, NULL, 0, false);
	ur_qp_to_error(qp, false);
}

void ur_resp_answer(struct ur_qp *qp, uint8_t syn, uint32_t psn)
{
	ur_resp_queue_ack(qp, syn, psn);
	ur_resp_tx(qp);
}
