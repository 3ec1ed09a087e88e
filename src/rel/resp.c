/* The responder as a state machine (the shape of Linux rxe's rxe_resp.c):
 * one request packet walks a chain of small checks, each a step that names
 * the next, until it is executed and acknowledged, answered as a
 * duplicate, or refused.  UD, UC and XRC differ by steps, not by flags.
 *
 * Refusals follow the IBA's classes of responder-detected errors:
 *   class A  the receive WQE is bad: NAK remote operational error, the
 *            WQE completes in error, the QP enters ERROR (resp_exec.c);
 *   class B  a PSN sequence error or no receive WQE (RNR): a NAK, and
 *            nothing else changes;
 *   class C  an invalid request or a remote access error: NAK, the QP
 *            enters ERROR.
 * UC has no NAKs: where RC would NAK, the message is dropped and the QP
 * carries on with the next one.
 */
#include "rel/resp.h"

#include "core/qp.h"
#include "rel/held.h"
#include "rel/rel_priv.h"
#include "rel/resp_exec.h"
#include "rel/resp_out.h"
#include "rel/resp_batch.h"
#include "rel/stack.h"
#include "rel/xrc.h"
#include "util/enum_name.h"
#include "util/log.h"

/* The responder's states, each with its name for the logs and its step. */
#define RESP_STATE_LIST(X)						\
	/* can the QP take requests now? */				\
	X(RESP_CHECK_QP, "CHECK_QP", check_qp)				\
	/* a datagram: no stream, no PSN */				\
	X(RESP_UD, "UD", ud)						\
	/* waiting for another process to place a message */		\
	X(RESP_XRC_PARKED, "XRC_PARKED", xrc_parked)			\
	/* which SRQ (hence PD, CQ) the request is for */		\
	X(RESP_XRC_SRQ, "XRC_SRQ", xrc_srq)				\
	X(RESP_CHECK_PSN, "CHECK_PSN", check_psn)			\
	/* an old PSN: answer again, execute nothing */			\
	X(RESP_DUPLICATE, "DUPLICATE", duplicate)			\
	/* class B: a gap (RC), or resynchronise (UC) */		\
	X(RESP_OUT_OF_SEQ, "OUT_OF_SEQ", out_of_seq)			\
	/* UC: the rest of a lost message goes */			\
	X(RESP_UC_DROPPING, "UC_DROPPING", uc_dropping)			\
	/* FIRST/MIDDLE/LAST in order, the length right */		\
	X(RESP_CHECK_OP_SEQ, "CHECK_OP_SEQ", check_op_seq)		\
	/* another process's SRQ: hand the packet over */		\
	X(RESP_XRC_HANDOFF, "XRC_HANDOFF", xrc_handoff)			\
	X(RESP_EXECUTE, "EXECUTE", execute)				\
	/* answered from the resource ring */				\
	X(RESP_READ_ATOMIC, "READ_ATOMIC", read_atomic)			\
	/* class B: no receive WQE */					\
	X(RESP_RNR, "RNR", rnr)						\
	/* class C: NAK invalid request */				\
	X(RESP_ERR_INVALID, "ERR_INVALID", err_invalid)			\
	/* class C: a request opcode with no step here */		\
	X(RESP_ERR_UNSUPPORTED, "ERR_UNSUPPORTED", err_unsupported)	\
	/* the PSN is done: expect the next, ACK if asked */		\
	X(RESP_ACKNOWLEDGE, "ACKNOWLEDGE", acknowledge)			\
	/* UC: the packet is spent though the message is lost */	\
	X(RESP_UC_CONSUME, "UC_CONSUME", uc_consume)			\
	X(RESP_DONE, "DONE", NULL)

UR_ENUM_LOCAL(resp_state, RESP_STATE_LIST, RESP_NR, resp_state_name);

/* One packet's walk. */
struct resp_ctx {
	struct ur_qp *qp;
	const struct ur_pkt_view *pkt;
	const struct ur_rx_meta *meta;
	int32_t d;             /* PSN distance from the expected one */
	bool foreign;          /* XRC: for another process's SRQ */
};

static enum resp_state check_qp(struct resp_ctx *c)
{
	struct ur_qp *qp = c->qp;

	if (qp->state < IBV_QPS_RTR || qp->state == IBV_QPS_ERR) {
		UR_QP_COUNT(qp, UR_CNT_DROPPED);
		return RESP_DONE;
	}
	if (qp->type == IBV_QPT_UD)
		return RESP_UD;
	if (qp->type == IBV_QPT_XRC_RECV)
		return qp->resp.xrc_wait ? RESP_XRC_PARKED : RESP_XRC_SRQ;
	return RESP_CHECK_PSN;
}

