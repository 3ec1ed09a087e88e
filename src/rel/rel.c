/* Dispatch of received packets to the protocol roles, and the protocol
 * state resets that go with QP transitions. */
#include <string.h>

#include "core/context.h"
#include "engine/engine.h"
#include "rel/rel.h"
#include "rel/rel_priv.h"
#include "rel/xrc.h"
#include "util/log.h"

static bool transport_matches(const struct ur_qp *qp, uint8_t opcode)
{
	return (opcode & UR_OP_TYPE_MASK) == ur_qp_op_base(qp);
}

void ur_rel_rx(struct ur_qp *qp, const struct ur_pkt_view *pkt, const struct ur_rx_meta *meta)
{
	UR_QP_COUNT(qp, UR_CNT_RCVD_PKTS);
	if (!transport_matches(qp, pkt->opcode) || bth_pkey(pkt->bth) != UR_DEFAULT_PKEY) {
		UR_QP_COUNT(qp, UR_CNT_DROPPED);
		return;
	}
	/* A connected QP hears only its peer. */
	if (qp->type != IBV_QPT_UD &&
	    memcmp(&meta->sgid, &qp->attr.ah_attr.grh.dgid, sizeof(meta->sgid))) {
		UR_QP_COUNT(qp, UR_CNT_DROPPED);
		return;
	}
	/* The first packet on a QP in RTR establishes communication. */
	if (qp->state == IBV_QPS_RTR && !qp->comm_est) {
		struct ibv_async_event ev = { .event_type = IBV_EVENT_COMM_EST };

		qp->comm_est = true;
		ev.element.qp = &qp->qpx.qp_base;
		ur_async_post(&qp->ctx->async, &ev);
	}
	if (pkt->mask & UR_OPF_REQ)
		ur_resp_rx(qp, pkt, meta);
	else
		ur_comp_rx(qp, pkt);
	ur_qp_check_overrun(qp);
}

void ur_rel_reset(struct ur_qp *qp)
{
	struct ur_recv_wqe *rwqe = qp->resp.rwqe;
	struct ur_resp_res *res = qp->resp.res;
	struct ur_atomic_result *atomics = qp->resp.atomics;
	uint32_t nres = qp->resp.nres;

	memset(&qp->req, 0, sizeof(qp->req));
	memset(&qp->comp, 0, sizeof(qp->comp));
	memset(&qp->resp, 0, sizeof(qp->resp));
	qp->resp.rwqe = rwqe;
	qp->resp.res = res;
	qp->resp.atomics = atomics;
	qp->resp.nres = nres;
	if (res)
		memset(res, 0, nres * (sizeof(*res) + sizeof(*atomics)));
	qp->req.opcode = -1;
	qp->resp.opcode = -1;
	qp->req.cwnd = UR_CWND_INIT;
}

void ur_rel_enter_rtr(struct ur_qp *qp)
{
	qp->resp.psn = qp->attr.rq_psn;
	qp->resp.opcode = -1;
	qp->resp.xrc_wait = false;
	qp->xrc_gen = ur_xrc_new_gen();
	ur_xrc_queue_clear(qp);
	qp->resp.msn = 0;
	qp->resp.nak_sent = false;
	qp->resp.drop_msg = false;
}

void ur_rel_enter_rts(struct ur_qp *qp)
{
	qp->req.psn = qp->attr.sq_psn;
	qp->req.psn_max = qp->attr.sq_psn;
	qp->comp.psn = qp->attr.sq_psn;
	qp->req.wqe = qp->sq.head;
	qp->req.opcode = -1;
	qp->req.cwnd = UR_CWND_INIT;
	qp->comp.retry_left = qp->attr.retry_cnt;
	qp->comp.rnr_retry_left = qp->attr.rnr_retry;
	qp->comp.retrying = false;
	ur_req_run(qp);
}

void ur_rel_abort(struct ur_qp *qp)
{
	qp->comp.retrans_deadline = 0;
	qp->comp.rnr_deadline = 0;
	qp->req.rnr_wait = false;
	qp->req.blocked = false;
	/* A responder reports an error by NAK, then enters ERROR.  A NAK the
	 * transport had no room for yet still goes out when it drains (the QP
	 * stays on the engine's blocked list); without it the requester would
	 * only time out, with RETRY_EXC_ERR instead of the real cause. */
	if (qp->state != IBV_QPS_ERR || ur_aeth_type(qp->resp.ack_syn) != UR_AETH_NAK)
		qp->resp.ack_pending = false;
	qp->resp.res_tx = qp->resp.res_next;
	if (ur_engine_get())
		ur_engine_timers_changed(qp);
}
