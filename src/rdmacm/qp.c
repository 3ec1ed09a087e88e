/* QPs of CM ids: created in INIT (RTS for UD), as the kernel's rdma_cm
 * leaves them; the endpoint helpers (rdma_create_ep, rdma_get_request)
 * that rdma_server/rdma_client use. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_verbs.h>

#include "rdmacm/cma.h"
#include "util/compiler.h"

int cma_resolve(struct cma_id *c, const struct sockaddr *src, const struct sockaddr *dst);

int cma_qp_to_init(struct cma_id *c, struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	if (qp->qp_type == IBV_QPT_UD) {
		a.qkey = CMA_UDP_QKEY;
		ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				    IBV_QP_QKEY);
		if (ret)
			return -ret;
		a.qp_state = IBV_QPS_RTR;
		if ((ret = ibv_modify_qp(qp, &a, IBV_QP_STATE)))
			return -ret;
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 0;
		return -ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	}
	(void)c;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	return -ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			      IBV_QP_ACCESS_FLAGS);
}

/* CQs for a QP created without them, on completion channels of their own
 * (rdma_get_send_comp and rdma_get_recv_comp wait on those). */
static int make_cqs(struct cma_id *c, struct ibv_qp_init_attr_ex *a)
{
	int sz = (int)(a->cap.max_send_wr > a->cap.max_recv_wr ? a->cap.max_send_wr :
		       a->cap.max_recv_wr) + 1;

	if (a->send_cq && a->recv_cq)
		return 0;
	c->id.recv_cq_channel = ibv_create_comp_channel(c->id.verbs);
	c->id.send_cq_channel = ibv_create_comp_channel(c->id.verbs);
	if (!c->id.recv_cq_channel || !c->id.send_cq_channel)
		return -errno;
	c->id.recv_cq = ibv_create_cq(c->id.verbs, sz, &c->id, c->id.recv_cq_channel, 0);
	c->id.send_cq = ibv_create_cq(c->id.verbs, sz, &c->id, c->id.send_cq_channel, 0);
	if (!c->id.recv_cq || !c->id.send_cq)
		return -errno;
	c->own_cqs = true;
	if (!a->send_cq)
		a->send_cq = c->id.send_cq;
	if (!a->recv_cq)
		a->recv_cq = c->id.recv_cq;
	return 0;
}

static void free_cqs(struct cma_id *c)
{
	if (!c->own_cqs)
		return;
	if (c->id.send_cq)
		ibv_destroy_cq(c->id.send_cq);
	if (c->id.recv_cq)
		ibv_destroy_cq(c->id.recv_cq);
	if (c->id.send_cq_channel)
		ibv_destroy_comp_channel(c->id.send_cq_channel);
	if (c->id.recv_cq_channel)
		ibv_destroy_comp_channel(c->id.recv_cq_channel);
	c->id.send_cq = c->id.recv_cq = NULL;
	c->id.send_cq_channel = c->id.recv_cq_channel = NULL;
	c->own_cqs = false;
}

static int create_qp(struct cma_id *c, struct ibv_qp_init_attr_ex *a)
{
	struct ibv_qp *qp;
	int ret;

	if (!a || !c->id.verbs || c->dev < 0)
		return -EINVAL;
	if (!a->pd) {
		if (!(a->pd = cma_dev_pd(c->dev)))
			return -errno;
		a->comp_mask |= IBV_QP_INIT_ATTR_PD;
	}
	if (a->pd->context != c->id.verbs)
		return -EINVAL;
	/* The endpoint helpers leave the type to the id (its port space). */
	if (!a->qp_type)
		a->qp_type = c->id.qp_type;
	if (!a->srq && c->id.srq)
		a->srq = c->id.srq;
	if (a->qp_type == IBV_QPT_XRC_RECV) {
		/* No queues of its own: its messages go to XRC SRQs of the
		 * device's domain, which rdma_create_srq makes. */
		if (!(a->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !a->xrcd) {
			if (!(a->xrcd = cma_dev_xrcd(c->dev)))
				return -errno;
			a->comp_mask |= IBV_QP_INIT_ATTR_XRCD;
		}
		a->send_cq = a->recv_cq = NULL;
		a->srq = NULL;
	} else {
		ret = make_cqs(c, a);
		if (ret)
			goto fail;
	}
	qp = ibv_create_qp_ex(c->id.verbs, a);
	if (!qp) {
		ret = -errno;
		goto fail;
	}
	ret = cma_qp_to_init(c, qp);
	if (ret) {
		ibv_destroy_qp(qp);
		goto fail;
	}
	c->id.qp = qp;
	c->qp_num = qp->qp_num;
	c->id.pd = a->pd;
	c->id.qp_type = qp->qp_type;
	return 0;
fail:
	free_cqs(c);
	return ret;
}

UR_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	return cma_locked_abi_call(create_qp(to_cid(id), attr));
}

UR_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex a;

	if (!qp_init_attr)
		return cma_abi_ret(-EINVAL);
	memset(&a, 0, sizeof(a));
	memcpy(&a, qp_init_attr, sizeof(*qp_init_attr));
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd;
	if (!pd)
		a.comp_mask = 0;
	if (cma_locked_abi_call(create_qp(to_cid(id), &a)))
		return -1;
	/* The caller learns the capabilities it got, and the CQs. */
	qp_init_attr->cap = a.cap;
	qp_init_attr->send_cq = a.send_cq;
	qp_init_attr->recv_cq = a.recv_cq;
	return 0;
}

UR_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	struct cma_id *c = to_cid(id);

	pthread_mutex_lock(&cma.lock);
	if (id->qp)
		ibv_destroy_qp(id->qp);
	id->qp = NULL;
	free_cqs(c);
	pthread_mutex_unlock(&cma.lock);
}

