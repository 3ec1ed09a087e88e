/* Device counters: each process publishes its totals per interface in its
 * slot; a reader sums the live slots' and the retired totals (folded in from
 * the slots given back, registry_reclaim.c). */
#include "host/registry_priv.h"

#include <string.h>
#include <unistd.h>

int ur_registry_publish_counters(struct ur_registry *r, unsigned ifindex, const uint64_t *cnt,
				 unsigned n)
{
	struct ur_reg_devcnt *c = NULL;
	int ret = 0;

	if (!ifindex)
		return -ENODEV;
	/* Under r->lock, and only while the slot is ours: once detached its
	 * counters have joined the retired totals, and a late publish (the
	 * engine thread's, as the process exits) would count them twice for
	 * whoever takes the slot next. */
	pthread_mutex_lock(&r->lock);
	if (!r->shm || r->slot < 0 ||
	    atomic_load(&r->shm->slot[r->slot].pid) != (uint32_t)getpid()) {
		ret = -ENODEV;
		goto out;
	}
	for (unsigned d = 0; d < UR_REG_SLOT_DEVS && !c; d++) {
		uint32_t cur = atomic_load(&r->shm->slot_cnt[r->slot][d].ifindex);

		if (cur == ifindex || !cur)
			c = &r->shm->slot_cnt[r->slot][d];
	}
	if (!c) {
		ret = -ENOSPC;
		goto out;
	}
	for (unsigned i = 0; i < n && i < UR_REG_COUNTERS; i++)
		atomic_store(&c->cnt[i], cnt[i]);
	atomic_store(&c->ifindex, ifindex);
out:
	pthread_mutex_unlock(&r->lock);
	return ret;
}

int ur_registry_read_counters(struct ur_registry *r, unsigned ifindex, uint64_t *cnt, unsigned n)
{
	int ret;

	if (!r->shm) {
		ret = ur_registry_attach(r);
		if (ret)
			return ret;
	}
	memset(cnt, 0, n * sizeof(*cnt));
	for (unsigned s = 0; s < UR_REG_SLOTS; s++) {
		if (!atomic_load(&r->shm->slot[s].pid))
			continue;
		for (unsigned d = 0; d < UR_REG_SLOT_DEVS; d++) {
			struct ur_reg_devcnt *c = &r->shm->slot_cnt[s][d];

			if (atomic_load(&c->ifindex) != ifindex)
				continue;
			for (unsigned i = 0; i < n && i < UR_REG_COUNTERS; i++)
				cnt[i] += atomic_load(&c->cnt[i]);
		}
	}
	for (unsigned k = 0; k < UR_REG_RETIRED_DEVS; k++) {
		struct ur_reg_devcnt *t = &r->shm->retired[k];

		if (atomic_load(&t->ifindex) != ifindex)
			continue;
		for (unsigned i = 0; i < n && i < UR_REG_COUNTERS; i++)
			cnt[i] += atomic_load(&t->cnt[i]);
	}
	return 0;
}
