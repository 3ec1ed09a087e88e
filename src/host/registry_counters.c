/* Device counters: each process publishes its totals per interface in its
 * slot; a reader sums the live slots' and the retired totals (folded in from
 * the slots given back, registry_reclaim.c). */
#include "host/registry_priv.h"

#include <string.h>
#include <unistd.h>

int ur_registry_publish_counters(unsigned ifindex, const uint64_t *cnt, unsigned n)
{
	struct ur_reg_devcnt *c = NULL;
	int ret = 0;

	if (!ifindex)
		return -ENODEV;
	/* Under reg.lock, and only while the slot is ours: once detached its
	 * counters have joined the retired totals, and a late publish (the
	 * engine thread's, as the process exits) would count them twice for
	 * whoever takes the slot next. */
	pthread_mutex_lock(&reg.lock);
	if (!reg.shm || reg.slot < 0 ||
	    atomic_load(&reg.shm->slot[reg.slot].pid) != (uint32_t)getpid()) {
		ret = -ENODEV;
		goto out;
	}
	for (unsigned d = 0; d < UR_REG_SLOT_DEVS && !c; d++) {
		uint32_t cur = atomic_load(&reg.shm->slot_cnt[reg.slot][d].ifindex);

		if (cur == ifindex || !cur)
			c = &reg.shm->slot_cnt[reg.slot][d];
	}
	if (!c) {
		ret = -ENOSPC;
		goto out;
	}
	for (unsigned i = 0; i < n && i < UR_REG_COUNTERS; i++)
		atomic_store(&c->cnt[i], cnt[i]);
	atomic_store(&c->ifindex, ifindex);
out:
	pthread_mutex_unlock(&reg.lock);
	return ret;
}

int ur_registry_read_counters(unsigned ifindex, uint64_t *cnt, unsigned n)
{
	int ret;

	if (!reg.shm) {
		ret = ur_registry_attach();
		if (ret)
			return ret;
	}
	memset(cnt, 0, n * sizeof(*cnt));
	for (unsigned s = 0; s < UR_REG_SLOTS; s++) {
		if (!atomic_load(&reg.shm->slot[s].pid))
			continue;
		for (unsigned d = 0; d < UR_REG_SLOT_DEVS; d++) {
			struct ur_reg_devcnt *c = &reg.shm->slot_cnt[s][d];

			if (atomic_load(&c->ifindex) != ifindex)
				continue;
			for (unsigned i = 0; i < n && i < UR_REG_COUNTERS; i++)
				cnt[i] += atomic_load(&c->cnt[i]);
		}
	}
	for (unsigned k = 0; k < UR_REG_RETIRED_DEVS; k++) {
		struct ur_reg_devcnt *r = &reg.shm->retired[k];

		if (atomic_load(&r->ifindex) != ifindex)
			continue;
		for (unsigned i = 0; i < n && i < UR_REG_COUNTERS; i++)
			cnt[i] += atomic_load(&r->cnt[i]);
	}
	return 0;
}
