/* Per-device counters: counted per process, published to the host
 * registry, read back as hw_counters. */
#include <string.h>

#include "core/device.h"
#include "host/registry.h"

_Static_assert(UR_CNT_NR <= UR_REG_COUNTERS, "the registry has room for every counter");

struct by_gid {
	const union ibv_gid *gid;
	struct ur_device *found;
};

static void match_gid(struct ur_device *dev, void *arg)
{
	struct by_gid *b = arg;

	if (b->found)
		return;
	pthread_mutex_lock(&dev->lock);
	for (unsigned i = 0; i < dev->nd.ngid; i++)
		if (!memcmp(&dev->nd.gid[i].gid, b->gid, sizeof(*b->gid)))
			b->found = dev;
	pthread_mutex_unlock(&dev->lock);
}

void ur_device_count_by_gid(const union ibv_gid *dgid, enum ur_counter c)
{
	struct by_gid b = { .gid = dgid };

	/* Drops are rare: a scan of the GID tables is cheap enough. */
	ur_device_foreach(match_gid, &b);
	if (b.found)
		__atomic_add_fetch(&b.found->cnt[c], 1, __ATOMIC_RELAXED);
}

static void publish_one(struct ur_device *dev, void *arg)
{
	struct ur_registry *r = arg;
	uint64_t snap[UR_CNT_NR];
	unsigned ifindex;
	bool any = false;

	for (int i = 0; i < UR_CNT_NR; i++) {
		snap[i] = __atomic_load_n(&dev->cnt[i], __ATOMIC_RELAXED);
		any |= snap[i] != 0;
	}
	if (!any)
		return;
	pthread_mutex_lock(&dev->lock);
	ifindex = dev->nd.ifindex;
	pthread_mutex_unlock(&dev->lock);
	ur_registry_publish_counters(r, ifindex, snap, UR_CNT_NR);
}

void ur_device_publish_counters(struct ur_registry *r)
{
	ur_device_foreach(publish_one, r);
}

uint64_t ur_device_counter_total(struct ur_registry *r, struct ur_device *dev,
				 enum ur_counter c)
{
	uint64_t cnt[UR_CNT_NR];
	struct ur_netdev nd;

	ur_device_publish_counters(r);   /* this process's own, up to now */
	ur_device_snapshot(dev, &nd);
	if (ur_registry_read_counters(r, nd.ifindex, cnt, UR_CNT_NR))
		return 0;
	return cnt[c];
}
