/* QPs at the ABI boundary. */
#include <string.h>

#include "core/context.h"
#include "core/qp.h"
#include "rel/qp_ops.h"
#include "util/log.h"
#include "verbs/verbs_priv.h"

/* The ibv_wr_* batch calls (the builders in between are core's). */
static void wr_start(struct ibv_qp_ex *qpx)
{
	ur_qp_wr_start(to_uqp(&qpx->qp_base));
}

static int wr_complete(struct ibv_qp_ex *qpx)
{
	return -ur_qp_wr_complete(to_uqp(&qpx->qp_base));
}

static void wr_abort(struct ibv_qp_ex *qpx)
{
	ur_qp_wr_abort(to_uqp(&qpx->qp_base));
}

struct ibv_qp *ur_verbs_qp_out(struct ur_qp *qp)
{
	qp->qpx.wr_start = wr_start;
	qp->qpx.wr_complete = wr_complete;
	qp->qpx.wr_abort = wr_abort;
	return &qp->qpx.qp_base;
}

struct ibv_qp *ur_verbs_create_qp_ex(struct ibv_context *context,
				     struct ibv_qp_init_attr_ex *attr)
{
	struct ur_qp *qp = NULL;
	int ret = ur_qp_create(to_uctx(context), attr, &qp);

	if (ret)
		return ur_ret_obj(ret, NULL);
	return ur_verbs_qp_out(qp);
}

UR_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
{
	struct ibv_qp_init_attr_ex attr;
	struct ibv_qp *qp;

	memset(&attr, 0, sizeof(attr));
	memcpy(&attr, init, sizeof(*init));
	attr.comp_mask = IBV_QP_INIT_ATTR_PD;
	attr.pd = pd;
	qp = ur_verbs_create_qp_ex(pd->context, &attr);
	if (qp)
		init->cap = attr.cap;
	return qp;
}

UR_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	return ur_ret_errno(ur_qp_modify(to_uqp(qp), attr, mask));
}

UR_EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
			   struct ibv_qp_init_attr *init)
{
	return ur_ret_errno(ur_qp_query(to_uqp(qp), attr, mask, init));
}

UR_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	return ur_ret_errno(ur_qp_destroy(to_uqp(qp)));
}

UR_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	return &to_uqp(qp)->qpx;
}

int ur_verbs_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	return -ur_qp_post_send(to_uqp(qp), wr, bad);
}

int ur_verbs_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return -ur_qp_post_recv(to_uqp(qp), wr, bad);
}

UR_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	/* Enhanced Connection Establishment is a vendor option exchange. */
	return EOPNOTSUPP;
}

UR_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return EOPNOTSUPP;
}

UR_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op,
					 uint32_t flags)
{
	/* The responder places packets strictly in PSN order. */
	if (flags)
		return 0;
	return qp->qp_type == IBV_QPT_RC || qp->qp_type == IBV_QPT_UC;
}
