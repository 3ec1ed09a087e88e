/* The QP moves a connection makes, as the kernel's rdma_cm makes them: RTR
 * and RTS on REP or accept, ERROR on disconnect, and what
 * rdma_init_qp_attr tells an application that moves its QP itself. */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "rdmacm/cma.h"
#include "verbs/cm_abi.h"

#define CMA_MIN_RNR_TIMER 12         /* 0.64 ms */

uint32_t cma_new_psn(void)
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
	a.path_mtu = (enum ibv_mtu)cma_min8(mtu, cma.devs[c->dev].mtu);
	a.dest_qp_num = dqpn;
	a.rq_psn = c->psn;
	a.max_dest_rd_atomic = cma_min8(dest_rd_atomic, cma.devs[c->dev].max_rd_atom);
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
	a.max_rd_atomic = cma_min8(rd_atomic, cma.devs[c->dev].max_rd_atom);
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
		a->path_mtu = (enum ibv_mtu)cma_min8(c->path.mtu ? c->path.mtu : IBV_MTU_1024,
						 cma.devs[c->dev].mtu);
		a->dest_qp_num = c->conn.remote_qpn;
		a->rq_psn = c->psn;
		a->max_dest_rd_atomic = cma_min8(passive ? req->init_depth : c->param.responder_resources,
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
		a->max_rd_atomic = cma_min8(passive ? req->resp_res : c->param.initiator_depth,
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
