/* What the peer has acknowledged: send WQEs it covers complete in order,
 * the oldest unacknowledged PSN (comp.psn) moves, the window grows, the
 * retry budgets refill.  The completer's bookkeeping, shared with the
 * requester (local operations complete behind acknowledged requests).
 * qp->lock held throughout. */
#ifndef UROCE_REL_ACK_H
#define UROCE_REL_ACK_H

#include <stdbool.h>
#include <stdint.h>

struct ur_qp;
struct ur_send_wqe;

/* Has the requester put packets of this WQE on the wire? */
bool ur_ack_wqe_started(const struct ur_send_wqe *w);
/* One past the newest WQE with packets on the wire. */
uint32_t ur_ack_inflight_end(struct ur_qp *qp);
/* The oldest WQE not yet completed among those with packets out, or NULL. */
struct ur_send_wqe *ur_ack_head(struct ur_qp *qp);
/* The WQE a retry gives up on: ur_ack_head's, or, after going back with
 * nothing resent yet (the transport refused it), the one to resend. */
struct ur_send_wqe *ur_ack_oldest(struct ur_qp *qp);
/* Everything before new_psn is acknowledged: window, retries, timer. */
void ur_ack_progress(struct ur_qp *qp, uint32_t new_psn);
/* A WQE acknowledged (explicitly, or implied by a later response). */
void ur_ack_complete(struct ur_qp *qp, struct ur_send_wqe *w);
/* Everything up to and including psn is acknowledged.  False if a READ or
 * ATOMIC in that range still lacks its response: its responses were lost. */
bool ur_ack_through(struct ur_qp *qp, uint32_t psn);
/* Completes the WQEs at the SQ head that everything acknowledged so far
 * covers (local operations behind acknowledged requests). */
void ur_ack_retire(struct ur_qp *qp);

#endif
