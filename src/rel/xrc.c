/* XRC domains shared by the processes of a host: the target's side
 * (xrc.h).
 *
 * The packet at the expected PSN names an SRQ another process owns.  It is
 * handed over in a DELIVER message and the responder parks: it executes
 * nothing newer until the REPLY comes, so PSN order holds across the two
 * processes.  The packets that follow in PSN order are held meanwhile (up
 * to UR_XRC_QUEUE of them) and executed when the REPLY is in; any beyond
 * are dropped, and one sequence NAK then asks the requester for them again
 * (go-back-N, as for any loss).  The PSN is acknowledged only when the
 * owner says the bytes are placed; RNR from the owner becomes an RNR NAK,
 * an unknown SRQ a NAK invalid request.  Nothing here waits: a REPLY that
 * does not come (lost on a full socket, or the owner died) is asked for
 * again when the requester retransmits the parked packet, and an owner
 * that is gone makes the target NAK.
 */
#include "rel/xrc.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/qp.h"
#include "core/srq.h"
#include "core/xrcd.h"
#include "host/registry.h"
#include "rel/psn.h"
#include "rel/rel_priv.h"
#include "rel/resp_out.h"
#include "rel/xrc_msg.h"
#include "util/clock.h"
#include "util/log.h"
/* A parked packet retransmitted sooner than this after its hand-over does
 * not hand it over again: the REPLY is probably on its way. */
#define UR_XRC_RESEND_NS 5000000ull
/* Packets held while parked: a window's worth of a multi-packet message. */
#define UR_XRC_QUEUE 32u
#define UR_XRC_PKT_MAX (UR_MAX_HDR_BYTES + 4096u + 8u)

struct ur_xrc_queue {
	uint32_t head, n;            /* ring of n packets from head */
	struct {
		uint32_t len;
		uint8_t buf[UR_XRC_PKT_MAX];
	} pkt[UR_XRC_QUEUE];
};

uint32_t ur_xrc_new_gen(void)
{
	static uint32_t seq;
	uint32_t g = __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);

	/* Unique enough across incarnations of a QP number: a target QP
	 * destroyed and created again must not look like its predecessor. */
	return (uint32_t)(ur_now_ns() >> 10) ^ (g << 20) ^ (uint32_t)getpid();
}

/* ---- target side -------------------------------------------------------- */

/* Whether srqn is an XRC SRQ of another process that the target QP's
 * (file-backed) domain may reach; its owner in *pid. */
static bool xrc_owner(struct ur_qp *qp, uint32_t srqn, pid_t *pid)
{
	struct ur_reg_owner o;

	if (!qp->xrcd || !qp->xrcd->has_inode)
		return false;   /* an anonymous domain is this process's alone */
	if (ur_registry_lookup(qp->ctx->reg, srqn, &o) || o.self || o.pid <= 0)
		return false;
	*pid = o.pid;
	return true;
}

/* Every XRC request names the SRQ (hence PD and CQ) it is for; it must be
 * an XRC SRQ of the target QP's domain, in this process or another. */
bool ur_xrc_resolve(struct ur_qp *qp, const struct ur_pkt_view *pkt, bool *foreign)
{
	const struct ur_opcode_info *info = &ur_opcode[pkt->opcode];
	uint32_t srqn;

	if (!(info->mask & UR_OPF_XRCETH)) {
		UR_QP_COUNT(qp, UR_CNT_DROPPED);
		return false;
	}
	srqn = xrceth_srqn(pkt->bth + info->offset[UR_HDR_XRCETH]);
	*foreign = false;
	if (!qp->resp_srq || qp->resp_srq->srq_num != srqn ||
	    (qp->resp.opcode >= 0 && qp->resp.xrc_msg_foreign)) {
		struct ur_srq *srq = ur_xrcd_find_srq(qp->xrcd, srqn);
		pid_t owner;

		/* Another process's SRQ of the same file-backed domain: the
		 * message is handed to it. */
		if (!srq && xrc_owner(qp, srqn, &owner)) {
			if (qp->resp.opcode >= 0 &&
			    (!qp->resp.xrc_msg_foreign || qp->resp.xrc_srqn != srqn)) {
				ur_resp_refuse(qp, UR_NAK_INVALID_REQ, "XRC SRQ changed mid-message");
				return false;
			}
			*foreign = true;
			qp->resp.xrc_pid = owner;
			qp->resp.xrc_srqn = srqn;
			return true;
		}
		if (!srq) {
			ur_dbg(ur_qp_dev(qp), "QP 0x%06x: XRC request for SRQ 0x%06x, "
			       "not in the QP's domain", ur_qp_num(qp), srqn);
			if (qp->resp_srq) {
				ur_resp_refuse(qp, UR_NAK_INVALID_REQ, "unknown XRC SRQ");
			} else {
				/* No SRQ to report on: refuse without touching state. */
				ur_resp_answer(qp, UR_NAK_INVALID_REQ, pkt->psn);
			}
			return false;
		}
		/* A message in progress keeps its SRQ. */
		if (qp->resp.opcode >= 0 && (qp->resp_srq || qp->resp.xrc_msg_foreign)) {
			ur_resp_refuse(qp, UR_NAK_INVALID_REQ, "XRC SRQ changed mid-message");
			return false;
		}
		qp->resp_srq = srq;
	}
	return true;
}

