#include "rel/timers.h"

#include "core/qp.h"
#include "engine/engine.h"
#include "rel/psn.h"
#include "rel/rel_priv.h"
#include "rel/stack.h"
#include "rel/starved.h"
#include "util/clock.h"

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

void ur_timers_update(struct ur_qp *qp)
{
	uint64_t a = qp->comp.retrans_deadline, b = qp->comp.rnr_deadline;
	uint64_t d = !a ? b : !b ? a : a < b ? a : b;
	struct ur_engine *e = qp->ctx->engine;

	if (!e)
		return;
	/* Stopped by a full transport with nothing in flight, it has no
	 * deadline: a check of its own while it waits, so that a lost place
	 * on the stack's waiting list (or a lost wake-up) costs a wait, never
	 * the QP (ur_progress_timer puts it back). */
	if (!d && qp->req.blocked)
		d = ur_now_ns() + UR_BLOCKED_CHECK_NS;
	/* A deadline that moves later, or goes, leaves the timer as it is:
	 * firing early runs the completer, which finds nothing due and arms
	 * the timer anew.  Moving it (and waking the sleeping engine thread
	 * to say so) with each message cost a wake-up a message: a ping-pong
	 * that waits on a channel paid three threads a hop instead of two. */
	if (qp->dying)
		ur_engine_timer_cancel(e, &qp->timer);
	else if (d)
		ur_engine_timer_arm_by(e, &qp->timer, d);
}

void ur_timers_arm_rnr(struct ur_qp *qp, uint8_t code)
{
	qp->comp.retrans_deadline = 0;
	/* The responder answered: its silence is what a counted retry
	 * measures, so the period starts anew with the resend.  Otherwise
	 * seconds of RNR rounds (rnr_retry 7 waits for ever) turn any answer
	 * slower than the RTO into a counted retry, and a loaded host ends a
	 * live QP in RETRY_EXC_ERR. */
	qp->comp.period_ns = 0;
	qp->comp.rnr_deadline = ur_now_ns() + ur_rel_rnr_timer_ns(code);
	ur_timers_update(qp);
}

/* ---- the timer from the measured round trip ------------------------------
 * Go-back-N waits out the QP's timeout when a message's last packet, or a
 * retransmission, is lost: 67 ms for perftest's and ibv_rc_pingpong's 14,
 * against a round trip of tens of microseconds.  So the requester also
 * keeps TCP's estimate (RFC 6298: srtt, rttvar, RTO = srtt + 4 rttvar,
 * doubled on each early retry) and goes back when it expires.  Those early
 * retries are free; the QP's timeout and retry_cnt still decide when to
 * give up: a retry counts only after a whole timeout without progress, so
 * a vanished peer ends in RETRY_EXC_ERR no sooner than before. */

static uint64_t rto_ns(const struct ur_qp *qp)
{
	uint64_t qpt = ur_rel_timeout_ns(qp->attr.timeout);
	/* A responder that holds what follows a gap is probed with one
	 * packet when this fires (comp.c), unless a READ or atomic is
	 * outstanding (those go back): firing early costs one packet. */
	bool alone = qp->comp.peer_holds == UR_PEER_HOLDS_YES &&
		     ((qp->comp.sel_sent && qp->comp.sel_psn == qp->comp.psn) || !qp->req.rd_atomic);
	uint64_t floor = alone ? UR_MIN_RTO_ALONE_NS : UR_MIN_RTO_NS;
	uint64_t rto;

	if (qp->comp.srtt_ns)
		rto = qp->comp.srtt_ns + 4 * qp->comp.rttvar_ns;
	else
		rto = qpt / 4;   /* nothing measured yet: a quarter of the timeout */
	rto = (rto < floor ? floor : rto) << qp->comp.backoff;
	return qpt && rto > qpt ? qpt : rto;
}

void ur_timers_arm_retrans(struct ur_qp *qp)
{
	uint64_t t = rto_ns(qp), now = ur_now_ns();

	/* Outstanding is what was ever sent and is not acknowledged (psn_max,
	 * not psn: a retry that the transport refused at once has sent
	 * nothing yet, and a peer that never takes it must still time out). */
	if (!t || qp->comp.psn == qp->req.psn_max) {
		qp->comp.retrans_deadline = 0;
	} else {
		uint64_t end;

		if (!qp->comp.retrans_deadline && !qp->comp.period_ns)
			qp->comp.period_ns = now;      /* from idle: a period starts */
		/* Never past the period's end, where a retry counts. */
		end = qp->comp.period_ns + ur_rel_timeout_ns(qp->attr.timeout);
		qp->comp.retrans_deadline = end > now && end < now + t ? end : now + t;
	}
	ur_timers_update(qp);
}

void ur_timers_sent(struct ur_qp *qp, uint32_t psn)
{
	if (!qp->comp.rtt_sent_ns && !qp->comp.retrying) {
		qp->comp.rtt_psn = psn;
		qp->comp.rtt_sent_ns = ur_now_ns();
	}
}