static enum resp_state ud(struct resp_ctx *c)
{
	ur_exec_ud(c->qp, c->pkt, c->meta);
	return RESP_DONE;
}

static enum resp_state xrc_parked(struct resp_ctx *c)
{
	ur_xrc_parked_rx(c->qp, c->pkt);
	return RESP_DONE;
}

/* The SRQ is the message's state: only the packet at the expected PSN may
 * set it.  A duplicate SEND/WRITE/ATOMIC is answered without it; a
 * duplicate READ needs its PD, so is looked up between messages only. */
static enum resp_state xrc_srq(struct resp_ctx *c)
{
	struct ur_qp *qp = c->qp;
	int32_t d = psn_diff(c->pkt->psn, qp->resp.psn);
	bool read = c->pkt->mask & UR_OPF_READ;

	if (d == 0 || (d < 0 && read && qp->resp.opcode < 0))
		return ur_xrc_resolve(qp, c->pkt, &c->foreign) ? RESP_CHECK_PSN : RESP_DONE;
	if (d < 0 && read)
		return RESP_DONE;   /* answered when the requester asks again */
	return RESP_CHECK_PSN;
}

static enum resp_state check_psn(struct resp_ctx *c)
{
	struct ur_qp *qp = c->qp;

	if (qp->type == IBV_QPT_RC)
		qp->resp.peer_selective = bth_selective(c->pkt->bth);
	c->d = psn_diff(c->pkt->psn, qp->resp.psn);
	if (c->d < 0)
		return RESP_DUPLICATE;
	if (c->d > 0)
		return RESP_OUT_OF_SEQ;
	qp->resp.nak_sent = false;
	qp->resp.rnr_sent = false;
	if (qp->type == IBV_QPT_UC && qp->resp.drop_msg)
		return RESP_UC_DROPPING;
	return RESP_CHECK_OP_SEQ;
}

static enum resp_state duplicate(struct resp_ctx *c)
{
	struct ur_qp *qp = c->qp;
	uint8_t low = c->pkt->opcode & 0x1f;

	/* A READ or ATOMIC for another process's SRQ was never executed:
	 * nothing to answer again.  UC answers nothing. */
	if ((c->foreign && !(c->pkt->mask & UR_OPF_SEND)) || !ur_qp_is_reliable(qp))
		return RESP_DONE;
	UR_QP_COUNT(qp, UR_CNT_DUPLICATE_REQUEST);
	if (low == UR_OPL_RDMA_READ_REQUEST)
		ur_exec_read(qp, c->pkt, true);   /* reads are idempotent: resend */
	else if (low == UR_OPL_COMPARE_SWAP || low == UR_OPL_FETCH_ADD)
		ur_exec_atomic_again(qp, c->pkt);
	else if (bth_ackreq(c->pkt->bth))
		/* SEND/WRITE: acknowledge the newest PSN executed, only when
		 * asked, as for a new packet.  A requester that goes back
		 * resends through a packet that asks (the message's LAST, or
		 * the one that fills its window), and that packet's ACK is
		 * the one it needs.  An ACK for each duplicate FIRST or
		 * MIDDLE as well repeats the same ACK (same PSN, same MSN)
		 * while the requester is resending, and Linux rxe (6.1)
		 * takes the repeat as completing the WQE it is resending:
		 * the application reposts into that slot and rxe's requester
		 * never sends again (docs/interop.md). */
		ur_resp_queue_ack(qp, UR_AETH_ACK_UNLIMITED, psn_add(qp->resp.psn, UR_PSN_MASK));
	ur_resp_tx(qp);
	return RESP_DONE;
}

/* Whether the requester takes uroce's gap reports (UR_AETH_GAP and
 * GAP_AGAIN): it marks its requests, so it resends alone and knows them.
 * Not with reordering tolerated: a later packet is not yet a gap. */
static bool reports_gaps(const struct ur_qp *qp)
{
	return qp->resp.peer_selective && !qp->ctx->stack->ooo;
}

/* The sequence NAK of the expected PSN, as GAP_AGAIN: naming x, the PSN
 * just received, lets the requester tell a lost resend from one on its
 * way (comp.c). */
static void nak_again(struct ur_qp *qp, uint32_t x)
{
	ur_resp_queue_ack(qp, UR_AETH_GAP_AGAIN, qp->resp.psn);
	qp->resp.ack_msn = x;
	ur_resp_tx(qp);
}

