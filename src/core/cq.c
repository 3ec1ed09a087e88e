/* Completion queues: the ring, the producer and consumer sides, and when
 * a completion raises a channel event.  Under the CQ spinlock only ring
 * indices and flags change: whether to post an event or touch the
 * moderation timer is decided there and done after it is released. */
#include "core/cq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "core/limits.h"
#include "util/clock.h"
#include "util/lock.h"
#include "util/log.h"

/* What a completion (or the moderation timer) asks for, done unlocked. */
enum notify_action {
	NOTIFY_NONE,
	NOTIFY_FIRE,           /* post the channel event (and stop the timer) */
	NOTIFY_ARM_TIMER,      /* moderation: report within mod_period_us */
};

/* cq->lock held: the event goes out now; the CQ is disarmed. */
static enum notify_action fire(struct ur_cq *cq)
{
	__atomic_store_n(&cq->armed, false, __ATOMIC_RELAXED);
	cq->mod_pending = 0;
	cq->mod_timer_armed = false;
	return NOTIFY_FIRE;
}

/* cq->lock held, after a completion was added. */
static enum notify_action decide(struct ur_cq *cq, bool solicited, bool error)
{
	if (!cq->armed || (cq->solicited_only && !solicited && !error))
		return NOTIFY_NONE;
	if (!error && (cq->mod_count > 1 || cq->mod_period_us)) {
		cq->mod_pending++;
		if (!cq->mod_count || cq->mod_pending < cq->mod_count) {
			if (!cq->mod_period_us || cq->mod_timer_armed)
				return NOTIFY_NONE;
			cq->mod_timer_armed = true;
			return NOTIFY_ARM_TIMER;
		}
	}
	return fire(cq);
}

static void act(struct ur_cq *cq, enum notify_action a)
{
	switch (a) {
	case NOTIFY_FIRE:
		if (cq->mod_timer_ready)
			ur_engine_timer_cancel(cq->ctx->engine, &cq->mod_timer);
		if (cq->ibcq.channel)
			ur_channel_post(to_uchan(cq->ibcq.channel), cq);
		break;
	case NOTIFY_ARM_TIMER:
		ur_engine_timer_arm(cq->ctx->engine, &cq->mod_timer,
				    ur_now_ns() + cq->mod_period_us * 1000ull);
		break;
	default:
		break;
	}
}

/* The moderation period passed (engine thread).  The flags say whether an
 * event is still owed: a completion may have fired it meanwhile. */
static void moderation_expired(struct ur_timer *t)
{
	struct ur_cq *cq = container_of(t, struct ur_cq, mod_timer);
	enum notify_action a = NOTIFY_NONE;

	pthread_spin_lock(&cq->lock);
	cq->mod_timer_armed = false;
	if (cq->armed && cq->mod_pending)
		a = fire(cq);
	pthread_spin_unlock(&cq->lock);
	if (a == NOTIFY_FIRE && cq->ibcq.channel)
		ur_channel_post(to_uchan(cq->ibcq.channel), cq);
}

/* Under the channel's lock: the CQ cannot be destroyed meanwhile, and from
 * now on its destroy waits for this event's acknowledgement. */
static void event_taken(void *owner)
{
	struct ur_cq *cq = owner;

	pthread_mutex_lock(&cq->ibcq.mutex);
	cq->events_reported++;
	pthread_mutex_unlock(&cq->ibcq.mutex);
}

int ur_cq_get_event(struct ur_comp_channel *ch, struct ur_cq **cq)
{
	void *owner;
	int ret = ur_channel_get(ch, event_taken, &owner);

	if (!ret)
		*cq = owner;
	return ret;
}

int ur_cq_modify(struct ur_cq *cq, const struct ibv_modify_cq_attr *attr)
{
	int ret = 0;

	if (attr->attr_mask & ~(uint32_t)IBV_CQ_ATTR_MODERATE)
		return -EINVAL;
	if (!cq->ctx->engine)
		return cq->ctx->stack_err;
	/* The timer is registered with the reactor on first use. */
	pthread_mutex_lock(&cq->ibcq.mutex);
	if (!cq->mod_timer_ready) {
		ret = ur_engine_timer_init(cq->ctx->engine, &cq->mod_timer, moderation_expired);
		cq->mod_timer_ready = !ret;
	}
	pthread_mutex_unlock(&cq->ibcq.mutex);
	if (ret)
		return ret;
	pthread_spin_lock(&cq->lock);
	if (attr->attr_mask & IBV_CQ_ATTR_MODERATE) {
		cq->mod_count = attr->moderate.cq_count;
		cq->mod_period_us = attr->moderate.cq_period;
	}
	pthread_spin_unlock(&cq->lock);
	return 0;
}

/* ---- CQ objects --------------------------------------------------------- */

