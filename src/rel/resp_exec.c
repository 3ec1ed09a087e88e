#include "rel/resp_exec.h"

#include <errno.h>
#include <string.h>

#include "core/cq.h"
#include "core/mr.h"
#include "core/qp.h"
#include "core/srq.h"
#include "core/srq_tm.h"
#include "rel/kick.h"
#include "rel/rel_priv.h"
#include "rel/resp_out.h"
#include "util/fault_guard.h"
#include "util/log.h"
#include "wire/grh.h"

/* The next receive WQE, from the SRQ or the QP's own RQ, into resp.rwqe. */
static bool get_recv(struct ur_qp *qp)
{
	if (qp->resp.recv_active)
		return true;
	if (ur_resp_srq(qp)) {
		if (!ur_srq_take(ur_resp_srq(qp), qp->resp.rwqe))
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

/* A message into a tag-matching SRQ: its first packet's TMH says where
 * it goes (core/srq_tm.h). */
static bool get_tm_recv(struct ur_qp *qp, const struct ur_pkt_view *pkt)
{
	struct ur_resp_state *r = &qp->resp;

	if (r->recv_active)
		return true;
	if (!ur_srq_tm_take(ur_resp_srq(qp), pkt->payload, pkt->payload ? pkt->paylen : 0,
			    r->rwqe, &r->tm))
		return false;
	r->tm_skip = r->tm.kind == UR_TM_EAGER ? UR_TM_HDR_BYTES :
		     r->tm.kind == UR_TM_RNDV ? UINT32_MAX : 0;
	r->recv_from_srq = true;
	r->recv_active = true;
	r->recv_offset = 0;
	return true;
}

enum ur_exec_result ur_exec_send(struct ur_qp *qp, const struct ur_pkt_view *pkt)
{
	struct ur_resp_state *r = &qp->resp;
	struct ur_srq *srq = ur_resp_srq(qp);
	uint32_t keep_from, end, drop;
	struct ur_recv_wqe *w;
	bool ok;

	if (!(srq && srq->tm ? get_tm_recv(qp, pkt) : get_recv(qp)))
		return UR_EXEC_RNR;
	w = qp->resp.rwqe;
	/* Message bytes [offset, end) arrive; those before tm_skip are not
	 * placed (none are, but for a tag-matching SRQ's). */
	end = r->recv_offset + pkt->paylen;
	keep_from = ur_max(r->recv_offset, ur_min(r->tm_skip, end));
	drop = keep_from - r->recv_offset;
	if (end - ur_min(r->tm_skip, end) > w->length) {
		ur_dbg(ur_qp_dev(qp), "QP 0x%06x: a %u+ byte message does not "
		       "fit the %u byte receive buffer", ur_qp_num(qp),
		       qp->resp.recv_offset + pkt->paylen, w->length);
		if (ur_qp_is_reliable(qp)) {
			ur_resp_complete_recv(qp, IBV_WC_LOC_LEN_ERR, NULL, 0, false);
			ur_resp_refuse(qp, UR_NAK_INVALID_REQ, "receive buffer too small");
		} else {
			qp->resp.recv_active = true;   /* UC: reuse it for the next message */
			qp->resp.drop_msg = true;
			qp->resp.opcode = -1;
		}
		return UR_EXEC_REFUSED;
	}
	ur_mr_read_lock(&qp->ctx->mrs);
	ok = drop == pkt->paylen ||
	     ur_mr_scatter(&qp->ctx->mrs, ur_resp_pd(qp), w->sge, w->num_sge,
			   keep_from - ur_min(r->tm_skip, keep_from), pkt->payload + drop,
			   pkt->paylen - drop);
	ur_mr_read_unlock(&qp->ctx->mrs);
	if (!ok) {
		/* IBA class A: the receive WQE is bad. */
		ur_resp_complete_recv(qp, IBV_WC_LOC_PROT_ERR, NULL, 0, false);
		if (ur_qp_is_reliable(qp))
			ur_resp_refuse(qp, UR_NAK_REM_OP_ERR, "receive buffer lkey invalid, or its memory unmapped");
		return UR_EXEC_REFUSED;
	}
	qp->resp.recv_offset += pkt->paylen;
	if (!(pkt->mask & UR_OPF_END))
		return UR_EXEC_OK;
	if (pkt->mask & UR_OPF_IETH) {
		uint32_t rkey = ieth_rkey(pkt->bth + ur_opcode[pkt->opcode].offset[UR_HDR_IETH]);

		if (!ur_mw_remote_invalidate(qp, rkey)) {
			ur_resp_refuse(qp, UR_NAK_INVALID_REQ, "SEND with invalidate of a key it may not");
			return UR_EXEC_REFUSED;
		}
	}
	if (r->tm.kind == UR_TM_RNDV) {
		/* Matched; the data comes by READ, then a second completion. */
		struct ur_tm_match m = r->tm;
		struct ur_recv_wqe *buf = r->rwqe;

		ur_resp_complete_recv(qp, IBV_WC_SUCCESS, pkt, 0, false);
		ur_tm_rndv_read(qp, buf, &m);
		/* Its READ leaves at the run step, after this SEND's ACK
		 * if that is sent now: harmless, the sender keeps its
		 * buffer until the FIN. */
		ur_kick(qp, UR_RUN_REQ);
		return UR_EXEC_OK;
	}
	ur_resp_complete_recv(qp, IBV_WC_SUCCESS, pkt,
			      qp->resp.recv_offset - ur_min(r->tm_skip, qp->resp.recv_offset), false);
	return UR_EXEC_OK;
}

/* A WRITE or READ its sender copied itself: counted toward moving the
 * region into a memfd, after which the sender copies with memcpy
 * (core/mr_share.c).  A window's key names no region of its own. */
static void note_placed(struct ur_qp *qp, uint32_t rkey, uint64_t len)
{
	struct ur_mr *mr;

	ur_mr_read_lock(&qp->ctx->mrs);
	mr = ur_mr_lookup(&qp->ctx->mrs, rkey);
	if (mr)
		ur_mr_note_placed(qp->ctx, mr, len);
	ur_mr_read_unlock(&qp->ctx->mrs);
}

enum ur_exec_result ur_exec_write(struct ur_qp *qp, const struct ur_pkt_view *pkt)
{
	struct ur_resp_state *r = &qp->resp;
	void *dst;
	bool placed;

	if (pkt->mask & UR_OPF_RETH) {
		const uint8_t *reth = pkt->bth + ur_opcode[pkt->opcode].offset[UR_HDR_RETH];

		r->write_va = reth_va(reth);
		r->write_rkey = reth_rkey(reth);
		r->write_resid = reth_len(reth);
		r->write_length = r->write_resid;
		/* Check the whole target once, before touching anything. */
		if (!(qp->attr.qp_access_flags & IBV_ACCESS_REMOTE_WRITE)) {
			ur_resp_refuse(qp, UR_NAK_REM_ACCESS_ERR, "QP has no remote write access");
			return UR_EXEC_REFUSED;
		}
		ur_mr_read_lock(&qp->ctx->mrs);
		dst = ur_mr_check_remote(&qp->ctx->mrs, r->write_rkey, ur_resp_pd(qp), qp, r->write_va,
				  r->write_length, IBV_ACCESS_REMOTE_WRITE);
		ur_mr_read_unlock(&qp->ctx->mrs);
		if (!dst && r->write_length) {
			ur_resp_refuse(qp, UR_NAK_REM_ACCESS_ERR,
				       "RDMA WRITE: bad rkey, range or permission");
			return UR_EXEC_REFUSED;
		}
		if (pkt->placed)
			note_placed(qp, r->write_rkey, r->write_length);
	}
	if (pkt->paylen > r->write_resid ||
	    ((pkt->mask & UR_OPF_END) && pkt->paylen != r->write_resid)) {
		ur_resp_refuse(qp, UR_NAK_INVALID_REQ, "RDMA WRITE length mismatch");
		return UR_EXEC_REFUSED;
	}
	/* WRITE with immediate consumes a receive WQE: fail with RNR before
	 * placing the last packet if none is posted. */
	if ((pkt->mask & UR_OPF_IMM) && (pkt->mask & UR_OPF_END) && !get_recv(qp))
		return UR_EXEC_RNR;
	/* Placed by the sender: the whole range was checked above. */
	if (pkt->paylen && !pkt->placed) {
		ur_mr_read_lock(&qp->ctx->mrs);
		dst = ur_mr_check_remote(&qp->ctx->mrs, r->write_rkey, ur_resp_pd(qp), qp, r->write_va,
				  pkt->paylen, IBV_ACCESS_REMOTE_WRITE);
		placed = dst && ur_guarded_copy(dst, pkt->payload, pkt->paylen);
		ur_mr_read_unlock(&qp->ctx->mrs);
		if (!placed) {
			ur_resp_refuse(qp, UR_NAK_REM_ACCESS_ERR,
				       dst ? "RDMA WRITE target is no longer mapped by its process"
					   : "RDMA WRITE target vanished");
			return UR_EXEC_REFUSED;
		}
	}
	r->write_va += pkt->paylen;
	r->write_resid -= pkt->paylen;
	if ((pkt->mask & UR_OPF_IMM) && (pkt->mask & UR_OPF_END))
		ur_resp_complete_recv(qp, IBV_WC_SUCCESS, pkt, r->write_length, true);
	return UR_EXEC_OK;
}

enum ur_exec_result ur_exec_atomic_write(struct ur_qp *qp, const struct ur_pkt_view *pkt)
{
	const uint8_t *reth = pkt->bth + ur_opcode[pkt->opcode].offset[UR_HDR_RETH];
	uint64_t va = reth_va(reth), v;
	uint64_t *p;

	if (!(qp->attr.qp_access_flags & IBV_ACCESS_REMOTE_WRITE)) {
		ur_resp_refuse(qp, UR_NAK_REM_ACCESS_ERR, "QP has no remote write access");
		return UR_EXEC_REFUSED;
	}
	if (reth_len(reth) != 8 || pkt->paylen != 8 || pkt->placed || (va & 7)) {
		ur_resp_refuse(qp, UR_NAK_INVALID_REQ,
			       "ATOMIC WRITE of other than 8 bytes, or to a misaligned address");
		return UR_EXEC_REFUSED;
	}
	memcpy(&v, pkt->payload, sizeof(v));
	ur_mr_read_lock(&qp->ctx->mrs);
	p = ur_mr_check_remote(&qp->ctx->mrs, reth_rkey(reth), ur_resp_pd(qp), qp, va, 8,
			       IBV_ACCESS_REMOTE_WRITE);
	/* Whole, against other processes mapping the same memory too. */
	if (p && !ur_guarded_atomic(p, UR_GUARDED_STORE, v, 0, NULL))
		p = NULL;     /* no longer mapped by its process */
	ur_mr_read_unlock(&qp->ctx->mrs);
	if (!p) {
		ur_resp_refuse(qp, UR_NAK_REM_ACCESS_ERR,
			       "ATOMIC WRITE: bad rkey, range or permission");
		return UR_EXEC_REFUSED;
	}
	return UR_EXEC_OK;
}

void ur_exec_read(struct ur_qp *qp, const struct ur_pkt_view *pkt, bool duplicate)
{
	const uint8_t *reth = pkt->bth + ur_opcode[pkt->opcode].offset[UR_HDR_RETH];
	uint64_t va = reth_va(reth);
	uint32_t rkey = reth_rkey(reth), len = reth_len(reth);
	/* Fetched by the requester: answered by one response of headers. */
	uint32_t npkts = pkt->placed || !len ? 1 : (len + qp->mtu - 1) / qp->mtu;
	struct ur_resp_res *res;
	void *src;

	if (!(qp->attr.qp_access_flags & IBV_ACCESS_REMOTE_READ)) {
		ur_resp_refuse(qp, UR_NAK_REM_ACCESS_ERR, "QP has no remote read access");
		return;
	}
	ur_mr_read_lock(&qp->ctx->mrs);
	src = ur_mr_check_remote(&qp->ctx->mrs, rkey, ur_resp_pd(qp), qp, va, len,
				 IBV_ACCESS_REMOTE_READ);
	ur_mr_read_unlock(&qp->ctx->mrs);
	if (!src && len) {
		ur_resp_refuse(qp, UR_NAK_REM_ACCESS_ERR, "RDMA READ: bad rkey, range or permission");
		return;
	}
	if (pkt->placed && !duplicate)
		note_placed(qp, rkey, len);
	if (duplicate && ur_resp_res_again(qp, UR_RES_READ, pkt->psn, va, len))
		return;
	res = ur_resp_take_res(qp);
	if (!res) {
		if (!duplicate)
			ur_resp_refuse(qp, UR_NAK_INVALID_REQ, "too many outstanding READ/ATOMIC");
		return;   /* a duplicate waits for room: the requester retries */
	}
	res->type = UR_RES_READ;
	res->pending = true;
	res->first_psn = pkt->psn;
	res->last_psn = psn_add(pkt->psn, npkts - 1);
	res->cur_psn = pkt->psn;
	res->va = va;
	res->rkey = rkey;
	res->pd = ur_resp_pd(qp);
	res->resid = len;
	res->length = len;
	res->placed = pkt->placed;
	res->answered = duplicate;   /* a repeat may give way to a new request */
	if (!duplicate) {
		qp->resp.msn++;
		qp->resp.psn = psn_inc(res->last_psn);
	}
	res->msn = qp->resp.msn;
}

void ur_exec_atomic(struct ur_qp *qp, const struct ur_pkt_view *pkt)
{
	const uint8_t *a = pkt->bth + ur_opcode[pkt->opcode].offset[UR_HDR_ATMETH];
	uint64_t va = atmeth_va(a), orig;
	uint64_t *p;
	struct ur_resp_res *res;

	if (!(qp->attr.qp_access_flags & IBV_ACCESS_REMOTE_ATOMIC)) {
		ur_resp_refuse(qp, UR_NAK_REM_ACCESS_ERR, "QP has no remote atomic access");
		return;
	}
	if (va & 7) {
		ur_resp_refuse(qp, UR_NAK_INVALID_REQ, "atomic on a misaligned address");
		return;
	}
	res = ur_resp_take_res(qp);
	if (!res) {
		ur_resp_refuse(qp, UR_NAK_INVALID_REQ, "too many outstanding READ/ATOMIC");
		return;
	}
	ur_mr_read_lock(&qp->ctx->mrs);
	p = ur_mr_check_remote(&qp->ctx->mrs, atmeth_rkey(a), ur_resp_pd(qp), qp, va, 8,
			       IBV_ACCESS_REMOTE_ATOMIC);
	/* Atomic against other processes mapping the same memory too; a
	 * target no longer mapped by its process is an access error. */
	if (p && !((pkt->opcode & 0x1f) == UR_OPL_COMPARE_SWAP
		   ? ur_guarded_atomic(p, UR_GUARDED_CAS, atmeth_comp(a), atmeth_swap_add(a), &orig)
		   : ur_guarded_atomic(p, UR_GUARDED_FADD, atmeth_swap_add(a), 0, &orig)))
		p = NULL;
	ur_mr_read_unlock(&qp->ctx->mrs);
	if (!p) {
		qp->resp.res_next--;   /* give the slot back */
		ur_resp_refuse(qp, UR_NAK_REM_ACCESS_ERR, "atomic: bad rkey, range or permission");
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

void ur_exec_atomic_again(struct ur_qp *qp, const struct ur_pkt_view *pkt)
{
	struct ur_resp_state *r = &qp->resp;

	if (ur_resp_res_again(qp, UR_RES_ATOMIC, pkt->psn, 0, 0))
		return;
	for (uint32_t i = 0; i < r->nres; i++) {
		const struct ur_atomic_result *saved = &r->atomics[i];
		struct ur_resp_res *res;

		if (!saved->valid || saved->psn != pkt->psn)
			continue;
		res = ur_resp_take_res(qp);
		if (res) {
			res->type = UR_RES_ATOMIC;
			res->pending = true;
			res->first_psn = res->last_psn = saved->psn;
			res->atomic_orig = saved->orig;
			res->msn = saved->msn;
			res->answered = true;   /* a repeat: the requester counts it no more */
		}
		return;
	}
}

void ur_exec_ud(struct ur_qp *qp, const struct ur_pkt_view *pkt, const struct ur_rx_meta *meta)
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
		ur_dbg(ur_qp_dev(qp), "QP 0x%06x: dropped a datagram: Q_Key 0x%x, expected 0x%x",
		       ur_qp_num(qp), deth_qkey(deth), qp->attr.qkey);
		return;
	}
	if (!get_recv(qp)) {
		UR_QP_COUNT(qp, UR_CNT_SEND_RNR_ERR);   /* UD has no RNR: the datagram is lost */
		return;
	}
	w = qp->resp.rwqe;
	if (pkt->paylen + UR_GRH_BYTES > w->length) {
		ur_resp_complete_recv(qp, IBV_WC_LOC_LEN_ERR, NULL, 0, false);
		return;
	}
	ur_grh_build(grh, &g, pkt->hdr_len + pkt->paylen + pkt->pad + UR_ICRC_BYTES);
	ur_mr_read_lock(&qp->ctx->mrs);
	ok = ur_mr_scatter(&qp->ctx->mrs, qp->pd, w->sge, w->num_sge, 0, grh, UR_GRH_BYTES) &&
	     ur_mr_scatter(&qp->ctx->mrs, qp->pd, w->sge, w->num_sge, UR_GRH_BYTES, pkt->payload,
			   pkt->paylen);
	ur_mr_read_unlock(&qp->ctx->mrs);
	qp->resp.recv_active = false;
	wc.wr_id = w->wr_id;
	wc.status = ok ? IBV_WC_SUCCESS : IBV_WC_LOC_PROT_ERR;
	wc.opcode = IBV_WC_RECV;
	wc.byte_len = pkt->paylen + UR_GRH_BYTES;
	wc.qp_num = ur_qp_num(qp);
	wc.src_qp = deth_sqp(deth);
	wc.wc_flags = IBV_WC_GRH;
	wc.sl = ur_grh_l3_type(&g);    /* RoCE has no SL on the wire: the L3 type */
	if (info->mask & UR_OPF_IMMDT) {
		wc.imm_data = immdt_get(pkt->bth + info->offset[UR_HDR_IMMDT]);
		wc.wc_flags |= IBV_WC_WITH_IMM;
	}
	UR_QP_COUNT(qp, UR_CNT_RDMA_RECVS);
	if (ur_cq_push(qp->rcq, &wc, bth_se(pkt->bth)) == -ENOSPC)
		qp->cq_overrun = true;
}
