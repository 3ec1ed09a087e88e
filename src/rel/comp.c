/* The completer as a state machine (the shape of Linux rxe's rxe_comp.c):
 * an ACK, NAK, READ response or atomic ACK walks a chain of steps that turn
 * send WQEs into completions; losses turn into go-back-N retransmission
 * from the oldest unacknowledged PSN, errors into an error completion and
 * a QP in ERROR.  Timeouts enter the same machine at RETRY. */
#include <errno.h>
#include <string.h>

#include "rel/comp.h"

#include "core/mr.h"
#include "core/names.h"
#include "core/qp.h"
#include "core/qp_kind.h"
#include "rel/ack.h"
#include "rel/giveup.h"
#include "rel/held.h"
#include "rel/inbox.h"
#include "rel/kick.h"
#include "rel/qp_error.h"
#include "rel/rel_priv.h"
#include "rel/req.h"
#include "rel/stack.h"
#include "rel/timers.h"
#include "util/clock.h"
#include "util/enum_name.h"
#include "util/log.h"

/* The completer's states, each with its name for the logs and its step. */
#define COMP_STATE_LIST(X)							\
	/* does the QP take responses now? */					\
	X(COMP_CHECK_QP, "CHECK_QP", check_qp)					\
	/* a response to something outstanding? */				\
	X(COMP_CHECK_PSN, "CHECK_PSN", check_psn)				\
	/* a response past what was resent: the requester moves there */	\
	X(COMP_CATCH_UP, "CATCH_UP", catch_up)					\
	/* which kind of response */						\
	X(COMP_CHECK_ACK, "CHECK_ACK", check_ack)				\
	X(COMP_ACK, "ACK", ack)							\
	X(COMP_RNR_NAK, "RNR_NAK", rnr_nak)					\
	X(COMP_NAK, "NAK", nak)							\
	/* a gap report: its PSNs resent alone */				\
	X(COMP_GAP, "GAP", gap)							\
	/* a NAK naming what just arrived: lost resend? */			\
	X(COMP_GAP_AGAIN, "GAP_AGAIN", gap_again)				\
	/* a READ response: its bytes placed in order */			\
	X(COMP_READ, "READ", read)						\
	/* an atomic ACK: the original value returned */			\
	X(COMP_ATOMIC, "ATOMIC", atomic)					\
	/* go back to the oldest unacknowledged PSN */				\
	X(COMP_RETRY, "RETRY", retry)						\
	/* the head WQE fails and the QP enters ERROR */			\
	X(COMP_ERROR, "ERROR", fail)						\
	/* local operations behind what completed; send on */			\
	X(COMP_RETIRE, "RETIRE", retire)					\
	X(COMP_DONE, "DONE", NULL)

UR_ENUM_LOCAL(comp_state, COMP_STATE_LIST, COMP_NR, comp_state_name);

struct comp_ctx {
	struct ur_qp *qp;
	const struct ur_pkt_view *pkt;  /* NULL when a timer started the walk */
	uint8_t syn;                    /* the AETH syndrome of an ACK/NAK */
	struct ur_send_wqe *w;          /* ERROR: the WQE that fails */
	enum ibv_wc_status status;      /* ERROR: how */
	bool early;                     /* RETRY: from the measured round trip,
					 * not counted against retry_cnt */
};

static enum comp_state error(struct comp_ctx *c, struct ur_send_wqe *w, enum ibv_wc_status st)
{
	c->w = w;
	c->status = st;
	return COMP_ERROR;
}

static enum comp_state check_qp(struct comp_ctx *c)
{
	struct ur_qp *qp = c->qp;

	if (!ur_qp_is_reliable(qp) || (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD))
		return COMP_DONE;
	return COMP_CHECK_PSN;
}

/* Only responses to what is outstanding count.  An ACK/NAK may acknowledge
 * what was sent before going back (a duplicate is acknowledged with the
 * newest PSN the responder has). */
static enum comp_state check_psn(struct comp_ctx *c)
{
	struct ur_qp *qp = c->qp;
	uint32_t psn = c->pkt->psn;
	bool ack = (c->pkt->opcode & 0x1f) == UR_OPL_ACKNOWLEDGE;

