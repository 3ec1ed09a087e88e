/* The responder's execution of a request at the expected PSN, once the
 * state machine (resp.c) has checked it: a SEND into a receive WQE, a
 * WRITE into a memory region (the whole target checked before a byte is
 * touched), a READ or ATOMIC into the resource ring; and a UD datagram.
 * Refusals go through ur_resp_refuse.  qp->lock held throughout. */
#ifndef UROCE_REL_RESP_EXEC_H
#define UROCE_REL_RESP_EXEC_H

#include <stdbool.h>

#include "wire/pkt_parse.h"
#include "xport/xport.h"

struct ur_qp;

enum ur_exec_result {
	UR_EXEC_OK,            /* done (or a message's packet placed) */
	UR_EXEC_RNR,           /* no receive WQE: not ready, nothing changed */
	UR_EXEC_REFUSED,       /* refused: NAKed and the QP in ERROR (RC), dropped (UC) */
};

enum ur_exec_result ur_exec_send(struct ur_qp *qp, const struct ur_pkt_view *pkt);
enum ur_exec_result ur_exec_write(struct ur_qp *qp, const struct ur_pkt_view *pkt);
/* ATOMIC WRITE: 8 bytes stored whole at an aligned address, with RDMA
 * WRITE's permission; acknowledged as a WRITE is. */
enum ur_exec_result ur_exec_atomic_write(struct ur_qp *qp, const struct ur_pkt_view *pkt);
/* A READ request; a duplicate is answered again from the region (reads
 * are idempotent) and waits for room rather than failing. */
void ur_exec_read(struct ur_qp *qp, const struct ur_pkt_view *pkt, bool duplicate);
void ur_exec_atomic(struct ur_qp *qp, const struct ur_pkt_view *pkt);
/* A duplicate ATOMIC: answered with what it returned the first time. */
void ur_exec_atomic_again(struct ur_qp *qp, const struct ur_pkt_view *pkt);
/* A UD datagram: the GRH, then the payload, into the next receive WQE. */
void ur_exec_ud(struct ur_qp *qp, const struct ur_pkt_view *pkt, const struct ur_rx_meta *meta);

#endif
