/* The private exports libmlx5.so.1 uses (dc_abi.h). */
#include "verbs/dc_abi.h"

#include <errno.h>

#include "util/compiler.h"

UR_EXPORT int uroce_dc_abi_version(void)
{
	return UROCE_DC_ABI_VERSION;
}

UR_EXPORT struct ibv_qp *uroce_dc_create_qp(struct ibv_context *ctx,
					    struct ibv_qp_init_attr_ex *attr,
					    enum uroce_dc_role role, uint64_t dct_key)
{
	errno = EOPNOTSUPP;
	return NULL;
}

UR_EXPORT void uroce_dc_wr_set_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah, uint32_t dctn,
				    uint64_t dc_key)
{
}

UR_EXPORT enum uroce_dc_role uroce_dc_role(struct ibv_qp *qp)
{
	return UROCE_DC_NONE;
}

UR_EXPORT int uroce_dc_caps(struct ibv_context *ctx, struct uroce_dc_caps *caps)
{
	caps->max_initiators = 0;
	caps->max_rd_atomic = 0;
	return 0;
}

UR_EXPORT void *uroce_qp_driver_ext(struct ibv_qp *qp)
{
	return NULL;
}

UR_EXPORT struct ibv_qp *uroce_qp_from_driver_ext(void *ext)
{
	return NULL;
}