/* A packet past the gap just NAKed, or past one told already, was kept:
 * the PSNs between the newest seen and it are a new gap, told to the
 * requester now (UR_AETH_GAP) so that it resends them alone at once.
 * Not when the answer slot is taken (the transport is full): the gap's
 * own NAK tells of it once the responder gets there. */
static void report_gap(struct ur_qp *qp, uint32_t psn, bool first)
{
	struct ur_resp_state *r = &qp->resp;
	uint32_t from, n;

	if (first)
		r->seen_end = psn_inc(r->psn);   /* the expected PSN: the NAK names it */
	if (psn_lt(psn, r->seen_end))
		return;                          /* fills a gap told already */
	from = r->seen_end;
	n = (uint32_t)psn_diff(psn, from);
	r->seen_end = psn_inc(psn);
	if (!n || r->ack_pending)
		return;
	ur_dbg(ur_qp_dev(qp), "QP 0x%06x: PSN 0x%06x: the %u before it from 0x%06x are missing: "
	       "reported", ur_qp_num(qp), psn, n, from);
	UR_QP_COUNT(qp, UR_CNT_GAP_REPORTS);
	ur_resp_queue_ack(qp, UR_AETH_GAP, from);
	r->ack_msn = n;
	ur_resp_tx(qp);
}

static enum resp_state out_of_seq(struct resp_ctx *c)
{
	struct ur_qp *qp = c->qp;
	struct ur_resp_state *r = &qp->resp;
	uint32_t m = c->pkt->mask;
	bool ooo = qp->type != IBV_QPT_UC && qp->ctx->stack->ooo, kept = false;
	bool first = !ur_held_any(qp->held);
	/* Before a gap told already: a resend (or a reordered packet). */
	bool filler = !first && psn_lt(c->pkt->psn, r->seen_end);

	UR_QP_COUNT(qp, UR_CNT_OUT_OF_SEQ_REQUEST);
	if (r->rnr_sent)
		return RESP_DONE;
	/* A requester that resends selectively will send only the gap, and
	 * a reordered packet fills it by itself: keep this to execute after
	 * it. */
	if ((r->peer_selective || ooo) && !c->pkt->placed &&
	    ur_held_keep(&qp->held, c->pkt, (uint32_t)c->d)) {
		UR_QP_COUNT(qp, UR_CNT_HELD_OUT_OF_SEQ);
		kept = true;
	}
	/* Reordered, not lost, until enough wait behind the gap. */
	if (ooo && kept && ur_held_count(qp->held) < UR_OOO_NAK_AFTER)
		return RESP_DONE;
	if (qp->type != IBV_QPT_UC) {
		/* One sequence NAK per gap, not one per packet past it. */
		if (!r->nak_sent) {
			ur_dbg(ur_qp_dev(qp), "QP 0x%06x: PSN 0x%06x while expecting 0x%06x: NAK",
			       ur_qp_num(qp), c->pkt->psn, r->psn);
			r->nak_sent = true;
			ur_resp_answer(qp, UR_NAK_PSN_SEQ_ERR, r->psn);
		} else if (kept && filler && reports_gaps(qp) && !r->ack_pending) {
			/* A resend arrived while the expected PSN is still
			 * missing: its own resend, if sent before, was lost. */
			nak_again(qp, c->pkt->psn);
		}
		if (kept && !filler && reports_gaps(qp))
			report_gap(qp, c->pkt->psn, first);
		return RESP_DONE;
	}
	/* UC: the message in progress is lost; take up the stream here. */
	r->psn = c->pkt->psn;
	if (r->recv_active)
		r->recv_offset = 0;
	r->opcode = -1;
	r->drop_msg = !(m & UR_OPF_START);
	return r->drop_msg ? RESP_UC_CONSUME : RESP_CHECK_OP_SEQ;
}

static enum resp_state uc_dropping(struct resp_ctx *c)
{
	struct ur_resp_state *r = &c->qp->resp;

	if (!(c->pkt->mask & UR_OPF_START))
		return RESP_UC_CONSUME;
	r->drop_msg = false;
	if (r->recv_active)
		r->recv_offset = 0;
	return RESP_CHECK_OP_SEQ;
}

/* Mid-message only MIDDLE/LAST of the same kind; between messages only
 * FIRST/ONLY.  Every packet but a message's last carries a full MTU. */