	if (psn_lt(psn, qp->comp.psn) || psn_ge(psn, qp->req.psn_max)) {
		UR_QP_COUNT(qp, UR_CNT_DROPPED);
		return COMP_DONE;
	}
	if (ack) {
		c->syn = aeth_syn(ur_pkt_hdr(c->pkt, UR_HDR_AETH));
		if (c->syn == UR_AETH_GAP)
			return COMP_GAP;   /* acknowledges nothing: no catching up */
		if (c->syn == UR_AETH_GAP_AGAIN) {
			if (psn_lt(psn, qp->req.psn))
				return COMP_GAP_AGAIN;
			c->syn = UR_NAK_PSN_SEQ_ERR;   /* not resent yet: a NAK says as much */
		}
		return psn_ge(psn, qp->req.psn) ? COMP_CATCH_UP : COMP_CHECK_ACK;
	}
	if (psn_lt(psn, qp->req.psn))
		return COMP_CHECK_ACK;
	/* A READ response or atomic ACK to a request sent before going back
	 * and not sent again yet (the transport was full, or its turn had
	 * not come).  The responder answers in PSN order, so it has every
	 * request before this one, as an ACK there would say: the requester
	 * moves there as if it had resent them (catch_up), and a response
	 * past a lost one is a gap the READ step asks again for.  Dropped,
	 * it brought another round trip; and where the round trip outlasts
	 * the timer (1000 QPs on a loaded host, no round trip measured
	 * while retrying), every answer came after the next going back and
	 * was dropped, until the QP ran out of retries. */
	return COMP_CATCH_UP;
}

static enum comp_state catch_up(struct comp_ctx *c)
{
	bool ack = (c->pkt->opcode & 0x1f) == UR_OPL_ACKNOWLEDGE;

	/* An ACK, READ response or atomic ACK covers its own PSN; a NAK what
	 * precedes it. */
	ur_req_fast_forward(c->qp, !ack || ur_aeth_type(c->syn) == UR_AETH_ACK
					   ? psn_inc(c->pkt->psn) : c->pkt->psn);
	return COMP_CHECK_ACK;
}

static enum comp_state check_ack(struct comp_ctx *c)
{
	switch (c->pkt->opcode & 0x1f) {
	case UR_OPL_ACKNOWLEDGE:
		switch (c->syn & UR_AETH_TYPE_MASK) {
		case UR_AETH_ACK: return COMP_ACK;
		case UR_AETH_RNR_NAK: return COMP_RNR_NAK;
		case UR_AETH_NAK: return COMP_NAK;
		default: return COMP_RETIRE;   /* a reserved syndrome: ignored */
		}
	case UR_OPL_ATOMIC_ACKNOWLEDGE:
		return COMP_ATOMIC;
	default:
		return COMP_READ;
	}
}

/* The answer to a packet resent alone tells whether the responder holds
 * what followed it: an ACK or NAK past it says yes; an ACK of exactly it,
 * with more sent after it, says those were dropped (a responder that goes
 * back, as rxe; or they were all lost: a burst, or the window's tail): go
 * back for them now.  Three such answers and never a yes: it goes back. */
#define UR_HOLDS_MISSES_MAX 3
static bool learn_holds(struct ur_qp *qp, uint32_t psn, bool nak)
{
	struct ur_comp_state *c = &qp->comp;
	uint32_t past = nak ? psn_add(c->sel_psn, 2) : psn_inc(c->sel_psn);

	if (!c->sel_sent)
		return true;
	if (psn_ge(psn, past)) {
		c->peer_holds = UR_PEER_HOLDS_YES;
		return true;
	}
	if (nak || psn != c->sel_psn || !psn_lt(psn_inc(psn), qp->req.psn_max))
		return true;
	if (c->peer_holds == UR_PEER_HOLDS_UNKNOWN && ++c->holds_misses >= UR_HOLDS_MISSES_MAX) {
		c->peer_holds = UR_PEER_HOLDS_NO;
		ur_dbg(ur_qp_dev(qp), "QP 0x%06x: the responder does not hold packets past a gap: "
		       "go-back-N", ur_qp_num(qp));
	}
	return false;
}

/* A probe, as TCP's tail loss probe: when nothing tells the requester
 * why its oldest PSN is unacknowledged (its NAK, a resend or the window's
 * tail lost), and the responder holds what follows a gap, the oldest PSN
 * goes alone, not the window.  The answer says where the responder
 * stands: past the probe, it filled the gap and what was held ran; an ACK
 * that leaves outstanding PSNs sent before the timer fired names the
 * responder's gap, the next PSN (probed at once, ack(); those sent since
 * are on their way); an ACK of exactly the probe with more sent says
 * nothing after it is held, and the rest goes back (learn_holds).  False
 * if it cannot go alone (a READ or atomic, the transport full). */
