#include "rel/progress.h"

#include <sched.h>

#include "core/qp.h"
#include "rel/comp.h"
#include "rel/qp_error.h"
#include "rel/req.h"
#include "rel/resp_out.h"
#include "rel/stack.h"
#include "rel/timers.h"
#include "util/clock.h"

void ur_qp_tx(struct ur_qp *qp)
{
	ur_resp_tx(qp);
	ur_req_run(qp);
}

void ur_progress_timer(struct ur_timer *t)
{
	struct ur_qp *qp = container_of(t, struct ur_qp, timer);

	pthread_mutex_lock(&qp->lock);
	if (!qp->dying) {
		ur_comp_timers(qp, ur_now_ns());
		ur_timers_update(qp);
		ur_qp_check_overrun(qp);
	}
	pthread_mutex_unlock(&qp->lock);
}

void ur_progress_resume(struct ur_stack *s)
{
	unsigned n = 0;
	bool more;

	/* The QPs waiting now, each once: one that blocks again is back on
	 * the list for the next drain. */
	pthread_mutex_lock(&s->waiting_lock);
	for (struct ur_list *pos = s->waiting.next; pos != &s->waiting; pos = pos->next)
		n++;
	pthread_mutex_unlock(&s->waiting_lock);
	while (n--) {
		struct ur_qp *qp = NULL;

		pthread_mutex_lock(&s->waiting_lock);
		if (!ur_list_empty(&s->waiting)) {
			qp = ur_list_entry(s->waiting.next, struct ur_qp, wait_link);
			ur_list_del(&qp->wait_link);
		}
		pthread_mutex_unlock(&s->waiting_lock);
		if (!qp)
			break;
		pthread_mutex_lock(&qp->lock);
		qp->req.blocked = false;
		if (!qp->dying) {
			ur_qp_tx(qp);
			ur_qp_check_overrun(qp);
		}
		pthread_mutex_unlock(&qp->lock);
	}
	pthread_mutex_lock(&s->waiting_lock);
	more = !ur_list_empty(&s->waiting);
	pthread_mutex_unlock(&s->waiting_lock);
	ur_xports_want_writable(&s->xports, more);
}

/* A thread that polls an empty CQ gives its core away now and then: when
 * more processes spin than there are cores (several busy-polling programs
 * on a small machine), the process that must forward or answer the packet
 * this one waits for gets to run within microseconds instead of after a
 * whole scheduler time slice.  With a core to itself the yield returns at
 * once. */
#define UR_POLL_YIELD_EVERY 64

void ur_progress_poll(struct ur_stack *s)
{
	static _Thread_local unsigned empty_polls;

	if (ur_engine_poll(s->engine))
		empty_polls = 0;
	else if (++empty_polls % UR_POLL_YIELD_EVERY == 0)
		sched_yield();
}