static enum resp_state check_op_seq(struct resp_ctx *c)
{
	struct ur_qp *qp = c->qp;
	int cur = qp->resp.opcode;
	uint32_t m = c->pkt->mask, paylen = c->pkt->paylen;
	bool seq_ok, len_ok;

	if (cur < 0)
		seq_ok = m & UR_OPF_START;
	else
		seq_ok = !(m & UR_OPF_START) &&
			 (!(ur_opcode[cur].mask & UR_OPF_SEND) || (m & UR_OPF_SEND)) &&
			 (!(ur_opcode[cur].mask & UR_OPF_WRITE) || (m & UR_OPF_WRITE));
	if ((m & UR_OPF_START) && (m & UR_OPF_END))
		len_ok = paylen <= qp->mtu || c->pkt->placed;
	else if (m & (UR_OPF_START | UR_OPF_MIDDLE))
		len_ok = paylen == qp->mtu;
	else
		len_ok = paylen <= qp->mtu;
	if (!seq_ok || !len_ok)
		return RESP_ERR_INVALID;
	return c->foreign ? RESP_XRC_HANDOFF : RESP_EXECUTE;
}

static enum resp_state xrc_handoff(struct resp_ctx *c)
{
	ur_xrc_handoff(c->qp, c->pkt);
	return RESP_DONE;
}

static enum resp_state execute(struct resp_ctx *c)
{
	uint32_t m = c->pkt->mask;
	enum ur_exec_result res;

	if (m & (UR_OPF_READ | UR_OPF_ATOMIC))
		return RESP_READ_ATOMIC;
	if (m & UR_OPF_SEND)
		res = ur_exec_send(c->qp, c->pkt);
	else if (m & UR_OPF_WRITE)
		res = ur_exec_write(c->qp, c->pkt);
	else if (m & UR_OPF_ATOMIC_WRITE)
		res = ur_exec_atomic_write(c->qp, c->pkt);
	else
		return RESP_ERR_UNSUPPORTED;
	switch (res) {
	case UR_EXEC_OK:
		return RESP_ACKNOWLEDGE;
	case UR_EXEC_RNR:
		return RESP_RNR;
	default:
		return c->qp->type == IBV_QPT_UC ? RESP_UC_CONSUME : RESP_DONE;
	}
}

/* A READ or ATOMIC takes the PSNs it answers with and queues its
 * responses; they go out in ring order, then the ACK. */
static enum resp_state read_atomic(struct resp_ctx *c)
{
	if (c->pkt->mask & UR_OPF_READ)
		ur_exec_read(c->qp, c->pkt, false);
	else
		ur_exec_atomic(c->qp, c->pkt);
	ur_resp_tx(c->qp);
	return RESP_DONE;
}

static enum resp_state rnr(struct resp_ctx *c)
{
	struct ur_qp *qp = c->qp;

	UR_QP_COUNT(qp, UR_CNT_SEND_RNR_ERR);
	if (qp->type == IBV_QPT_UC) {
		qp->resp.drop_msg = true;   /* no receive WQE: the message is lost */
		qp->resp.opcode = -1;
		return RESP_UC_CONSUME;
	}
	ur_resp_answer(qp, UR_AETH_RNR_NAK | (qp->attr.min_rnr_timer & 0x1f), c->pkt->psn);
	/* After its RNR wait the requester goes back to this PSN and sends
	 * everything after it again: what is held goes, and what follows now
	 * is dropped unanswered, as rxe drops what follows a sequence NAK.
	 * Answered one by one (a sequence NAK, then a GAP_AGAIN for each
	 * packet held before), a window of 20 drew 21 answers a round, every
	 * millisecond for as long as the application left its receive queue
	 * empty: on a loaded host the storm kept the application from
	 * posting, and the requester ended in RETRY_EXC_ERR (integ.rxctx). */
	ur_held_clear(&qp->held);
	qp->resp.rnr_sent = true;
	return RESP_DONE;
}

static enum resp_state err_invalid(struct resp_ctx *c)
{
	ur_resp_refuse(c->qp, UR_NAK_INVALID_REQ, "opcode sequence or length error");
	return c->qp->type == IBV_QPT_UC ? RESP_UC_CONSUME : RESP_DONE;
}

static enum resp_state err_unsupported(struct resp_ctx *c)
{
	ur_resp_refuse(c->qp, UR_NAK_INVALID_REQ, "unsupported request opcode");
	return RESP_DONE;
}

static enum resp_state acknowledge(struct resp_ctx *c)
{
	struct ur_qp *qp = c->qp;
	struct ur_resp_state *r = &qp->resp;
	uint32_t m = c->pkt->mask;

