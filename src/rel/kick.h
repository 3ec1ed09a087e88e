/* Kicks: a part of a QP's protocol that finds work for another part does
 * not call it; it marks the part pending, and the QP's run step (run.h)
 * runs it before the QP's lock is released, as Linux rxe schedules a QP's
 * tasks (rxe_sched_task).  Nothing but the QP is touched here, so a file
 * that kicks depends on nothing above it.  qp->lock held. */
#ifndef UROCE_REL_KICK_H
#define UROCE_REL_KICK_H

#include "core/qp.h"

/* The parts, in the order the run step runs them: ACKs received while
 * the lock was busy first, then responses and ACKs to send (an ACK must
 * not wait behind new requests), then the completer's deadlines, then the
 * requester. */
enum ur_run_part {
	UR_RUN_INBOX = 1u << 0,  /* the completer: ACKs left in the inbox (inbox.h) */
	UR_RUN_RESP = 1u << 1,   /* the responder's output: READ/ATOMIC answers, ACKs */
	UR_RUN_COMP = 1u << 2,   /* the completer's retransmission and RNR deadlines */
	UR_RUN_REQ = 1u << 3,    /* the requester: resend alone, then new packets */
};

static inline void ur_kick(struct ur_qp *qp, unsigned parts)
{
	qp->run_pending |= (uint8_t)parts;
}

#endif
