#include "core/qp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/ah.h"
#include "core/context.h"
#include "core/cq.h"
#include "core/limits.h"
#include "core/mr.h"
#include "core/pd.h"
#include "core/qp_kind.h"
#include "core/srq.h"
#include "core/xrcd.h"
#include "util/log.h"

const char *const ur_qp_state_name[] = {
	[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT", [IBV_QPS_RTR] = "RTR",
	[IBV_QPS_RTS] = "RTS",     [IBV_QPS_SQD] = "SQD",   [IBV_QPS_SQE] = "SQE",
	[IBV_QPS_ERR] = "ERR",
};

#define UR_SUPPORTED_SEND_OPS                                               \
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |     \
	 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |                 \
	 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |        \
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_BIND_MW |         \
	 IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND_WITH_INV |            \
	 IBV_QP_EX_WITH_ATOMIC_WRITE)

/* Requests over the device's limits fail with EINVAL and are logged at debug
 * level only: middleware (libfabric, UCX) finds the limits by creating QPs
 * that ask for more and more until one is refused, so a refusal is an answer,
 * not an error.  ur_log rather than ur_dbg: this is the control path and the
 * line stays available in every build (UROCE_LOG=debug). */
static int check_caps(struct ur_context *ctx, const struct ibv_qp_init_attr_ex *a)
{
	const char *dev = ctx->dev->ibdev.name;

	if (a->cap.max_send_wr > UR_MAX_QP_WR || a->cap.max_recv_wr > UR_MAX_QP_WR) {
		ur_log(UR_LOG_DBG, dev, "max_send_wr %u / max_recv_wr %u: the device allows up to %d",
		       a->cap.max_send_wr, a->cap.max_recv_wr, UR_MAX_QP_WR);
		return -EINVAL;
	}
	if (a->cap.max_send_sge > UR_MAX_SGE || a->cap.max_recv_sge > UR_MAX_SGE) {
		ur_log(UR_LOG_DBG, dev, "max_send_sge %u / max_recv_sge %u: the device allows up to %d",
		       a->cap.max_send_sge, a->cap.max_recv_sge, UR_MAX_SGE);
		return -EINVAL;
	}
	if (a->cap.max_inline_data > UR_MAX_INLINE) {
		ur_log(UR_LOG_DBG, dev, "max_inline_data %u: the device allows up to %d",
		       a->cap.max_inline_data, UR_MAX_INLINE);
		return -EINVAL;
	}
	return 0;
}

static int check_init_attr(struct ur_context *ctx, struct ibv_qp_init_attr_ex *a)
{
	const char *dev = ctx->dev->ibdev.name;
	uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS |
			 IBV_QP_INIT_ATTR_SEND_OPS_FLAGS | IBV_QP_INIT_ATTR_XRCD;

	switch (a->qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		break;
	case IBV_QPT_DRIVER:
		/* perftest -c DC on a part id it does not know: it would post
		 * through ibv_post_send, which cannot name a DC target. */
		ur_err(dev, "QP type %d (IBV_QPT_DRIVER): a DC QP is made by mlx5dv_create_qp "
		       "(perftest -c DC takes that path with the part id uroce reports "
		       "unless UROCE_VENDOR_PART_ID replaces it)", a->qp_type);
		return -EOPNOTSUPP;
	default:
		ur_err(dev, "QP type %d is not supported", a->qp_type);
		return -EOPNOTSUPP;
	}
	if (a->comp_mask & ~known) {
		ur_err(dev, "unsupported ibv_qp_init_attr_ex comp_mask bits 0x%x",
		       a->comp_mask & ~known);
		return -EOPNOTSUPP;
	}
	if (a->qp_type == IBV_QPT_XRC_RECV) {
		/* A target: a domain, no PD, CQs or queues of its own. */
		if (!(a->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !a->xrcd)
			return -EINVAL;
		a->pd = NULL;
		a->send_cq = a->recv_cq = NULL;
		a->srq = NULL;
		memset(&a->cap, 0, sizeof(a->cap));
		return 0;
	}
	if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !a->pd)
		return -EINVAL;
	if (a->qp_type == IBV_QPT_XRC_SEND) {
		/* An initiator: sends only. */
		a->recv_cq = NULL;
		a->srq = NULL;
		a->cap.max_recv_wr = a->cap.max_recv_sge = 0;
		if (!a->send_cq)
			return -EINVAL;
		if (a->pd->context != &ctx->vctx.context)
			return -EINVAL;
		return check_caps(ctx, a);
	}
	if ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags)
		return -EOPNOTSUPP;
	if ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (a->send_ops_flags & ~(uint64_t)UR_SUPPORTED_SEND_OPS)) {
		ur_err(dev, "unsupported send_ops_flags 0x%llx",
		       (unsigned long long)(a->send_ops_flags & ~(uint64_t)UR_SUPPORTED_SEND_OPS));
		return -EOPNOTSUPP;
	}
	if (!a->send_cq || (!a->recv_cq && !a->srq))
		return -EINVAL;
	/* Tag matching is RC's: a rendezvous is answered with a READ. */
	if (a->srq && to_usrq(a->srq)->tm && a->qp_type != IBV_QPT_RC) {
		ur_err(dev, "QP type %d on a tag-matching SRQ: only RC QPs take one", a->qp_type);
		return -EOPNOTSUPP;
	}
	if (!a->recv_cq)
		a->recv_cq = a->send_cq;
	if (a->pd->context != &ctx->vctx.context)
		return -EINVAL;
	return check_caps(ctx, a);
}

