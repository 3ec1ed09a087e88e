/* XRC domains shared by the processes of a host.
 *
 * An XRC target QP of one process delivers into the XRC SRQs of another
 * process when both opened the domain through the same file on the same
 * device.  The target keeps the transport: it hands each request packet
 * for a foreign SRQ to the SRQ's owner (rel/xrc_msg.h), parks its
 * responder until the owner answers, and only then acknowledges (or RNR
 * NAKs, or NAKs) that PSN.  See docs/design.md, "XRC". */
#ifndef UROCE_REL_XRC_H
#define UROCE_REL_XRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "wire/pkt_parse.h"

struct ur_qp;
struct ur_srq;
struct ur_engine;

/* Target side, qp->lock held. */
/* The SRQ the request at the expected PSN names (XRCETH): one of the
 * target's domain in this process (qp->resp_srq), or another process's
 * (resp.xrc_foreign, xrc_pid, xrc_srqn).  False if the request was refused
 * (NAK) or dropped. */
bool ur_xrc_resolve(struct ur_qp *qp, const struct ur_pkt_view *pkt);
/* The packet at the expected PSN is for another process's SRQ: hand it
 * over and park, or refuse it. */
void ur_xrc_handoff(struct ur_qp *qp, const struct ur_pkt_view *pkt);
/* A request arriving while parked. */
void ur_xrc_parked_rx(struct ur_qp *qp, const struct ur_pkt_view *pkt);
/* Forgets the packets held while parked (RTR). */
void ur_xrc_queue_clear(struct ur_qp *qp);
/* A fresh incarnation number for a target QP entering RTR. */
uint32_t ur_xrc_new_gen(void);

/* Both sides: a message from another process (engine, receive lock and QP
 * table read lock held). */
void ur_xrc_local_rx(struct ur_engine *e, const uint8_t *buf, size_t len);

/* Owner side: what an XRC SRQ keeps per target QP feeding it. */
void ur_xrc_srq_fini(struct ur_srq *srq);

#endif
