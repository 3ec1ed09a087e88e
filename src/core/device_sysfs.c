#include "core/device_sysfs.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>

#include "core/device.h"
#include "core/process.h"
#include "engine/engine.h"
#include "host/registry.h"

/* The files programs read from an RDMA device's sysfs directory, answered
 * from uroce's own state: <ibdev_path>/{board_id,fw_ver,hca_type,hw_rev,
 * node_type,node_guid,sys_image_guid,node_desc} and the port's
 * gids/N, gid_attrs/types/N, gid_attrs/ndevs/N; and one of uroce's own,
 * uroce_rx_threads: the receive contexts a process gets here
 * (UROCE_RX_THREADS, or the default for this host's CPUs). */
static int device_file(struct ur_device *dev, const char *file, char *out, size_t len)
{
	struct ibv_device_attr a;
	struct ur_netdev nd;
	unsigned idx;
	uint64_t g;

	ur_device_attr(dev, &a);
	g = be64toh(a.node_guid);
	if (!strcmp(file, "board_id"))
		return snprintf(out, len, "UROCE-SOFTWARE\n");
	if (!strcmp(file, "fw_ver"))
		return snprintf(out, len, "%s\n", a.fw_ver);
	if (!strcmp(file, "hca_type"))
		return snprintf(out, len, "uroce\n");
	if (!strcmp(file, "hw_rev"))
		return snprintf(out, len, "0x0\n");
	if (!strcmp(file, "node_type"))
		return snprintf(out, len, "1: CA\n");
	if (!strcmp(file, "uroce_rx_threads"))
		return snprintf(out, len, "%u\n", ur_engine_default_rx());
	if (!strcmp(file, "node_desc"))
		return snprintf(out, len, "uroce software RoCE on %s\n", dev->netdev_name);
	if (!strcmp(file, "node_guid") || !strcmp(file, "sys_image_guid"))
		return snprintf(out, len, "%04x:%04x:%04x:%04x\n", (unsigned)(g >> 48) & 0xffff,
				(unsigned)(g >> 32) & 0xffff, (unsigned)(g >> 16) & 0xffff,
				(unsigned)g & 0xffff);
	ur_device_snapshot(dev, &nd);
	if (sscanf(file, "ports/1/gids/%u", &idx) == 1) {
		if (idx >= UR_MAX_GID)
			return -ENOENT;
		if (idx >= nd.ngid)
			return snprintf(out, len, "0000:0000:0000:0000:0000:0000:0000:0000\n");
		{
			const uint8_t *r = nd.gid[idx].gid.raw;

			return snprintf(out, len, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:"
					"%02x%02x:%02x%02x:%02x%02x:%02x%02x\n",
					r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8],
					r[9], r[10], r[11], r[12], r[13], r[14], r[15]);
		}
	}
	if (sscanf(file, "ports/1/gid_attrs/types/%u", &idx) == 1) {
		if (idx >= nd.ngid || !nd.gid[idx].valid)
			return -EINVAL;   /* the kernel answers EINVAL for an empty entry */
		return snprintf(out, len, "RoCE v2\n");
	}
	if (!strncmp(file, "ports/1/hw_counters/", 20)) {
		/* rdma-core's sysfs hook names a file, not a context: the
		 * process's registry is reached through its object. */
		struct ur_registry *r = &ur_process()->registry;
		uint64_t cnt[UR_CNT_NR];
		int c = ur_counter_by_name(file + 20);

		if (c < 0)
			return -ENOENT;
		ur_device_publish_counters(r);   /* this process's own, up to now */
		if (ur_registry_read_counters(r, nd.ifindex, cnt, UR_CNT_NR))
			return -EIO;
		return snprintf(out, len, "%llu\n", (unsigned long long)cnt[c]);
	}
	if (sscanf(file, "ports/1/gid_attrs/ndevs/%u", &idx) == 1) {
		if (idx >= nd.ngid || !nd.gid[idx].valid)
			return -EINVAL;
		return snprintf(out, len, "%s\n", dev->netdev_name);
	}
	return -ENOENT;
}

int ur_device_sysfs_read(const char *dir, const char *file, char *buf, size_t size)
{
	static const char prefix[] = "/sys/class/infiniband/";
	char tmp[512];
	struct ur_device *dev;
	const char *name;
	int n;

	if (strncmp(dir, prefix, sizeof(prefix) - 1))
		return -ENOENT;
	name = dir + sizeof(prefix) - 1;
	dev = ur_device_by_name(name);
	if (!dev)
		return -ENOENT;
	n = device_file(dev, file, tmp, sizeof(tmp));
	if (n < 0)
		return n;
	if ((size_t)n > size)
		n = (int)size;
	memcpy(buf, tmp, (size_t)n);
	return n;
}
