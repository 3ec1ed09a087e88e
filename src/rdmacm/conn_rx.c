/* What the CM thread hands up (cma.c): each arriving MAD, by the state
 * machine's verdict (cm/cm.c), becomes the application's events and the
 * connection's QP moves; its timer ends connections whose peer went
 * silent or whose local peer process is gone. */
#include <stdlib.h>
#include <string.h>

#include "rdmacm/cma.h"
#include "verbs/cm_abi.h"

/* The event's connection parameters from a message, seen from our side. */
static void conn_event(struct cma_id *c, enum rdma_cm_event_type type, int status,
		       const struct ur_cm_msg *m, const uint8_t *priv, size_t len)
{
	struct cma_event *e;

	if (cma_event(c, type, status, priv, len, &e) || !m)
		return;
	e->ev.param.conn.responder_resources = m->init_depth;
	e->ev.param.conn.initiator_depth = m->resp_res;
	e->ev.param.conn.flow_control = m->flow_control;
	e->ev.param.conn.retry_count = m->retry_count;
	e->ev.param.conn.rnr_retry_count = m->rnr_retry;
	e->ev.param.conn.srq = m->srq;
	e->ev.param.conn.qp_num = m->qpn;
}

static void reject_unknown(const struct ur_cm_msg *m, int dev, int gid_index,
			   const union ibv_gid *from, uint16_t reason)
{
	struct ur_cm_msg rej;

	ur_cm_rej_for(m, reason, &rej);
	cma_send_to(dev, gid_index, from, &rej);
}

static void on_req(const struct ur_cm_msg *m, int dev, int gid_index, const union ibv_gid *from)
{
	struct cma_id *l = cma_find_listener(m->service_id, dev), *c;
	struct ur_cma_hdr h;

	if ((c = cma_find_child(m, from))) {
		ur_cm_rx(&c->conn, m, cma_now());   /* a repeat: our REP again, if sent */
		return;
	}
	if (!l || l->id.qp_type == IBV_QPT_UD ||
	    (m->transport != UR_CM_RC && m->transport != UR_CM_XRC) ||
	    ur_cma_hdr_parse(m->priv, m->priv_len, &h)) {
		reject_unknown(m, dev, gid_index, from, UR_REJ_INVALID_SERVICE_ID);
		return;
	}
	if (cma_child_new(l, m, &h, dev, gid_index, from, &c)) {
		reject_unknown(m, dev, gid_index, from, UR_REJ_CONSUMER);
		return;
	}
	c->peer_psn = m->psn;
	c->psn = cma_new_psn();   /* now, so that rdma_init_qp_attr can tell RTR's */
	ur_cm_req_rcvd(&c->conn, m);
	c->path.mtu = cma_min8(m->mtu, cma.devs[dev].mtu);
	conn_event(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0, m, m->priv + UR_CMA_HDR_BYTES,
		   CMA_REQ_PRIV);
	cma_child_event(c, ur_list_entry(c->chan->events.prev, struct cma_event, link));
}

static void on_rep(struct cma_id *c, const struct ur_cm_msg *m)
{
	int ret;

	c->peer_psn = m->psn;
	ret = cma_qp_to_rtr_rts(c, m->qpn, m->psn, (uint8_t)c->path.mtu,
				    c->param.responder_resources,
				    cma_min8(c->param.initiator_depth, m->resp_res), c->ack_timeout,
				    c->param.retry_count, c->param.rnr_retry_count);

	if (ret) {
		ur_cm_send_rej(&c->conn, UR_REJ_CONSUMER, NULL, 0);
		conn_event(c, RDMA_CM_EVENT_CONNECT_ERROR, ret, m, NULL, 0);
		return;
	}
	if (!c->id.qp) {
		/* The application moves its QP: it calls rdma_establish. */
		conn_event(c, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, m, m->priv, UR_CM_REP_PRIV);
		return;
	}
	ur_cm_send_rtu(&c->conn, NULL, 0);
	conn_event(c, RDMA_CM_EVENT_ESTABLISHED, 0, m, m->priv, UR_CM_REP_PRIV);
}

