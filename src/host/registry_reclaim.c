/* What a slot held goes back when its process detaches or is found dead:
 * its QPN blocks, its multicast memberships and CM listens, and its
 * published counters, which join the retired totals so that the host's
 * sums never go down.  And the reclaim of dead processes' slots, which
 * attach runs, and a claim of QPNs too when it finds no block free. */
#include "host/registry_priv.h"

/* File lock held: a slot's published counters join the retired totals. */
static void retire_counters(struct ur_registry *r, int slot)
{
	for (unsigned d = 0; d < UR_REG_SLOT_DEVS; d++) {
		struct ur_reg_devcnt *c = &r->shm->slot_cnt[slot][d];
		uint32_t ifindex = atomic_load(&c->ifindex);
		struct ur_reg_devcnt *t = NULL;   /* the interface's retired totals */

		if (!ifindex)
			continue;
		for (unsigned k = 0; k < UR_REG_RETIRED_DEVS && !t; k++) {
			uint32_t expect = 0;

			if (atomic_load(&r->shm->retired[k].ifindex) == ifindex ||
			    atomic_compare_exchange_strong(&r->shm->retired[k].ifindex, &expect, ifindex))
				t = &r->shm->retired[k];
		}
		for (unsigned i = 0; i < UR_REG_COUNTERS; i++) {
			if (t)
				atomic_fetch_add(&t->cnt[i], atomic_load(&c->cnt[i]));
			atomic_store(&c->cnt[i], 0);
		}
		atomic_store(&c->ifindex, 0);
	}
}

/* File lock held: everything a slot owned goes back. */
void ur_reg_release_slot(struct ur_registry *r, int slot)
{
	uint64_t bit = 1ull << (slot % 64);

	retire_counters(r, slot);
	for (uint32_t b = 1; b < UR_REG_BLOCKS; b++)
		if (atomic_load(&r->shm->block_owner[b]) == (uint16_t)(slot + 1))
			atomic_store(&r->shm->block_owner[b], 0);
	for (unsigned g = 0; g < UR_REG_MCAST_GROUPS; g++)
		atomic_fetch_and(&r->shm->mcast[g].members[slot / 64], ~bit);
}

int ur_reg_reclaim_dead_locked(struct ur_registry *r)
{
	int n = 0;

	for (unsigned i = 0; i < UR_REG_SLOTS; i++) {
		struct ur_reg_slot *s = &r->shm->slot[i];

		if ((int)i == r->slot || !atomic_load(&s->pid) || ur_reg_slot_alive(s))
			continue;
		ur_reg_release_slot(r, (int)i);
		atomic_store(&s->port4, 0);
		atomic_store(&s->port6, 0);
		atomic_store(&s->pid, 0);
		n++;
	}
	return n;
}

int ur_registry_reclaim_dead(struct ur_registry *r)
{
	int n;

	pthread_mutex_lock(&r->lock);
	if (!r->shm) {
		pthread_mutex_unlock(&r->lock);
		return -ENODEV;
	}
	ur_reg_lock_file(r);
	n = ur_reg_reclaim_dead_locked(r);
	ur_reg_unlock_file(r);
	pthread_mutex_unlock(&r->lock);
	return n;
}
