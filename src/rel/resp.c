/* The responder: executes incoming requests in PSN order (SEND into a
 * receive WQE, WRITE into a memory region, READ and ATOMIC answered from a
 * resource ring), detects duplicates and gaps, and answers with ACKs and
 * NAKs.  A bad rkey, an access outside the region or without permission is
 * refused before a single byte is touched. */
#include <errno.h>
#include <string.h>

#include "core/context.h"
#include "core/cq.h"
#include "core/mr.h"
#include "core/srq.h"
#include "core/xrcd.h"
#include "engine/engine.h"
#include "rel/rel.h"
#include "rel/rel_priv.h"
#include "rel/xrc.h"
#include "util/copy.h"
#include "util/log.h"
#include "wire/grh.h"

#define QP_DEV(qp) ((qp)->ctx->dev->ibdev.name)

/* An XRC target has no PD, CQ or SRQ of its own: those of the XRC SRQ the
 * current message names stand in. */
static struct ur_pd *resp_pd(struct ur_qp *qp)
{
	return qp->type == IBV_QPT_XRC_RECV ? qp->resp_srq->pd : qp->pd;
}

static struct ur_srq *resp_srq(struct ur_qp *qp)
{
	return qp->type == IBV_QPT_XRC_RECV ? qp->resp_srq : qp->srq;
}

static struct ur_cq *resp_cq(struct ur_qp *qp)
{
	return qp->type == IBV_QPT_XRC_RECV ? qp->resp_srq->cq : qp->rcq;
}

bool ur_copy_to_sges(struct ur_qp *qp, const struct ibv_sge *sge, uint32_t nsge,
		     uint32_t off, const uint8_t *src, uint32_t len)
{
	struct ur_pd *pd = qp->type == IBV_QPT_XRC_RECV ? qp->resp_srq->pd : qp->pd;

	return ur_copy_to_sges_pd(&qp->ctx->mrs, pd, sge, nsge, off, src, len);
}

bool ur_copy_to_sges_pd(struct ur_mr_table *mrs, struct ur_pd *pd, const struct ibv_sge *sge,
			uint32_t nsge, uint32_t off, const uint8_t *src, uint32_t len)
{
	for (uint32_t i = 0; i < nsge && len; i++) {
		uint32_t take;
		void *dst;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		take = ur_min(sge[i].length - off, len);
		dst = ur_mr_check(mrs, sge[i].lkey, pd, sge[i].addr + off, take,
				  IBV_ACCESS_LOCAL_WRITE);
		if (!dst)
			return false;
		ur_memcpy(dst, src, take);
		src += take;
		len -= take;
		off = 0;
	}
	return len == 0;
}

/* ---- answers ------------------------------------------------------------ */

static void queue_ack(struct ur_qp *qp, uint8_t syn, uint32_t psn)
{
	qp->resp.ack_pending = true;
	qp->resp.ack_syn = syn;
	qp->resp.ack_psn = psn;
	qp->resp.ack_msn = qp->resp.msn;
}

static int send_ack(struct ur_qp *qp)
{
	uint8_t op = ur_qp_op_base(qp) | UR_OPL_ACKNOWLEDGE;
	const struct ur_opcode_info *info = &ur_opcode[op];
	struct ur_tx_pkt p = { .hdr_len = info->length };
	uint8_t *a;

	memset(p.hdr, 0, p.hdr_len);
	ur_put_bth(qp, &p, op, false, qp->attr.dest_qp_num, false, qp->resp.ack_psn);
	a = p.hdr + info->offset[UR_HDR_AETH];
	aeth_set_syn(a, qp->resp.ack_syn);
	aeth_set_msn(a, qp->resp.ack_msn);
	return ur_rel_send(qp, &qp->path, &p);
}