#define UR_CQ_SUPPORTED_WC_FLAGS                                           \
	(IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM | \
	 IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |      \
	 IBV_WC_EX_WITH_DLID_PATH_BITS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |  \
	 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK | IBV_WC_EX_WITH_TM_INFO)

static uint32_t ring_size_for(uint32_t depth)
{
	uint32_t size = 1;

	while (size <= depth)
		size <<= 1;
	return size;
}

static uint32_t next_cqn;

int ur_cq_create(struct ur_context *ctx, const struct ibv_cq_init_attr_ex *attr,
		 struct ur_cq **out)
{
	struct ur_cq *cq;

	if (attr->cqe < 1 || attr->cqe > UR_MAX_CQE) {
		/* A probe's answer, not an error (see check_caps in qp.c). */
		ur_log(UR_LOG_DBG, ctx->dev->ibdev.name, "CQ of %u entries: the device allows 1..%d",
		       attr->cqe, UR_MAX_CQE);
		return -EINVAL;
	}
	if (attr->wc_flags & ~(uint64_t)UR_CQ_SUPPORTED_WC_FLAGS)
		return -EOPNOTSUPP;
	if (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS))
		return -EOPNOTSUPP;
	if (ur_device_obj_get(ctx->dev, UR_OBJ_CQ))
		return -ENOMEM;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		goto err_count;
	cq->depth = attr->cqe;
	cq->size = ring_size_for(cq->depth);
	cq->ring = calloc(cq->size, sizeof(*cq->ring));
	if (!cq->ring)
		goto err_free_cq;
	cq->ctx = ctx;
	cq->wc_flags_ex = attr->wc_flags;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	cq->ibcq.context = &ctx->vctx.context;
	cq->ibcq.channel = attr->channel;
	cq->ibcq.cq_context = attr->cq_context;
	cq->ibcq.cqe = (int)cq->depth;
	pthread_mutex_init(&cq->ibcq.mutex, NULL);
	pthread_cond_init(&cq->ibcq.cond, NULL);
	ur_cq_init_ex_ops(cq);
	if (attr->channel)
		__atomic_add_fetch(&attr->channel->refcnt, 1, __ATOMIC_RELAXED);
	/* Its number, as the kernel's cqn: only for reports (`uroce res`). */
	cq->ibcq.handle = __atomic_add_fetch(&next_cqn, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&ctx->cqs_lock);
	ur_list_add_tail(&ctx->cqs, &cq->ctx_link);
	pthread_mutex_unlock(&ctx->cqs_lock);
	*out = cq;
	return 0;

err_free_cq:
	free(cq);
err_count:
	ur_device_obj_put(ctx->dev, UR_OBJ_CQ);
	return -ENOMEM;
}

int ur_cq_destroy(struct ur_cq *cq)
{
	if (__atomic_load_n(&cq->users, __ATOMIC_ACQUIRE))
		return -EBUSY;
	pthread_mutex_lock(&cq->ctx->cqs_lock);
	ur_list_del(&cq->ctx_link);
	pthread_mutex_unlock(&cq->ctx->cqs_lock);
	if (cq->mod_timer_ready) {
		ur_engine_timer_fini(cq->ctx->engine, &cq->mod_timer);
		ur_engine_quiesce(cq->ctx->engine);   /* a firing timer is done */
	}
	/* As the kernel does: events still queued unread go with the CQ, and
	 * destroy waits until every event the application did read has been
	 * acknowledged with ibv_ack_cq_events. */
	if (cq->ibcq.channel)
		ur_channel_forget(to_uchan(cq->ibcq.channel), cq);
	pthread_mutex_lock(&cq->ibcq.mutex);
	while (cq->ibcq.comp_events_completed != cq->events_reported)
		pthread_cond_wait(&cq->ibcq.cond, &cq->ibcq.mutex);
	pthread_mutex_unlock(&cq->ibcq.mutex);
	if (cq->ibcq.channel)
		__atomic_sub_fetch(&cq->ibcq.channel->refcnt, 1, __ATOMIC_RELAXED);
	ur_async_forget(&cq->ctx->async, cq);
	pthread_spin_destroy(&cq->lock);
	ur_device_obj_put(cq->ctx->dev, UR_OBJ_CQ);
	free(cq->ring);
	free(cq);
	return 0;
}

