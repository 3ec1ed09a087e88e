#include "rel/recv.h"

#include <string.h>

#include "core/device.h"
#include "core/qp.h"
#include "core/qp_kind.h"
#include "rel/comp.h"
#include "rel/gsi.h"
#include "rel/inbox.h"
#include "rel/qp_error.h"
#include "rel/rel_priv.h"
#include "rel/resp.h"
#include "rel/run.h"
#include "rel/stack.h"
#include "rel/xrc.h"
#include "rel/xrc_owner.h"
#include "util/clock.h"
#include "util/log.h"
#include "wire/gid.h"
#include "wire/pkt_parse.h"

static bool transport_matches(const struct ur_qp *qp, uint8_t opcode)
{
	return (opcode & UR_OP_TYPE_MASK) == ur_qp_op_base(qp);
}

/* Whether a packet may wait in its QP's inbox (inbox.h) instead of for its
 * lock: an ACK with nothing in it, for an RC QP (its type and kind never
 * change).  What may change, the QP's peer, is checked when taken. */
static bool may_wait_in_inbox(const struct ur_qp *qp, const struct ur_pkt_view *v)
{
	return ur_qp_plain_rc(qp) && !(v->mask & UR_OPF_REQ) && !v->paylen &&
	       !v->placed && transport_matches(qp, v->opcode) &&
	       bth_pkey(v->bth) == UR_DEFAULT_PKEY;
}

/* As ur_stack_lock_qp, for a received packet: where another thread holds the lock
 * with its inbox open, a response without payload is put there instead
 * (NULL, *left true).  A thread running the engine's callbacks, as every
 * transport's receive does, finds the QP without the table's lock: a QP
 * being destroyed leaves the table, then quiesces the engine (waits for
 * this callback) before it is freed, so the one found stays until the
 * callback ends; a QP leaving meanwhile is dying when locked, and its
 * packet dropped. */
static struct ur_qp *lock_qp_for(struct ur_stack *s, const struct ur_pkt_view *v,
				 const uint8_t *pkt, size_t len, const struct ur_rx_meta *meta,
				 bool *left)
{
	bool racing = ur_engine_dispatching(s->engine);
	struct ur_qp *qp;

	if (racing) {
		qp = ur_qp_table_find_racing(&s->qps, v->qpn);
	} else {
		pthread_rwlock_rdlock(&s->qps_lock);
		qp = ur_qp_table_find(&s->qps, v->qpn);
	}
	if (qp && pthread_mutex_trylock(&qp->lock)) {
		if (may_wait_in_inbox(qp, v) && ur_inbox_put(qp, pkt, len, &meta->sgid)) {
			*left = true;
			qp = NULL;
		} else {
			pthread_mutex_lock(&qp->lock);
		}
	}
	if (!racing)
		pthread_rwlock_unlock(&s->qps_lock);
	return qp;
}

/* A packet for a connected QP from another address than its peer's:
 * counted apart, and told with both addresses (a peer that moved, or a
 * stray sender, is otherwise hard to see). */
static void wrong_peer(struct ur_qp *qp, const struct ur_rx_meta *meta)
{
	char want[64], seen[64];

	UR_QP_COUNT(qp, UR_CNT_WRONG_PEER);
	ur_warn_ratelimited(ur_qp_dev(qp), "QP 0x%06x: dropped a packet from %s: its peer is %s",
			    ur_qp_num(qp), ur_gid_str(&meta->sgid, seen, sizeof(seen)),
			    ur_gid_str(&qp->attr.ah_attr.grh.dgid, want, sizeof(want)));
}

/* One packet for one QP (locked).  Requests go to the responder,
 * responses to the completer. */
static void to_qp(struct ur_qp *qp, const struct ur_pkt_view *pkt, const struct ur_rx_meta *meta)
{
	UR_QP_COUNT(qp, UR_CNT_RCVD_PKTS);
	qp->rx_ns = ur_coarse_now_ns();
	if (qp->dying || !transport_matches(qp, pkt->opcode) ||
	    bth_pkey(pkt->bth) != UR_DEFAULT_PKEY) {
		UR_QP_COUNT(qp, UR_CNT_DROPPED);
		return;
	}
	/* A kind may take its packets itself (a DC target hears anyone with
	 * its key, each through a half). */
	if (qp->kind->rx) {
		qp->kind->rx(qp, pkt, meta);
		return;
	}
	/* A connected QP hears only its peer (rxe's check_addr); before RTR
	 * it has none. */
	if (qp->type != IBV_QPT_UD &&
	    memcmp(&meta->sgid, &qp->attr.ah_attr.grh.dgid, sizeof(meta->sgid))) {
		if (qp->state == IBV_QPS_RESET || qp->state == IBV_QPS_INIT)
			UR_QP_COUNT(qp, UR_CNT_DROPPED);
		else
			wrong_peer(qp, meta);
		return;
	}
	/* The first packet on a QP in RTR establishes communication. */
	if (qp->state == IBV_QPS_RTR && !qp->comm_est) {
		qp->comm_est = true;
		ur_qp_event(qp, IBV_EVENT_COMM_EST);
	}
	if (pkt->mask & UR_OPF_REQ)
		ur_resp_rx(qp, pkt, meta);
	else
		ur_comp_rx(qp, pkt);
	ur_qp_run(qp);
	ur_qp_check_overrun(qp);
}