	r->psn = psn_inc(c->pkt->psn);
	r->opcode = (m & UR_OPF_END) ? -1 : c->pkt->opcode;
	r->xrc_msg_foreign = false;
	if (m & UR_OPF_END)
		r->msn++;
	if (ur_qp_is_reliable(qp) && bth_ackreq(c->pkt->bth)) {
		if (r->draining)
			r->drain_ackreq = true;   /* one ACK for the whole run */
		else if (ur_resp_batch_hold(qp))
			ur_resp_queue_ack(qp, UR_AETH_ACK_UNLIMITED, c->pkt->psn);
		else
			ur_resp_answer(qp, UR_AETH_ACK_UNLIMITED, c->pkt->psn);
	}
	return RESP_DONE;
}

/* UC: nothing answers a lost packet, but its PSN is used up. */
static enum resp_state uc_consume(struct resp_ctx *c)
{
	c->qp->resp.psn = psn_inc(c->pkt->psn);
	return RESP_DONE;
}

#define RESP_STEP(member, text, fn)	[member] = fn,
static enum resp_state (*const step[RESP_NR])(struct resp_ctx *c) = {
	RESP_STATE_LIST(RESP_STEP)
};

static void walk(struct ur_qp *qp, const struct ur_pkt_view *pkt, const struct ur_rx_meta *meta)
{
	struct resp_ctx c = { .qp = qp, .pkt = pkt, .meta = meta };
	enum resp_state s = RESP_CHECK_QP;

	while (s != RESP_DONE) {
		ur_dbg(ur_qp_dev(qp), "QP 0x%06x: PSN 0x%06x: %s", ur_qp_num(qp), pkt->psn,
		       resp_state_name[s]);
		s = step[s](&c);
	}
}

/* The expected PSN moved: the packets held after it go now, in order,
 * each through the same steps, until the next gap or one that does not
 * move the expected PSN (an RNR, an error: what is held after it goes,
 * the requester will send it again). */
static void drain_held(struct ur_qp *qp, const struct ur_rx_meta *meta)
{
	struct ur_resp_state *r = &qp->resp;
	struct ur_pkt_view v;

	ur_held_forget_before(qp->held, r->psn);
	while (qp->state == IBV_QPS_RTS || qp->state == IBV_QPS_RTR) {
		uint32_t before = r->psn;
		void *held = ur_held_take(qp->held, r->psn, &v);

		if (!held)
			break;
		walk(qp, &v, meta);
		ur_held_release(held);
		if (r->psn == before) {
			ur_held_clear(&qp->held);
			break;
		}
		ur_held_forget_before(qp->held, r->psn);
	}
}

void ur_resp_rx(struct ur_qp *qp, const struct ur_pkt_view *pkt, const struct ur_rx_meta *meta)
{
	struct ur_resp_state *r = &qp->resp;
	uint32_t before = r->psn;
	bool moved;

	if (!ur_held_any(qp->held)) {
		walk(qp, pkt, meta);
		return;
	}
	/* Packets are held past a gap: this one may fill it.  Whatever
	 * runs, one answer at the end: the NAK of the next gap (which
	 * acknowledges everything before it), or the ACK of the newest PSN
	 * if any packet asked for one. */
	r->draining = true;
	r->drain_ackreq = false;
	walk(qp, pkt, meta);
	moved = r->psn != before;
	if (moved)
		drain_held(qp, meta);
	r->draining = false;
	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_RTR)
		return;
	/* Still held: another gap right behind (a burst lost) or further on;
	 * when reordering is tolerated, a loss only once enough wait. */
	if (moved && ur_held_any(qp->held) &&
	    (!qp->ctx->stack->ooo || ur_held_count(qp->held) >= UR_OOO_NAK_AFTER)) {
		r->nak_sent = true;
		if (reports_gaps(qp))
			nak_again(qp, pkt->psn);   /* what filled the last gap */
		else
			ur_resp_answer(qp, UR_NAK_PSN_SEQ_ERR, r->psn);
	} else if (r->drain_ackreq) {
		ur_resp_answer(qp, UR_AETH_ACK_UNLIMITED, psn_add(r->psn, UR_PSN_MASK));
	}
}

void ur_resp_replay_held(struct ur_qp *qp)
{
	static const struct ur_rx_meta no_meta;   /* only UD reads it */
	struct ur_pkt_view v;

	while (ur_xrc_next_held(qp, &v))
		ur_resp_rx(qp, &v, &no_meta);
	ur_xrc_replayed(qp);
}
