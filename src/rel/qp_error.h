/* A QP entering ERROR, from the protocol's side: what was in flight is
 * forgotten, the queues flush, the events go out.  qp->lock held. */
#ifndef UROCE_REL_QP_ERROR_H
#define UROCE_REL_QP_ERROR_H

#include <stdbool.h>

struct ur_qp;
struct ur_stack;

/* Drops the protocol state that refers to queued WQEs and stops the
 * timers (entering ERROR, RESET, or being destroyed). */
void ur_rel_abort(struct ur_qp *qp);
/* A QP being destroyed: marks it dying and aborts it (taking qp->lock,
 * which the caller does not hold), then takes it off the stack's list of
 * QPs a full transport stopped, so that nothing re-arms or re-queues it. */
void ur_rel_stop(struct ur_stack *s, struct ur_qp *qp);
/* Publishes an RC or UC QP (with its PD and access flags) to the
 * transports that copy into this process directly, at RTR and when its
 * access flags change; ur_rel_abort takes it back, so that nothing is
 * placed through a QP in ERROR or RESET. */
void ur_rel_expose(struct ur_qp *qp, bool on);
/* Moves the QP to ERROR: flushes both queues, raises IBV_EVENT_QP_FATAL
 * when fatal and IBV_EVENT_QP_LAST_WQE_REACHED for an SRQ's QP. */
void ur_qp_to_error(struct ur_qp *qp, bool fatal);
/* A completion found its CQ full (CQ overrun): the QP goes to ERROR with
 * IBV_EVENT_QP_FATAL, once the caller is done with its queues. */
void ur_qp_check_overrun(struct ur_qp *qp);

#endif