/* A datagram to a group: every QP of this process attached to it. */
static void to_group(struct ur_stack *s, const struct ur_pkt_view *pkt,
		     const struct ur_rx_meta *meta)
{
	struct ur_qp *targets[64];
	unsigned n = ur_mcast_members(&s->mcast, &meta->dgid, targets, UR_ARRAY_SIZE(targets));

	if (!n)
		ur_dbg(NULL, "multicast datagram for a group with no QP attached here");
	for (unsigned i = 0; i < n; i++) {
		pthread_mutex_lock(&targets[i]->lock);
		to_qp(targets[i], pkt, meta);
		pthread_mutex_unlock(&targets[i]->lock);
	}
}

/* A request whose bytes its sender copied itself (a WRITE into our memory,
 * a READ out of it), or the one response of headers to such a READ: one
 * packet of RC (WRITEs: or UC), however long, that came with headers
 * only.  A WRITE or a response counts the placed bytes as its payload; a
 * READ request names them in its RETH, which must agree. */
static bool take_placed(struct ur_pkt_view *v, uint32_t placed)
{
	uint32_t whole = UR_OPF_WRITE | UR_OPF_START | UR_OPF_END;

	if (v->paylen)
		return false;
	if (v->opcode == UR_OP_RC_RDMA_READ_REQUEST) {
		if (reth_len(v->bth + ur_opcode[v->opcode].offset[UR_HDR_RETH]) != placed)
			return false;
	} else if (v->opcode == UR_OP_RC_RDMA_READ_RESPONSE_ONLY ||
		   ((v->mask & whole) == whole && v->opcode < UR_OP_TYPE_RD)) {
		v->paylen = placed;
	} else {
		return false;
	}
	v->payload = NULL;
	v->placed = true;
	return true;
}

void ur_recv_packet(struct ur_stack *s, const uint8_t *pkt, size_t len,
		    const struct ur_rx_meta *meta)
{
	struct ur_pkt_view v;
	enum ur_parse_result pr = ur_pkt_parse(&v, pkt, len);
	struct ur_qp *qp;
	bool left = false;

	if (pr == UR_PARSE_OK && meta->placed && !take_placed(&v, meta->placed))
		pr = UR_PARSE_BAD_PAYLOAD;
	if (pr != UR_PARSE_OK) {
		__atomic_add_fetch(&s->malformed, 1, __ATOMIC_RELAXED);
		ur_device_count_by_gid(&meta->dgid, UR_CNT_MALFORMED);
		ur_dbg(NULL, "dropped a %zu byte packet: %s", len, ur_parse_result_name[pr]);
		return;
	}
	if (v.qpn == UR_MCAST_QPN) {
		to_group(s, &v, meta);
		return;
	}
	if (v.qpn == UR_GSI_QPN) {
		ur_gsi_rx(s, &v, meta);
		return;
	}
	qp = lock_qp_for(s, &v, pkt, len, meta, &left);
	if (!qp) {
		if (left)
			return;
		__atomic_add_fetch(&s->no_qp, 1, __ATOMIC_RELAXED);
		ur_device_count_by_gid(&meta->dgid, UR_CNT_NO_QP);
		ur_dbg(NULL, "dropped a packet for QP 0x%06x: no such QP here", v.qpn);
		return;
	}
	to_qp(qp, &v, meta);
	pthread_mutex_unlock(&qp->lock);
}

void ur_recv_local_msg(struct ur_stack *s, const uint8_t *msg, size_t len)
{
	const uint8_t *payload;
	struct ur_xrc_msg m;
	struct ur_qp *qp;

	if (ur_xrc_msg_parse(msg, len, &m, &payload)) {
		__atomic_add_fetch(&s->malformed, 1, __ATOMIC_RELAXED);
		return;
	}
	if (m.kind == UR_XRC_DELIVER) {
		ur_xrc_on_deliver(&s->xports, &s->replies_lost, &m, payload);
		return;
	}
	qp = ur_stack_lock_qp(s, m.tgt_qpn);
	if (!qp)
		return;
	if (!qp->dying && ur_xrc_on_reply(qp, &m))
		ur_resp_replay_held(qp);
	ur_qp_run(qp);
	ur_qp_check_overrun(qp);
	pthread_mutex_unlock(&qp->lock);
}
