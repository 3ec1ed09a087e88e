/* A QP's run step: the parts kicked (kick.h) while the QP was locked run
 * here, in one fixed order, by the thread that holds the lock, before it
 * releases it.  Every entry point that locks a QP and may have kicked a
 * part calls it last (receive dispatch, the QP's timer, posting, resuming
 * after a full transport, modify).  So no protocol part calls another and
 * nothing re-enters: the requester never runs inside the completer or the
 * responder.  qp->lock held. */
#ifndef UROCE_REL_RUN_H
#define UROCE_REL_RUN_H

struct ur_qp;

/* Runs the pending parts, responder output, then completer, then
 * requester, until none is pending (a part kicked meanwhile runs in turn,
 * an earlier one before the later ones again). */
void ur_qp_run(struct ur_qp *qp);

#endif