/* Sends the packet's payload to the SRQ's owner: 0, -EAGAIN, -ESRCH. */
static int send_deliver(struct ur_qp *qp, const struct ur_pkt_view *pkt)
{
	const struct ur_opcode_info *info = &ur_opcode[pkt->opcode];
	struct ur_xrc_msg m;
	struct iovec iov[2];

	ur_xrc_msg_init(&m, UR_XRC_DELIVER, getpid());
	m.tgt_qpn = ur_qp_num(qp);
	m.srqn = qp->resp.xrc_srqn;
	m.psn = pkt->psn;
	m.gen = qp->xrc_gen;
	m.xrcd_dev = (uint64_t)qp->xrcd->dev;
	m.xrcd_ino = (uint64_t)qp->xrcd->ino;
	snprintf(m.ibdev, sizeof(m.ibdev), "%s", ur_qp_dev(qp));
	m.src_qpn = qp->attr.dest_qp_num;
	m.flags = ((pkt->mask & UR_OPF_START) ? UR_XRC_F_FIRST : 0) |
		  ((pkt->mask & UR_OPF_END) ? UR_XRC_F_LAST : 0) |
		  (bth_se(pkt->bth) ? UR_XRC_F_SE : 0);
	if (info->mask & UR_OPF_IMMDT) {
		m.flags |= UR_XRC_F_IMM;
		memcpy(&m.imm, pkt->bth + info->offset[UR_HDR_IMMDT], 4);
	}
	m.paylen = pkt->paylen;
	iov[0] = (struct iovec){ &m, sizeof(m) };
	iov[1] = (struct iovec){ (void *)pkt->payload, pkt->paylen };
	return ur_xports_local_msg(qp->ctx->xports, qp->resp.xrc_pid, iov, pkt->paylen ? 2 : 1);
}

/* The owner is gone, or the transport cannot reach it. */
static void owner_lost(struct ur_qp *qp)
{
	qp->resp.xrc_wait = false;
	ur_resp_refuse(qp, UR_NAK_INVALID_REQ, "the process owning the XRC SRQ is gone");
}

void ur_xrc_handoff(struct ur_qp *qp, const struct ur_pkt_view *pkt)
{
	struct ur_resp_state *r = &qp->resp;
	int ret;

	if (!(pkt->mask & UR_OPF_SEND)) {
		/* The memory is the other process's: not reachable from here. */
		ur_resp_refuse(qp, UR_NAK_REM_ACCESS_ERR, "RDMA WRITE/READ/ATOMIC through an XRC "
			     "target into another process of the domain: not supported");
		return;
	}
	if (pkt->mask & UR_OPF_IETH) {
		ur_resp_refuse(qp, UR_NAK_INVALID_REQ, "SEND with invalidate into another process "
			     "of the XRC domain: not supported");
		return;
	}
	ret = send_deliver(qp, pkt);
	if (ret == -EAGAIN) {
		/* The owner's queue is full: as if the packet were lost. */
		UR_QP_COUNT(qp, UR_CNT_DROPPED);
		return;
	}
	if (ret) {
		owner_lost(qp);
		return;
	}
	r->xrc_wait = true;
	r->xrc_opcode = pkt->opcode;
	r->xrc_sent_ns = ur_now_ns();
}

void ur_xrc_queue_clear(struct ur_qp *qp)
{
	if (qp->xrc_q)
		qp->xrc_q->n = 0;
}

/* A packet d PSNs past the parked one: kept if it is the next in order
 * and there is room, else dropped to be asked for again. */
static void hold(struct ur_qp *qp, const struct ur_pkt_view *pkt, uint32_t d)
{
	struct ur_xrc_queue *q = qp->xrc_q;
	uint32_t len = pkt->hdr_len + pkt->paylen + pkt->pad + 4u;

	if (q && d <= q->n) {
		UR_QP_COUNT(qp, UR_CNT_DUPLICATE_REQUEST);   /* held already */
		return;
	}
	if (!q && d == 1 && len <= UR_XRC_PKT_MAX)
		q = qp->xrc_q = calloc(1, sizeof(*q));
	if (!q || d != q->n + 1 || q->n == UR_XRC_QUEUE || len > UR_XRC_PKT_MAX) {
		UR_QP_COUNT(qp, UR_CNT_OUT_OF_SEQ_REQUEST);
		qp->resp.xrc_dropped = true;
		return;
	}
	memcpy(q->pkt[(q->head + q->n) % UR_XRC_QUEUE].buf, pkt->bth, len);
	q->pkt[(q->head + q->n) % UR_XRC_QUEUE].len = len;
	q->n++;
}

