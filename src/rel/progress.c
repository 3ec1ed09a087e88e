#include "rel/progress.h"

#include <sched.h>

#include "core/qp.h"
#include "rel/kick.h"
#include "rel/qp_error.h"
#include "rel/run.h"
#include "rel/stack.h"
#include "rel/timers.h"
#include "rel/tx.h"
#include "util/clock.h"
#include "util/lock.h"
#include "util/log.h"

/* Whether qp is on the stack's list of QPs a full transport stopped. */
static bool waits_for_room(struct ur_stack *s, struct ur_qp *qp)
{
	return ur_read_locked(mutex, &s->waiting_lock, ur_list_linked(&qp->wait_link));
}

void ur_progress_timer(struct ur_timer *t)
{
	struct ur_qp *qp = container_of(t, struct ur_qp, timer);
	struct ur_stack *s = qp->ctx->stack;

	/* A QP a full transport stopped: while what it sent is kept here,
	 * its deadline measures this host's wait, not the peer's silence.
	 * What was kept leaves first if there is room now, and the waiting
	 * QPs get the turns the wake-up would have given them, so a late or
	 * lost wake-up costs a wait, never a counted retry. */
	bool listed = waits_for_room(s, qp);

	if (listed && !ur_xports_flush_kept(&s->xports))
		ur_progress_resume(s);
	pthread_mutex_lock(&qp->lock);
	if (!qp->dying) {
		/* Blocked, it sends nothing until its turn: make sure a turn
		 * comes (on the list, the transport asked for room).  Found
		 * off the list it would have waited for ever: said, to find
		 * how (a drain may also have just taken it, a false alarm). */
		if (qp->req.blocked) {
			if (!listed && !waits_for_room(s, qp))
				ur_info(ur_qp_dev(qp), "QP 0x%06x: stopped by a full transport, "
					"off the waiting list; put back", ur_qp_num(qp));
			ur_tx_blocked(qp);
		}
		ur_kick(qp, UR_RUN_COMP);
		ur_qp_run(qp);
		ur_timers_update(qp);
		ur_qp_check_overrun(qp);
	}
	pthread_mutex_unlock(&qp->lock);
}

/* Takes the QP at the head of the waiting list off it; NULL if none. */
static struct ur_qp *waiting_pop(struct ur_stack *s)
{
	struct ur_qp *qp;

	pthread_mutex_lock(&s->waiting_lock);
	qp = ur_list_pop_entry(&s->waiting, struct ur_qp, wait_link);
	pthread_mutex_unlock(&s->waiting_lock);
	return qp;
}

/* A QP's turn; true if it sent anything (requests or responses). */
static bool resume_one(struct ur_stack *s, struct ur_qp *qp)
{
	bool sent_any = false;

	pthread_mutex_lock(&qp->lock);
	qp->req.blocked = false;
	if (!qp->dying) {
		uint64_t sent = qp->cnt[UR_CNT_SENT_PKTS];
		uint32_t psn = qp->req.psn;

		ur_kick(qp, UR_RUN_RESP | UR_RUN_REQ);
		ur_qp_run(qp);
		sent_any = qp->cnt[UR_CNT_SENT_PKTS] != sent;
		if (qp->req.psn != psn)
			__atomic_store_n(&s->last_turn_ns, ur_now_ns(), __ATOMIC_RELAXED);
		/* Sent on, or no longer stopped: what it had sent and the
		 * transport kept has left by now (a socket sends nothing past
		 * what it keeps), so the peer's silence is timed from here. */
		if (qp->req.psn != psn || !qp->req.blocked)
			ur_timers_left_after_wait(qp);
		if (!qp->req.blocked)
			qp->req.blocked_ns = 0;
		ur_qp_check_overrun(qp);
	}
	pthread_mutex_unlock(&qp->lock);
	return sent_any;
}

void ur_progress_resume(struct ur_stack *s)
{
	struct ur_list missed;
	unsigned n = 0;
	bool more;

	/* Each QP waiting now gets one turn, in the order they came to wait.
	 * One that sent goes to the back (it asks again if it blocks again);
	 * one that could send nothing (its socket still full, or filled by
	 * those before it) keeps its place ahead of them, so the next drain
	 * serves it first.  Putting every QP back at the back, in the same
	 * order, let only the head ever send: with 1000 QPs the last waited
	 * through 1000 drains.  Every QP gets its try: one stuck on a full
	 * socket does not hold up those bound elsewhere. */
	ur_list_init(&missed);
	pthread_mutex_lock(&s->waiting_lock);
	for (struct ur_list *pos = s->waiting.next; pos != &s->waiting; pos = pos->next)
		n++;
	pthread_mutex_unlock(&s->waiting_lock);
	while (n--) {
		struct ur_qp *qp = waiting_pop(s);

		if (!qp)
			break;
		if (resume_one(s, qp))
			continue;
		/* Nothing sent: off the back of the list, onto ours, in order. */
		pthread_mutex_lock(&s->waiting_lock);
		if (ur_list_linked(&qp->wait_link)) {
			ur_list_del(&qp->wait_link);
			ur_list_add_tail(&missed, &qp->wait_link);
		}
		pthread_mutex_unlock(&s->waiting_lock);
	}
	/* Decided under the list's lock, as ur_tx_blocked asks under it: a QP
	 * that blocks on another thread right now is either seen here or
	 * asks after this, never undone by it (it would wait for ever). */
	pthread_mutex_lock(&s->waiting_lock);
	ur_list_splice_front(&s->waiting, &missed);
	more = !ur_list_empty(&s->waiting);
	ur_xports_want_writable(&s->xports, more);
	pthread_mutex_unlock(&s->waiting_lock);
}

/* A thread that polls an empty CQ gives its core away now and then: when
 * more processes spin than there are cores (several busy-polling programs
 * on a small machine), the process that must forward or answer the packet
 * this one waits for gets to run within microseconds instead of after a
 * whole scheduler time slice.  With a core to itself the yield returns at
 * once. */
#define UR_POLL_YIELD_EVERY 64

void ur_progress_poll(struct ur_stack *s, bool will_block)
{
	static _Thread_local unsigned empty_polls UR_TLS_HOT;

	if (ur_engine_poll(s->engine, will_block))
		empty_polls = 0;
	else if (++empty_polls % UR_POLL_YIELD_EVERY == 0)
		sched_yield();
}

void ur_progress_settle(struct ur_stack *s, uint64_t max_ns)
{
	uint64_t end = ur_now_ns() + max_ns;

	while (ur_xports_rx_pending(&s->xports) && ur_now_ns() < end)
		if (!ur_engine_poll(s->engine, false))
			sched_yield();   /* the engine thread is at it */
}

void ur_progress_app_waits(struct ur_stack *s)
{
	ur_engine_app_waits(s->engine);
}
