/* The device-level direct verbs: what a uroce device is to a program that
 * asks mlx5dv about it.
 *
 * mlx5dv_is_supported is false: mlx5's direct data path (WQE buffers,
 * doorbell records, UARs handed out by mlx5dv_init_obj) does not exist on
 * a uroce device, whose queues live inside libibverbs.so.1.  Programs that
 * ask first (UCX, pyverbs' mlx5 tests) then stay on plain verbs, which
 * uroce implements in full.  What the library does offer, DC QPs, needs
 * no direct data path: perftest creates them with mlx5dv_create_qp
 * (qp.c) without asking. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include <infiniband/mlx5dv.h>

#include "mlx5dv/dv.h"
#include "util/compiler.h"
#include "verbs/dc_abi.h"

UR_EXPORT bool mlx5dv_is_supported(struct ibv_device *device)
{
	return false;
}

/* uroce's completion timestamps and raw clock (ibv_query_rt_values_ex)
 * are CLOCK_MONOTONIC nanoseconds: the 1 GHz device clock that
 * ibv_query_device_ex reports.  mlx5dv_ts_to_ns (inline in mlx5dv.h) turns
 * them into wall-clock nanoseconds with this: the two clocks read now, one
 * cycle a nanosecond (mult 1, shift 0), a 64-bit counter. */
UR_EXPORT int mlx5dv_get_clock_info(struct ibv_context *context,
				    struct mlx5dv_clock_info *clock_info)
{
	struct timespec mono, real;

	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &real);
	memset(clock_info, 0, sizeof(*clock_info));
	clock_info->last_cycles = (uint64_t)mono.tv_sec * 1000000000ull + (uint64_t)mono.tv_nsec;
	clock_info->nsec = (uint64_t)real.tv_sec * 1000000000ull + (uint64_t)real.tv_nsec;
	clock_info->mult = 1;
	clock_info->shift = 0;
	clock_info->mask = ~0ull;
	return 0;
}

/* Plain contexts only: DEVX (raw firmware commands) has no firmware here. */
UR_EXPORT struct ibv_context *mlx5dv_open_device(struct ibv_device *device,
						 struct mlx5dv_context_attr *attr)
{
	if (attr && (attr->flags || attr->comp_mask)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	return ibv_open_device(device);
}

/* The device's DC limits, all zero while libibverbs.so.1 has no DC. */
static bool dc_offered(struct ibv_context *ctx)
{
	struct uroce_dc_caps caps;

	return uroce_dc_caps(ctx, &caps) == 0 && caps.max_initiators > 0;
}

static uint32_t dc_odp_caps(struct ibv_context *ctx)
{
	struct ibv_device_attr_ex attr;

	if (!dc_offered(ctx) || ibv_query_device_ex(ctx, NULL, &attr))
		return 0;
	/* DC moves data through the same MR table as RC. */
	return attr.odp_caps.per_transport_caps.rc_odp_caps;
}

/* Only the fields of the capabilities asked for are written: programs
 * built against an older mlx5dv.h pass a shorter struct mlx5dv_context,
 * and comp_mask is what tells how long theirs is.  What uroce has no
 * notion of (CQE compression, striding RQ, clocks, signature and crypto
 * offloads, ...) is left out of comp_mask, so the program knows it is
 * absent. */
UR_EXPORT int mlx5dv_query_device(struct ibv_context *ctx, struct mlx5dv_context *out)
{
	uint64_t asked = out->comp_mask;

	out->version = 0;
	out->flags = 0;
	out->comp_mask = 0;
	if (asked & MLX5DV_CONTEXT_MASK_DC_ODP_CAPS) {
		out->dc_odp_caps = dc_odp_caps(ctx);
		out->comp_mask |= MLX5DV_CONTEXT_MASK_DC_ODP_CAPS;
	}
	if (asked & MLX5DV_CONTEXT_MASK_DCI_STREAMS) {
		out->dci_streams_caps.max_log_num_concurent =
			dc_offered(ctx) ? DV_DCI_MAX_LOG_STREAMS : 0;
		out->dci_streams_caps.max_log_num_errored = 0;
		out->comp_mask |= MLX5DV_CONTEXT_MASK_DCI_STREAMS;
	}
	return 0;
}

/* No mlx5 objects to expose (see the top of this file).  Both of
 * rdma-core's versions of the function: MLX5_1.2, the default, and
 * MLX5_1.0 for binaries that still bind to it (libmlx5.map names it in
 * both nodes). */
int dv_init_obj(struct mlx5dv_obj *obj, uint64_t obj_type);
/* .symver directives rather than the symver attribute, which clang lacks. */
__asm__(".symver dv_init_obj, mlx5dv_init_obj@@MLX5_1.2");
__asm__(".symver dv_init_obj, mlx5dv_init_obj@MLX5_1.0");
UR_EXPORT int dv_init_obj(struct mlx5dv_obj *obj, uint64_t obj_type)
{
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}
