/* Shared receive queues at the ABI boundary. */
#include "core/context.h"
#include "core/pd.h"
#include "core/srq.h"
#include "core/srq_tm.h"
#include "verbs/verbs_priv.h"

struct ibv_srq *ur_verbs_create_srq_ex(struct ibv_context *context,
				       struct ibv_srq_init_attr_ex *attr)
{
	struct ur_srq *srq = NULL;
	int ret;

	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd)
		return ur_ret_obj(-EINVAL, NULL);
	if (attr->comp_mask & ~(uint32_t)(IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
					  IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_XRCD |
					  IBV_SRQ_INIT_ATTR_TM))
		return ur_ret_obj(-EOPNOTSUPP, NULL);
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && attr->srq_type == IBV_SRQT_TM)
		ret = ur_srq_tm_create(to_uctx(context), to_upd(attr->pd), attr, &srq);
	else
		ret = ur_srq_create(to_uctx(context), to_upd(attr->pd), attr, &srq);
	return ur_ret_obj(ret, ret ? NULL : &srq->ibsrq);
}

UR_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *init)
{
	struct ibv_srq_init_attr_ex attr = {
		.srq_context = init->srq_context,
		.attr = init->attr,
		.comp_mask = IBV_SRQ_INIT_ATTR_PD,
		.pd = pd,
	};
	struct ibv_srq *srq = ur_verbs_create_srq_ex(pd->context, &attr);

	if (srq)
		init->attr = attr.attr;
	return srq;
}

UR_EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	return ur_ret_errno(ur_srq_modify(to_usrq(srq), attr, mask));
}

UR_EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	return ur_ret_errno(ur_srq_query(to_usrq(srq), attr));
}

UR_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	return ur_ret_errno(ur_srq_destroy(to_usrq(srq)));
}

int ur_verbs_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return -ur_srq_post_recv(to_usrq(srq), wr, bad);
}

int ur_verbs_post_srq_ops(struct ibv_srq *srq, struct ibv_ops_wr *wr, struct ibv_ops_wr **bad)
{
	return -ur_srq_post_ops(to_usrq(srq), wr, bad);
}

int ur_verbs_get_srq_num(struct ibv_srq *srq, uint32_t *num)
{
	*num = to_usrq(srq)->srq_num;
	return 0;
}