int ur_cq_resize(struct ur_cq *cq, int cqe)
{
	uint32_t nsize, used;
	struct ur_cqe *nring, *old;

	if (cqe < 1 || cqe > UR_MAX_CQE)
		return -EINVAL;
	nsize = ring_size_for((uint32_t)cqe);
	nring = calloc(nsize, sizeof(*nring));
	if (!nring)
		return -ENOMEM;
	pthread_spin_lock(&cq->lock);
	used = cq->tail - cq->head;
	if (used > (uint32_t)cqe) {
		pthread_spin_unlock(&cq->lock);
		free(nring);
		return -EINVAL;   /* would drop completions still queued */
	}
	/* The indices run on unchanged (a poll may look at them unlocked):
	 * each entry moves to its index's place in the new ring. */
	for (uint32_t i = cq->head; i != cq->tail; i++)
		nring[i & (nsize - 1)] = cq->ring[i & (cq->size - 1)];
	old = cq->ring;
	cq->ring = nring;
	cq->size = nsize;
	cq->depth = (uint32_t)cqe;
	cq->ibcq.cqe = cqe;
	pthread_spin_unlock(&cq->lock);
	free(old);
	return 0;
}

int ur_cq_poll(struct ur_cq *cq, int n, struct ibv_wc *wc)
{
	uint32_t head;
	int i = 0;

	/* Most polls of a spinning program find nothing: they take no lock. */
	if (ur_cq_looks_empty(cq))
		return 0;
	pthread_spin_lock(&cq->lock);
	head = cq->head;
	while (i < n && head != cq->tail)
		wc[i++] = cq->ring[head++ & (cq->size - 1)].wc;
	__atomic_store_n(&cq->head, head, __ATOMIC_RELAXED);
	pthread_spin_unlock(&cq->lock);
	return i;
}

void ur_cq_purge_qp(struct ur_cq *cq, uint32_t qp_num)
{
	uint32_t keep;

	pthread_spin_lock(&cq->lock);
	keep = cq->head;
	for (uint32_t i = cq->head; i != cq->tail; i++) {
		struct ur_cqe *e = &cq->ring[i & (cq->size - 1)];

		if (e->wc.qp_num != qp_num)
			cq->ring[keep++ & (cq->size - 1)] = *e;
	}
	__atomic_store_n(&cq->tail, keep, __ATOMIC_RELEASE);
	pthread_spin_unlock(&cq->lock);
}

int ur_cq_req_notify(struct ur_cq *cq, int solicited_only)
{
	pthread_spin_lock(&cq->lock);
	__atomic_store_n(&cq->armed, true, __ATOMIC_RELAXED);
	cq->solicited_only = solicited_only != 0;
	pthread_spin_unlock(&cq->lock);
	return 0;
}

bool ur_cq_armed(struct ur_cq *cq)
{
	return __atomic_load_n(&cq->armed, __ATOMIC_RELAXED);
}

static void overrun(struct ur_cq *cq)
{
	struct ibv_async_event ev = { .event_type = IBV_EVENT_CQ_ERR };

	ev.element.cq = (struct ibv_cq *)&cq->ibcq;
	ur_err(cq->ctx->dev->ibdev.name, "CQ overrun: more than %u completions unpolled",
	       cq->depth);
	ur_async_post(&cq->ctx->async, &ev);
}

int ur_cq_push(struct ur_cq *cq, const struct ibv_wc *wc, bool solicited)
{
	return ur_cq_push_tm(cq, wc, solicited, 0, 0);
}

int ur_cq_push_tm(struct ur_cq *cq, const struct ibv_wc *wc, bool solicited, uint64_t tag,
		  uint32_t priv)
{
	bool stamp = cq->wc_flags_ex & (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
					IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK);
	uint64_t ts = stamp ? ur_now_ns() : 0;
	enum notify_action a;
	struct ur_cqe *e;

	pthread_spin_lock(&cq->lock);
	/* Once overrun, the CQ is in error: nothing more is written to it,
	 * even when polling has made room. */
	if (cq->overrun || cq->tail - cq->head >= cq->depth) {
		bool first = !cq->overrun;

		cq->overrun = true;
		pthread_spin_unlock(&cq->lock);
		if (first)
			overrun(cq);
		return -ENOSPC;
	}
	e = &cq->ring[cq->tail & (cq->size - 1)];
	e->wc = *wc;
	e->ts_ns = ts;
	e->tm_tag = tag;
	e->tm_priv = priv;
	/* Published after the entry: an unlocked look that sees the new
	 * tail takes the lock and reads the entry. */
	__atomic_store_n(&cq->tail, cq->tail + 1, __ATOMIC_RELEASE);
	a = decide(cq, solicited, wc->status != IBV_WC_SUCCESS);
	pthread_spin_unlock(&cq->lock);
	act(cq, a);
	/* A failed work request is the application's to report: the status
	 * is in its completion; the library counts it and says nothing on
	 * stderr (UROCE_LOG=debug shows the site's reason). */
	if (wc->status != IBV_WC_SUCCESS && wc->status != IBV_WC_WR_FLUSH_ERR)
		__atomic_add_fetch(&cq->ctx->dev->cnt[UR_CNT_COMPLETION_ERRORS], 1,
				   __ATOMIC_RELAXED);
	return 0;
}
