#include "core/srq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "core/cq.h"
#include "core/limits.h"
#include "core/pd.h"
#include "core/qp.h"
#include "core/xrcd.h"
#include "engine/engine.h"
#include "host/registry.h"
#include "util/log.h"

/* Sinks an SRQ keeps; idle ones beyond are forgotten oldest first. */
#define UR_SRQ_MAX_SINKS 256u

static int check_attr(struct ur_context *ctx, const struct ibv_srq_init_attr_ex *a,
		      enum ibv_srq_type type)
{
	if (type != IBV_SRQT_BASIC && type != IBV_SRQT_XRC && type != IBV_SRQT_TM)
		return -EOPNOTSUPP;
	if (type == IBV_SRQT_XRC &&
	    (!(a->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !a->xrcd ||
	     !(a->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !a->cq))
		return -EINVAL;
	if (a->attr.max_wr < 1 || a->attr.max_wr > UR_MAX_SRQ_WR ||
	    a->attr.max_sge > UR_MAX_SRQ_SGE || a->attr.srq_limit > a->attr.max_wr) {
		/* A probe's answer, not an error (see check_caps in qp.c). */
		ur_log(UR_LOG_DBG, ctx->dev->ibdev.name, "SRQ max_wr %u (1..%d), max_sge %u (<= %d), "
		       "srq_limit %u (<= max_wr)", a->attr.max_wr, UR_MAX_SRQ_WR,
		       a->attr.max_sge, UR_MAX_SRQ_SGE, a->attr.srq_limit);
		return -EINVAL;
	}
	return 0;
}

/* An XRC SRQ is named on the wire by a number unique on the host. */
static int attach_xrc(struct ur_srq *srq, struct ibv_srq_init_attr_ex *a)
{
	int ret = srq->ctx->stack ? ur_registry_alloc_qpn(srq->ctx->reg, &srq->srq_num)
				  : srq->ctx->stack_err;

	if (ret)
		return ret;
	srq->xrcd = to_uxrcd(a->xrcd);
	srq->cq = to_ucq(a->cq);
	__atomic_add_fetch(&srq->cq->users, 1, __ATOMIC_RELAXED);
	ur_xrcd_add_srq(srq->xrcd, srq);
	return 0;
}

int ur_srq_create(struct ur_context *ctx, struct ur_pd *pd, struct ibv_srq_init_attr_ex *a,
		  struct ur_srq **out)
{
	enum ibv_srq_type type = (a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ? a->srq_type
									  : IBV_SRQT_BASIC;
	struct ur_srq *srq;
	int ret;

	ret = check_attr(ctx, a, type);
	if (ret)
		return ret;
	if (ur_device_obj_get(ctx->dev, UR_OBJ_SRQ))
		return -ENOMEM;
	ret = -ENOMEM;
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		goto err_count;
	srq->max_sge = ur_max(a->attr.max_sge, 1u);
	ret = ur_wq_init(&srq->rq, a->attr.max_wr,
			 sizeof(struct ur_recv_wqe) + srq->max_sge * sizeof(struct ibv_sge));
	if (ret)
		goto err_free;
	srq->ctx = ctx;
	srq->pd = pd;
	srq->type = type;
	srq->limit = a->attr.srq_limit;
	ur_list_init(&srq->xrcd_link);
	ur_list_init(&srq->xrc_sinks);
	if (type == IBV_SRQT_XRC) {
		ret = attach_xrc(srq, a);
		if (ret)
			goto err_rq;
	}
	pthread_mutex_init(&srq->lock, NULL);
	srq->ibsrq.context = &ctx->vctx.context;
	srq->ibsrq.srq_context = a->srq_context;
	srq->ibsrq.pd = &pd->ibpd;
	pthread_mutex_init(&srq->ibsrq.mutex, NULL);
	pthread_cond_init(&srq->ibsrq.cond, NULL);
	atomic_fetch_add(&pd->users, 1);
	a->attr.max_sge = srq->max_sge;
	*out = srq;
	return 0;

err_rq:
	ur_wq_fini(&srq->rq);
err_free:
	free(srq);
err_count:
	ur_device_obj_put(ctx->dev, UR_OBJ_SRQ);
	return ret;
}

static void sinks_fini(struct ur_srq *srq)
{
	struct ur_list *pos, *tmp;

	ur_list_for_each_safe(pos, tmp, &srq->xrc_sinks) {
		ur_list_del(pos);
		free(ur_list_entry(pos, struct ur_srq_sink, link));
	}
	srq->nsinks = 0;
}

int ur_srq_destroy(struct ur_srq *srq)
{
	if (__atomic_load_n(&srq->users, __ATOMIC_ACQUIRE))
		return -EBUSY;
	if (srq->type == IBV_SRQT_XRC) {
		ur_xrcd_del_srq(srq->xrcd, srq);
		/* XRC targets find the SRQ by number from reactor callbacks:
		 * let any callback in progress finish before it goes away. */
		ur_engine_quiesce(srq->ctx->engine);
		sinks_fini(srq);
		__atomic_sub_fetch(&srq->cq->users, 1, __ATOMIC_RELAXED);
		ur_registry_free_qpn(srq->ctx->reg, srq->srq_num);
	}
	if (srq->tm) {
		__atomic_sub_fetch(&srq->cq->users, 1, __ATOMIC_RELAXED);
		free(srq->tm);
	}
	ur_async_forget(&srq->ctx->async, &srq->ibsrq);
	atomic_fetch_sub(&srq->pd->users, 1);
	ur_wq_fini(&srq->rq);
	pthread_mutex_destroy(&srq->lock);
	ur_device_obj_put(srq->ctx->dev, UR_OBJ_SRQ);
	free(srq);
	return 0;
}

int ur_srq_modify(struct ur_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	int ret = 0;

	if (mask & ~(IBV_SRQ_LIMIT | IBV_SRQ_MAX_WR))
		return -EINVAL;
	if (mask & IBV_SRQ_MAX_WR)
		return -EOPNOTSUPP;   /* resizing: not supported (no SRQ_RESIZE cap) */
	pthread_mutex_lock(&srq->lock);
	if (attr->srq_limit > srq->rq.max)
		ret = -EINVAL;
	else
		srq->limit = attr->srq_limit;
	pthread_mutex_unlock(&srq->lock);
	return ret;
}

int ur_srq_query(struct ur_srq *srq, struct ibv_srq_attr *attr)
{
	pthread_mutex_lock(&srq->lock);
	attr->max_wr = srq->rq.max;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = srq->limit;
	pthread_mutex_unlock(&srq->lock);
	return 0;
}

int ur_srq_post_recv(struct ur_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	int ret;

	pthread_mutex_lock(&srq->lock);
	ret = ur_wq_post_recv(&srq->rq, wr, srq->max_sge, bad);
	pthread_mutex_unlock(&srq->lock);
	return ret;
}

bool ur_srq_take(struct ur_srq *srq, struct ur_recv_wqe *out)
{
	struct ur_recv_wqe *r;
	bool limit_hit = false;

	pthread_mutex_lock(&srq->lock);
	if (ur_wq_empty(&srq->rq)) {
		pthread_mutex_unlock(&srq->lock);
		return false;
	}
	r = ur_wq_slot(&srq->rq, srq->rq.head);
	memcpy(out, r, sizeof(*r) + r->num_sge * sizeof(struct ibv_sge));
	srq->rq.head++;
	if (srq->limit && ur_wq_used(&srq->rq) < srq->limit) {
		srq->limit = 0;    /* the event disarms the limit, as the spec says */
		limit_hit = true;
	}
	pthread_mutex_unlock(&srq->lock);
	if (limit_hit) {
		struct ibv_async_event ev = { .event_type = IBV_EVENT_SRQ_LIMIT_REACHED };

		ev.element.srq = &srq->ibsrq;
		ur_async_post(&srq->ctx->async, &ev);
	}
	return true;
}

/* The least recently used sink with no message in progress goes. */
static bool forget_idle_sink(struct ur_srq *srq)
{
	struct ur_list *pos, *tmp;

	for (pos = srq->xrc_sinks.prev, tmp = pos->prev; pos != &srq->xrc_sinks;
	     pos = tmp, tmp = pos->prev) {
		struct ur_srq_sink *s = ur_list_entry(pos, struct ur_srq_sink, link);

		if (!s->active) {
			ur_list_del(pos);
			free(s);
			srq->nsinks--;
			return true;
		}
	}
	return false;
}

struct ur_srq_sink *ur_srq_sink_get(struct ur_srq *srq, pid_t pid, uint32_t qpn)
{
	struct ur_srq_sink *s;
	struct ur_list *pos;

	ur_list_for_each(pos, &srq->xrc_sinks) {
		s = ur_list_entry(pos, struct ur_srq_sink, link);
		if (s->pid == pid && s->tgt_qpn == qpn) {
			ur_list_del(pos);
			ur_list_add(&srq->xrc_sinks, pos);
			return s;
		}
	}
	if (srq->nsinks >= UR_SRQ_MAX_SINKS && !forget_idle_sink(srq))
		return NULL;
	s = calloc(1, sizeof(*s) + srq->max_sge * sizeof(struct ibv_sge));
	if (!s)
		return NULL;
	s->pid = pid;
	s->tgt_qpn = qpn;
	ur_list_add(&srq->xrc_sinks, &s->link);
	srq->nsinks++;
	return s;
}
