#include "rel/ack.h"

#include "core/qp.h"
#include "rel/rel_priv.h"
#include "rel/timers.h"

/* Has the requester put packets of this WQE on the wire?  (A zero-length
 * message is done after its one packet with offset still 0.) */
bool ur_ack_wqe_started(const struct ur_send_wqe *w)
{
	return w->offset || w->state == UR_WQE_SENT;
}

/* One past the newest WQE with packets on the wire: req.wqe itself counts
 * once the requester has started it. */
uint32_t ur_ack_inflight_end(struct ur_qp *qp)
{
	if (qp->req.wqe != qp->sq.tail && ur_ack_wqe_started(ur_sq_wqe(qp, qp->req.wqe)))
		return qp->req.wqe + 1;
	return qp->req.wqe;
}

/* The oldest WQE not yet completed among those with packets out. */
struct ur_send_wqe *ur_ack_head(struct ur_qp *qp)
{
	uint32_t end = ur_ack_inflight_end(qp);

	while (qp->sq.head != end) {
		struct ur_send_wqe *w = ur_sq_wqe(qp, qp->sq.head);

		if (w->state != UR_WQE_DONE)
			return w;
		ur_sq_retire(qp);
	}
	return NULL;
}

struct ur_send_wqe *ur_ack_oldest(struct ur_qp *qp)
{
	struct ur_send_wqe *w = ur_ack_head(qp);

	if (!w && qp->req.wqe != qp->sq.tail)
		w = ur_sq_wqe(qp, qp->req.wqe);   /* gone back, not yet resent */
	return w;
}

/* A WQE acknowledged, explicitly or implied by a later response: comp.psn
 * moves past it too.  Otherwise a retry would start before it and resend
 * what follows it at PSNs the responder already used for other requests. */
void ur_ack_complete(struct ur_qp *qp, struct ur_send_wqe *w)
{
	if (ur_wr_is_rd_atomic(w->opcode) && qp->req.rd_atomic)
		qp->req.rd_atomic--;
	ur_qp_complete_send(qp, w, IBV_WC_SUCCESS);
	if (psn_ge(w->last_psn, qp->comp.psn) && psn_lt(w->last_psn, qp->req.psn_max))
		ur_ack_progress(qp, psn_inc(w->last_psn));
}

/* Progress: window growth, fresh retry budget, timer restart. */
void ur_ack_progress(struct ur_qp *qp, uint32_t new_psn)
{
	uint32_t acked = (uint32_t)psn_diff(new_psn, qp->comp.psn);

	ur_rs_forget(&qp->comp, qp->comp.psn, acked);
	qp->comp.psn = new_psn;
	qp->comp.retrying = false;
	qp->comp.sel_sent = false;
	qp->comp.probing = false;
	/* The dense-loss rules' marks end where the ACKs pass them: left
	 * behind, 2^23 PSNs later the serial comparison would put them ahead
	 * again (a NAK let pass, a flight counted as the old one). */
	if (qp->comp.sel_gone_back && !psn_lt(new_psn, qp->comp.sel_gb_end))
		qp->comp.sel_gone_back = false;
	if (qp->comp.sel_gaps && !psn_lt(new_psn, qp->comp.sel_flight_end))
		qp->comp.sel_flight_end = new_psn;
	if (qp->req.recovering && !psn_lt(new_psn, qp->req.recover_psn))
		qp->req.recovering = false;   /* the window of that loss is through */
	qp->comp.retry_left = qp->attr.retry_cnt;
	qp->comp.rnr_retry_left = qp->attr.rnr_retry;
	qp->comp.nmarks = 0;             /* counted retries start anew (giveup.h) */
	if (qp->req.cwnd < UR_MAX_UNACKED_PSNS) {
		qp->req.cwnd += ur_max(acked / ur_max(qp->req.cwnd, 1u), 1u);
		qp->req.cwnd = ur_min(qp->req.cwnd, UR_MAX_UNACKED_PSNS);
	}
	ur_timers_progress(qp, new_psn);
	ur_timers_arm_retrans(qp);
}

/* Everything up to and including psn is acknowledged.  Returns false if a
 * READ/ATOMIC in that range still lacks its response: the responder has
 * executed it, so its responses were lost.  comp.psn never passes the
 * first response PSN a READ/ATOMIC still waits for. */
bool ur_ack_through(struct ur_qp *qp, uint32_t psn)
{
	struct ur_send_wqe *w;

	while ((w = ur_ack_head(qp))) {
		if (ur_wr_is_rd_atomic(w->opcode)) {
			if (psn_ge(psn, w->first_psn)) {
				/* What precedes the READ/ATOMIC is acknowledged:
				 * a retry resumes at the READ/ATOMIC's own PSN. */
				if (psn_gt(w->first_psn, qp->comp.psn))
					ur_ack_progress(qp, w->first_psn);
				return false;
			}
			break;
		}
		if (w->state != UR_WQE_SENT || psn_lt(psn, w->last_psn))
			break;
		ur_ack_complete(qp, w);
	}
	if (psn_ge(psn, qp->comp.psn) && psn_lt(psn, qp->req.psn))
		ur_ack_progress(qp, psn_inc(psn));
	return true;
}

void ur_ack_retire(struct ur_qp *qp)
{
	ur_ack_through(qp, psn_add(qp->comp.psn, UR_PSN_MASK));
}

