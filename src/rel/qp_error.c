#include "rel/qp_error.h"

#include "core/context.h"
#include "core/pd.h"
#include "core/qp.h"
#include "core/qp_kind.h"
#include "rel/held.h"
#include "rel/rel_priv.h"
#include "rel/stack.h"
#include "rel/timers.h"

void ur_rel_expose(struct ur_qp *qp, bool on)
{
	struct ur_stack *s = qp->ctx->stack;

	if (!ur_qp_kind_has(qp, UR_KIND_ONE_COPY))
		return;   /* nothing to copy straight into */
	ur_xports_expose_qp(&s->xports, ur_qp_num(qp), on ? ur_pd_id(qp->pd) : 0,
			    on ? (uint32_t)qp->attr.qp_access_flags : 0);
}

void ur_rel_abort(struct ur_qp *qp)
{
	ur_rel_expose(qp, false);
	qp->comp.retrans_deadline = 0;
	qp->comp.rnr_deadline = 0;
	qp->req.rnr_wait = false;
	qp->req.blocked = false;
	/* A responder reports an error by NAK, then enters ERROR.  A NAK the
	 * transport had no room for yet still goes out when it drains (the QP
	 * stays on the stack's waiting list); without it the requester would
	 * only time out, with RETRY_EXC_ERR instead of the real cause. */
	if (qp->state != IBV_QPS_ERR || ur_aeth_type(qp->resp.ack_syn) != UR_AETH_NAK)
		qp->resp.ack_pending = false;
	qp->resp.res_tx = qp->resp.res_next;
	ur_held_clear(&qp->held);
	ur_held_clear(&qp->held_resp);
	ur_timers_update(qp);
}

void ur_rel_stop(struct ur_stack *s, struct ur_qp *qp)
{
	pthread_mutex_lock(&qp->lock);
	qp->dying = true;
	ur_rel_abort(qp);
	pthread_mutex_unlock(&qp->lock);
	pthread_mutex_lock(&s->waiting_lock);
	ur_list_del(&qp->wait_link);
	pthread_mutex_unlock(&s->waiting_lock);
}

void ur_qp_to_error(struct ur_qp *qp, bool fatal)
{
	bool was_err = qp->state == IBV_QPS_ERR;

	qp->state = IBV_QPS_ERR;
	qp->qpx.qp_base.state = IBV_QPS_ERR;
	ur_rel_abort(qp);
	ur_qp_flush_queues(qp);
	if (was_err)
		return;
	if (fatal)
		ur_qp_event(qp, IBV_EVENT_QP_FATAL);
	if (qp->srq)
		ur_qp_event(qp, IBV_EVENT_QP_LAST_WQE_REACHED);
}

void ur_qp_check_overrun(struct ur_qp *qp)
{
	if (qp->cq_overrun && qp->state != IBV_QPS_ERR)
		ur_qp_to_error(qp, true);
}
