/* Connecting: rdma_connect/accept/reject/disconnect/establish, what the
 * state machine reports for arriving MADs and timers, and the QP moves that
 * go with them (RTR and RTS on REP or accept, ERROR on disconnect), as the
 * kernel's rdma_cm makes them. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "rdmacm/cma.h"
#include "verbs/cm_abi.h"
#include "util/compiler.h"

#define CMA_MIN_RNR_TIMER 12         /* 0.64 ms */

static uint8_t min8(unsigned a, unsigned b)
{
	return (uint8_t)(a < b ? a : b);
}

static uint32_t new_psn(void)
{
	uint32_t psn = 0;

	if (getrandom(&psn, sizeof(psn), 0) < 0)
		psn = (uint32_t)cma_now();
	return psn & 0xffffff;
}

/* The attributes each transition takes, by QP type, as the kernel's ib_cm gives
 * them: an XRC initiator has no responder to size, an XRC target no requester. */
static int rtr_mask(enum ibv_qp_type t)
{
	int m = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;

	return t == IBV_QPT_XRC_SEND ? m : m | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
}

static int rts_mask(enum ibv_qp_type t)
{
	int m = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT;

	return t == IBV_QPT_XRC_RECV ? m : m | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
						IBV_QP_MAX_QP_RD_ATOMIC;
}

int cma_qp_to_rtr_rts(struct cma_id *c, uint32_t dqpn, uint32_t peer_psn, uint8_t mtu,
		      uint8_t dest_rd_atomic, uint8_t rd_atomic, uint8_t timeout,
		      uint8_t retry, uint8_t rnr_retry)
{
	struct ibv_qp_attr a;
	int ret;

	if (!c->id.qp)
		return 0;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = c->dgid;
	a.ah_attr.grh.sgid_index = (uint8_t)c->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.traffic_class = c->tos;
	a.path_mtu = (enum ibv_mtu)min8(mtu, cma.devs[c->dev].mtu);
	a.dest_qp_num = dqpn;
	a.rq_psn = c->psn;
	a.max_dest_rd_atomic = min8(dest_rd_atomic, cma.devs[c->dev].max_rd_atom);
	a.min_rnr_timer = CMA_MIN_RNR_TIMER;
	ret = ibv_modify_qp(c->id.qp, &a, rtr_mask(c->id.qp->qp_type));
	if (ret)
		return -ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = peer_psn;
	a.timeout = timeout;
	a.retry_cnt = retry & 7;
	a.rnr_retry = rnr_retry & 7;
	a.max_rd_atomic = min8(rd_atomic, cma.devs[c->dev].max_rd_atom);
	ret = ibv_modify_qp(c->id.qp, &a, rts_mask(c->id.qp->qp_type));
	return -ret;
}

int cma_qp_attr(struct cma_id *c, struct ibv_qp_attr *a, int *mask)
{
	bool passive = c->req.attr == UR_CM_REQ;
	const struct ur_cm_msg *req = &c->req;

	if (c->dev < 0)
		return -EINVAL;
	switch (a->qp_state) {
	case IBV_QPS_INIT:
		a->port_num = 1;
		a->pkey_index = 0;
		if (c->id.qp_type == IBV_QPT_UD) {
			a->qkey = CMA_UDP_QKEY;
			*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
			return 0;
		}
		a->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_READ;
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		return 0;
	case IBV_QPS_RTR:
		*mask = IBV_QP_STATE;
		if (c->id.qp_type == IBV_QPT_UD)
			return 0;
		/* The peer must be known: a REQ received, or our REQ answered. */
		if (!passive && c->conn.state != UR_CM_REP_RCVD && c->conn.state != UR_CM_ESTABLISHED)
			return -EINVAL;
		a->ah_attr.is_global = 1;
		a->ah_attr.port_num = 1;
		a->ah_attr.grh.dgid = c->dgid;
		a->ah_attr.grh.sgid_index = (uint8_t)c->gid_index;
		a->ah_attr.grh.hop_limit = 64;
		a->ah_attr.grh.traffic_class = c->tos;
		a->path_mtu = (enum ibv_mtu)min8(c->path.mtu ? c->path.mtu : IBV_MTU_1024,
						 cma.devs[c->dev].mtu);
		a->dest_qp_num = c->conn.remote_qpn;
		a->rq_psn = c->psn;
		a->max_dest_rd_atomic = min8(passive ? req->init_depth : c->param.responder_resources,
					     cma.devs[c->dev].max_rd_atom);
		a->min_rnr_timer = CMA_MIN_RNR_TIMER;
		*mask = rtr_mask(c->id.qp_type);
		return 0;
	case IBV_QPS_RTS:
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		if (c->id.qp_type == IBV_QPT_UD)
			return 0;
		if (!passive && c->conn.state != UR_CM_REP_RCVD && c->conn.state != UR_CM_ESTABLISHED)
			return -EINVAL;
		a->sq_psn = c->peer_psn;
		a->timeout = passive && req->ack_timeout ? req->ack_timeout : c->ack_timeout;
		a->retry_cnt = (passive ? req->retry_count : c->param.retry_count) & 7;
		a->rnr_retry = (passive ? req->rnr_retry : c->param.rnr_retry_count) & 7;
		a->max_rd_atomic = min8(passive ? req->resp_res : c->param.initiator_depth,
					cma.devs[c->dev].max_rd_atom);
		*mask = rts_mask(c->id.qp_type);
		return 0;
	default:
		return -EINVAL;
	}
}

