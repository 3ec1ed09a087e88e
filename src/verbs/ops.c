/* The per-context operation tables that libibverbs' inline functions call
 * through (ibv_post_send, ibv_poll_cq, ibv_create_qp_ex, ...).  A NULL
 * entry makes the inline wrapper fail with EOPNOTSUPP. */
#include "verbs/verbs_priv.h"

void ur_verbs_set_ops(struct verbs_context *v)
{
	struct ibv_context_ops *ops = &v->context.ops;

	ops->poll_cq = ur_verbs_poll_cq;
	ops->req_notify_cq = ur_verbs_req_notify_cq;
	ops->post_send = ur_verbs_post_send;
	ops->post_recv = ur_verbs_post_recv;
	ops->post_srq_recv = ur_verbs_post_srq_recv;
	ops->alloc_mw = ur_verbs_alloc_mw;
	ops->dealloc_mw = ur_verbs_dealloc_mw;
	ops->bind_mw = ur_verbs_bind_mw;

	v->query_port = ur_verbs_query_port;
	v->query_device_ex = ur_verbs_query_device_ex;
	v->advise_mr = ur_verbs_advise_mr;
	v->alloc_dm = ur_verbs_alloc_dm;
	v->free_dm = ur_verbs_free_dm;
	v->reg_dm_mr = ur_verbs_reg_dm_mr;
	v->alloc_td = ur_verbs_alloc_td;
	v->dealloc_td = ur_verbs_dealloc_td;
	v->alloc_parent_domain = ur_verbs_alloc_parent_domain;
	v->query_rt_values = ur_verbs_query_rt_values;
	v->create_cq_ex = ur_verbs_create_cq_ex;
	v->modify_cq = ur_verbs_modify_cq;
	v->create_qp_ex = ur_verbs_create_qp_ex;
	v->create_srq_ex = ur_verbs_create_srq_ex;
	v->get_srq_num = ur_verbs_get_srq_num;
	v->post_srq_ops = ur_verbs_post_srq_ops;
	v->open_xrcd = ur_verbs_open_xrcd;
	v->close_xrcd = ur_verbs_close_xrcd;
}