static void take_refs(struct ur_qp *qp, int dir)
{
	if (qp->pd)
		atomic_fetch_add(&qp->pd->users, dir);
	if (qp->scq)
		__atomic_add_fetch(&qp->scq->users, (uint32_t)dir, __ATOMIC_RELAXED);
	if (qp->rcq)
		__atomic_add_fetch(&qp->rcq->users, (uint32_t)dir, __ATOMIC_RELAXED);
	if (qp->srq)
		__atomic_add_fetch(&qp->srq->users, (uint32_t)dir, __ATOMIC_RELAXED);
	if (qp->xrcd)
		__atomic_add_fetch(&qp->xrcd->users, (uint32_t)dir, __ATOMIC_RELAXED);
}

static int alloc_queues(struct ur_qp *qp)
{
	size_t slot = ur_max(qp->cap.max_send_sge * sizeof(struct ibv_sge),
			     (size_t)qp->cap.max_inline_data);
	int ret;

	/* On a tag-matching SRQ the device queues READs and FINs of its own. */
	ret = ur_wq_init(&qp->sq, ur_max(qp->cap.max_send_wr, 1u) +
				  (qp->srq && qp->srq->tm ? UR_TM_SQ_SLOTS : 0),
			 (sizeof(struct ur_send_wqe) + slot + 15) & ~(size_t)15);
	if (ret)
		return ret;
	qp->sq.max = qp->cap.max_send_wr;
	ret = ur_wq_init(&qp->rq, ur_max(qp->cap.max_recv_wr, 1u),
			 sizeof(struct ur_recv_wqe) +
				 ur_max(qp->cap.max_recv_sge, 1u) * sizeof(struct ibv_sge));
	if (ret)
		goto err_sq;
	qp->rq.max = qp->cap.max_recv_wr;
	qp->resp.rwqe = calloc(1, sizeof(struct ur_recv_wqe) + UR_MAX_SGE * sizeof(struct ibv_sge));
	if (!qp->resp.rwqe) {
		ret = -ENOMEM;
		goto err_rq;
	}
	return 0;

err_rq:
	ur_wq_fini(&qp->rq);
err_sq:
	ur_wq_fini(&qp->sq);
	return ret;
}

