#include "core/context.h"

#include <errno.h>
#include <stdlib.h>

#include "core/process.h"
#include "util/fault_guard.h"
#include "util/log.h"

int ur_context_open(struct ur_device *dev, struct ur_context **out)
{
	struct ur_context *ctx = calloc(1, sizeof(*ctx));
	int ret;

	if (!ctx)
		return -ENOMEM;
	ctx->stack_err = -EIO;
	ctx->dev = dev;
	ctx->reg = &ur_process()->registry;
	pthread_mutex_init(&ctx->cqs_lock, NULL);
	ur_list_init(&ctx->cqs);
	/* Regions are reached through the process's own mappings, which it
	 * may unmap under a live region (util/fault_guard.h). */
	ur_fault_guard_install();
	ret = ur_mr_table_init(&ctx->mrs);
	if (ret)
		goto err_free;
	ret = ur_async_init(&ctx->async);
	if (ret)
		goto err_mrs;
	ctx->vctx.sz = sizeof(ctx->vctx);
	ctx->vctx.context.device = &dev->ibdev;
	ctx->vctx.context.async_fd = ctx->async.rfd;
	ctx->vctx.context.num_comp_vectors = 1;
	ctx->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	pthread_mutex_init(&ctx->vctx.context.mutex, NULL);
	pthread_mutex_lock(&dev->ctx_lock);
	if (!dev->watched) {
		struct ibv_port_attr port;
		struct ur_netdev nd;

		/* Events report changes from the state seen at first open. */
		ur_port_attr(dev, &port);
		ur_device_snapshot(dev, &nd);
		dev->last_state = port.state;
		dev->last_ngid = nd.ngid;
		for (unsigned i = 0; i < nd.ngid; i++)
			dev->last_gid[i] = nd.gid[i].gid;
		dev->watched = true;
	}
	ur_list_add_tail(&dev->contexts, &ctx->dev_link);
	pthread_mutex_unlock(&dev->ctx_lock);
	*out = ctx;
	return 0;

err_mrs:
	ur_mr_table_fini(&ctx->mrs);
err_free:
	free(ctx);
	return ret;
}

int ur_context_close(struct ur_context *ctx)
{
	pthread_mutex_lock(&ctx->dev->ctx_lock);
	ur_list_del(&ctx->dev_link);
	pthread_mutex_unlock(&ctx->dev->ctx_lock);
	ur_async_fini(&ctx->async);
	ur_mr_table_fini(&ctx->mrs);
	pthread_mutex_destroy(&ctx->vctx.context.mutex);
	pthread_mutex_destroy(&ctx->cqs_lock);
	free(ctx);
	return 0;
}
