/* An opened device: what ibv_open_device returns. */
#ifndef UROCE_CORE_CONTEXT_H
#define UROCE_CORE_CONTEXT_H

#include <pthread.h>
#include <infiniband/verbs.h>

#include "util/compiler.h"

#include "core/async.h"
#include "core/device.h"
#include "core/mr.h"

struct ur_engine;
struct ur_registry;
struct ur_xports;
struct ur_stack;

struct ur_context {
	struct verbs_context vctx;     /* applications get &vctx.context */
	struct ur_device *dev;
	struct ur_mr_table mrs;        /* lkey/rkey -> MR, for this context */
	struct ur_async_queue async;   /* behind context.async_fd */
	struct ur_list dev_link;       /* on dev->contexts */
	pthread_mutex_t cqs_lock;      /* cqs */
	struct ur_list cqs;            /* its CQs, for the resource window (rel/res_dump.c) */

	/* What the process's protocol stack (src/rel) lends the context when
	 * it opens: its reactor (CQ moderation timers, quiescing), its
	 * transports (resolving paths), and itself, which only the protocol
	 * looks into.  All NULL if the stack could not start: then stack_err
	 * (-errno) is what creating a CQ timer, an XRC SRQ or a QP answers,
	 * while the device can still be queried. */
	struct ur_engine *engine;
	struct ur_xports *xports;
	struct ur_stack *stack;
	int stack_err;
	/* The process's view of the host registry (core/process.h), there
	 * whether the stack started or not: XRC SRQ numbers, counters. */
	struct ur_registry *reg;
};

static inline struct ur_context *to_uctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct ur_context, vctx.context);
}

int ur_context_open(struct ur_device *dev, struct ur_context **out);
int ur_context_close(struct ur_context *ctx);

#endif