/* By number, not through id.qp: the CM thread calls this, and an
 * application may destroy the QP with ibv_destroy_qp at any time (rping
 * does), leaving id.qp dangling. */
int cma_qp_to_error(struct cma_id *c)
{
	if (!c->id.qp)
		return 0;
	return uroce_qp_to_error(c->id.verbs, c->qp_num);
}

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

/* ---- arriving messages ---------------------------------------------------- */

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
	c->psn = new_psn();   /* now, so that rdma_init_qp_attr can tell RTR's */
	ur_cm_req_rcvd(&c->conn, m);
	c->path.mtu = min8(m->mtu, cma.devs[dev].mtu);
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
				    min8(c->param.initiator_depth, m->resp_res), c->ack_timeout,
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

/* ---- the application's calls -------------------------------------------- */

int cma_sync_wait(struct cma_id *c, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev = NULL;
	int ret;

	if (!c->chan->sync)
		return 0;
	ret = cma_wait_event(c, want, &ev);
	if (ev)
		cma_keep_event(c, ev);
	return ret;
}

static int do_connect(struct cma_id *c, struct rdma_conn_param *p)
{
	struct ur_cm_msg m;
	int ret;

	if (c->id.qp_type == IBV_QPT_UD) {
		ret = cma_sidr_connect(c, p);
		return ret ? ret : cma_sync_wait(c, RDMA_CM_EVENT_ESTABLISHED);
	}
	if (c->id.qp_type != IBV_QPT_RC && c->id.qp_type != IBV_QPT_XRC_SEND)
		return -EINVAL;
	if (c->dev < 0 || c->conn.state != UR_CM_IDLE || (!c->id.qp && !(p && p->qp_num)))
		return -EINVAL;
	ret = cma_check_priv(p, CMA_REQ_PRIV);
	if (ret)
		return ret;
	if (p) {
		c->param = *p;
	} else {
		/* No parameters: the device's maxima, as rdma-core's defaults are. */
		memset(&c->param, 0, sizeof(c->param));
		c->param.responder_resources = cma.devs[c->dev].max_rd_atom;
		c->param.initiator_depth = cma.devs[c->dev].max_rd_atom;
	}
	c->param.retry_count = p ? min8(p->retry_count, 7) : 7;
	c->param.rnr_retry_count = p ? min8(p->rnr_retry_count, 7) : 7;
	c->qp_num = c->id.qp ? c->id.qp->qp_num : p->qp_num;
	c->psn = new_psn();
	memset(&m, 0, sizeof(m));
	m.service_id = ur_cma_service_id(c->id.ps == RDMA_PS_IB ? UR_CMA_PS_IB : UR_CMA_PS_TCP,
					 cma_port_of((struct sockaddr *)&c->dst));
	m.ca_guid = cma.devs[c->dev].guid;
	m.qpn = c->qp_num;
	m.resp_res = min8(c->param.responder_resources, cma.devs[c->dev].max_rd_atom);
	m.init_depth = min8(c->param.initiator_depth, cma.devs[c->dev].max_rd_atom);
	/* An XRC initiator says so, as the kernel's ib_cm does. */
	m.transport = c->id.qp && c->id.qp->qp_type == IBV_QPT_XRC_SEND ? UR_CM_XRC : UR_CM_RC;
	m.remote_cm_timeout = m.local_cm_timeout = 18;
	m.psn = c->psn;
	m.retry_count = c->param.retry_count;
	m.rnr_retry = c->param.rnr_retry_count;
	m.max_cm_retries = 15;
	m.srq = c->param.srq || (c->id.qp && c->id.qp->srq);
	m.pkey = 0xffff;
	m.mtu = (uint8_t)c->path.mtu;
	memcpy(m.local_gid, &c->sgid, 16);
	memcpy(m.remote_gid, &c->dgid, 16);
	m.traffic_class = c->tos;
	m.hop_limit = 64;
	m.ack_timeout = c->ack_timeout;
	cma_pack_priv(c, p, &m);
	c->connect_sent = true;
	ret = ur_cm_send_req(&c->conn, &m, cma_now());
	if (!ret)
		cma_wake();   /* the thread's timer now has a deadline */
	return ret ? ret : cma_sync_wait(c, RDMA_CM_EVENT_ESTABLISHED);
}

