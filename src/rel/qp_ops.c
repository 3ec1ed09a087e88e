#include "rel/qp_ops.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "core/context.h"
#include "core/qp.h"
#include "core/qp_kind.h"
#include "core/qp_modify.h"
#include "host/registry.h"
#include "rel/held.h"
#include "rel/inbox.h"
#include "rel/kick.h"
#include "rel/progress.h"
#include "rel/qp_error.h"
#include "rel/rel_priv.h"
#include "rel/resp_batch.h"
#include "rel/run.h"
#include "rel/stack.h"
#include "rel/xrc.h"
#include "util/log.h"

/* ---- protocol state at transitions ------------------------------------- */

static void reset_state(struct ur_qp *qp)
{
	struct ur_recv_wqe *rwqe = qp->resp.rwqe;
	struct ur_resp_res *res = qp->resp.res;
	struct ur_atomic_result *atomics = qp->resp.atomics;
	uint32_t nres = qp->resp.nres;

	memset(&qp->req, 0, sizeof(qp->req));
	memset(&qp->comp, 0, sizeof(qp->comp));
	memset(&qp->resp, 0, sizeof(qp->resp));
	qp->resp.rwqe = rwqe;
	qp->resp.res = res;
	qp->resp.atomics = atomics;
	qp->resp.nres = nres;
	if (res)
		memset(res, 0, nres * (sizeof(*res) + sizeof(*atomics)));
	qp->req.opcode = -1;
	qp->resp.opcode = -1;
	qp->req.cwnd = UR_CWND_INIT;
	if (qp->kind->reset)
		qp->kind->reset(qp);
}

static void enter_rtr(struct ur_qp *qp)
{
	qp->resp.psn = qp->attr.rq_psn;
	qp->resp.opcode = -1;
	qp->resp.xrc_wait = false;
	qp->xrc_gen = ur_xrc_new_gen();
	ur_xrc_queue_clear(qp);
	ur_held_clear(&qp->held);
	qp->resp.msn = 0;
	qp->resp.nak_sent = false;
	qp->resp.rnr_sent = false;
	qp->resp.drop_msg = false;
	ur_rel_expose(qp, true);
}

static void enter_rts(struct ur_qp *qp)
{
	qp->req.psn = qp->attr.sq_psn;
	qp->req.psn_max = qp->attr.sq_psn;
	qp->comp.psn = qp->attr.sq_psn;
	qp->req.wqe = qp->sq.head;
	qp->req.opcode = -1;
	qp->req.cwnd = UR_CWND_INIT;
	qp->req.recovering = false;
	qp->req.ask_ack = false;
	qp->comp.retry_left = qp->attr.retry_cnt;
	qp->comp.rnr_retry_left = qp->attr.rnr_retry;
	qp->comp.retrying = false;
	ur_held_clear(&qp->held_resp);
	ur_kick(qp, UR_RUN_REQ);   /* what SQD kept, if anything */
}

static void enter_reset(struct ur_qp *qp)
{
	ur_rel_abort(qp);
	reset_state(qp);
	qp->comm_est = false;
	qp->cq_overrun = false;
	ur_qp_purge_completions(qp);
	__atomic_store_n(&qp->sq.head, 0, __ATOMIC_RELEASE);
	qp->sq.tail = 0;
	qp->rq.head = qp->rq.tail = 0;
}

int ur_qp_modify(struct ur_qp *qp, struct ibv_qp_attr *a, int mask)
{
	struct ur_qp_change c;
	int ret;

	pthread_mutex_lock(&qp->lock);
	ret = ur_qp_modify_check(qp, a, mask, &c);
	if (!ret)
		ret = ur_qp_modify_apply(qp, a, mask, &c);
	if (ret)
		goto out;
	if (c.next != c.cur || c.next == IBV_QPS_RESET) {
		qp->state = c.next;
		qp->qpx.qp_base.state = c.next;
		switch (c.next) {
		case IBV_QPS_RESET:
			enter_reset(qp);
			break;
		case IBV_QPS_RTR:
			enter_rtr(qp);
			break;
		case IBV_QPS_RTS:
			enter_rts(qp);
			break;
		case IBV_QPS_ERR:
			qp->state = c.cur;   /* let ur_qp_to_error see the transition */
			ur_qp_to_error(qp, false);
			break;
		default:
			break;
		}
	}
	if ((mask & IBV_QP_ACCESS_FLAGS) && c.next != IBV_QPS_RESET && c.next != IBV_QPS_INIT &&
	    c.next != IBV_QPS_ERR && qp->state == c.next)
		ur_rel_expose(qp, true);
	ur_dbg(ur_qp_dev(qp), "QP 0x%06x: %s -> %s", ur_qp_num(qp), ur_qp_state_name[c.cur],
	       ur_qp_state_name[c.next]);
	ur_qp_run(qp);
out:
	pthread_mutex_unlock(&qp->lock);
	return ret;
}

/* ---- life cycle --------------------------------------------------------- */

/* A number unique on the host, and a place in this process's table. */
static int add_to_stack(struct ur_stack *s, struct ur_qp *qp)
{
	uint32_t qpn;
	int ret = ur_registry_alloc_qpn(s->reg, &qpn);

	if (ret)
		return ret;
	qp->qpx.qp_base.qp_num = qpn;
	pthread_rwlock_wrlock(&s->qps_lock);
	ret = ur_qp_table_insert(&s->qps, qpn, qp);
	pthread_rwlock_unlock(&s->qps_lock);
	if (ret)
		ur_registry_free_qpn(s->reg, qpn);
	return ret;
}

