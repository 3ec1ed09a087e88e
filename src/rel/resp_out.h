/* What the responder emits: answers to the requester (ACK, NAK, RNR NAK,
 * READ responses, atomic ACKs, in PSN order) and receive completions to
 * the application; and a request refused, which does both and ends the
 * QP.  qp->lock held throughout. */
#ifndef UROCE_REL_RESP_OUT_H
#define UROCE_REL_RESP_OUT_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "core/qp.h"
#include "core/srq.h"
#include "wire/pkt_parse.h"

/* An XRC target has no PD, CQ or SRQ of its own: those of the XRC SRQ the
 * current message names stand in. */
static inline struct ur_srq *ur_resp_srq(struct ur_qp *qp)
{
	return qp->type == IBV_QPT_XRC_RECV ? qp->resp_srq : qp->srq;
}

static inline struct ur_pd *ur_resp_pd(struct ur_qp *qp)
{
	return qp->type == IBV_QPT_XRC_RECV ? qp->resp_srq->pd : qp->pd;
}

static inline struct ur_cq *ur_resp_cq(struct ur_qp *qp)
{
	return qp->type == IBV_QPT_XRC_RECV ? qp->resp_srq->cq : qp->rcq;
}

/* The ACK or NAK to send once queued responses are out (the newest wins). */
void ur_resp_queue_ack(struct ur_qp *qp, uint8_t syn, uint32_t psn);
/* Sends queued READ responses and atomic ACKs, then the ACK. */
void ur_resp_tx(struct ur_qp *qp);
/* Queues an answer and sends what is queued. */
void ur_resp_answer(struct ur_qp *qp, uint8_t syn, uint32_t psn);
/* A slot of the READ/ATOMIC resource ring, or NULL when every slot still
 * has output (over max_dest_rd_atomic). */
struct ur_resp_res *ur_resp_take_res(struct ur_qp *qp);
/* A duplicate READ (va, len from its RETH) or atomic at psn, answered from
 * the slot that answered the original while the ring still holds it: that
 * slot goes out again, in its turn, from psn on.  false if the ring no
 * longer holds it. */
bool ur_resp_res_again(struct ur_qp *qp, uint8_t type, uint32_t psn, uint64_t va, uint32_t len);

/* Completes the receive WQE in progress (resp.rwqe); pkt, on success, for
 * the immediate, invalidated key and SE bit. */
void ur_resp_complete_recv(struct ur_qp *qp, enum ibv_wc_status status,
			   const struct ur_pkt_view *pkt, uint32_t byte_len, bool write_imm);

/* A request that cannot be executed (IBA class A or C: a bad receive WQE,
 * an invalid request, a remote access error): NAK it, complete the
 * receive in progress in error, and end the QP.  UC has no NAKs: the
 * message is dropped and the QP carries on. */
void ur_resp_refuse(struct ur_qp *qp, uint8_t nak, const char *what);

#endif