/* One READ response packet from resource res. */
static int send_read_response(struct ur_qp *qp, struct ur_resp_res *res)
{
	uint32_t len = ur_min(res->resid, qp->mtu);
	bool first = res->resid == res->length, last = res->resid <= qp->mtu;
	uint8_t low = first ? (last ? UR_OPL_RDMA_READ_RESPONSE_ONLY : UR_OPL_RDMA_READ_RESPONSE_FIRST)
			    : (last ? UR_OPL_RDMA_READ_RESPONSE_LAST : UR_OPL_RDMA_READ_RESPONSE_MIDDLE);
	uint8_t op = ur_qp_op_base(qp) | low;
	const struct ur_opcode_info *info = &ur_opcode[op];
	struct ur_tx_pkt p = { .hdr_len = info->length, .pad = (uint8_t)ur_pad_of(len) };
	void *src = NULL;
	int ret;

	memset(p.hdr, 0, p.hdr_len);
	ur_put_bth(qp, &p, op, false, qp->attr.dest_qp_num, false, res->cur_psn);
	if (info->mask & UR_OPF_AETH) {
		uint8_t *a = p.hdr + info->offset[UR_HDR_AETH];

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
	ret = ur_rel_send(qp, &qp->path, &p);
	ur_mr_read_unlock(&qp->ctx->mrs);
	if (ret)
		return ret;
	res->cur_psn = psn_inc(res->cur_psn);
	res->va += len;
	res->resid -= len;
	if (last)
		res->pending = false;
	return 0;
}

static int send_atomic_ack(struct ur_qp *qp, struct ur_resp_res *res)
{
	uint8_t op = ur_qp_op_base(qp) | UR_OPL_ATOMIC_ACKNOWLEDGE;
	const struct ur_opcode_info *info = &ur_opcode[op];
	struct ur_tx_pkt p = { .hdr_len = info->length };
	int ret;

	memset(p.hdr, 0, p.hdr_len);
	ur_put_bth(qp, &p, op, false, qp->attr.dest_qp_num, false, res->first_psn);
	aeth_set_syn(p.hdr + info->offset[UR_HDR_AETH], UR_AETH_ACK_UNLIMITED);
	aeth_set_msn(p.hdr + info->offset[UR_HDR_AETH], res->msn);
	atmack_set_orig(p.hdr + info->offset[UR_HDR_ATMACK], res->atomic_orig);
	ret = ur_rel_send(qp, &qp->path, &p);
	if (!ret)
		res->pending = false;
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
			queue_ack(qp, UR_NAK_REM_ACCESS_ERR, res->cur_psn);
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
	if (ret == -EAGAIN) {
		qp->req.blocked = true;
		ur_engine_tx_blocked(qp);
	}
	ur_rel_flush(qp);
	if (failed && qp->state != IBV_QPS_ERR)
		ur_qp_to_error(qp, false);
}

static struct ur_resp_res *take_res(struct ur_qp *qp)
{
	struct ur_resp_state *r = &qp->resp;
	struct ur_resp_res *res;

	if (!r->nres || r->res_next - r->res_tx >= r->nres)
		return NULL;     /* every slot still has output: over the limit */
	res = &r->res[r->res_next % r->nres];
	r->res_next++;
	memset(res, 0, sizeof(*res));
	return res;
}

/* ---- completions -------------------------------------------------------- */

static void complete_recv(struct ur_qp *qp, enum ibv_wc_status status,
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
	qp->resp.recv_active = false;
	UR_QP_COUNT(qp, UR_CNT_RDMA_RECVS);
	if (ur_cq_push(resp_cq(qp), &wc, se) == -ENOSPC)
		qp->cq_overrun = true;
}

/* The next receive WQE, from the SRQ or the QP's own RQ, into resp.rwqe. */
static bool get_recv(struct ur_qp *qp)
{
	if (qp->resp.recv_active)
		return true;
	if (resp_srq(qp)) {
		if (!ur_srq_take(resp_srq(qp), qp->resp.rwqe))
			return false;
		qp->resp.recv_from_srq = true;
	} else {
		struct ur_recv_wqe *w;

		if (ur_wq_empty(&qp->rq))
			return false;
		w = ur_wq_slot(&qp->rq, qp->rq.head);
		memcpy(qp->resp.rwqe, w, sizeof(*w) + w->num_sge * sizeof(struct ibv_sge));
		qp->rq.head++;
		qp->resp.recv_from_srq = false;
	}
	qp->resp.recv_active = true;
	qp->resp.recv_offset = 0;
	return true;
}

/* ---- errors ------------------------------------------------------------- */

/* A request that cannot be executed: NAK it (RC) and end the QP.  UC has
 * no NAKs: the message is dropped and the QP carries on. */
static void request_error(struct ur_qp *qp, uint8_t nak, const char *what)
{
	if (!ur_qp_is_reliable(qp)) {
		qp->resp.drop_msg = true;
		qp->resp.opcode = -1;
		UR_QP_COUNT(qp, UR_CNT_DROPPED);
		return;
	}
	ur_warn_ratelimited(QP_DEV(qp), "QP 0x%06x: %s: NAK 0x%02x", ur_qp_num(qp), what, nak);
	queue_ack(qp, nak, qp->resp.psn);
	ur_resp_tx(qp);
	if (qp->resp.recv_active)
		complete_recv(qp, nak == UR_NAK_INVALID_REQ ? IBV_WC_REM_INV_REQ_ERR
							     : IBV_WC_REM_ACCESS_ERR, NULL, 0, false);
	ur_qp_to_error(qp, false);
}

void ur_resp_answer(struct ur_qp *qp, uint8_t syn, uint32_t psn)
{
	queue_ack(qp, syn, psn);
	ur_resp_tx(qp);
}

void ur_resp_fail(struct ur_qp *qp, uint8_t nak, const char *what)
{
	request_error(qp, nak, what);
}

/* ---- requests ----------------------------------------------------------- */

static bool seq_ok(struct ur_qp *qp, const struct ur_pkt_view *pkt)
{
	int cur = qp->resp.opcode;
	uint32_t m = pkt->mask;

	if (cur < 0)
		return m & UR_OPF_START;
	/* Mid-message: only MIDDLE/LAST of the same kind. */
	if (m & UR_OPF_START)
		return false;
	if ((ur_opcode[cur].mask & UR_OPF_SEND) && !(m & UR_OPF_SEND))
		return false;
	if ((ur_opcode[cur].mask & UR_OPF_WRITE) && !(m & UR_OPF_WRITE))
		return false;
	return true;
}

static bool length_ok(struct ur_qp *qp, const struct ur_pkt_view *pkt)
{
	uint32_t m = pkt->mask;

	if ((m & UR_OPF_START) && (m & UR_OPF_END))
		return pkt->paylen <= qp->mtu;
	if (m & (UR_OPF_START | UR_OPF_MIDDLE))
		return pkt->paylen == qp->mtu;
	return pkt->paylen <= qp->mtu;
}

/* Returns false if the request failed (the QP may be in error). */
static bool do_send(struct ur_qp *qp, const struct ur_pkt_view *pkt, bool *rnr)
{
	struct ur_recv_wqe *w;
	bool ok;

	if (!get_recv(qp)) {
		*rnr = true;
		return false;
	}
	w = qp->resp.rwqe;
	if (qp->resp.recv_offset + pkt->paylen > w->length) {
		ur_warn_ratelimited(QP_DEV(qp), "QP 0x%06x: a %u+ byte message does not "
				    "fit the %u byte receive buffer", ur_qp_num(qp),
				    qp->resp.recv_offset + pkt->paylen, w->length);
		if (ur_qp_is_reliable(qp)) {
			complete_recv(qp, IBV_WC_LOC_LEN_ERR, NULL, 0, false);
			request_error(qp, UR_NAK_INVALID_REQ, "receive buffer too small");
		} else {
			qp->resp.recv_active = true;   /* UC: reuse it for the next message */
			qp->resp.drop_msg = true;
			qp->resp.opcode = -1;
		}
		return false;
	}
	ur_mr_read_lock(&qp->ctx->mrs);
	ok = ur_copy_to_sges(qp, w->sge, w->num_sge, qp->resp.recv_offset, pkt->payload,
			     pkt->paylen);
	ur_mr_read_unlock(&qp->ctx->mrs);
	if (!ok) {
		complete_recv(qp, IBV_WC_LOC_PROT_ERR, NULL, 0, false);
		if (ur_qp_is_reliable(qp))
			request_error(qp, UR_NAK_REM_OP_ERR, "receive buffer lkey invalid");
		return false;
	}
	qp->resp.recv_offset += pkt->paylen;
	if (!(pkt->mask & UR_OPF_END))
		return true;
	if (pkt->mask & UR_OPF_IETH) {
		uint32_t rkey = ieth_rkey(pkt->bth + ur_opcode[pkt->opcode].offset[UR_HDR_IETH]);

		if (!ur_remote_invalidate(qp, rkey)) {
			request_error(qp, UR_NAK_INVALID_REQ, "SEND with invalidate of a key it may not");
			return false;
		}
	}
	complete_recv(qp, IBV_WC_SUCCESS, pkt, qp->resp.recv_offset, false);
	return true;
}

static bool do_write(struct ur_qp *qp, const struct ur_pkt_view *pkt, bool *rnr)
{
	struct ur_resp_state *r = &qp->resp;
	void *dst;

	if (pkt->mask & UR_OPF_RETH) {
		const uint8_t *reth = pkt->bth + ur_opcode[pkt->opcode].offset[UR_HDR_RETH];

		r->write_va = reth_va(reth);
		r->write_rkey = reth_rkey(reth);
		r->write_resid = reth_len(reth);
		r->write_length = r->write_resid;
		/* Check the whole target once, before touching anything. */
		if (!(qp->attr.qp_access_flags & IBV_ACCESS_REMOTE_WRITE)) {
			request_error(qp, UR_NAK_REM_ACCESS_ERR, "QP has no remote write access");
			return false;
		}
		ur_mr_read_lock(&qp->ctx->mrs);
		dst = ur_mr_check_remote(&qp->ctx->mrs, r->write_rkey, resp_pd(qp), qp, r->write_va,
				  r->write_length, IBV_ACCESS_REMOTE_WRITE);
		ur_mr_read_unlock(&qp->ctx->mrs);
		if (!dst && r->write_length) {
			request_error(qp, UR_NAK_REM_ACCESS_ERR,
				      "RDMA WRITE: bad rkey, range or permission");
			return false;
		}
	}
	if (pkt->paylen > r->write_resid ||
	    ((pkt->mask & UR_OPF_END) && pkt->paylen != r->write_resid)) {
		request_error(qp, UR_NAK_INVALID_REQ, "RDMA WRITE length mismatch");
		return false;
	}
	/* WRITE with immediate consumes a receive WQE: fail with RNR before
	 * placing the last packet if none is posted. */
	if ((pkt->mask & UR_OPF_IMM) && (pkt->mask & UR_OPF_END) && !get_recv(qp)) {
		*rnr = true;
		return false;
	}
	if (pkt->paylen) {
		ur_mr_read_lock(&qp->ctx->mrs);
		dst = ur_mr_check_remote(&qp->ctx->mrs, r->write_rkey, resp_pd(qp), qp, r->write_va,
				  pkt->paylen, IBV_ACCESS_REMOTE_WRITE);
		if (dst)
			ur_memcpy(dst, pkt->payload, pkt->paylen);
		ur_mr_read_unlock(&qp->ctx->mrs);
		if (!dst) {
			request_error(qp, UR_NAK_REM_ACCESS_ERR, "RDMA WRITE target vanished");
			return false;
		}
	}
	r->write_va += pkt->paylen;
	r->write_resid -= pkt->paylen;
	if ((pkt->mask & UR_OPF_IMM) && (pkt->mask & UR_OPF_END))
		complete_recv(qp, IBV_WC_SUCCESS, pkt, r->write_length, true);
	return true;
}

static void start_read(struct ur_qp *qp, const struct ur_pkt_view *pkt, bool duplicate)
{
	const uint8_t *reth = pkt->bth + ur_opcode[pkt->opcode].offset[UR_HDR_RETH];
	uint64_t va = reth_va(reth);
	uint32_t rkey = reth_rkey(reth), len = reth_len(reth);
	uint32_t npkts = len ? (len + qp->mtu - 1) / qp->mtu : 1;
	struct ur_resp_res *res;
	void *src;

	if (!(qp->attr.qp_access_flags & IBV_ACCESS_REMOTE_READ)) {
		request_error(qp, UR_NAK_REM_ACCESS_ERR, "QP has no remote read access");
		return;
	}
	ur_mr_read_lock(&qp->ctx->mrs);
	src = ur_mr_check_remote(&qp->ctx->mrs, rkey, resp_pd(qp), qp, va, len,
				 IBV_ACCESS_REMOTE_READ);
	ur_mr_read_unlock(&qp->ctx->mrs);
	if (!src && len) {
		request_error(qp, UR_NAK_REM_ACCESS_ERR, "RDMA READ: bad rkey, range or permission");
		return;
	}
	res = take_res(qp);
	if (!res) {
		if (!duplicate)
			request_error(qp, UR_NAK_INVALID_REQ, "too many outstanding READ/ATOMIC");
		return;   /* a duplicate waits for room: the requester retries */
	}
	res->type = UR_RES_READ;
	res->pending = true;
	res->first_psn = pkt->psn;
	res->last_psn = psn_add(pkt->psn, npkts - 1);
	res->cur_psn = pkt->psn;
	res->va = va;
	res->rkey = rkey;
	res->pd = resp_pd(qp);
	res->resid = len;
	res->length = len;
	if (!duplicate) {
		qp->resp.msn++;
		qp->resp.psn = psn_inc(res->last_psn);
	}
	res->msn = qp->resp.msn;
}

static void do_atomic(struct ur_qp *qp, const struct ur_pkt_view *pkt)
{
	const uint8_t *a = pkt->bth + ur_opcode[pkt->opcode].offset[UR_HDR_ATMETH];
	uint64_t va = atmeth_va(a), orig;
	uint64_t *p;
	struct ur_resp_res *res;

	if (!(qp->attr.qp_access_flags & IBV_ACCESS_REMOTE_ATOMIC)) {
		request_error(qp, UR_NAK_REM_ACCESS_ERR, "QP has no remote atomic access");
		return;
	}
	if (va & 7) {
		request_error(qp, UR_NAK_INVALID_REQ, "atomic on a misaligned address");
		return;
	}
	res = take_res(qp);
	if (!res) {
		request_error(qp, UR_NAK_INVALID_REQ, "too many outstanding READ/ATOMIC");
		return;
	}
	ur_mr_read_lock(&qp->ctx->mrs);
	p = ur_mr_check_remote(&qp->ctx->mrs, atmeth_rkey(a), resp_pd(qp), qp, va, 8,
			       IBV_ACCESS_REMOTE_ATOMIC);
	if (p) {
		/* Atomic against other processes mapping the same memory too. */
		if ((pkt->opcode & 0x1f) == UR_OPL_COMPARE_SWAP) {
			orig = atmeth_comp(a);
			__atomic_compare_exchange_n(p, &orig, atmeth_swap_add(a), false,
						    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		} else {
			orig = __atomic_fetch_add(p, atmeth_swap_add(a), __ATOMIC_SEQ_CST);
		}
	}
	ur_mr_read_unlock(&qp->ctx->mrs);
	if (!p) {
		qp->resp.res_next--;   /* give the slot back */
		request_error(qp, UR_NAK_REM_ACCESS_ERR, "atomic: bad rkey, range or permission");
		return;
	}
	qp->resp.msn++;
	res->type = UR_RES_ATOMIC;
	res->pending = true;
	res->first_psn = res->last_psn = pkt->psn;
	res->atomic_orig = orig;
	res->msn = qp->resp.msn;
	qp->resp.atomics[qp->resp.atomic_next++ % qp->resp.nres] = (struct ur_atomic_result){
		.valid = true, .psn = pkt->psn, .msn = qp->resp.msn, .orig = orig,
	};
	qp->resp.psn = psn_inc(pkt->psn);
}

/* An old PSN: answer again without executing again. */
static void duplicate(struct ur_qp *qp, const struct ur_pkt_view *pkt)
{
	uint8_t low = pkt->opcode & 0x1f;

	UR_QP_COUNT(qp, UR_CNT_DUPLICATE_REQUEST);
	if (low == UR_OPL_RDMA_READ_REQUEST) {
		start_read(qp, pkt, true);   /* reads are idempotent: resend from there */
	} else if (low == UR_OPL_COMPARE_SWAP || low == UR_OPL_FETCH_ADD) {
		struct ur_resp_state *r = &qp->resp;

		for (uint32_t i = 0; i < r->nres; i++) {
			const struct ur_atomic_result *saved = &r->atomics[i];
			struct ur_resp_res *res;

			if (!saved->valid || saved->psn != pkt->psn)
				continue;
			res = take_res(qp);
			if (res) {
				res->type = UR_RES_ATOMIC;
				res->pending = true;
				res->first_psn = res->last_psn = saved->psn;
				res->atomic_orig = saved->orig;
				res->msn = saved->msn;
			}
			break;
		}
	} else {
		/* SEND/WRITE: acknowledge the newest PSN executed. */
		queue_ack(qp, UR_AETH_ACK_UNLIMITED, psn_add(qp->resp.psn, UR_PSN_MASK));
	}
	ur_resp_tx(qp);
}

static void rnr_nak(struct ur_qp *qp, const struct ur_pkt_view *pkt)
{
	UR_QP_COUNT(qp, UR_CNT_SEND_RNR_ERR);
	if (!ur_qp_is_reliable(qp)) {
		qp->resp.drop_msg = true;   /* UC: no receive WQE, the message is lost */
		qp->resp.opcode = -1;
		return;
	}
	queue_ack(qp, UR_AETH_RNR_NAK | (qp->attr.min_rnr_timer & 0x1f), pkt->psn);
	ur_resp_tx(qp);
}

static void ud_recv(struct ur_qp *qp, const struct ur_pkt_view *pkt, const struct ur_rx_meta *meta);

void ur_resp_rx(struct ur_qp *qp, const struct ur_pkt_view *pkt, const struct ur_rx_meta *meta)
{
	struct ur_resp_state *r = &qp->resp;
	int32_t d;
	bool ok = true, rnr = false;
	uint32_t m = pkt->mask;

	if (qp->state < IBV_QPS_RTR || qp->state == IBV_QPS_ERR) {
		UR_QP_COUNT(qp, UR_CNT_DROPPED);
		return;
	}
	if (qp->type == IBV_QPT_UD) {
		ud_recv(qp, pkt, meta);
		return;
	}
	if (qp->type == IBV_QPT_XRC_RECV) {
		/* Waiting for another process to place a message: nothing
		 * newer may execute meanwhile (xrc.c). */
		if (r->xrc_wait) {
			ur_xrc_parked_rx(qp, pkt);
			return;
		}
		/* The SRQ is the message's state: only the packet at the
		 * expected PSN may set it.  A duplicate SEND/WRITE/ATOMIC is
		 * answered without it; a duplicate READ needs its PD, so is
		 * looked up between messages only. */
		d = psn_diff(pkt->psn, r->psn);
		r->xrc_foreign = false;
		if (d == 0 || (d < 0 && (m & UR_OPF_READ) && r->opcode < 0)) {
			if (!ur_xrc_resolve(qp, pkt))
				return;
		} else if (d < 0 && (m & UR_OPF_READ)) {
			return;   /* answered when the requester asks again */
		}
	}
	d = psn_diff(pkt->psn, r->psn);
	if (d < 0) {
		/* A READ or ATOMIC for another process's domain member was
		 * never executed: nothing to answer again. */
		if (r->xrc_foreign && !(m & UR_OPF_SEND))
			return;
		if (ur_qp_is_reliable(qp))
			duplicate(qp, pkt);
		return;
	}
	if (d > 0) {
		UR_QP_COUNT(qp, UR_CNT_OUT_OF_SEQ_REQUEST);
		if (qp->type == IBV_QPT_UC) {
			/* UC: the message in progress is lost; resynchronize. */
			r->psn = pkt->psn;
			if (r->recv_active)
				r->recv_offset = 0;
			r->opcode = -1;
			r->drop_msg = !(m & UR_OPF_START);
			if (r->drop_msg) {
				r->psn = psn_inc(pkt->psn);
				return;
			}
		} else {
			if (!r->nak_sent) {
				ur_dbg(QP_DEV(qp), "QP 0x%06x: PSN 0x%06x while expecting 0x%06x: NAK",
				       ur_qp_num(qp), pkt->psn, r->psn);
				r->nak_sent = true;
				queue_ack(qp, UR_NAK_PSN_SEQ_ERR, r->psn);
				ur_resp_tx(qp);
			}
			return;
		}
	}
	r->nak_sent = false;
	if (qp->type == IBV_QPT_UC && r->drop_msg) {
		if (!(m & UR_OPF_START)) {
			r->psn = psn_inc(pkt->psn);
			return;
		}
		r->drop_msg = false;
		if (r->recv_active)
			r->recv_offset = 0;
	}
	if (!seq_ok(qp, pkt) || !length_ok(qp, pkt)) {
		request_error(qp, UR_NAK_INVALID_REQ, "opcode sequence or length error");
		if (qp->type == IBV_QPT_UC)
			r->psn = psn_inc(pkt->psn);
		return;
	}

	if (r->xrc_foreign) {
		ur_xrc_handoff(qp, pkt);
		return;
	}
	if (m & UR_OPF_SEND)
		ok = do_send(qp, pkt, &rnr);
	else if (m & UR_OPF_WRITE)
		ok = do_write(qp, pkt, &rnr);
	else if (m & UR_OPF_READ) {
		start_read(qp, pkt, false);
		ur_resp_tx(qp);
		return;
	} else if (m & UR_OPF_ATOMIC) {
		do_atomic(qp, pkt);
		ur_resp_tx(qp);
		return;
	} else {
		request_error(qp, UR_NAK_INVALID_REQ, "unsupported request opcode");
		return;
	}
	if (rnr) {
		rnr_nak(qp, pkt);
		if (qp->type == IBV_QPT_UC)
			r->psn = psn_inc(pkt->psn);
		return;
	}
	if (!ok) {
		if (qp->type == IBV_QPT_UC)
			r->psn = psn_inc(pkt->psn);
		return;
	}
	r->psn = psn_inc(pkt->psn);
	r->opcode = (m & UR_OPF_END) ? -1 : pkt->opcode;
	r->xrc_msg_foreign = false;
	if (m & UR_OPF_END)
		r->msn++;
	if (ur_qp_is_reliable(qp) && bth_ackreq(pkt->bth)) {
		queue_ack(qp, UR_AETH_ACK_UNLIMITED, pkt->psn);
		ur_resp_tx(qp);
	}
}

/* ---- UD ----------------------------------------------------------------- */

static void ud_recv(struct ur_qp *qp, const struct ur_pkt_view *pkt, const struct ur_rx_meta *meta)
{
	const struct ur_opcode_info *info = &ur_opcode[pkt->opcode];
	const uint8_t *deth = pkt->bth + info->offset[UR_HDR_DETH];
	struct ur_recv_wqe *w;
	struct ibv_wc wc = { 0 };
	struct ur_grh_fields g = {
		.sgid = meta->sgid, .dgid = meta->dgid, .traffic_class = meta->traffic_class,
		.hop_limit = meta->hop_limit, .ipv6 = meta->ipv6,
	};
	uint8_t grh[UR_GRH_BYTES];
	bool ok;

	if ((pkt->opcode & UR_OP_TYPE_MASK) != UR_OP_TYPE_UD || !(info->mask & UR_OPF_DETH)) {
		UR_QP_COUNT(qp, UR_CNT_DROPPED);
		return;
	}
	if (deth_qkey(deth) != qp->attr.qkey) {
		UR_QP_COUNT(qp, UR_CNT_QKEY_VIOLATIONS);
		ur_dbg(QP_DEV(qp), "QP 0x%06x: dropped a datagram: Q_Key 0x%x, expected 0x%x",
		       ur_qp_num(qp), deth_qkey(deth), qp->attr.qkey);
		return;
	}
	if (!get_recv(qp)) {
		UR_QP_COUNT(qp, UR_CNT_SEND_RNR_ERR);   /* UD has no RNR: the datagram is lost */
		return;
	}
	w = qp->resp.rwqe;
	if (pkt->paylen + 40 > w->length) {
		complete_recv(qp, IBV_WC_LOC_LEN_ERR, NULL, 0, false);
		return;
	}
	ur_grh_build(grh, &g, pkt->hdr_len + pkt->paylen + pkt->pad + UR_ICRC_BYTES);
	ur_mr_read_lock(&qp->ctx->mrs);
	ok = ur_copy_to_sges(qp, w->sge, w->num_sge, 0, grh, 40) &&
	     ur_copy_to_sges(qp, w->sge, w->num_sge, 40, pkt->payload, pkt->paylen);
	ur_mr_read_unlock(&qp->ctx->mrs);
	qp->resp.recv_active = false;
	wc.wr_id = w->wr_id;
	wc.status = ok ? IBV_WC_SUCCESS : IBV_WC_LOC_PROT_ERR;
	wc.opcode = IBV_WC_RECV;
	wc.byte_len = pkt->paylen + 40;
	wc.qp_num = ur_qp_num(qp);
	wc.src_qp = deth_sqp(deth);
	wc.wc_flags = IBV_WC_GRH;
	if (info->mask & UR_OPF_IMMDT) {
		wc.imm_data = immdt_get(pkt->bth + info->offset[UR_HDR_IMMDT]);
		wc.wc_flags |= IBV_WC_WITH_IMM;
	}
	UR_QP_COUNT(qp, UR_CNT_RDMA_RECVS);
	if (ur_cq_push(qp->rcq, &wc, bth_se(pkt->bth)) == -ENOSPC)
		qp->cq_overrun = true;
}
