#include "core/qp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/ah.h"
#include "core/context.h"
#include "core/cq.h"
#include "core/limits.h"
#include "core/mr.h"
#include "core/pd.h"
#include "core/srq.h"
#include "core/xrcd.h"
#include "engine/engine.h"
#include "engine/mcast.h"
#include "rel/rel.h"
#include "util/log.h"

const char *const ur_qp_state_name[] = {
	[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT", [IBV_QPS_RTR] = "RTR",
	[IBV_QPS_RTS] = "RTS",     [IBV_QPS_SQD] = "SQD",   [IBV_QPS_SQE] = "SQE",
	[IBV_QPS_ERR] = "ERR",
};

#define QP_DEV(qp) ((qp)->ctx->dev->ibdev.name)

#define UR_SUPPORTED_SEND_OPS                                               \
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |     \
	 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |                 \
	 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |        \
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_BIND_MW |         \
	 IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND_WITH_INV)

static int check_caps(struct ur_context *ctx, const struct ibv_qp_init_attr_ex *a)
{
	const char *dev = ctx->dev->ibdev.name;

	if (a->cap.max_send_wr > UR_MAX_QP_WR || a->cap.max_recv_wr > UR_MAX_QP_WR) {
		ur_err(dev, "max_send_wr %u / max_recv_wr %u: the device allows up to %d",
		       a->cap.max_send_wr, a->cap.max_recv_wr, UR_MAX_QP_WR);
		return -EINVAL;
	}
	if (a->cap.max_send_sge > UR_MAX_SGE || a->cap.max_recv_sge > UR_MAX_SGE) {
		ur_err(dev, "max_send_sge %u / max_recv_sge %u: the device allows up to %d",
		       a->cap.max_send_sge, a->cap.max_recv_sge, UR_MAX_SGE);
		return -EINVAL;
	}
	if (a->cap.max_inline_data > UR_MAX_INLINE) {
		ur_err(dev, "max_inline_data %u: the device allows up to %d",
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
	if (!a->recv_cq)
		a->recv_cq = a->send_cq;
	if (a->pd->context != &ctx->vctx.context)
		return -EINVAL;
	return check_caps(ctx, a);
}

struct ur_qp *ur_qp_create(struct ur_context *ctx, struct ibv_qp_init_attr_ex *a)
{
	struct ur_engine *e;
	struct ur_qp *qp;
	size_t slot;
	int ret;

	ret = check_init_attr(ctx, a);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	e = ur_engine_get();
	if (!e)
		return NULL;
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp->ctx = ctx;
	qp->pd = a->pd ? to_upd(a->pd) : NULL;
	qp->scq = a->send_cq ? to_ucq(a->send_cq) : NULL;
	qp->rcq = a->recv_cq ? to_ucq(a->recv_cq) : NULL;
	qp->srq = a->srq ? to_usrq(a->srq) : NULL;
	qp->xrcd = a->qp_type == IBV_QPT_XRC_RECV ? to_uxrcd(a->xrcd) : NULL;
	qp->type = a->qp_type;
	qp->sq_sig_all = a->sq_sig_all != 0;
	qp->cap = a->cap;
	if (qp->cap.max_send_sge == 0)
		qp->cap.max_send_sge = 1;
	if (qp->srq) {
		qp->cap.max_recv_wr = 0;
		qp->cap.max_recv_sge = 0;
	}
	pthread_mutex_init(&qp->lock, NULL);
	ur_list_init(&qp->timer_link);
	ur_list_init(&qp->blocked_link);

	slot = ur_max(qp->cap.max_send_sge * sizeof(struct ibv_sge),
		      (size_t)qp->cap.max_inline_data);
	ret = ur_wq_init(&qp->sq, ur_max(qp->cap.max_send_wr, 1u),
			 (sizeof(struct ur_send_wqe) + slot + 15) & ~(size_t)15);
	if (ret)
		goto err_free;
	qp->sq.max = qp->cap.max_send_wr;
	ret = ur_wq_init(&qp->rq, ur_max(qp->cap.max_recv_wr, 1u),
			 sizeof(struct ur_recv_wqe) +
				 ur_max(qp->cap.max_recv_sge, 1u) * sizeof(struct ibv_sge));
	if (ret)
		goto err_sq;
	qp->rq.max = qp->cap.max_recv_wr;
	qp->resp.rwqe = calloc(1, sizeof(struct ur_recv_wqe) +
				      UR_MAX_SGE * sizeof(struct ibv_sge));
	if (!qp->resp.rwqe) {
		ret = -ENOMEM;
		goto err_rq;
	}

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
	ur_qp_init_wr_ops(qp);
	ur_rel_reset(qp);

	ret = ur_engine_qp_register(e, qp);
	if (ret)
		goto err_rwqe;
	if (qp->pd)
		atomic_fetch_add(&qp->pd->users, 1);
	if (qp->scq)
		__atomic_add_fetch(&qp->scq->users, 1, __ATOMIC_RELAXED);
	if (qp->rcq)
		__atomic_add_fetch(&qp->rcq->users, 1, __ATOMIC_RELAXED);
	if (qp->srq)
		__atomic_add_fetch(&qp->srq->users, 1, __ATOMIC_RELAXED);
	if (qp->xrcd)
		__atomic_add_fetch(&qp->xrcd->users, 1, __ATOMIC_RELAXED);
	a->cap = qp->cap;
	ur_dbg(QP_DEV(qp), "QP 0x%06x created", ur_qp_num(qp));
	return qp;

err_rwqe:
	free(qp->resp.rwqe);
err_rq:
	ur_wq_fini(&qp->rq);
err_sq:
	ur_wq_fini(&qp->sq);
err_free:
	free(qp);
	errno = -ret;
	return NULL;
}

/* An acknowledgement still owed (the transport was full when the last
 * request arrived) leaves before the QP does, as a NIC's would: otherwise
 * the peer's requester retries into a QP that no longer exists and fails
 * with RETRY_EXC_ERR although everything arrived.  Bounded: a peer that
 * never drains does not hold destroy up for more than ~100 ms. */
static void linger_for_ack(struct ur_qp *qp)
{
	for (int i = 0; i < 50; i++) {
		bool owed;

		pthread_mutex_lock(&qp->lock);
		owed = qp->resp.ack_pending && qp->state != IBV_QPS_RESET &&
		       qp->state != IBV_QPS_ERR;
		if (owed) {
			ur_qp_tx(qp);
			owed = qp->resp.ack_pending;
		}
		pthread_mutex_unlock(&qp->lock);
		if (!owed)
			return;
		usleep(2000);
	}
}

int ur_qp_destroy(struct ur_qp *qp)
{
	struct ur_engine *e = ur_engine_get();

	linger_for_ack(qp);
	ur_mcast_forget(qp);
	ur_engine_qp_unregister(e, qp);
	pthread_mutex_lock(&qp->lock);
	ur_rel_abort(qp);
	ur_qp_purge_completions(qp);
	pthread_mutex_unlock(&qp->lock);
	ur_async_forget(&qp->ctx->async, &qp->qpx.qp_base);

	if (qp->pd)
		atomic_fetch_sub(&qp->pd->users, 1);
	if (qp->scq)
		__atomic_sub_fetch(&qp->scq->users, 1, __ATOMIC_RELAXED);
	if (qp->rcq)
		__atomic_sub_fetch(&qp->rcq->users, 1, __ATOMIC_RELAXED);
	if (qp->srq)
		__atomic_sub_fetch(&qp->srq->users, 1, __ATOMIC_RELAXED);
	if (qp->xrcd)
		__atomic_sub_fetch(&qp->xrcd->users, 1, __ATOMIC_RELAXED);
	free(qp->resp.res);
	free(qp->resp.rwqe);
	free(qp->xrc_q);
	ur_wq_fini(&qp->rq);
	ur_wq_fini(&qp->sq);
	pthread_mutex_destroy(&qp->lock);
	free(qp);
	return 0;
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
	init->qp_type = qp->type;
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
	wqe->state = UR_WQE_DONE;
	while (!ur_wq_empty(&qp->sq) &&
	       ur_sq_wqe(qp, qp->sq.head)->state == UR_WQE_DONE &&
	       qp->sq.head != qp->req.wqe)
		qp->sq.head++;
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

static void flush_queues(struct ur_qp *qp)
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

void ur_qp_check_overrun(struct ur_qp *qp)
{
	if (qp->cq_overrun && qp->state != IBV_QPS_ERR)
		ur_qp_to_error(qp, true);
}

void ur_qp_to_error(struct ur_qp *qp, bool fatal)
{
	bool was_err = qp->state == IBV_QPS_ERR;

	qp->state = IBV_QPS_ERR;
	qp->qpx.qp_base.state = IBV_QPS_ERR;
	ur_rel_abort(qp);
	flush_queues(qp);
	if (was_err)
		return;
	if (fatal) {
		struct ibv_async_event ev = { .event_type = IBV_EVENT_QP_FATAL };

		ev.element.qp = &qp->qpx.qp_base;
		ur_async_post(&qp->ctx->async, &ev);
	}
	if (qp->srq) {
		struct ibv_async_event ev = { .event_type = IBV_EVENT_QP_LAST_WQE_REACHED };

		ev.element.qp = &qp->qpx.qp_base;
		ur_async_post(&qp->ctx->async, &ev);
	}
}

/* ---- posting ------------------------------------------------------------ */

static bool opcode_allowed(enum ibv_qp_type type, uint32_t op)
{
	switch (type) {
	case IBV_QPT_RC:
		return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM ||
		       op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM ||
		       op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_CMP_AND_SWP ||
		       op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_SEND_WITH_INV ||
		       ur_wr_is_local(op);
	case IBV_QPT_UC:
		return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM ||
		       op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM ||
		       ur_wr_is_local(op);
	case IBV_QPT_UD:
		return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM;
	case IBV_QPT_XRC_SEND:
		return opcode_allowed(IBV_QPT_RC, op);
	default:
		return false;
	}
}

static bool is_atomic(uint32_t op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

static int fill_send_wqe(struct ur_qp *qp, struct ur_send_wqe *w, const struct ibv_send_wr *wr)
{
	const char *dev = QP_DEV(qp);
	uint64_t len = 0;

	if (!opcode_allowed(qp->type, wr->opcode)) {
		ur_err(dev, "QP 0x%06x: opcode %d is not valid on this QP type",
		       ur_qp_num(qp), wr->opcode);
		return -EINVAL;
	}
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge) {
		ur_err(dev, "QP 0x%06x: %d SGEs, the QP was created with max_send_sge %u",
		       ur_qp_num(qp), wr->num_sge, qp->cap.max_send_sge);
		return -EINVAL;
	}
	memset(w, 0, sizeof(*w));
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->send_flags = wr->send_flags;
	w->imm = wr->imm_data;
	w->state = UR_WQE_POSTED;
	for (int i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (len > UR_MAX_MSG_SZ) {
		ur_err(dev, "QP 0x%06x: message of %llu bytes exceeds max_msg_sz %u",
		       ur_qp_num(qp), (unsigned long long)len, UR_MAX_MSG_SZ);
		return -EINVAL;
	}
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
		break;
	case IBV_WR_BIND_MW:
		if (!wr->bind_mw.mw)
			return -EINVAL;
		w->mw = to_umw(wr->bind_mw.mw);
		w->rkey = wr->bind_mw.rkey;
		w->bind = wr->bind_mw.bind_info;
		w->num_sge = 0;
		return 0;
	case IBV_WR_LOCAL_INV:
		w->imm = wr->invalidate_rkey;
		w->num_sge = 0;
		return 0;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		if (wr->num_sge != 1 || wr->sg_list[0].length < 8) {
			ur_err(dev, "QP 0x%06x: an atomic needs one SGE of 8 bytes",
			       ur_qp_num(qp));
			return -EINVAL;
		}
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
		len = 8;
		break;
	default:
		break;
	}
	if (qp->type == IBV_QPT_XRC_SEND)
		w->remote_srqn = wr->qp_type.xrc.remote_srqn & 0xffffff;
	if (qp->type == IBV_QPT_UD) {
		if (!wr->wr.ud.ah)
			return -EINVAL;
		w->ah = to_uah(wr->wr.ud.ah);
		w->remote_qpn = wr->wr.ud.remote_qpn & 0xffffff;
		w->remote_qkey = wr->wr.ud.remote_qkey;
		if (len > qp->mtu && qp->mtu) {
			ur_err(dev, "QP 0x%06x: UD message of %llu bytes exceeds the path MTU %u",
			       ur_qp_num(qp), (unsigned long long)len, qp->mtu);
			return -EINVAL;
		}
	}
	w->length = (uint32_t)len;
	if ((wr->send_flags & IBV_SEND_INLINE) && !is_atomic(wr->opcode) &&
	    wr->opcode != IBV_WR_RDMA_READ) {
		uint8_t *dst = w->inline_data;

		if (len > qp->cap.max_inline_data) {
			ur_err(dev, "QP 0x%06x: %llu inline bytes, the QP allows %u",
			       ur_qp_num(qp), (unsigned long long)len, qp->cap.max_inline_data);
			return -EINVAL;
		}
		for (int i = 0; i < wr->num_sge; i++) {
			memcpy(dst, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			dst += wr->sg_list[i].length;
		}
		w->is_inline = true;
		w->num_sge = 0;
	} else {
		/* A zero-length message may come with sg_list NULL. */
		if (wr->num_sge)
			memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(struct ibv_sge));
		w->num_sge = (uint32_t)wr->num_sge;
	}
	return 0;
}

int ur_qp_post_send(struct ur_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	int ret = 0;

	if (qp->type == IBV_QPT_XRC_RECV) {
		*bad = wr;
		return EINVAL;    /* an XRC target has no send queue */
	}
	pthread_mutex_lock(&qp->lock);
	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD &&
	    qp->state != IBV_QPS_ERR) {
		ur_err(QP_DEV(qp), "QP 0x%06x: post_send in state %s (needs RTS)",
		       ur_qp_num(qp), ur_qp_state_name[qp->state]);
		ret = EINVAL;
		*bad = wr;
		goto out;
	}
	for (; wr; wr = wr->next) {
		if (ur_wq_full(&qp->sq)) {
			ret = ENOMEM;
			break;
		}
		ret = -fill_send_wqe(qp, ur_sq_wqe(qp, qp->sq.tail), wr);
		if (ret)
			break;
		qp->sq.tail++;
	}
	if (ret)
		*bad = wr;
	if (qp->state == IBV_QPS_ERR)
		flush_queues(qp);
	else
		ur_req_run(qp);
	ur_qp_check_overrun(qp);
out:
	pthread_mutex_unlock(&qp->lock);
	return ret;
}

int ur_qp_post_recv(struct ur_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	int ret = 0;

	if (qp->srq || qp->type == IBV_QPT_XRC_SEND || qp->type == IBV_QPT_XRC_RECV) {
		*bad = wr;
		return EINVAL;    /* no receive queue of its own */
	}
	pthread_mutex_lock(&qp->lock);
	if (qp->state == IBV_QPS_RESET) {
		pthread_mutex_unlock(&qp->lock);
		*bad = wr;
		return EINVAL;    /* as rxe and mlx5: receives need INIT or later */
	}
	for (; wr; wr = wr->next) {
		struct ur_recv_wqe *r;
		uint64_t len = 0;

		if (ur_wq_full(&qp->rq)) {
			ret = ENOMEM;
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_recv_sge) {
			ret = EINVAL;
			break;
		}
		r = ur_wq_slot(&qp->rq, qp->rq.tail);
		r->wr_id = wr->wr_id;
		r->num_sge = (uint32_t)wr->num_sge;
		for (int i = 0; i < wr->num_sge; i++) {
			r->sge[i] = wr->sg_list[i];
			len += wr->sg_list[i].length;
		}
		r->length = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
		qp->rq.tail++;
	}
	if (ret)
		*bad = wr;
	if (qp->state == IBV_QPS_ERR)
		flush_queues(qp);
	pthread_mutex_unlock(&qp->lock);
	return ret;
}