UR_EXPORT int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	return cma_locked_abi_call(do_connect(to_cid(id), conn_param));
}

static int do_accept(struct cma_id *c, struct rdma_conn_param *p)
{
	const struct ur_cm_msg *req = &c->req;
	struct ur_cm_msg m;
	int ret;

	if (c->conn.state == UR_CM_SIDR_REQ_RCVD)
		return cma_sidr_accept(c, p);
	if (c->conn.state != UR_CM_REQ_RCVD)
		return -EINVAL;
	ret = cma_check_priv(p, UR_CM_REP_PRIV);
	if (ret)
		return ret;
	if (p)
		c->param = *p;
	c->qp_num = c->id.qp ? c->id.qp->qp_num : p ? p->qp_num : 0;
	ret = cma_qp_to_rtr_rts(c, req->qpn, req->psn, req->mtu,
				p ? p->responder_resources : req->init_depth,
				min8(p ? p->initiator_depth : req->resp_res, req->resp_res),
				req->ack_timeout ? req->ack_timeout : c->ack_timeout,
				req->retry_count, req->rnr_retry);
	if (ret) {
		ur_cm_send_rej(&c->conn, UR_REJ_CONSUMER, NULL, 0);
		return ret;
	}
	memset(&m, 0, sizeof(m));
	m.qpn = c->qp_num;
	m.psn = c->psn;
	m.resp_res = min8(p ? p->responder_resources : req->init_depth,
			  cma.devs[c->dev].max_rd_atom);
	m.init_depth = min8(p ? p->initiator_depth : req->resp_res, req->resp_res);
	m.target_ack_delay = 15;
	m.rnr_retry = p ? min8(p->rnr_retry_count, 7) : 7;
	m.srq = (p && p->srq) || (c->id.qp && c->id.qp->srq);
	m.ca_guid = cma.devs[c->dev].guid;
	if (p && p->private_data_len) {
		memcpy(m.priv, p->private_data, p->private_data_len);
		m.priv_len = p->private_data_len;
	}
	if (c->listener) {
		c->listener->pending--;
		c->listener = NULL;
	}
	ret = ur_cm_send_rep(&c->conn, &m, cma_now());
	if (!ret)
		cma_wake();
	return ret ? ret : cma_sync_wait(c, RDMA_CM_EVENT_ESTABLISHED);
}

UR_EXPORT int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	return cma_locked_abi_call(do_accept(to_cid(id), conn_param));
}

UR_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data,
			  uint8_t private_data_len)
{
	struct cma_id *c = to_cid(id);
	int ret;

	if (private_data_len > UR_CM_REJ_PRIV || (private_data_len && !private_data))
		return cma_abi_ret(-EINVAL);
	pthread_mutex_lock(&cma.lock);
	if (c->conn.state == UR_CM_SIDR_REQ_RCVD)
		ret = cma_sidr_reject(c, private_data, private_data_len);
	else
		ret = ur_cm_send_rej(&c->conn, UR_REJ_CONSUMER, private_data, private_data_len);
	if (!ret && c->listener) {
		c->listener->pending--;
		c->listener = NULL;
	}
	pthread_mutex_unlock(&cma.lock);
	return cma_abi_ret(ret);
}

UR_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	struct cma_id *c = to_cid(id);
	int ret = 0;

	pthread_mutex_lock(&cma.lock);
	if (c->conn.state == UR_CM_REP_SENT)
		ur_cm_established(&c->conn);
	cma_qp_to_error(c);
	if (c->conn.state == UR_CM_ESTABLISHED) {
		ret = ur_cm_send_dreq(&c->conn, NULL, 0, cma_now());
		cma_wake();
	} else if (c->conn.state != UR_CM_TIMEWAIT && c->conn.state != UR_CM_DREQ_SENT) {
		ret = -EINVAL;
	}
	pthread_mutex_unlock(&cma.lock);
	return cma_abi_ret(ret);
}

UR_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	return cma_locked_abi_call(ur_cm_send_rtu(&to_cid(id)->conn, NULL, 0));
}

UR_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	struct cma_id *c = to_cid(id);

	/* Traffic before the RTU: the passive side is established. */
	if (event == IBV_EVENT_COMM_EST) {
		pthread_mutex_lock(&cma.lock);
		if (c->conn.state == UR_CM_REP_SENT) {
			ur_cm_established(&c->conn);
			cma_event(c, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0, NULL);
		}
		pthread_mutex_unlock(&cma.lock);
	}
	return 0;
}
