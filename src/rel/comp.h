/* The completer: responses become completions, losses retransmissions.
 * qp->lock held throughout. */
#ifndef UROCE_REL_COMP_H
#define UROCE_REL_COMP_H

#include <stdint.h>

#include "wire/pkt_parse.h"

struct ur_qp;

/* An ACK, NAK, READ response or atomic ACK for this QP. */
void ur_comp_rx(struct ur_qp *qp, const struct ur_pkt_view *pkt);
/* The ACKs the receiving thread left in the inbox (inbox.h) while the
 * lock was busy, each checked as the receive path checks a packet. */
void ur_comp_inbox(struct ur_qp *qp);
/* The retransmission or RNR deadline passed by now. */
void ur_comp_timers(struct ur_qp *qp, uint64_t now);

#endif
