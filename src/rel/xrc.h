/* XRC domains shared by the processes of a host: the target's side.
 *
 * An XRC target QP of one process delivers into the XRC SRQs of another
 * process when both opened the domain through the same file on the same
 * device.  The target keeps the transport: it hands each request packet
 * for a foreign SRQ to the SRQ's owner (xrc_msg.h, xrc_owner.c), parks its
 * responder until the owner answers, and only then acknowledges (or RNR
 * NAKs, or NAKs) that PSN.  These are the responder's XRC steps (resp.c).
 * See docs/design.md, "XRC".  qp->lock held throughout. */
#ifndef UROCE_REL_XRC_H
#define UROCE_REL_XRC_H

#include <stdbool.h>
#include <stdint.h>

#include "rel/xrc_msg.h"
#include "wire/pkt_parse.h"

struct ur_qp;

/* The SRQ the request at the expected PSN names (XRCETH): one of the
 * target's domain in this process (qp->resp_srq: *foreign false), or
 * another process's (*foreign true; resp.xrc_pid, xrc_srqn).  False if the
 * request was refused (NAK) or dropped. */
bool ur_xrc_resolve(struct ur_qp *qp, const struct ur_pkt_view *pkt, bool *foreign);
/* The packet at the expected PSN is for another process's SRQ: hand it
 * over and park, or refuse it. */
void ur_xrc_handoff(struct ur_qp *qp, const struct ur_pkt_view *pkt);
/* A request arriving while parked: held, answered, or handed over again. */
void ur_xrc_parked_rx(struct ur_qp *qp, const struct ur_pkt_view *pkt);
/* The owner's answer to the parked packet: true if it was placed and the
 * held packets are to be executed now (ur_xrc_next_held). */
bool ur_xrc_on_reply(struct ur_qp *qp, const struct ur_xrc_msg *m);
/* The next held packet to execute, while the QP is not parked again. */
bool ur_xrc_next_held(struct ur_qp *qp, struct ur_pkt_view *v);
/* After executing the held packets: ask again for any dropped meanwhile. */
void ur_xrc_replayed(struct ur_qp *qp);
/* Forgets the packets held while parked (RTR). */
void ur_xrc_queue_clear(struct ur_qp *qp);
/* A fresh incarnation number for a target QP entering RTR. */
uint32_t ur_xrc_new_gen(void);

#endif
