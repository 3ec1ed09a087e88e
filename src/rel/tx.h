/* Packets out of a QP: the one way a header block is started, the send on
 * a path, and the flush that hands a thread's staged packets to the
 * transports.  A transport without room makes the QP wait (req.blocked),
 * on the stack's list, until it drains.  qp->lock held throughout. */
#ifndef UROCE_REL_TX_H
#define UROCE_REL_TX_H

#include <stdbool.h>
#include <stdint.h>

#include "wire/opcode.h"
#include "xport/xport.h"

struct ur_qp;

/* Starts a packet: the header block of opcode op zeroed to its length, the
 * BTH filled in, the pad for paylen payload bytes; no payload yet. */
void ur_tx_init(struct ur_qp *qp, struct ur_tx_pkt *p, uint8_t op, uint32_t paylen, bool se,
		uint32_t dqpn, bool ackreq, uint32_t psn);

/* Extension header t of a packet being built (its opcode has it). */
static inline uint8_t *ur_tx_hdr(struct ur_tx_pkt *p, enum ur_hdr_type t)
{
	return p->hdr + ur_opcode[bth_opcode(p->hdr)].offset[t];
}

/* Sends on path: 0 (sent, or refused for good: a loss, counted),
 * -EAGAIN (no room: nothing sent; the caller stops and calls
 * ur_tx_blocked), or -EFAULT (the payload's memory is no longer mapped:
 * nothing sent). */
int ur_tx_send(struct ur_qp *qp, const struct ur_path *path, struct ur_tx_pkt *p);

/* The transport had no room: the QP waits for it to drain. */
void ur_tx_blocked(struct ur_qp *qp);

/* Sends what this thread staged; a transport that kept some makes the QP
 * wait too. */
void ur_tx_flush(struct ur_qp *qp);

#endif