static void disconnected(struct cma_id *c)
{
	if (c->disconnected)
		return;
	c->disconnected = true;
	cma_qp_to_error(c);
	cma_event(c, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0, NULL);
}

static void report(struct cma_id *c, enum ur_cm_up up, const struct ur_cm_msg *m)
{
	switch (up) {
	case UR_CM_UP_REP:
		on_rep(c, m);
		break;
	case UR_CM_UP_RTU:
		conn_event(c, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, NULL, 0);
		break;
	case UR_CM_UP_REJ:
		if (c->listener) {
			c->listener->pending--;
			c->listener = NULL;
		}
		cma_qp_to_error(c);
		conn_event(c, RDMA_CM_EVENT_REJECTED, m->reason, m, m->priv, UR_CM_REJ_PRIV);
		break;
	case UR_CM_UP_DREQ:
	case UR_CM_UP_DREP:
	case UR_CM_UP_DREQ_TIMEOUT:
		disconnected(c);
		break;
	case UR_CM_UP_SIDR_REP:
		cma_sidr_answered(c, m);
		break;
	case UR_CM_UP_TIMEOUT:
		cma_qp_to_error(c);
		cma_event(c, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, 0, NULL);
		break;
	default:
		break;
	}
}

static void on_mad(const struct ur_cm_msg *m, int dev, int gid_index, const union ibv_gid *sgid)
{
	struct cma_id *c;

	if (m->attr == UR_CM_REQ) {
		on_req(m, dev, gid_index, sgid);
		return;
	}
	if (m->attr == UR_CM_SIDR_REQ) {
		cma_on_sidr_req(m, dev, gid_index, sgid);
		return;
	}
	c = cma_find_comm(m->remote_comm_id);
	if (!c) {
		/* A gone connection: tell the peer so it stops waiting. */
		if (m->attr == UR_CM_REP)
			reject_unknown(m, dev, gid_index, sgid, UR_REJ_STALE_CONN);
		if (m->attr == UR_CM_DREQ) {
			struct ur_cm_msg drep = { .attr = UR_CM_DREP, .tid = m->tid,
						  .remote_comm_id = m->local_comm_id };

			cma_send_to(dev, gid_index, sgid, &drep);
		}
		return;
	}
	/* A message from someone else's connection with our number. */
	if (c->conn.remote_id && m->attr != UR_CM_REJ && m->local_comm_id != c->conn.remote_id)
		return;
	report(c, ur_cm_rx(&c->conn, m, cma_now()), m);
}

/* A killed process sends no DREQ (the kernel's rdma_cm sends one for a
 * dying process; no process is left to do it here): once a second,
 * connections whose peer was a process of this host that is gone end as
 * if its DREQ had come (DISCONNECTED, the QP to ERROR). */
static void check_local_peers(uint64_t now)
{
	static uint64_t last;
	struct ur_list *l;

	if (now - last < 1000000000ull)
		return;
	last = now;
	ur_list_for_each(l, &cma.ids) {
		struct cma_id *c = ur_list_entry(l, struct cma_id, link);

		if (c->conn.state != UR_CM_ESTABLISHED || c->disconnected ||
		    uroce_cm_peer_gone(&c->dgid, c->conn.remote_id) != 1)
			continue;
		ur_cm_peer_gone(&c->conn);
		disconnected(c);
	}
}

static void tick(uint64_t now, uint64_t *next)
{
	struct ur_list *l;

	check_local_peers(now);

	ur_list_for_each(l, &cma.ids) {
		struct cma_id *c = ur_list_entry(l, struct cma_id, link);

		report(c, ur_cm_tick(&c->conn, now), NULL);
		if (c->conn.deadline_ns && (!*next || c->conn.deadline_ns < *next))
			*next = c->conn.deadline_ns;
	}
}

/* The CM thread (cma.c) hands what arrives and its timer up to us: plugged
 * in when the library loads, so that cma.c calls nothing above it. */
__attribute__((constructor)) static void plug_in(void)
{
	static const struct cma_upcalls up = { .on_mad = on_mad, .tick = tick };

	cma_set_upcalls(&up);
}
