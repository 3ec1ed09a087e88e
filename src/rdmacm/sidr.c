/* UD ids: rdma_connect asks the peer for its QP number and Q_Key with a
 * SIDR_REQ (rdma_cm's address header, then the user's private data), the
 * listener's side reports it as CONNECT_REQUEST and answers with a
 * SIDR_REP on rdma_accept (its QP) or rdma_reject; the active side gets
 * ESTABLISHED with an address handle's attributes, the QP number and the
 * Q_Key (udaddy's path), or UNREACHABLE: status the SIDR_REP's (1: nobody
 * serves the port, 2: rejected) or -ETIMEDOUT.  No QP changes state: a UD
 * QP is ready to send once created. */
#include <errno.h>
#include <string.h>

#include "rdmacm/cma.h"

#define CMA_SIDR_TTL 64

static uint16_t ps_code(const struct cma_id *c)
{
	return c->id.ps == RDMA_PS_IB ? UR_CMA_PS_IB : UR_CMA_PS_UDP;
}

int cma_sidr_connect(struct cma_id *c, const struct rdma_conn_param *p)
{
	struct ur_cm_msg m;
	int ret;

	if (c->dev < 0 || c->conn.state != UR_CM_IDLE)
		return -EINVAL;
	ret = cma_check_priv(p, CMA_SIDR_REQ_PRIV);
	if (ret)
		return ret;
	memset(&m, 0, sizeof(m));
	m.service_id = ur_cma_service_id(ps_code(c), cma_port_of((struct sockaddr *)&c->dst));
	m.pkey = 0xffff;
	cma_pack_priv(c, p, &m);
	c->connect_sent = true;
	ret = ur_cm_send_sidr_req(&c->conn, &m, cma_now());
	if (!ret)
		cma_wake();   /* the thread's timer now has a deadline */
	return ret;
}

/* An answer with no id behind it: nobody serves the service. */
static void answer_unknown(const struct ur_cm_msg *m, int dev, int gid_index,
			   const union ibv_gid *from, uint8_t status)
{
	struct ur_cm_msg rep;

	memset(&rep, 0, sizeof(rep));
	rep.attr = UR_CM_SIDR_REP;
	rep.tid = m->tid;
	rep.remote_comm_id = m->local_comm_id;
	rep.sidr_status = status;
	rep.service_id = m->service_id;
	cma_send_to(dev, gid_index, from, &rep);
}

void cma_on_sidr_req(const struct ur_cm_msg *m, int dev, int gid_index, const union ibv_gid *from)
{
	struct cma_id *l = cma_find_listener(m->service_id, dev), *c;
	struct cma_event *e;
	struct ur_cma_hdr h;

	if ((c = cma_find_child(m, from))) {
		ur_cm_rx(&c->conn, m, cma_now());   /* a repeat: our answer again, if sent */
		return;
	}
	if (!l || l->id.qp_type != IBV_QPT_UD || ur_cma_hdr_parse(m->priv, m->priv_len, &h)) {
		answer_unknown(m, dev, gid_index, from, UR_SIDR_UNSUPPORTED);
		return;
	}
	if (cma_child_new(l, m, &h, dev, gid_index, from, &c)) {
		answer_unknown(m, dev, gid_index, from, UR_SIDR_REJECT);
		return;
	}
	ur_cm_sidr_req_rcvd(&c->conn, m);
	if (cma_event(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0, m->priv + UR_CMA_HDR_BYTES,
		      CMA_SIDR_REQ_PRIV, &e) == 0)
		cma_child_event(c, e);
}

static void accepted(struct cma_id *c)
{
	if (c->listener) {
		c->listener->pending--;
		c->listener = NULL;
	}
}

int cma_sidr_accept(struct cma_id *c, const struct rdma_conn_param *p)
{
	uint32_t qpn = c->id.qp ? c->id.qp->qp_num : p ? p->qp_num : 0;
	uint32_t qkey = CMA_UDP_QKEY;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	int ret;

	/* As the kernel's: RDMA_PS_UDP ids use rdma_cm's well-known Q_Key,
	 * others their QP's. */
	if (c->id.ps != RDMA_PS_UDP && c->id.qp &&
	    !ibv_query_qp(c->id.qp, &a, IBV_QP_QKEY, &ia))
		qkey = a.qkey;

	if (!qpn)
		return -EINVAL;
	ret = cma_check_priv(p, UR_CM_SIDR_REP_PRIV);
	if (ret)
		return ret;
	ret = ur_cm_send_sidr_rep(&c->conn, UR_SIDR_OK, qpn, qkey,
				  p ? p->private_data : NULL, p ? p->private_data_len : 0);
	if (!ret)
		accepted(c);
	return ret;
}

int cma_sidr_reject(struct cma_id *c, const void *priv, uint8_t len)
{
	int ret;

	if (len > UR_CM_SIDR_REP_PRIV)
		return -EINVAL;
	ret = ur_cm_send_sidr_rep(&c->conn, UR_SIDR_REJECT, 0, 0, priv, len);
	if (!ret)
		accepted(c);
	return ret;
}

void cma_sidr_answered(struct cma_id *c, const struct ur_cm_msg *m)
{
	struct cma_event *e;

	if (m->sidr_status != UR_SIDR_OK || !m->qpn) {
		cma_event(c, RDMA_CM_EVENT_UNREACHABLE, m->sidr_status ? m->sidr_status : UR_SIDR_NO_QP,
			  m->priv, UR_CM_SIDR_REP_PRIV, NULL);
		return;
	}
	if (cma_event(c, RDMA_CM_EVENT_ESTABLISHED, 0, m->priv, UR_CM_SIDR_REP_PRIV, &e))
		return;
	cma_event_set_ud(e, c, &c->dgid, CMA_SIDR_TTL, m->qpn, m->qkey);
}
