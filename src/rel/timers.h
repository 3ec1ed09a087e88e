/* A QP's two protocol timers, retransmission and RNR, kept as deadlines in
 * its completer state; the earlier one is armed on the reactor as the QP's
 * one timer.  Its firing is progress.c's.  qp->lock held throughout. */
#ifndef UROCE_REL_TIMERS_H
#define UROCE_REL_TIMERS_H

#include <stdbool.h>
#include <stdint.h>

struct ur_qp;

/* 4.096 us * 2^timeout, in ns (at least 500 us); 0 means no timeout. */
uint64_t ur_rel_timeout_ns(uint8_t timeout);
/* The spec's RNR NAK timer table, in ns. */
uint64_t ur_rel_rnr_timer_ns(uint8_t code);

/* The deadlines changed: arm the QP's timer for the earlier, or cancel it. */
void ur_timers_update(struct ur_qp *qp);
/* Retransmission from now, if anything is unacknowledged: after the
 * measured round trip's timeout (RTO) while that is shorter than the
 * QP's timeout, else after the QP's timeout. */
void ur_timers_arm_retrans(struct ur_qp *qp);
/* A packet with a new PSN left: time it if none is timed. */
void ur_timers_sent(struct ur_qp *qp, uint32_t psn);
/* Everything before new_psn is acknowledged: a round-trip sample if the
 * timed PSN is among it; the retry period starts again. */
void ur_timers_progress(struct ur_qp *qp, uint32_t new_psn);
/* A retry went back: nothing sent before it may be timed (Karn). */
void ur_timers_retry(struct ur_qp *qp);
/* The retransmission timer fired at now: does this retry count against
 * retry_cnt (a whole QP timeout without progress), or is it an early one
 * from the measured round trip? */
bool ur_timers_retry_counts(struct ur_qp *qp, uint64_t now);

/* After a retry that does not count: whether it should send nothing yet.
 * While the last period found a reader of this host behind (the peer has
 * not read what was sent, or this process the answers), what was sent
 * waits in a queue, and going back only adds duplicates to what the
 * reader works through (1000 QPs to a process under ASan beside another
 * test loop: 8 of every 10 packets it read were resends, both processes
 * stayed behind for 20 s, and a QP gave up).  It sends nothing for a QP
 * timeout, then goes back after gaps that double, up to UR_MAX_HOLD_GAP
 * QP timeouts: a packet lost meanwhile still goes again. */
bool ur_timers_hold_back(struct ur_qp *qp, uint64_t now);
/* The transport had refused this QP's packets (full) and now took some:
 * the retry period starts again, as a NIC's timer starts when a request
 * leaves, not when it waits behind others for the wire. */
void ur_timers_left_after_wait(struct ur_qp *qp);
/* The transport refused the QP's packets: it waits for a turn from now,
 * unless it waits already. */
void ur_timers_waiting(struct ur_qp *qp);
/* An RNR NAK with this timer code: wait, nothing retransmits meanwhile. */
void ur_timers_arm_rnr(struct ur_qp *qp, uint8_t code);

#endif
