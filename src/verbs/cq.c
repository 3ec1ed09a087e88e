/* Completion channels and CQs at the ABI boundary.  A poll that finds a
 * CQ empty runs the process's receive path once (rel/progress.c) before
 * it answers: a busy-polling application then needs no thread switch per
 * packet. */
#include "core/context.h"
#include "core/cq.h"
#include "rel/progress.h"
#include "util/log.h"
#include "verbs/verbs_priv.h"

UR_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct ur_comp_channel *ch = NULL;
	int ret = ur_channel_create(context, &ch);

	return ur_ret_obj(ret, ret ? NULL : &ch->ibch);
}

static void progress(struct ur_cq *cq)
{
	if (cq->ctx->stack)
		ur_progress_poll(cq->ctx->stack, ur_cq_armed(cq));
}

/* The extended interface's calls that answer with an errno value. */
static int start_poll(struct ibv_cq_ex *ex, struct ibv_poll_cq_attr *attr)
{
	struct ur_cq *cq = to_ucq(ibv_cq_ex_to_cq(ex));
	int ret;

	if (attr->comp_mask)
		return EINVAL;
	ret = ur_cq_start_poll(cq);
	if (ret == -ENOENT) {
		progress(cq);
		ret = ur_cq_start_poll(cq);
	}
	return -ret;
}

static int next_poll(struct ibv_cq_ex *ex)
{
	return -ur_cq_next_poll(to_ucq(ibv_cq_ex_to_cq(ex)));
}

UR_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	return ur_ret_errno(ur_channel_destroy(to_uchan(channel)));
}

struct ibv_cq_ex *ur_verbs_create_cq_ex(struct ibv_context *context,
					struct ibv_cq_init_attr_ex *attr)
{
	struct ibv_cq_init_attr_ex a = *attr;
	struct ur_cq *cq = NULL;
	int ret;

	if (attr->comp_vector >= (uint32_t)context->num_comp_vectors)
		return ur_ret_obj(-EINVAL, NULL);
	/* A CQ of a parent domain (its allocators, its thread domain): the
	 * domain must be one; uroce's CQ is the same either way. */
	if (a.comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
		if (!a.parent_domain || !ur_verbs_is_parent_domain(a.parent_domain) ||
		    a.parent_domain->context != context)
			return ur_ret_obj(-EINVAL, NULL);
		a.comp_mask &= ~(uint32_t)IBV_CQ_INIT_ATTR_MASK_PD;
	}
	ret = ur_cq_create(to_uctx(context), &a, &cq);
	if (ret)
		return ur_ret_obj(ret, NULL);
	cq->ibcq.start_poll = start_poll;
	cq->ibcq.next_poll = next_poll;
	return &cq->ibcq;
}

UR_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
				       struct ibv_comp_channel *channel, int comp_vector)
{
	struct ibv_cq_init_attr_ex attr = {
		.cqe = cqe < 0 ? 0 : (uint32_t)cqe,
		.cq_context = cq_context,
		.channel = channel,
		.comp_vector = comp_vector < 0 ? ~0u : (uint32_t)comp_vector,
	};
	struct ibv_cq_ex *cq = ur_verbs_create_cq_ex(context, &attr);

	return cq ? ibv_cq_ex_to_cq(cq) : NULL;
}

UR_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	return ur_ret_errno(ur_cq_resize(to_ucq(cq), cqe));
}

UR_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
	return ur_ret_errno(ur_cq_destroy(to_ucq(cq)));
}

UR_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
			       void **cq_context)
{
	struct ur_stack *stack = to_uctx(channel->context)->stack;
	struct ur_cq *ucq;
	int ret;

	/* The thread blocks: the engine thread must not leave the receive
	 * path to it (a CQ armed earlier, and another CQ spun on since). */
	if (stack) {
		ur_progress_app_waits(stack);
		ur_channel_wait(to_uchan(channel), to_uctx(channel->context)->engine);
	}
	ret = ur_cq_get_event(to_uchan(channel), &ucq);

	if (ret)
		return ur_ret_minus1(ret);
	*cq = (struct ibv_cq *)&ucq->ibcq;
	*cq_context = ucq->ibcq.cq_context;
	return 0;
}

UR_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

int ur_verbs_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	int got = ur_cq_poll(to_ucq(cq), n, wc);

	if (got == 0 && n > 0) {
		progress(to_ucq(cq));
		got = ur_cq_poll(to_ucq(cq), n, wc);
	}
	return got;
}

int ur_verbs_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	if (to_ucq(cq)->ctx->stack)
		ur_progress_app_waits(to_ucq(cq)->ctx->stack);
	return ur_cq_req_notify(to_ucq(cq), solicited_only);
}

int ur_verbs_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr)
{
	return ur_ret_errno(ur_cq_modify(to_ucq(cq), attr));
}