bool ur_xrc_next_held(struct ur_qp *qp, struct ur_pkt_view *v)
{
	struct ur_xrc_queue *q = qp->xrc_q;

	while (q && q->n && !qp->resp.xrc_wait && qp->state != IBV_QPS_ERR) {
		uint32_t i = q->head;

		q->head = (q->head + 1) % UR_XRC_QUEUE;
		q->n--;
		if (ur_pkt_parse(v, q->pkt[i].buf, q->pkt[i].len) == UR_PARSE_OK)
			return true;
	}
	return false;
}

void ur_xrc_replayed(struct ur_qp *qp)
{
	if (qp->resp.xrc_wait || qp->state == IBV_QPS_ERR)
		return;
	if (qp->resp.xrc_dropped) {
		/* Acknowledges everything before resp.psn, asks for the rest. */
		qp->resp.xrc_dropped = false;
		qp->resp.nak_sent = true;
		ur_resp_answer(qp, UR_NAK_PSN_SEQ_ERR, qp->resp.psn);
	}
}

void ur_xrc_parked_rx(struct ur_qp *qp, const struct ur_pkt_view *pkt)
{
	struct ur_resp_state *r = &qp->resp;
	int32_t d = psn_diff(pkt->psn, r->psn);
	uint64_t now;
	int ret;

	if (d < 0) {
		/* Executed long ago: acknowledge again what is executed. */
		UR_QP_COUNT(qp, UR_CNT_DUPLICATE_REQUEST);
		if (pkt->mask & (UR_OPF_SEND | UR_OPF_WRITE))
			ur_resp_answer(qp, UR_AETH_ACK_UNLIMITED, psn_add(r->psn, UR_PSN_MASK));
		return;
	}
	if (d > 0) {
		hold(qp, pkt, (uint32_t)d);
		return;
	}
	/* The requester sends the parked packet again: the REPLY may be lost
	 * or late, or the owner gone. */
	now = ur_now_ns();
	if (now - r->xrc_sent_ns < UR_XRC_RESEND_NS)
		return;
	if (kill(r->xrc_pid, 0) && errno == ESRCH) {
		owner_lost(qp);
		return;
	}
	ret = send_deliver(qp, pkt);
	if (ret && ret != -EAGAIN) {
		owner_lost(qp);
		return;
	}
	r->xrc_sent_ns = now;
	/* The requester timed out: the owner is slow (descheduled, or its
	 * queue full).  Say "not ready" so that waiting for it spends the
	 * RNR retry budget (usually infinite), not the transport one; the
	 * retransmission after the RNR timer finds the REPLY in, or asks
	 * again. */
	UR_QP_COUNT(qp, UR_CNT_SEND_RNR_ERR);
	ur_resp_answer(qp, UR_AETH_RNR_NAK | (qp->attr.min_rnr_timer & 0x1f), r->psn);
}

bool ur_xrc_on_reply(struct ur_qp *qp, const struct ur_xrc_msg *m)
{
	struct ur_resp_state *r = &qp->resp;
	bool end;

	if (qp->type != IBV_QPT_XRC_RECV || !r->xrc_wait || m->gen != qp->xrc_gen ||
	    m->psn != r->psn || m->srqn != r->xrc_srqn ||
	    qp->state < IBV_QPS_RTR || qp->state == IBV_QPS_ERR)
		return false;   /* stale: an answer to a DELIVER sent twice, or an old QP */
	r->xrc_wait = false;
	switch (m->status) {
	case UR_XRC_OK:
		end = ur_opcode[r->xrc_opcode].mask & UR_OPF_END;
		r->psn = psn_inc(r->psn);
		r->opcode = end ? -1 : r->xrc_opcode;
		r->xrc_msg_foreign = !end;
		if (end)
			r->msn++;
		r->nak_sent = false;
		r->rnr_sent = false;
		ur_resp_answer(qp, UR_AETH_ACK_UNLIMITED, m->psn);
		return true;
	case UR_XRC_RNR:
		UR_QP_COUNT(qp, UR_CNT_SEND_RNR_ERR);
		ur_resp_answer(qp, UR_AETH_RNR_NAK | (qp->attr.min_rnr_timer & 0x1f), m->psn);
		break;
	case UR_XRC_OP_ERR:
		ur_resp_refuse(qp, UR_NAK_REM_OP_ERR, "XRC SRQ receive buffer lkey invalid (other process)");
		break;
	case UR_XRC_LEN_ERR:
		ur_resp_refuse(qp, UR_NAK_INVALID_REQ, "XRC SRQ receive buffer too small (other process)");
		break;
	default:
		ur_dbg(ur_qp_dev(qp), "QP 0x%06x: XRC request for SRQ 0x%06x, "
		       "not in the QP's domain (process %d)", ur_qp_num(qp),
		       m->srqn, (int)m->src_pid);
		ur_resp_refuse(qp, UR_NAK_INVALID_REQ, "unknown XRC SRQ");
		break;
	}
	/* What followed goes again after the RNR NAK, or not at all. */
	r->xrc_dropped = false;
	ur_xrc_queue_clear(qp);
	return false;
}
