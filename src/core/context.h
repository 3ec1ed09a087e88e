/* An opened device: what ibv_open_device returns. */
#ifndef UROCE_CORE_CONTEXT_H
#define UROCE_CORE_CONTEXT_H

#include <pthread.h>
#include <infiniband/verbs.h>

#include "util/compiler.h"

#include "core/async.h"
#include "core/device.h"
#include "core/mr.h"

struct ur_context {
	struct verbs_context vctx;     /* applications get &vctx.context */
	struct ur_device *dev;
	struct ur_mr_table mrs;        /* lkey/rkey -> MR, for this context */
	struct ur_async_queue async;   /* behind context.async_fd */
	struct ur_list dev_link;       /* on dev->contexts */
};

static inline struct ur_context *to_uctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct ur_context, vctx.context);
}

struct ur_context *ur_context_open(struct ur_device *dev);
int ur_context_close(struct ur_context *ctx);

#endif
