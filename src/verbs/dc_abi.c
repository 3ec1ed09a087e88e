/* The private exports libmlx5.so.1 uses (dc_abi.h): DC QPs, made and
 * addressed by src/rel/dc.c, and the driver's bytes in each QP. */
#include "verbs/dc_abi.h"

#include <errno.h>
#include <stddef.h>

#include "core/context.h"
#include "core/qp.h"
#include "core/qp_kind.h"
#include "rel/dc.h"
#include "util/compiler.h"
#include "verbs/verbs_priv.h"

_Static_assert(sizeof(((struct ur_qp *)0)->driver_ext) == UROCE_QP_DRIVER_EXT_BYTES,
	       "the driver's bytes are as many as dc_abi.h says");

UR_EXPORT int uroce_dc_abi_version(void)
{
	return UROCE_DC_ABI_VERSION;
}

UR_EXPORT struct ibv_qp *uroce_dc_create_qp(struct ibv_context *ibctx,
					    struct ibv_qp_init_attr_ex *attr,
					    enum uroce_dc_role role, uint64_t dct_key)
{
	struct ur_context *ctx = to_uctx(ibctx);
	struct ur_qp *qp;
	int ret;

	if (attr->qp_type != IBV_QPT_DRIVER ||
	    (role != UROCE_DC_INITIATOR && role != UROCE_DC_TARGET))
		return ur_ret_obj(-EINVAL, NULL);
	if (!ctx->stack)
		return ur_ret_obj(ctx->stack_err ? ctx->stack_err : -ENODEV, NULL);
	ret = ur_dc_create(ctx, attr,
			   role == UROCE_DC_TARGET ? UR_DC_TGT : UR_DC_INI, dct_key, &qp);
	if (ret)
		return ur_ret_obj(ret, NULL);
	return ur_verbs_qp_out(qp);
}

UR_EXPORT void uroce_dc_wr_set_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah, uint32_t dctn,
				    uint64_t dc_key)
{
	ur_qp_wr_set_dc_addr(to_uqp(&qpx->qp_base), ah, dctn, dc_key);
}

UR_EXPORT enum uroce_dc_role uroce_dc_role(struct ibv_qp *qp)
{
	switch (to_uqp(qp)->kind->dc) {
	case UR_DC_INI: return UROCE_DC_INITIATOR;
	case UR_DC_TGT: return UROCE_DC_TARGET;
	default: return UROCE_DC_NONE;
	}
}

UR_EXPORT int uroce_dc_caps(struct ibv_context *ctx, struct uroce_dc_caps *caps)
{
	caps->max_initiators = UR_DC_MAX_HALVES;
	caps->max_rd_atomic = UR_DC_RD_ATOMIC;
	return 0;
}

UR_EXPORT void *uroce_qp_driver_ext(struct ibv_qp *qp)
{
	return to_uqp(qp)->driver_ext;
}

UR_EXPORT struct ibv_qp *uroce_qp_from_driver_ext(void *ext)
{
	struct ur_qp *qp = (struct ur_qp *)((char *)ext - offsetof(struct ur_qp, driver_ext));

	return &qp->qpx.qp_base;
}