static bool probe(struct ur_qp *qp, const char *why, bool timer)
{
	if (qp->comp.peer_holds != UR_PEER_HOLDS_YES || qp->req.sel_pending ||
	    qp->req.rnr_wait || qp->req.blocked || ur_req_resend_one(qp, qp->comp.psn))
		return false;
	ur_dbg(ur_qp_dev(qp), "QP 0x%06x: %s: PSN 0x%06x alone%s", ur_qp_num(qp), why,
	       qp->comp.psn,
	       qp->comp.sel_sent && qp->comp.sel_psn == qp->comp.psn ? " again" : "");
	if (timer)
		qp->comp.probe_end = qp->req.psn_max;
	qp->comp.sel_sent = true;
	qp->comp.sel_psn = qp->comp.psn;
	qp->comp.probing = true;
	ur_timers_retry(qp);   /* Karn: no round trip timed across a resend */
	return true;
}

/* Past a READ/ATOMIC still waiting, its response was lost.  Every later ACK
 * says so again; one retry answers them all. */
static enum comp_state ack(struct comp_ctx *c)
{
	struct ur_qp *qp = c->qp;
	bool probed = qp->comp.probing;
	bool held = learn_holds(qp, c->pkt->psn, false);

	if (!ur_ack_through(qp, c->pkt->psn) && !qp->comp.retrying)
		return COMP_RETRY;
	if (!held && !qp->comp.retrying) {
		/* Nothing after it held: what was sent after it goes back.
		 * Not a timeout, so it does not count (after the progress
		 * above, a QP with retry_cnt 0 would end here). */
		c->early = true;
		return COMP_RETRY;
	}
	if (probed && psn_lt(qp->comp.psn, qp->comp.probe_end) && probe(qp, "probe answered", false))
		ur_timers_arm_retrans(qp);
	return COMP_RETIRE;
}

/* What precedes the NAKed PSN is acknowledged, up to a READ/ATOMIC still
 * waiting for its response: comp.psn stops there (never past a request
 * that must be sent again at its own PSN). */
static enum comp_state rnr_nak(struct comp_ctx *c)
{
	struct ur_qp *qp = c->qp;

	UR_QP_COUNT(qp, UR_CNT_RCVD_RNR_ERR);
	ur_ack_through(qp, psn_add(c->pkt->psn, UR_PSN_MASK));
	if (!qp->comp.rnr_retry_left) {
		UR_QP_COUNT(qp, UR_CNT_RETRY_RNR_EXCEEDED_ERR);
		ur_giveup_log(qp, c->pkt, c->syn, IBV_WC_RNR_RETRY_EXC_ERR);
		return error(c, ur_ack_head(qp), IBV_WC_RNR_RETRY_EXC_ERR);
	}
	if (qp->attr.rnr_retry != 7)        /* 7: retry forever */
		qp->comp.rnr_retry_left--;
	ur_req_rewind(qp);
	qp->comp.retrying = true;           /* a NAK for the same PSN is no news */
	qp->req.rnr_wait = true;
	ur_timers_arm_rnr(qp, c->syn & 0x1f);
	return COMP_RETIRE;
}

/* A responder that holds what follows a gap NAKs the gap and needs only
 * that packet again: one resend, not the window.  Once per gap: the same
 * NAK again before progress is news of nothing.  Anything that cannot be
 * resent alone (a READ, an atomic, a packet not yet sent since going
 * back), or a resend the transport refuses, goes back as before; so does
 * a lost resend, when the timer fires. */
static enum comp_state selective(struct comp_ctx *c)
{
	struct ur_qp *qp = c->qp;
	uint32_t psn = c->pkt->psn;
	int ret;

	struct ur_comp_state *cs = &qp->comp;
	uint32_t run = 1, sent = 0;

