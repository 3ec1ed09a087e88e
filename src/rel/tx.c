#include "rel/tx.h"

#include <errno.h>
#include <string.h>

#include "core/qp.h"
#include "core/qp_kind.h"
#include "rel/rel_priv.h"
#include "rel/stack.h"
#include "rel/timers.h"
#include "util/clock.h"

void ur_tx_init(struct ur_qp *qp, struct ur_tx_pkt *p, uint8_t op, uint32_t paylen, bool se,
		uint32_t dqpn, bool ackreq, uint32_t psn)
{
	p->hdr_len = ur_opcode[op].length;
	p->pad = (uint8_t)ur_pad_of(paylen);
	p->paylen = 0;
	p->niov = 0;
	p->placed = 0;
	p->write_data = false;
	memset(p->hdr, 0, p->hdr_len);
	bth_init(p->hdr, op, se, p->pad, UR_DEFAULT_PKEY, dqpn, ackreq, psn);
	if (qp->kind->headers)
		qp->kind->headers(qp, p->hdr, op);   /* DC's (docs/dc.md) */
	/* Requests only: runs against Linux rxe (6.1) failed with marked
	 * answers (docs/interop.md). */
	if (ur_qp_plain_rc(qp) && (ur_opcode[op].mask & UR_OPF_REQ) &&
	    qp->ctx->stack->selective)
		bth_set_selective(p->hdr, true);
}

int ur_tx_send(struct ur_qp *qp, const struct ur_path *path, struct ur_tx_pkt *p)
{
	int ret = ur_xport_send(path, p);

	/* -EFAULT: the application unmapped memory under a live region,
	 * the work request's error (or the READ's, when answering one). */
	if (ret == -EAGAIN || ret == -EFAULT)
		return ret;
	if (ret) {
		/* Refused for good (no route, too big): on the wire that is a
		 * lost packet, and retransmission or the peer decides. */
		UR_QP_COUNT(qp, UR_CNT_DROPPED);
		return 0;
	}
	UR_QP_COUNT(qp, UR_CNT_SENT_PKTS);
	qp->tx_ns = ur_coarse_now_ns();
	return 0;
}

void ur_tx_blocked(struct ur_qp *qp)
{
	struct ur_stack *s = qp->ctx->stack;

	/* On the list and the transport asked for room every time, not only
	 * the first: a QP that is blocked sends nothing until its turn, so
	 * one left blocked off the list would wait for ever (a 1000-QP storm
	 * under load once had three quarters of its QPs blocked, 24 s, with
	 * no socket armed for room). */
	if (!qp->req.blocked) {
		qp->req.blocked = true;
		ur_timers_waiting(qp);
	}
	pthread_mutex_lock(&s->waiting_lock);
	if (!qp->dying && !ur_list_linked(&qp->wait_link))
		ur_list_add_tail(&s->waiting, &qp->wait_link);
	ur_xports_want_writable(&s->xports, true);
	pthread_mutex_unlock(&s->waiting_lock);
}

void ur_tx_flush(struct ur_qp *qp)
{
	if (ur_xports_flush(qp->ctx->xports) == -EAGAIN)
		ur_tx_blocked(qp);
}
