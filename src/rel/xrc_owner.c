/* XRC domains shared by the processes of a host: the SRQ owner's side.
 *
 * A DELIVER is placed as the responder would place a SEND (receive WQE
 * from the SRQ, scatter, completion on the SRQ's CQ with the target QP's
 * number), then answered with a REPLY.  Each SRQ keeps, per feeding target
 * QP, a sink (core/srq.h): the receive WQE of the message in progress and
 * the last PSN placed, so that a DELIVER sent again is answered again
 * without being placed twice.  Runs in reactor callbacks only, which never
 * run concurrently: the sinks need no lock of their own.
 */
#include "rel/xrc_owner.h"

#include <unistd.h>

#include "core/context.h"
#include "core/cq.h"
#include "core/device.h"
#include "core/mr.h"
#include "core/srq.h"
#include "core/xrcd.h"
#include "rel/psn.h"
#include "util/log.h"

static void sink_complete(struct ur_srq *srq, struct ur_srq_sink *s, const struct ur_xrc_msg *m,
			  enum ibv_wc_status status)
{
	struct ibv_wc wc = {
		.wr_id = s->wqe.wr_id,
		.status = status,
		.opcode = IBV_WC_RECV,
		.byte_len = status == IBV_WC_SUCCESS ? s->offset : 0,
		.qp_num = m->tgt_qpn,
		.src_qp = m->src_qpn,
	};

	if (status == IBV_WC_SUCCESS && (m->flags & UR_XRC_F_IMM)) {
		wc.imm_data = m->imm;
		wc.wc_flags |= IBV_WC_WITH_IMM;
	}
	s->active = false;
	s->offset = 0;
	__atomic_add_fetch(&srq->ctx->dev->cnt[UR_CNT_RDMA_RECVS], 1, __ATOMIC_RELAXED);
	ur_cq_push(srq->cq, &wc, status == IBV_WC_SUCCESS && (m->flags & UR_XRC_F_SE));
}

/* Places one DELIVER; returns the REPLY's status. */
static enum ur_xrc_status place(const struct ur_xrc_msg *m, const uint8_t *payload)
{
	struct ur_srq *srq = ur_xrcd_find_shared_srq(m->ibdev, m->xrcd_dev, m->xrcd_ino, m->srqn);
	struct ur_srq_sink *s;
	bool ok;

	if (!srq || srq->type != IBV_SRQT_XRC)
		return UR_XRC_INVALID;
	s = ur_srq_sink_get(srq, m->src_pid, m->tgt_qpn);
	if (!s)
		return UR_XRC_RNR;   /* no memory for now: the requester retries */
	if (s->gen != m->gen) {
		/* A new incarnation of the target QP: its old message is
		 * abandoned (a WQE taken for it is reused). */
		s->gen = m->gen;
		s->have_last = false;
		s->offset = 0;
	}
	if (s->have_last && psn_le(m->psn, s->last_psn))
		return UR_XRC_OK;    /* placed already: the REPLY was lost */
	if (m->flags & UR_XRC_F_FIRST) {
		if (!s->active) {
			if (!ur_srq_take(srq, &s->wqe))
				return UR_XRC_RNR;
			s->active = true;
		}
		s->offset = 0;
	} else if (!s->active) {
		return UR_XRC_INVALID;
	}
	if (s->offset + m->paylen > s->wqe.length) {
		ur_dbg(srq->ctx->dev->ibdev.name, "XRC SRQ 0x%06x: a %u+ byte message "
		       "does not fit the %u byte receive buffer", srq->srq_num,
		       s->offset + m->paylen, s->wqe.length);
		sink_complete(srq, s, m, IBV_WC_LOC_LEN_ERR);
		return UR_XRC_LEN_ERR;
	}
	ur_mr_read_lock(&srq->ctx->mrs);
	ok = ur_mr_scatter(&srq->ctx->mrs, srq->pd, s->wqe.sge, s->wqe.num_sge, s->offset,
			   payload, m->paylen);
	ur_mr_read_unlock(&srq->ctx->mrs);
	if (!ok) {
		sink_complete(srq, s, m, IBV_WC_LOC_PROT_ERR);
		return UR_XRC_OP_ERR;
	}
	s->offset += m->paylen;
	s->have_last = true;
	s->last_psn = m->psn;
	if (m->flags & UR_XRC_F_LAST)
		sink_complete(srq, s, m, IBV_WC_SUCCESS);
	return UR_XRC_OK;
}

void ur_xrc_on_deliver(struct ur_xports *xports, uint64_t *lost, const struct ur_xrc_msg *m,
		       const uint8_t *payload)
{
	struct ur_xrc_msg rep;
	struct iovec iov;

	ur_xrc_msg_init(&rep, UR_XRC_REPLY, getpid());
	rep.tgt_qpn = m->tgt_qpn;
	rep.srqn = m->srqn;
	rep.psn = m->psn;
	rep.gen = m->gen;
	rep.status = place(m, payload);
	iov = (struct iovec){ &rep, sizeof(rep) };
	/* Lost if the target's queue is full: it asks again when the
	 * requester retransmits, and a duplicate is not placed twice. */
	if (ur_xports_local_msg(xports, m->src_pid, &iov, 1))
		__atomic_add_fetch(lost, 1, __ATOMIC_RELAXED);
}