	if (cs->sel_run && psn_lt(psn, cs->sel_next) &&
	    !psn_lt(psn, psn_add(cs->sel_next, (UR_PSN_MASK + 1) - cs->sel_run)))
		return COMP_RETIRE;       /* resent already, in the last run */
	if (!psn_lt(psn, qp->req.psn))
		return COMP_RETIRE;       /* gone back before it: it goes again in turn */
	/* Gone back over it for density: the responder names the next gap
	 * once the last fills, so this one's resend has left already (lost
	 * too, the timer goes back). */
	if (cs->sel_gone_back && psn_lt(psn, cs->sel_gb_end))
		return COMP_RETIRE;
	/* The gap right after the last run: a burst was lost (a GRO batch
	 * dropped whole, a full queue).  Each run twice the last, so a burst
	 * of n costs log2(n) round trips, not n. */
	bool burst = cs->sel_run && psn == cs->sel_next;
	if (burst)
		run = ur_min(cs->sel_run * 2, UR_SEL_RUN_MAX);
	/* Another gap of the same flight costs another round trip: past
	 * UR_SEL_GAPS_MAX of them, the rest of the flight goes back (and
	 * what the responder holds arrives twice, a duplicate).  A flight
	 * after such a one goes back at its first gap, until a flight has
	 * few again: dense loss stays dense. */
	if (cs->sel_gaps && psn_lt(psn, cs->sel_flight_end)) {
		if (!burst && cs->sel_gaps <= UR_SEL_GAPS_MAX)
			cs->sel_gaps++;
	} else {
		cs->sel_dense = cs->sel_gaps > UR_SEL_GAPS_MAX;
		cs->sel_gaps = 1;
		cs->sel_flight_end = qp->req.psn;
	}
	if (cs->sel_dense || cs->sel_gaps > UR_SEL_GAPS_MAX) {
		if (qp->comp.retrying)
			return COMP_RETIRE;
		UR_QP_COUNT(qp, UR_CNT_SELECTIVE_DENSE);
		cs->sel_gone_back = true;
		cs->sel_gb_end = qp->req.psn_max;
		return COMP_RETRY;
	}
	ret = qp->req.rnr_wait ? -EINVAL : ur_req_resend_one(qp, psn);
	if (ret && ret != -EAGAIN)
		return qp->comp.retrying ? COMP_RETIRE : COMP_RETRY;
	sent = 1;
	while (!ret && sent < run && psn_lt(psn_add(psn, sent), qp->req.psn) &&
	       !ur_req_resend_one(qp, psn_add(psn, sent)))
		sent++;
	ur_dbg(ur_qp_dev(qp), "QP 0x%06x: %s PSN 0x%06x and %u after it alone (sent up to 0x%06x, "
	       "cwnd %u)", ur_qp_num(qp), ret ? "will resend" : "resent", psn, sent - 1,
	       qp->req.psn, qp->req.cwnd);
	cs->sel_next = psn_add(psn, sent);
	cs->sel_run = sent;
	qp->comp.sel_sent = true;
	qp->comp.sel_psn = psn;
	/* The transport was full: the requester resends it first when it
	 * has room (req.c). */
	qp->req.sel_pending = ret == -EAGAIN;
	ur_timers_retry(qp);   /* Karn: no round trip timed across a resend */
	/* The window stays: one packet lost and the rest delivered is a
	 * random loss, not a path that cannot carry the window (that one
	 * loses the resends too, and the timer's go-back halves it). */
	ur_timers_arm_retrans(qp);
	return COMP_RETIRE;
}

/* Whether the requester takes uroce's gap reports: it resends alone. */
static bool takes_gaps(const struct ur_qp *qp)
{
	return ur_qp_plain_rc(qp) && qp->ctx->stack->selective;
}

/* A gap report (UR_AETH_GAP): the responder holds what followed these
 * PSNs, so each is resent alone now (stamped: rel_priv.h).  One resent
 * alone already is on its way, or lost (GAP_AGAIN tells).  What cannot go
 * alone (a READ, an atomic, the transport full) waits for its NAK, as
 * before.  Sent only by a responder that holds: that is learnt too. */
static enum comp_state gap(struct comp_ctx *c)
{
	struct ur_qp *qp = c->qp;
	struct ur_comp_state *cs = &qp->comp;
	uint32_t psn = c->pkt->psn, sent = 0;
	uint32_t n = ur_min(aeth_msn(ur_pkt_hdr(c->pkt, UR_HDR_AETH)), UR_MAX_UNACKED_PSNS);

	if (!takes_gaps(qp) || cs->retrying || qp->req.rnr_wait || qp->req.blocked ||
	    (cs->sel_gone_back && psn_lt(psn, cs->sel_gb_end)))
		return COMP_DONE;
	cs->peer_holds = UR_PEER_HOLDS_YES;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t p = psn_add(psn, i);

