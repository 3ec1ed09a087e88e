/* Devices, contexts and their queries at the ABI boundary. */
#include <stdlib.h>
#include <string.h>

#include "core/srq_tm.h"
#include "core/context.h"
#include "core/device.h"
#include "core/limits.h"
#include "core/mr.h"
#include "rel/stack_open.h"
#include "util/log.h"
#include "verbs/stub.h"
#include "verbs/verbs_priv.h"

#undef ibv_query_port

UR_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ur_device **list = NULL;
	int n = 0, ret = ur_device_list(&list, &n);

	if (ret)
		return ur_ret_obj(ret, NULL);
	if (num_devices)
		*num_devices = n;
	/* ur_device starts with its ibv_device, so the arrays coincide. */
	return (struct ibv_device **)list;
}

UR_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

UR_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

UR_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	return ur_device_guid(to_udev(device));
}

UR_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	return (int)to_udev(device)->index;
}

UR_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct ur_stack *stack = NULL;
	struct ur_context *ctx;
	int ret, err;

	if (!device || !ur_device_is_ours(device))
		return ur_ret_obj(-ENODEV, NULL);
	ret = ur_context_open(to_udev(device), &ctx);
	if (ret)
		return ur_ret_obj(ret, NULL);
	/* The process's stack: the one place it is looked up.  It also
	 * watches ports for async events; a device can still be queried if
	 * it cannot start (the error is logged, and what needs the stack
	 * fails with it). */
	err = ur_stack_get(&stack);
	ur_stack_bind(err ? NULL : stack, err, ctx);
	ur_verbs_set_ops(&ctx->vctx);
	return &ctx->vctx.context;
}

UR_EXPORT int ibv_close_device(struct ibv_context *context)
{
	struct ur_context *ctx = to_uctx(context);

	/* Regions left registered are the program's leak, but none of them
	 * may stay queued for the mover once their context is gone. */
	ur_mr_share_forget_context(ctx);
	return ur_context_close(ctx);
}

/* Importing needs a kernel uverbs file: a software device has none. */
UR_STUB(UR_STUB_QUIET, struct ibv_context *, ibv_import_device, (int cmd_fd), NULL)

UR_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	ur_device_attr(to_uctx(context)->dev, attr);
	return 0;
}

int ur_verbs_query_device_ex(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex full;

	if (input && input->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	memset(&full, 0, sizeof(full));
	ur_device_attr(to_uctx(context)->dev, &full.orig_attr);
	/* The whole 64-bit set, as the kernel reports it: the low half is
	 * orig_attr.device_cap_flags (memory window types, XRC, ...). */
	full.device_cap_flags_ex = full.orig_attr.device_cap_flags;
	/* Completion timestamps are CLOCK_MONOTONIC nanoseconds: a 1 GHz clock. */
	full.completion_timestamp_mask = ~0ull;
	full.hca_core_clock = 1000000;   /* kHz */
	full.phys_port_cnt_ex = 1;
	full.cq_mod_caps.max_cq_count = UINT16_MAX;
	full.cq_mod_caps.max_cq_period = UINT16_MAX;   /* microseconds */
	/* On-demand paging, explicit and implicit regions (verbs/mr.c): every
	 * operation of every transport, since regions are never pinned. */
	full.odp_caps.general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
	full.odp_caps.per_transport_caps.rc_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC |
		IBV_ODP_SUPPORT_SRQ_RECV;
	full.odp_caps.per_transport_caps.uc_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_SRQ_RECV;
	full.odp_caps.per_transport_caps.ud_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		IBV_ODP_SUPPORT_SRQ_RECV;
	full.xrc_odp_caps = full.odp_caps.per_transport_caps.rc_odp_caps;
	full.max_dm_size = UR_MAX_DM_BYTES;   /* verbs/dm.c */
	/* Tag matching on RC (core/srq_tm.h). */
	full.tm_caps.max_rndv_hdr_size = UR_TM_MAX_RNDV_HDR;
	full.tm_caps.max_num_tags = UR_TM_MAX_TAGS;
	full.tm_caps.flags = IBV_TM_CAP_RC;
	full.tm_caps.max_ops = UR_TM_MAX_OPS;
	full.tm_caps.max_sge = UR_TM_MAX_SGE;
	memcpy(attr, &full, ur_min(attr_size, sizeof(full)));
	return 0;
}

int ur_verbs_query_rt_values(struct ibv_context *context, struct ibv_values_ex *values)
{
	struct timespec ts;

	if (values->comp_mask & ~(uint32_t)IBV_VALUES_MASK_RAW_CLOCK)
		return EINVAL;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	values->raw_clock = ts;
	values->comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
	return 0;
}

int ur_verbs_query_port(struct ibv_context *context, uint8_t port,
			struct ibv_port_attr *attr, size_t len)
{
	struct ibv_port_attr full;

	if (port != 1)
		return EINVAL;
	ur_port_attr(to_uctx(context)->dev, &full);
	/* The port's Q_Key violation counter (16 bits, saturating), as rxe
	 * reports it: the device's qkey_violations. */
	full.qkey_viol_cntr = (uint32_t)ur_min(
		ur_device_counter_total(to_uctx(context)->reg, to_uctx(context)->dev,
					UR_CNT_QKEY_VIOLATIONS), 0xffffull);
	memcpy(attr, &full, ur_min(len, sizeof(full)));
	return 0;
}

/* The compatibility entry point gets the 48-byte struct of older headers. */
#define UR_COMPAT_PORT_ATTR_SIZE 48
UR_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port,
			     struct _compat_ibv_port_attr *attr)
{
	return ur_verbs_query_port(context, port, (struct ibv_port_attr *)attr,
				   UR_COMPAT_PORT_ATTR_SIZE);
}

UR_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port, int index,
			     __be16 *pkey)
{
	if (port != 1 || index < 0 || index >= UR_MAX_PKEYS)
		return ur_ret_minus1(-EINVAL);
	*pkey = htobe16(0xffff);
	return 0;
}

UR_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port, __be16 pkey)
{
	if (port != 1 || be16toh(pkey) != 0xffff) {
		errno = port != 1 ? EINVAL : ENOENT;
		return -1;
	}
	return 0;
}
