/* The responder: executes incoming requests in PSN order and answers
 * them.  qp->lock held throughout. */
#ifndef UROCE_REL_RESP_H
#define UROCE_REL_RESP_H

#include "wire/pkt_parse.h"
#include "xport/xport.h"

struct ur_qp;

/* A request packet for this QP. */
void ur_resp_rx(struct ur_qp *qp, const struct ur_pkt_view *pkt, const struct ur_rx_meta *meta);
/* XRC: the parked packet was placed by its SRQ's owner; the packets held
 * meanwhile are executed now, in order. */
void ur_resp_replay_held(struct ur_qp *qp);

#endif