		if (!psn_lt(p, qp->req.psn))
			break;
		if (psn_lt(p, cs->psn) || ur_rs_stamp(cs, p))
			continue;
		if (ur_req_resend_one(qp, p))
			break;
		UR_QP_COUNT(qp, UR_CNT_GAP_RESENDS);
		sent++;
	}
	if (!sent)
		return COMP_DONE;
	ur_dbg(ur_qp_dev(qp), "QP 0x%06x: gap report: resent %u of the %u PSNs from 0x%06x alone",
	       ur_qp_num(qp), sent, n, psn);
	ur_timers_retry(qp);   /* Karn: no round trip timed across a resend */
	ur_timers_arm_retrans(qp);
	return COMP_RETIRE;
}

/* GAP_AGAIN: a sequence NAK of psn, sent as the responder received x.
 * Never resent alone, psn is a gap as any NAK names.  Resent alone
 * before x was (the requester resends in PSN order, and the path keeps
 * order), its resend was lost: once more alone, now.  Resent after x, it
 * is on its way.  Lost again, the timer sends it alone (sel_psn). */
static enum comp_state gap_again(struct comp_ctx *c)
{
	struct ur_qp *qp = c->qp;
	struct ur_comp_state *cs = &qp->comp;
	uint32_t psn = c->pkt->psn, x = aeth_msn(ur_pkt_hdr(c->pkt, UR_HDR_AETH));
	/* Stamps first: x is often what this NAK acknowledges, and loses its. */
	uint16_t sp = ur_rs_stamp(cs, psn);
	uint16_t sx = psn_ge(x, cs->psn) && psn_lt(x, qp->req.psn) ? ur_rs_stamp(cs, x) : 0;

	UR_QP_COUNT(qp, UR_CNT_RCVD_NAK);
	UR_QP_COUNT(qp, UR_CNT_RCVD_SEQ_ERR);
	ur_ack_through(qp, psn_add(psn, UR_PSN_MASK));
	if (!takes_gaps(qp))
		return cs->retrying ? COMP_RETIRE : COMP_RETRY;
	cs->peer_holds = UR_PEER_HOLDS_YES;
	if (!sp)
		return selective(c);
	if (sx && ur_rs_after(sx, sp) && !qp->req.rnr_wait && !qp->req.sel_pending &&
	    !ur_req_resend_one(qp, psn)) {
		UR_QP_COUNT(qp, UR_CNT_GAP_RESENDS);
		ur_dbg(ur_qp_dev(qp), "QP 0x%06x: PSN 0x%06x's resend was lost (0x%06x, resent "
		       "after it, arrived): resent alone again", ur_qp_num(qp), psn, x);
		ur_timers_retry(qp);
		ur_timers_arm_retrans(qp);
	}
	cs->sel_sent = true;
	cs->sel_psn = psn;
	return COMP_RETIRE;
}

static enum comp_state nak(struct comp_ctx *c)
{
	struct ur_qp *qp = c->qp;

	UR_QP_COUNT(qp, UR_CNT_RCVD_NAK);
	if (c->syn == UR_NAK_PSN_SEQ_ERR)
		learn_holds(qp, c->pkt->psn, true);
	ur_ack_through(qp, psn_add(c->pkt->psn, UR_PSN_MASK));   /* as for RNR */
	if (c->syn == UR_NAK_PSN_SEQ_ERR) {
		UR_QP_COUNT(qp, UR_CNT_RCVD_SEQ_ERR);
		if (takes_gaps(qp) && qp->comp.peer_holds != UR_PEER_HOLDS_NO)
			return selective(c);
		/* A new gap comes with progress (which clears retrying); one for
		 * where we went back to already is stale: packets sent before
		 * going back met the gap. */
		return qp->comp.retrying ? COMP_RETIRE : COMP_RETRY;
	}
	return error(c, ur_ack_head(qp),
		     c->syn == UR_NAK_REM_ACCESS_ERR ? IBV_WC_REM_ACCESS_ERR :
		     c->syn == UR_NAK_INVALID_REQ ? IBV_WC_REM_INV_REQ_ERR : IBV_WC_REM_OP_ERR);
}

/* The READ WQE owning a response PSN, after completing what precedes it
 * (a response implicitly acknowledges every earlier request). */
static struct ur_send_wqe *read_wqe_for(struct ur_qp *qp, uint32_t psn)
{
	struct ur_send_wqe *w;