void ur_timers_progress(struct ur_qp *qp, uint32_t new_psn)
{
	struct ur_comp_state *c = &qp->comp;
	uint64_t now = ur_now_ns();

	if (c->rtt_sent_ns && psn_lt(c->rtt_psn, new_psn)) {
		uint64_t r = now > c->rtt_sent_ns ? now - c->rtt_sent_ns : 1;

		if (!c->srtt_ns) {
			c->srtt_ns = r;
			c->rttvar_ns = r / 2;
		} else {
			uint64_t d = r > c->srtt_ns ? r - c->srtt_ns : c->srtt_ns - r;

			c->rttvar_ns = (3 * c->rttvar_ns + d) / 4;
			c->srtt_ns = (7 * c->srtt_ns + r) / 8;
			if (!c->srtt_ns)
				c->srtt_ns = 1;
		}
		c->rtt_sent_ns = 0;
	}
	c->backoff = 0;
	c->behind_ns = 0;
	c->starved_ns = 0;
	c->progress_ns = now;
	/* Idle once all is acknowledged; else a new period from now.  Idle,
	 * the next message's periods judge the readers afresh. */
	c->period_ns = new_psn == qp->req.psn_max ? 0 : now;
	if (!c->period_ns) {
		c->behind_seen = false;
		c->hold_back_ns = c->hold_gap_ns = 0;
	}
}

void ur_timers_left_after_wait(struct ur_qp *qp)
{
	/* Many QPs sharing a full socket take turns: the wait for a turn is
	 * this host's, not the peer's silence.  A peer that takes nothing at
	 * all (frozen, its socket full) gives no turn, so it still times
	 * out. */
	/* A QP that failed meanwhile (ur_rel_abort cleared its deadlines)
	 * has nothing to time. */
	if (qp->comp.period_ns && qp->state == IBV_QPS_RTS) {
		qp->comp.period_ns = ur_now_ns();
		ur_timers_arm_retrans(qp);
	}
}

void ur_timers_waiting(struct ur_qp *qp)
{
	if (!qp->req.blocked_ns)
		qp->req.blocked_ns = ur_now_ns();
	ur_timers_update(qp);
}

void ur_timers_retry(struct ur_qp *qp)
{
	qp->comp.rtt_sent_ns = 0;
}

/* How long this host's backlog may hold retries back: a peer process
 * that has not read what we sent may be frozen, and must still end the
 * QP; this process itself is running and reads what waits for it (1024
 * DC initiators writing to a DCT of their own process at once, under
 * ThreadSanitizer on 2 cores, kept its queue full for 4 s). */
static uint64_t wait_bound(enum ur_behind b, uint64_t qpt)
{
	return (b == UR_BEHIND_SELF ? UR_MAX_SELF_WAIT : UR_MAX_TURN_WAIT) * qpt;
}

/* Whether a process of this host (maybe this one) has not yet read all
 * that was sent to it: it is behind, not silent (a peer under
 * ThreadSanitizer on a busy host took longer than a QP timeout to read
 * its socket's queue), and the retry goes back as an early one.  Bounded
 * from the first such period, so that a frozen peer, its socket full for
 * good, still ends the QP. */
static bool still_behind(struct ur_qp *qp, uint64_t now, uint64_t qpt, enum ur_behind b)
{
	if (b == UR_BEHIND_NONE) {
		qp->comp.behind_ns = 0;
		return false;
	}
	if (!qp->comp.behind_ns)
		qp->comp.behind_ns = now;
	return now - qp->comp.behind_ns < wait_bound(b, qpt);
}

/* A process of this host has not read what this one sent it (a local
 * peer, or this process itself), where nothing is lost on the way: a
 * go-back can only add to its queue.  Not this process's unread sockets
 * from the network (UR_BEHIND_RX): a stream at full speed keeps them
 * busy while the network does lose what the timer must send again. */
static bool reader_behind(enum ur_behind b)
{
	return b == UR_BEHIND_PEER || b == UR_BEHIND_SELF;
}

/* The look at the peer's process (rel/starved.h), taken at most once a
 * timer run: it judges by two looks a QP timeout apart. */
struct peer_look {
	bool taken;
	enum ur_peer_cpu cpu;
};

static enum ur_peer_cpu peer_cpu(struct ur_qp *qp, uint64_t now, uint64_t qpt, struct peer_look *l)
{
	if (!l->taken) {
		l->cpu = ur_peer_cpu_look(qp, now, qpt);
		l->taken = true;
	}
	return l->cpu;
}

/* Who has not read what was sent (xport.h).  A peer process that is
 * behind but runs reads what waits, if slowly, as this process does, and
 * gets this process's bound (a 1000-QP storm under ASan beside another
 * test loop on 2 cores kept both processes of a pair behind for up to
 * 19 s, and a client QP counted its retries from the peer's 16th timeout
 * on).  One that does not run (frozen, stopped) keeps the peer's. */
