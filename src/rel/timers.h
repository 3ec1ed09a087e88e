/* A QP's two protocol timers, retransmission and RNR, kept as deadlines in
 * its completer state; the earlier one is armed on the reactor as the QP's
 * one timer.  Its firing is progress.c's.  qp->lock held throughout. */
#ifndef UROCE_REL_TIMERS_H
#define UROCE_REL_TIMERS_H

#include <stdint.h>

struct ur_qp;

/* 4.096 us * 2^timeout, in ns (at least 500 us); 0 means no timeout. */
uint64_t ur_rel_timeout_ns(uint8_t timeout);
/* The spec's RNR NAK timer table, in ns. */
uint64_t ur_rel_rnr_timer_ns(uint8_t code);

/* The deadlines changed: arm the QP's timer for the earlier, or cancel it. */
void ur_timers_update(struct ur_qp *qp);
/* Retransmission in timeout from now, if anything is unacknowledged. */
void ur_timers_arm_retrans(struct ur_qp *qp);
/* An RNR NAK with this timer code: wait, nothing retransmits meanwhile. */
void ur_timers_arm_rnr(struct ur_qp *qp, uint8_t code);

#endif