int ur_qp_alloc(struct ur_context *ctx, struct ibv_qp_init_attr_ex *a, struct ur_qp **out)
{
	struct ur_qp *qp;
	int ret;

	ret = check_init_attr(ctx, a);
	if (ret)
		return ret;
	qp = ur_device_obj_alloc(ctx->dev, UR_OBJ_QP, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	qp->ctx = ctx;
	qp->pd = a->pd ? to_upd(a->pd) : NULL;
	qp->scq = a->send_cq ? to_ucq(a->send_cq) : NULL;
	qp->rcq = a->recv_cq ? to_ucq(a->recv_cq) : NULL;
	qp->srq = a->srq ? to_usrq(a->srq) : NULL;
	qp->xrcd = a->qp_type == IBV_QPT_XRC_RECV ? to_uxrcd(a->xrcd) : NULL;
	qp->type = a->qp_type;
	qp->kind = ur_qp_kind_of(a->qp_type);
	qp->sq_sig_all = a->sq_sig_all != 0;
	qp->cap = a->cap;
	if (qp->cap.max_send_sge == 0)
		qp->cap.max_send_sge = 1;
	/* A send slot holds the SGE list or the inline bytes: inline data
	 * may fill what the SGEs would take, and the QP says so, as rxe's
	 * and mlx5's do (rdma_xclient sends 16 inline bytes on a QP that
	 * asked for none). */
	qp->cap.max_inline_data = (uint32_t)ur_min(
		ur_max((size_t)qp->cap.max_inline_data, qp->cap.max_send_sge * sizeof(struct ibv_sge)),
		(size_t)UR_MAX_INLINE);
	if (qp->srq) {
		qp->cap.max_recv_wr = 0;
		qp->cap.max_recv_sge = 0;
	}
	ret = alloc_queues(qp);
	if (ret) {
		free(qp);
		ur_device_obj_put(ctx->dev, UR_OBJ_QP);
		return ret;
	}
	pthread_mutex_init(&qp->lock, NULL);
	ur_list_init(&qp->wait_link);
	qp->qpx.qp_base.context = &ctx->vctx.context;
	qp->qpx.qp_base.qp_context = a->qp_context;
	qp->qpx.qp_base.pd = a->pd;
	qp->qpx.qp_base.send_cq = a->send_cq;
	qp->qpx.qp_base.recv_cq = a->recv_cq;
	qp->qpx.qp_base.srq = a->srq;
	qp->qpx.qp_base.qp_type = a->qp_type;
	qp->qpx.qp_base.state = IBV_QPS_RESET;
	pthread_mutex_init(&qp->qpx.qp_base.mutex, NULL);
	pthread_cond_init(&qp->qpx.qp_base.cond, NULL);
	qp->state = IBV_QPS_RESET;
	take_refs(qp, 1);
	a->cap = qp->cap;
	*out = qp;
	return 0;
}

void ur_qp_free(struct ur_qp *qp)
{
	take_refs(qp, -1);
	free(qp->resp.res);
	free(qp->resp.rwqe);
	free(qp->xrc_q);
	ur_wq_fini(&qp->rq);
	ur_wq_fini(&qp->sq);
	pthread_mutex_destroy(&qp->lock);
	ur_device_obj_put(qp->ctx->dev, UR_OBJ_QP);
	free(qp);
}

int ur_qp_query(struct ur_qp *qp, struct ibv_qp_attr *attr, int mask,
		struct ibv_qp_init_attr *init)
{
	pthread_mutex_lock(&qp->lock);
	*attr = qp->attr;
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->cap = qp->cap;
	attr->sq_draining = 0;
	memset(init, 0, sizeof(*init));
	init->qp_context = qp->qpx.qp_base.qp_context;
	init->send_cq = qp->qpx.qp_base.send_cq;
	init->recv_cq = qp->qpx.qp_base.recv_cq;
	init->srq = qp->qpx.qp_base.srq;
	init->cap = qp->cap;
	init->qp_type = qp->qpx.qp_base.qp_type;   /* a DC QP's is IBV_QPT_DRIVER */
	init->sq_sig_all = qp->sq_sig_all;
	pthread_mutex_unlock(&qp->lock);
	return 0;
}

static enum ibv_wc_opcode wc_opcode_of(uint32_t wr_opcode)
{
	switch (wr_opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM: return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ: return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP: return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD: return IBV_WC_FETCH_ADD;
	case IBV_WR_ATOMIC_WRITE: return IBV_WC_ATOMIC_WRITE;
	case IBV_WR_LOCAL_INV: return IBV_WC_LOCAL_INV;
	case IBV_WR_BIND_MW: return IBV_WC_BIND_MW;
	default: return IBV_WC_SEND;
	}
}

void ur_qp_complete_send(struct ur_qp *qp, struct ur_send_wqe *wqe,
			 enum ibv_wc_status status)
{
	if (wqe->state == UR_WQE_DONE)
		return;
	if (wqe->internal) {
		qp->srq->own_wqe_done(qp, wqe, status);
		goto retire;
	}
	/* rxe's rdma_sends: SENDs completed successfully, as its completer counts */
	if (status == IBV_WC_SUCCESS &&
	    (wqe->opcode == IBV_WR_SEND || wqe->opcode == IBV_WR_SEND_WITH_IMM ||
	     wqe->opcode == IBV_WR_SEND_WITH_INV))
		UR_QP_COUNT(qp, UR_CNT_RDMA_SENDS);
	if (status != IBV_WC_SUCCESS || qp->sq_sig_all ||
	    (wqe->send_flags & IBV_SEND_SIGNALED)) {
		struct ibv_wc wc = {
			.wr_id = wqe->wr_id,
			.status = status,
			.opcode = wc_opcode_of(wqe->opcode),
			.byte_len = wqe->length,
			.qp_num = ur_qp_num(qp),
		};

		if (qp->scq && ur_cq_push(qp->scq, &wc, false) == -ENOSPC)
			qp->cq_overrun = true;
	}
retire:
	wqe->state = UR_WQE_DONE;
	while (!ur_wq_empty(&qp->sq) &&
	       ur_sq_wqe(qp, qp->sq.head)->state == UR_WQE_DONE &&
	       qp->sq.head != qp->req.wqe)
		ur_sq_retire(qp);
}

void ur_qp_purge_completions(struct ur_qp *qp)
{
	if (qp->scq)
		ur_cq_purge_qp(qp->scq, ur_qp_num(qp));
	if (qp->rcq && qp->rcq != qp->scq)
		ur_cq_purge_qp(qp->rcq, ur_qp_num(qp));
}

static void flush_recv(struct ur_qp *qp, uint64_t wr_id)
{
	struct ibv_wc wc = {
		.wr_id = wr_id,
		.status = IBV_WC_WR_FLUSH_ERR,
		.opcode = IBV_WC_RECV,
		.qp_num = ur_qp_num(qp),
	};
	struct ur_cq *cq = qp->type == IBV_QPT_XRC_RECV && qp->resp_srq ? qp->resp_srq->cq
									  : qp->rcq;

	if (cq)
		ur_cq_push(cq, &wc, false);
}

void ur_qp_flush_queues(struct ur_qp *qp)
{
	/* Everything still queued completes in order with FLUSH_ERR. */
	qp->req.wqe = qp->sq.tail;
	for (uint32_t i = qp->sq.head; i != qp->sq.tail; i++)
		ur_qp_complete_send(qp, ur_sq_wqe(qp, i), IBV_WC_WR_FLUSH_ERR);
	qp->sq.head = qp->sq.tail;
	/* The receive of a message in progress completes too, also when it
	 * came from an SRQ: the QP owns it since it took it, and nobody else
	 * would ever return it to the application. */
	if (qp->resp.recv_active)
		flush_recv(qp, qp->resp.rwqe->wr_id);
	qp->resp.recv_active = false;
	for (; qp->rq.head != qp->rq.tail; qp->rq.head++) {
		struct ur_recv_wqe *r = ur_wq_slot(&qp->rq, qp->rq.head);

		flush_recv(qp, r->wr_id);
	}
}

void ur_qp_event(struct ur_qp *qp, enum ibv_event_type type)
{
	struct ibv_async_event ev = { .event_type = type };

	/* A DCT's half is not the application's: an initiator's failure is
	 * the initiator's (its DCI gets the NAK), as on a NIC. */
	if (ur_qp_kind_has(qp, UR_KIND_HIDDEN))
		return;
	ev.element.qp = &qp->qpx.qp_base;
	ur_async_post(&qp->ctx->async, &ev);
}