static enum ur_behind who_is_behind(struct ur_qp *qp, uint64_t now, uint64_t qpt,
				    struct peer_look *l)
{
	enum ur_behind b = ur_xports_peer_behind(&qp->ctx->stack->xports);

	if (b == UR_BEHIND_PEER && peer_cpu(qp, now, qpt, l) == UR_PEER_CPU_RUNS)
		return UR_BEHIND_SELF;
	return b;
}

bool ur_timers_retry_counts(struct ur_qp *qp, uint64_t now)
{
	uint64_t qpt = ur_rel_timeout_ns(qp->attr.timeout);
	uint64_t turn = __atomic_load_n(&qp->ctx->stack->last_turn_ns, __ATOMIC_RELAXED);
	enum ur_behind behind = UR_BEHIND_NONE;
	struct peer_look look = { 0 };
	bool asked = false;

	/* Its requests wait for room on a full transport (still stopped, or
	 * waiting for a turn while others' turns drained it in this period):
	 * the wait is this host's backlog (1000 QPs sharing one socket wait
	 * longer than a QP timeout; a peer process that reads its socket late
	 * keeps it full), and what waits has not left, so no timer of the
	 * peer's can have run out.  Bounded, so that a peer that takes
	 * nothing at all, its socket full for good, still ends the QP. */
	if (qp->req.blocked_ns && (qp->req.blocked || (turn && turn >= qp->comp.period_ns))) {
		uint64_t waited = now - qp->req.blocked_ns;

		if (waited >= UR_MAX_TURN_WAIT * qpt) {
			behind = who_is_behind(qp, now, qpt, &look);
			asked = true;
		}
		if (waited < wait_bound(behind, qpt)) {
			qp->comp.period_ns = now;
			return false;
		}
	}

	if (!qp->comp.period_ns || now - qp->comp.period_ns >= qpt) {
		qp->comp.period_ns = now;
		if (!asked)
			behind = who_is_behind(qp, now, qpt, &look);
		/* Both asked every period: the starved-peer check judges by
		 * two looks a timeout apart. */
		bool waits = still_behind(qp, now, qpt, behind);

		qp->comp.behind_seen = reader_behind(behind);
		if (!qp->comp.behind_seen)
			qp->comp.hold_back_ns = qp->comp.hold_gap_ns = 0;

		if (peer_cpu(qp, now, qpt, &look) != UR_PEER_CPU_STARVED && !waits) {
			qp->comp.backoff = 0;
			return true;
		}
	}
	if (qp->comp.backoff < UR_MAX_BACKOFF)
		qp->comp.backoff++;
	return false;
}

/* Who is behind, as the transports said it at most UR_BEHIND_REUSE_NS
 * ago: every QP of a burst times out within a moment (the memo's two
 * words are read and written apart; a torn pair only makes an answer a
 * little older or newer). */
#define UR_BEHIND_REUSE_NS (1000u * 1000)
static enum ur_behind behind_recent(struct ur_stack *s, uint64_t now)
{
	uint64_t at = __atomic_load_n(&s->behind_at_ns, __ATOMIC_RELAXED);
	enum ur_behind b;

	if (at && now >= at && now - at < UR_BEHIND_REUSE_NS)
		return (enum ur_behind)__atomic_load_n(&s->behind_memo, __ATOMIC_RELAXED);
	b = ur_xports_peer_behind(&s->xports);
	__atomic_store_n(&s->behind_memo, (int)b, __ATOMIC_RELAXED);
	__atomic_store_n(&s->behind_at_ns, now, __ATOMIC_RELAXED);
	return b;
}

bool ur_timers_hold_back(struct ur_qp *qp, uint64_t now)
{
	struct ur_comp_state *c = &qp->comp;
	uint64_t qpt = ur_rel_timeout_ns(qp->attr.timeout);
	uint64_t most = UR_MAX_HOLD_GAP * qpt;

	if (!qpt)
		return false;
	/* Between two periods (the timer from the measured round trip),
	 * asked afresh: a burst sent to a peer that reads slowly outlasts
	 * the round trip measured before it. */
	if (!c->behind_seen) {
		if (!reader_behind(behind_recent(qp->ctx->stack, now)))
			return false;
		c->behind_seen = true;
	}
	if (!c->hold_gap_ns) {             /* the first: what left waits */
		c->hold_back_ns = now;
		c->hold_gap_ns = qpt;
		return true;
	}
	if (now - c->hold_back_ns < c->hold_gap_ns)
		return true;
	c->hold_back_ns = now;
	c->hold_gap_ns = c->hold_gap_ns >= most / 2 ? most : 2 * c->hold_gap_ns;
	return false;
}