	while ((w = ur_ack_head(qp))) {
		if (w->opcode == IBV_WR_RDMA_READ && ur_ack_wqe_started(w))
			return psn_ge(psn, w->first_psn) ? w : NULL;
		if (w->state != UR_WQE_SENT || ur_wr_is_rd_atomic(w->opcode) ||
		    !psn_lt(w->last_psn, psn))
			return NULL;
		ur_ack_complete(qp, w);
	}
	return NULL;
}

/* Out-of-order tolerance (UROCE_OOO=1): a READ response past a gap is
 * kept, to go through these steps once the gap fills; the gap counts as
 * a loss (a retry) only once UR_OOO_NAK_AFTER wait behind it.  True while
 * it is kept and the gap is not yet a loss. */
static bool hold_response(struct ur_qp *qp, const struct ur_pkt_view *pkt)
{
	if (!qp->ctx->stack->ooo || pkt->placed ||
	    !ur_held_keep(&qp->held_resp, pkt, (uint32_t)psn_diff(pkt->psn, qp->comp.psn)))
		return false;
	UR_QP_COUNT(qp, UR_CNT_HELD_OUT_OF_SEQ);
	return ur_held_count(qp->held_resp) < UR_OOO_NAK_AFTER;
}

static enum comp_state read(struct comp_ctx *c)
{
	struct ur_qp *qp = c->qp;
	const struct ur_pkt_view *pkt = c->pkt;
	uint32_t psn = pkt->psn, off;
	bool last = pkt->mask & UR_OPF_LAST, ok;
	struct ur_send_wqe *w = read_wqe_for(qp, psn);

	if (!w)
		return COMP_RETIRE;
	if (psn_gt(w->first_psn, qp->comp.psn))
		ur_ack_progress(qp, w->first_psn);
	if (psn != qp->comp.psn) {
		if (psn_gt(psn, qp->comp.psn) && hold_response(qp, pkt))
			return COMP_RETIRE;
		/* A gap: responses were lost.  One retry per gap: the rest of
		 * the old response stream is still arriving behind this one. */
		if (psn_gt(psn, qp->comp.psn) && !qp->req.rnr_wait && !qp->comp.retrying)
			return COMP_RETRY;
		return COMP_RETIRE;
	}
	off = (uint32_t)psn_diff(psn, w->first_psn) * qp->mtu;
	if (off != w->read_done || off + pkt->paylen > w->length ||
	    (!last && pkt->paylen != qp->mtu) || pkt->placed != w->placed ||
	    (w->placed && pkt->paylen != w->length))
		return error(c, w, IBV_WC_BAD_RESP_ERR);
	ok = true;
	if (!pkt->placed) {       /* else we fetched the bytes ourselves */
		ur_mr_read_lock(&qp->ctx->mrs);
		ok = ur_mr_scatter(&qp->ctx->mrs, qp->pd, w->sge, w->num_sge, off, pkt->payload,
				   pkt->paylen);
		ur_mr_read_unlock(&qp->ctx->mrs);
	}
	if (!ok)
		return error(c, w, IBV_WC_LOC_PROT_ERR);
	w->read_done += pkt->paylen;
	if (last && qp->req.rd_atomic)
		qp->req.rd_atomic--;         /* one READ request answered */
	ur_ack_progress(qp, psn_inc(psn));
	if (w->read_done == w->length && w->state == UR_WQE_SENT && last)
		ur_qp_complete_send(qp, w, IBV_WC_SUCCESS);
	return COMP_RETIRE;
}

static enum comp_state atomic(struct comp_ctx *c)
{
	struct ur_qp *qp = c->qp;
	const struct ur_pkt_view *pkt = c->pkt;
	uint64_t orig = atmack_orig(ur_pkt_hdr(pkt, UR_HDR_ATMACK));
	struct ur_send_wqe *w;
	bool ok;

