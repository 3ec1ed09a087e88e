#include "rel/run.h"

#include "core/qp.h"
#include "rel/comp.h"
#include "rel/inbox.h"
#include "rel/kick.h"
#include "rel/req.h"
#include "rel/resp_out.h"
#include "util/clock.h"

/* The lowest pending part, taken off the pending set; 0 if none. */
static unsigned take_next(struct ur_qp *qp)
{
	unsigned p = qp->run_pending;

	p &= -p;
	qp->run_pending &= (uint8_t)~p;
	return p;
}

void ur_qp_run(struct ur_qp *qp)
{
	unsigned part;

again:
	while ((part = take_next(qp))) {
		switch (part) {
		case UR_RUN_INBOX:
			ur_comp_inbox(qp);
			break;
		case UR_RUN_RESP:
			ur_resp_tx(qp);
			break;
		case UR_RUN_COMP:
			ur_comp_timers(qp, ur_now_ns());
			break;
		case UR_RUN_REQ:
			ur_req_run(qp);
			break;
		}
	}
	/* ACKs left while the lock was held for a long copy (inbox.h): taken
	 * before the lock is released. */
	if (ur_inbox_close(qp)) {
		ur_kick(qp, UR_RUN_INBOX);
		goto again;
	}
}