int ur_qp_create_kind(struct ur_context *ctx, struct ibv_qp_init_attr_ex *attr,
		      const struct ur_qp_kind *kind, struct ur_qp **out)
{
	struct ur_qp *qp;
	int ret;

	if (!ctx->stack)
		return ctx->stack_err;
	ret = ur_qp_alloc(ctx, attr, &qp);
	if (ret)
		return ret;
	if (kind)
		qp->kind = kind;   /* before anything can find the QP */
	ur_qp_init_wr_builders(qp);
	reset_state(qp);
	ret = ur_engine_timer_init(ctx->engine, &qp->timer, ur_progress_timer);
	if (ret)
		goto err_free;
	ret = add_to_stack(ctx->stack, qp);
	if (ret)
		goto err_timer;
	ur_dbg(ur_qp_dev(qp), "QP 0x%06x created", ur_qp_num(qp));
	*out = qp;
	return 0;

err_timer:
	ur_engine_timer_fini(ctx->engine, &qp->timer);
err_free:
	ur_qp_free(qp);
	return ret;
}

int ur_qp_create(struct ur_context *ctx, struct ibv_qp_init_attr_ex *attr, struct ur_qp **out)
{
	return ur_qp_create_kind(ctx, attr, NULL, out);
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
			ur_kick(qp, UR_RUN_RESP | UR_RUN_REQ);
			ur_qp_run(qp);
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
	struct ur_stack *s = qp->ctx->stack;

	linger_for_ack(qp);
	ur_mcast_forget(qp);
	/* Nothing re-arms or re-queues a dying QP. */
	ur_rel_stop(s, qp);
	pthread_rwlock_wrlock(&s->qps_lock);
	ur_qp_table_remove(&s->qps, ur_qp_num(qp));
	pthread_rwlock_unlock(&s->qps_lock);
	/* A reactor callback that found the QP before it left the table, or
	 * fired its timer, is done after this. */
	ur_engine_quiesce(s->engine);
	ur_engine_timer_fini(s->engine, &qp->timer);
	if (qp->kind->destroy)
		qp->kind->destroy(qp);
	ur_registry_free_qpn(s->reg, ur_qp_num(qp));
	/* Also waits out a resource snapshot that locked the QP while the
	 * table still held it (rel/res_dump.c). */
	pthread_mutex_lock(&qp->lock);
	ur_qp_purge_completions(qp);
	pthread_mutex_unlock(&qp->lock);
	ur_async_forget(&qp->ctx->async, &qp->qpx.qp_base);
	ur_qp_free(qp);
	return 0;
}

/* ---- posting ------------------------------------------------------------ */

int ur_qp_post_send(struct ur_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	int ret;

	if (qp->type == IBV_QPT_XRC_RECV) {
		*bad = wr;
		return -EINVAL;    /* an XRC target has no send queue */
	}
	pthread_mutex_lock(&qp->lock);
	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD &&
	    qp->state != IBV_QPS_ERR) {
		ur_err(ur_qp_dev(qp), "QP 0x%06x: post_send in state %s (needs RTS)",
		       ur_qp_num(qp), ur_qp_state_name[qp->state]);
		*bad = wr;
		ret = -EINVAL;
		goto out;
	}
	ret = ur_sq_post(qp, wr, bad);
	if (qp->state == IBV_QPS_ERR) {
		ur_qp_flush_queues(qp);
	} else {
		ur_resp_batch_before_post(qp);
		ur_kick(qp, UR_RUN_REQ);
		ur_qp_run(qp);
	}
	ur_qp_check_overrun(qp);
out:
	pthread_mutex_unlock(&qp->lock);
	return ret;
}

int ur_qp_post_recv(struct ur_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	int ret;

	if (qp->srq || ur_qp_kind_has(qp, UR_KIND_NO_RQ)) {
		*bad = wr;
		return -EINVAL;    /* no receive queue of its own */
	}
	pthread_mutex_lock(&qp->lock);
	if (qp->state == IBV_QPS_RESET) {
		pthread_mutex_unlock(&qp->lock);
		*bad = wr;
		return -EINVAL;    /* as rxe and mlx5: receives need INIT or later */
	}
	ret = ur_rq_post(qp, wr, bad);
	if (qp->state == IBV_QPS_ERR)
		ur_qp_flush_queues(qp);
	pthread_mutex_unlock(&qp->lock);
	return ret;
}

void ur_qp_wr_start(struct ur_qp *qp)
{
	pthread_mutex_lock(&qp->lock);
	if (qp->type == IBV_QPT_RC)
		ur_inbox_open(qp);   /* wr_complete's run step takes what waits there */
	qp->wr_tail = qp->sq.tail;
	qp->wr_err = (qp->state == IBV_QPS_RTS || qp->state == IBV_QPS_ERR) ? 0 : -EINVAL;
}

int ur_qp_wr_complete(struct ur_qp *qp)
{
	int err = qp->wr_err;

	if (!err && qp->kind->check_batch)
		err = qp->kind->check_batch(qp);
	if (!err) {
		qp->sq.tail = qp->wr_tail;
		if (qp->state == IBV_QPS_ERR) {
			ur_qp_to_error(qp, false);
		} else {
			ur_resp_batch_before_post(qp);
			ur_kick(qp, UR_RUN_REQ);
		}
	}
	ur_qp_run(qp);   /* also the ACKs that waited in the inbox since wr_start */
	if (!err)
		ur_qp_check_overrun(qp);
	qp->wr_tail = qp->sq.tail;
	pthread_mutex_unlock(&qp->lock);
	return err;
}

void ur_qp_wr_abort(struct ur_qp *qp)
{
	qp->wr_tail = qp->sq.tail;
	ur_qp_run(qp);   /* ACKs that waited in the inbox meanwhile */
	pthread_mutex_unlock(&qp->lock);
}
