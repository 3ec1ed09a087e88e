#include "core/ah.h"

#include <errno.h>
#include <stdlib.h>

#include "core/context.h"
#include "core/pd.h"
#include "core/route.h"
#include "util/log.h"

int ur_ah_create(struct ur_pd *pd, struct ibv_ah_attr *attr, struct ur_ah **out)
{
	struct ur_ah *ah;
	char why[256];
	int ret;

	ah = ur_device_obj_alloc(pd->ctx->dev, UR_OBJ_AH, sizeof(*ah));
	if (!ah)
		return -ENOMEM;
	ret = ur_route_resolve(pd->ctx, attr, 0, &ah->path, why, sizeof(why));
	if (ret) {
		ur_err(pd->ctx->dev->ibdev.name, "cannot create address handle: %s", why);
		free(ah);
		ur_device_obj_put(pd->ctx->dev, UR_OBJ_AH);
		return ret;
	}
	ah->pd = pd;
	ah->attr = *attr;
	ah->ibah.context = &pd->ctx->vctx.context;
	ah->ibah.pd = &pd->ibpd;
	atomic_fetch_add(&pd->users, 1);
	*out = ah;
	return 0;
}

int ur_ah_destroy(struct ur_ah *ah)
{
	atomic_fetch_sub(&ah->pd->users, 1);
	ur_device_obj_put(ah->pd->ctx->dev, UR_OBJ_AH);
	free(ah);
	return 0;
}
