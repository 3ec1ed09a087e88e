/* The requester: send WQEs become request packets, segmented at the path
 * MTU, paced by the window, with the PSN bookkeeping the completer and
 * retransmission rely on.  qp->lock held throughout. */
#ifndef UROCE_REL_REQ_H
#define UROCE_REL_REQ_H

#include <stdint.h>

struct ur_qp;

/* Packetizes posted WQEs as far as the window and the transport allow,
 * then flushes what this thread staged. */
void ur_req_run(struct ur_qp *qp);
/* Go-back-N: the requester resumes at comp.psn, WQEs rewound to match. */
void ur_req_rewind(struct ur_qp *qp);
/* The responder has every request before next, though the requester went
 * back before it: move there as if they had been resent. */
void ur_req_fast_forward(struct ur_qp *qp, uint32_t next);
/* Selective retransmission: the one packet at psn again, asking for an
 * ACK, the requester's position unchanged.  Only a SEND or WRITE packet
 * already sent; -EINVAL for anything else (go back instead), -EAGAIN if
 * the transport has no room. */
int ur_req_resend_one(struct ur_qp *qp, uint32_t psn);

#endif
