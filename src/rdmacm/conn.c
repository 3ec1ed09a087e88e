/* Connecting, the application's calls: rdma_connect, rdma_accept,
 * rdma_reject, rdma_disconnect, rdma_establish, rdma_notify.  What arrives
 * is conn_rx.c's; the QP moves conn_qp.c's. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm/cma.h"
#include "util/compiler.h"

/* A synchronous id (made without a channel) waits for want. */
static int cma_sync_wait(struct cma_id *c, enum rdma_cm_event_type want)
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
	c->param.retry_count = p ? cma_min8(p->retry_count, 7) : 7;
	c->param.rnr_retry_count = p ? cma_min8(p->rnr_retry_count, 7) : 7;
	c->qp_num = c->id.qp ? c->id.qp->qp_num : p->qp_num;
	c->psn = cma_new_psn();
	memset(&m, 0, sizeof(m));
	m.service_id = ur_cma_service_id(c->id.ps == RDMA_PS_IB ? UR_CMA_PS_IB : UR_CMA_PS_TCP,
					 cma_port_of((struct sockaddr *)&c->dst));
	m.ca_guid = cma.devs[c->dev].guid;
	m.qpn = c->qp_num;
	m.resp_res = cma_min8(c->param.responder_resources, cma.devs[c->dev].max_rd_atom);
	m.init_depth = cma_min8(c->param.initiator_depth, cma.devs[c->dev].max_rd_atom);
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
				cma_min8(p ? p->initiator_depth : req->resp_res, req->resp_res),
				req->ack_timeout ? req->ack_timeout : c->ack_timeout,
				req->retry_count, req->rnr_retry);
	if (ret) {
		ur_cm_send_rej(&c->conn, UR_REJ_CONSUMER, NULL, 0);
		return ret;
	}
	memset(&m, 0, sizeof(m));
	m.qpn = c->qp_num;
	m.psn = c->psn;
	m.resp_res = cma_min8(p ? p->responder_resources : req->init_depth,
			  cma.devs[c->dev].max_rd_atom);
	m.init_depth = cma_min8(p ? p->initiator_depth : req->resp_res, req->resp_res);
	m.target_ack_delay = 15;
	m.rnr_retry = p ? cma_min8(p->rnr_retry_count, 7) : 7;
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
