/* The GID table at the ABI boundary, with rdma-core 44's conventions:
 * ibv_query_gid gives zeros for an empty entry, _ibv_query_gid_ex ENODATA,
 * _ibv_query_gid_table the valid entries only. */
#include <string.h>

#include "core/context.h"
#include "verbs/stub.h"
#include "verbs/verbs_priv.h"

/* From rdma-core's infiniband/driver.h, which Debian does not install:
 * ibv_devinfo imports ibv_query_gid_type (IBVERBS_PRIVATE_34). */
enum ibv_gid_type_sysfs {
	IBV_GID_TYPE_SYSFS_IB_ROCE_V1,
	IBV_GID_TYPE_SYSFS_ROCE_V2,
};

int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
		       unsigned int index, enum ibv_gid_type_sysfs *type);

static void table(struct ibv_context *context, struct ur_netdev *nd)
{
	ur_device_snapshot(to_uctx(context)->dev, nd);
}

UR_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port, int index,
			    union ibv_gid *gid)
{
	struct ur_netdev nd;

	if (port != 1 || index < 0 || index >= UR_MAX_GID)
		return ur_ret_minus1(-EINVAL);
	table(context, &nd);
	if ((unsigned)index < nd.ngid && nd.gid[index].valid)
		*gid = nd.gid[index].gid;
	else
		memset(gid, 0, sizeof(*gid));
	return 0;
}

static void fill_entry(struct ibv_context *context, const struct ur_netdev *nd,
		       uint32_t index, struct ibv_gid_entry *e)
{
	memset(e, 0, sizeof(*e));
	e->gid = nd->gid[index].gid;
	e->gid_index = index;
	e->port_num = 1;
	e->gid_type = IBV_GID_TYPE_ROCE_V2;
	e->ndev_ifindex = nd->ifindex;
}

UR_EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port,
				uint32_t index, struct ibv_gid_entry *entry, uint32_t flags,
				size_t entry_size)
{
	struct ibv_gid_entry e;
	struct ur_netdev nd;

	if (flags)
		return EOPNOTSUPP;
	if (port != 1 || index >= UR_MAX_GID)
		return EINVAL;
	table(context, &nd);
	if (index >= nd.ngid || !nd.gid[index].valid)
		return ENODATA;
	fill_entry(context, &nd, index, &e);
	memcpy(entry, &e, ur_min(entry_size, sizeof(e)));
	return 0;
}

UR_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context,
				       struct ibv_gid_entry *entries, size_t max_entries,
				       uint32_t flags, size_t entry_size)
{
	struct ur_netdev nd;
	size_t n = 0;

	if (flags)
		return -EOPNOTSUPP;
	if (entry_size < sizeof(struct ibv_gid_entry))
		return -EINVAL;
	table(context, &nd);
	for (uint32_t i = 0; i < nd.ngid; i++) {
		if (!nd.gid[i].valid)
			continue;
		if (n == max_entries)
			return -EINVAL;
		fill_entry(context, &nd, i,
			   (struct ibv_gid_entry *)((uint8_t *)entries + n * entry_size));
		n++;
	}
	return (ssize_t)n;
}

UR_EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port,
				 unsigned int index, enum ibv_gid_type_sysfs *type)
{
	struct ur_netdev nd;

	if (port != 1 || index >= UR_MAX_GID)
		return ur_ret_minus1(-EINVAL);
	table(context, &nd);
	/* Every uroce GID is RoCE v2; empty ones report the default type. */
	*type = index < nd.ngid && nd.gid[index].valid ? IBV_GID_TYPE_SYSFS_ROCE_V2 :
							 IBV_GID_TYPE_SYSFS_IB_ROCE_V1;
	return 0;
}

/* uroce rides on UDP sockets: the kernel resolves layer 2 itself. */
UR_STUB(UR_STUB_QUIET, int, ibv_resolve_eth_l2_from_gid,
	(struct ibv_context *context, struct ibv_ah_attr *attr,
	 uint8_t eth_mac[ETHERNET_LL_SIZE], uint16_t *vid), EOPNOTSUPP)