UR_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
				int *qp_attr_mask)
{
	enum ibv_qp_state state;
	int ret;

	if (!id || !qp_attr || !qp_attr_mask)
		return cma_abi_ret(-EINVAL);
	state = qp_attr->qp_state;   /* the one asked for */
	pthread_mutex_lock(&cma.lock);
	memset(qp_attr, 0, sizeof(*qp_attr));
	qp_attr->qp_state = state;
	ret = cma_qp_attr(to_cid(id), qp_attr, qp_attr_mask);
	pthread_mutex_unlock(&cma.lock);
	return cma_abi_ret(ret);
}

/* ---- endpoints ------------------------------------------------------------ */

UR_EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
			     struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cm_id;
	struct cma_id *c;
	int ret;

	if (!id || !res)
		return cma_abi_ret(-EINVAL);
	if (rdma_create_id(NULL, &cm_id, NULL, res->ai_port_space))
		return -1;
	c = to_cid(cm_id);
	/* The QP type the address info asks for (XRC's two sides, say), as
	 * rdma-core's rdma_create_ep gives its id. */
	if (res->ai_qp_type)
		cm_id->qp_type = (enum ibv_qp_type)res->ai_qp_type;
	if (res->ai_flags & RAI_PASSIVE) {
		if (rdma_bind_addr(cm_id, res->ai_src_addr))
			goto fail;
		if (qp_init_attr) {
			c->ep_attr = malloc(sizeof(*qp_init_attr));
			if (!c->ep_attr) {
				errno = ENOMEM;
				goto fail;
			}
			*c->ep_attr = *qp_init_attr;
		}
		cm_id->pd = pd;
		*id = cm_id;
		return 0;
	}
	if (rdma_resolve_addr(cm_id, res->ai_src_addr, res->ai_dst_addr, 2000) ||
	    rdma_resolve_route(cm_id, 2000))
		goto fail;
	if (qp_init_attr && rdma_create_qp(cm_id, pd, qp_init_attr))
		goto fail;
	*id = cm_id;
	return 0;
fail:
	ret = errno;
	rdma_destroy_id(cm_id);
	errno = ret;
	return -1;
}

UR_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (id->qp)
		rdma_destroy_qp(id);
	rdma_destroy_id(id);
}

UR_EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct cma_id *l = to_cid(listen), *c;
	struct rdma_cm_event *ev;
	struct ibv_qp_init_attr a;
	int ret;

	if (!l->chan->sync || !l->listening)
		return cma_abi_ret(-EINVAL);
	if (rdma_get_cm_event(listen->channel, &ev))
		return -1;
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		ret = ev->status ? -ev->status : EINVAL;
		rdma_ack_cm_event(ev);
		errno = ret < 0 ? -ret : ret;
		return -1;
	}
	c = to_cid(ev->id);
	/* The request stays in the new id's event, as rdma-core's keeps it. */
	pthread_mutex_lock(&cma.lock);
	cma_keep_event(c, ev);
	pthread_mutex_unlock(&cma.lock);
	/* The new id waits on a channel of its own, as the listener does. */
	if (rdma_migrate_id(&c->id, NULL))
		goto fail;
	if (l->ep_attr) {
		a = *l->ep_attr;
		if (rdma_create_qp(&c->id, listen->pd, &a))
			goto fail;
	}
	*id = &c->id;
	return 0;
fail:
	ret = errno;
	rdma_reject(&c->id, NULL, 0);
	rdma_destroy_id(&c->id);
	errno = ret;
	return -1;
}

/* ---- SRQs ----------------------------------------------------------------- */

static int create_srq(struct cma_id *c, struct ibv_srq_init_attr_ex *a)
{
	struct ibv_srq *srq;

	if (!a || !c->id.verbs || c->dev < 0 || !(a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE))
		return -EINVAL;
	if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !a->pd) {
		a->pd = c->id.pd ? c->id.pd : cma_dev_pd(c->dev);
		if (!a->pd)
			return -errno;
		a->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
	}
	if (a->srq_type == IBV_SRQT_XRC) {
		/* As rdma-core's: the device's XRC domain, and a receive CQ
		 * (with its channel, for rdma_get_recv_comp) made for it. */
		if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !a->xrcd) {
			if (!(a->xrcd = cma_dev_xrcd(c->dev)))
				return -errno;
		}
		if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !a->cq) {
			struct ibv_qp_init_attr_ex q = { .cap.max_recv_wr = a->attr.max_wr };
			int ret = make_cqs(c, &q);

			if (ret)
				return ret;
			a->cq = c->id.recv_cq;
		}
		a->comp_mask |= IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	}
	srq = ibv_create_srq_ex(c->id.verbs, a);
	if (!srq)
		return -errno;
	if (!c->id.pd)
		c->id.pd = a->pd;
	c->id.srq = srq;
	return 0;
}

UR_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	return cma_locked_abi_call(create_srq(to_cid(id), attr));
}

/* An XRC SRQ for an XRC_RECV id, a basic one otherwise, as rdma-core's. */
UR_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
			      struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex a;

	if (!attr)
		return cma_abi_ret(-EINVAL);
	memset(&a, 0, sizeof(a));
	memcpy(&a, attr, sizeof(*attr));
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | (pd ? IBV_SRQ_INIT_ATTR_PD : 0);
	a.srq_type = id->qp_type == IBV_QPT_XRC_RECV ? IBV_SRQT_XRC : IBV_SRQT_BASIC;
	a.pd = pd;
	if (rdma_create_srq_ex(id, &a))
		return -1;
	attr->attr = a.attr;
	return 0;
}

UR_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (id->srq)
		ibv_destroy_srq(id->srq);
	id->srq = NULL;
}
