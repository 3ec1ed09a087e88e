#include "core/pd.h"

#include <errno.h>
#include <stdlib.h>

#include "core/context.h"
#include "core/device.h"

int ur_pd_alloc(struct ur_context *ctx, struct ur_pd **out)
{
	static atomic_uint next_handle = 1;
	struct ur_pd *pd;

	pd = ur_device_obj_alloc(ctx->dev, UR_OBJ_PD, sizeof(*pd));
	if (!pd)
		return -ENOMEM;
	pd->ctx = ctx;
	pd->ibpd.context = &ctx->vctx.context;
	pd->ibpd.handle = atomic_fetch_add(&next_handle, 1);
	atomic_init(&pd->users, 0);
	*out = pd;
	return 0;
}

int ur_pd_dealloc(struct ur_pd *pd)
{
	if (atomic_load(&pd->users))
		return -EBUSY;
	ur_device_obj_put(pd->ctx->dev, UR_OBJ_PD);
	free(pd);
	return 0;
}