	while ((w = ur_ack_head(qp))) {
		if (ur_wr_is_rd_atomic(w->opcode))
			break;
		if (w->state != UR_WQE_SENT || !psn_lt(w->last_psn, pkt->psn))
			return COMP_RETIRE;
		ur_ack_complete(qp, w);
	}
	if (!w || w->state != UR_WQE_SENT || psn_lt(pkt->psn, w->first_psn))
		return COMP_RETIRE;
	/* The requests before the oldest READ/ATOMIC are acknowledged. */
	if (psn_gt(w->first_psn, qp->comp.psn))
		ur_ack_progress(qp, w->first_psn);
	if (w->opcode == IBV_WR_RDMA_READ || w->first_psn != pkt->psn)
		/* Responses come in order: the older READ/ATOMIC's was lost.
		 * Ask again now rather than at the timeout (once per loss). */
		return qp->comp.retrying ? COMP_RETIRE : COMP_RETRY;
	ur_mr_read_lock(&qp->ctx->mrs);
	ok = ur_mr_scatter(&qp->ctx->mrs, qp->pd, w->sge, w->num_sge, 0, (const uint8_t *)&orig, 8);
	ur_mr_read_unlock(&qp->ctx->mrs);
	if (!ok)
		return error(c, w, IBV_WC_LOC_PROT_ERR);
	ur_ack_progress(qp, psn_inc(pkt->psn));
	ur_ack_complete(qp, w);
	return COMP_RETIRE;
}

static enum comp_state retry(struct comp_ctx *c)
{
	struct ur_qp *qp = c->qp;

	if (!c->early && !qp->comp.retry_left) {
		UR_QP_COUNT(qp, UR_CNT_RETRY_EXCEEDED_ERR);
		ur_giveup_log(qp, c->pkt, c->syn, IBV_WC_RETRY_EXC_ERR);
		return error(c, ur_ack_oldest(qp), IBV_WC_RETRY_EXC_ERR);
	}
	ur_dbg(ur_qp_dev(qp), "QP 0x%06x: %sretry from PSN 0x%06x (sent up to 0x%06x, cwnd %u, %u left)",
	       ur_qp_num(qp), c->early ? "early " : "", qp->comp.psn, qp->req.psn, qp->req.cwnd,
	       qp->comp.retry_left);
	if (!c->early) {
		ur_giveup_mark(qp, c->pkt, c->syn);
		qp->comp.retry_left--;
	} else {
		qp->comp.early_retries++;
	}
	UR_QP_COUNT(qp, UR_CNT_COMPLETER_RETRY_ERR);     /* every go-back, as rxe's */
	/* After a timeout nothing says how far the responder got: the
	 * resend's first packet asks it.  Else a path that loses the same
	 * tail of every flight (a busy process's socket holding ten
	 * datagrams) delivers the same head, which asks for nothing, and the
	 * retries run out with part of the message in. */
	if (!c->pkt)
		qp->req.ask_ack = true;
	qp->comp.retrying = true;
	ur_held_clear(&qp->held_resp);     /* asked for again */
	ur_timers_retry(qp);
	/* A loss on a lossy path: the congestion window halves, once for
	 * all the losses of one window (what was in flight when the first
	 * was found), as TCP's recovery does. */
	if (!qp->req.recovering) {
		qp->req.cwnd = ur_max(qp->req.cwnd / 2, UR_CWND_MIN);
		qp->req.recovering = true;
		qp->req.recover_psn = qp->req.psn_max;
	}
	ur_req_rewind(qp);
	ur_timers_arm_retrans(qp);
	ur_kick(qp, UR_RUN_REQ);
	return COMP_RETIRE;
}

static enum comp_state fail(struct comp_ctx *c)
{
	struct ur_qp *qp = c->qp;

	ur_dbg(ur_qp_dev(qp), "QP 0x%06x: WR 0x%llx failed: %s", ur_qp_num(qp),
	       (unsigned long long)(c->w ? c->w->wr_id : 0), ur_wc_status_name(c->status));
	if (c->w)
		ur_qp_complete_send(qp, c->w, c->status);
	ur_qp_to_error(qp, false);
	return COMP_DONE;
}

/* Local operations (BIND_MW, LOCAL_INV) behind what just completed complete
 * now: no ACK may ever come for them when a READ or an atomic was the last
 * request before them.  Then the window may have room. */
static enum comp_state retire(struct comp_ctx *c)
{
	struct ur_qp *qp = c->qp;

	if (qp->state == IBV_QPS_RTS || qp->state == IBV_QPS_SQD)
		ur_ack_retire(qp);
	if (qp->state == IBV_QPS_RTS)
		ur_kick(qp, UR_RUN_REQ);   /* the run step sends on (rel/run.h) */
	return COMP_DONE;
}

