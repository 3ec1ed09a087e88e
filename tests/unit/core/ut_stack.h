/* The protocol stack of unit tests: its reactor has no thread, so nothing
 * runs behind the test's back (timers fire when the test runs them, at a
 * time it chooses), and its transports are the test's own, or this
 * build's real ones when none are given (route resolution).  Contexts
 * opened through ut_context_open get it as a verbs open would.
 *
 * Call ut_stack_with() with the transports before anything opens a
 * context; the first call decides. */
#ifndef UROCE_TESTS_UT_STACK_H
#define UROCE_TESTS_UT_STACK_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/ah.h"
#include "core/context.h"
#include "core/cq.h"
#include "core/pd.h"
#include "core/qp.h"
#include "core/srq.h"
#include "core/xrcd.h"
#include "rel/qp_ops.h"
#include "rel/stack.h"
#include "rel/stack_open.h"

static struct ur_stack *ut_the_stack;

static inline struct ur_stack *ut_stack_with(const struct ur_xports *xports)
{
	int ret;

	if (ut_the_stack)
		return ut_the_stack;
	ret = ur_stack_create_threadless(xports, &ut_the_stack);
	if (ret) {
		fprintf(stderr, "cannot make the test's stack: %d\n", ret);
		exit(1);
	}
	return ut_the_stack;
}

static inline struct ur_stack *ut_stack(void)
{
	return ut_stack_with(NULL);
}

static inline struct ur_context *ut_context_open(struct ur_device *dev)
{
	struct ur_context *ctx;

	if (!dev || ur_context_open(dev, &ctx))
		return NULL;
	ur_stack_bind(ut_stack(), 0, ctx);
	return ctx;
}

/* Constructors the way tests use them: the object, or NULL with errno
 * set (as the verbs would). */
#define ut_obj(call, o) ({ int _r = (call); if (_r) errno = -_r; _r ? NULL : (o); })

static inline struct ur_pd *ut_pd(struct ur_context *ctx)
{
	struct ur_pd *o;

	return ut_obj(ur_pd_alloc(ctx, &o), o);
}

static inline struct ur_cq *ut_cq(struct ur_context *ctx, const struct ibv_cq_init_attr_ex *a)
{
	struct ur_cq *o;

	return ut_obj(ur_cq_create(ctx, a, &o), o);
}

static inline struct ur_comp_channel *ut_channel(struct ur_context *ctx)
{
	struct ur_comp_channel *o;

	return ut_obj(ur_channel_create(&ctx->vctx.context, &o), o);
}

static inline struct ur_srq *ut_srq(struct ur_context *ctx, struct ur_pd *pd,
				    struct ibv_srq_init_attr_ex *a)
{
	struct ur_srq *o;

	return ut_obj(ur_srq_create(ctx, pd, a, &o), o);
}

static inline struct ur_xrcd *ut_xrcd(struct ur_context *ctx, const struct ibv_xrcd_init_attr *a)
{
	struct ur_xrcd *o;

	return ut_obj(ur_xrcd_open(ctx, a, &o), o);
}

static inline struct ur_qp *ut_qp(struct ur_context *ctx, struct ibv_qp_init_attr_ex *a)
{
	struct ur_qp *o;

	return ut_obj(ur_qp_create(ctx, a, &o), o);
}

static inline struct ur_ah *ut_ah(struct ur_pd *pd, struct ibv_ah_attr *a)
{
	struct ur_ah *o;

	return ut_obj(ur_ah_create(pd, a, &o), o);
}

#endif