#define COMP_STEP(member, text, fn)	[member] = fn,
static enum comp_state (*const step[COMP_NR])(struct comp_ctx *c) = {
	COMP_STATE_LIST(COMP_STEP)
};

static void run(struct comp_ctx *c, enum comp_state s)
{
	while (s != COMP_DONE) {
		ur_dbg(ur_qp_dev(c->qp), "QP 0x%06x: completer %s", ur_qp_num(c->qp),
		       comp_state_name[s]);
		s = step[s](c);
	}
}

/* The READ responses held past a gap that the completer now expects, in
 * order, each through the same steps, until the next gap. */
static void drain_held_responses(struct ur_qp *qp)
{
	struct ur_pkt_view v;

	ur_held_forget_before(qp->held_resp, qp->comp.psn);
	while (qp->state == IBV_QPS_RTS) {
		uint32_t before = qp->comp.psn;
		void *held = ur_held_take(qp->held_resp, qp->comp.psn, &v);
		struct comp_ctx c = { .qp = qp, .pkt = &v };

		if (!held)
			break;
		run(&c, COMP_CHECK_QP);
		ur_held_release(held);
		if (qp->comp.psn == before) {
			ur_held_clear(&qp->held_resp);
			break;
		}
		ur_held_forget_before(qp->held_resp, qp->comp.psn);
	}
}

void ur_comp_rx(struct ur_qp *qp, const struct ur_pkt_view *pkt)
{
	struct comp_ctx c = { .qp = qp, .pkt = pkt };

	run(&c, COMP_CHECK_QP);
	if (ur_held_any(qp->held_resp))
		drain_held_responses(qp);
}

void ur_comp_inbox(struct ur_qp *qp)
{
	struct ur_inbox_pkt p;
	struct ur_pkt_view v;
	uint32_t covered = 0;

	while (ur_inbox_take(qp, &p, &covered)) {
		if (ur_pkt_parse(&v, p.bytes, p.len) != UR_PARSE_OK)
			continue;   /* parsed once already: cannot happen */
		UR_QP_COUNT(qp, UR_CNT_RCVD_PKTS);
		if (qp->dying) {
			UR_QP_COUNT(qp, UR_CNT_DROPPED);
			continue;
		}
		if (memcmp(p.sgid, qp->attr.ah_attr.grh.dgid.raw, sizeof(p.sgid))) {
			UR_QP_COUNT(qp, UR_CNT_WRONG_PEER);
			continue;
		}
		UR_QP_COUNT(qp, UR_CNT_ACKS_INBOX);
		qp->rx_ns = ur_coarse_now_ns();
		ur_comp_rx(qp, &v);
	}
	if (covered) {
		UR_QP_COUNT_N(qp, UR_CNT_RCVD_PKTS, covered);
		UR_QP_COUNT_N(qp, UR_CNT_ACKS_INBOX, covered);
	}
}

void ur_comp_timers(struct ur_qp *qp, uint64_t now)
{
	struct comp_ctx c = { .qp = qp };

	/* Outside RTS a deadline means nothing: cleared, so the timer is not
	 * armed again at its past deadline (the engine would fire it for
	 * ever). */
	if (qp->state != IBV_QPS_RTS) {
		qp->comp.retrans_deadline = 0;
		qp->comp.rnr_deadline = 0;
		return;
	}
	if (qp->comp.rnr_deadline && qp->comp.rnr_deadline <= now) {
		qp->comp.rnr_deadline = 0;
		qp->req.rnr_wait = false;
		ur_timers_arm_retrans(qp);   /* a deadline ahead: the retry below waits */
		ur_kick(qp, UR_RUN_REQ);
	}
	if (qp->comp.retrans_deadline && qp->comp.retrans_deadline <= now) {
		qp->comp.retrans_deadline = 0;
		if (qp->comp.psn != qp->req.psn_max) {
			c.early = !ur_timers_retry_counts(qp, now);
			if (c.early && (qp->req.blocked || ur_timers_hold_back(qp, now))) {
				/* Waiting for room on the transport: going back
				 * would only rewind what has not left yet; or
				 * what left waits unread (timers.h). */
				ur_timers_arm_retrans(qp);
				return;
			}
			UR_QP_COUNT(qp, UR_CNT_TIMER_RESENDS);
			if (c.early && probe(qp, "timer", true)) {
				ur_timers_arm_retrans(qp);   /* doubled meanwhile */
				return;
			}
			run(&c, COMP_RETRY);
		}
	}
}
