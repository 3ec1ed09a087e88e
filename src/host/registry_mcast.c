/* Multicast membership: which slots have QPs attached to a group on an
 * interface, a bit per slot in an entry of the shared group table, so that
 * the process serving port 4791 hands each datagram to every member. */
#include "host/registry_priv.h"

#include <string.h>

static bool group_empty(const struct ur_reg_mcast *m)
{
	for (unsigned i = 0; i < UR_REG_SLOTS / 64; i++)
		if (atomic_load(&m->members[i]))
			return false;
	return true;
}

/* File lock held.  The entry for (gid, ifindex), or a free one if make. */
static struct ur_reg_mcast *find_group(struct ur_registry *r, const union ibv_gid *gid,
				       unsigned ifindex, bool make)
{
	struct ur_reg_mcast *free_entry = NULL;

	for (unsigned g = 0; g < UR_REG_MCAST_GROUPS; g++) {
		struct ur_reg_mcast *m = &r->shm->mcast[g];

		if (group_empty(m)) {
			if (!free_entry)
				free_entry = m;
			continue;
		}
		if (!memcmp(m->gid, gid->raw, 16) && m->ifindex == ifindex)
			return m;
	}
	if (make && free_entry) {
		memcpy(free_entry->gid, gid->raw, 16);
		free_entry->ifindex = ifindex;
		return free_entry;
	}
	return NULL;
}

int ur_registry_mcast_join(struct ur_registry *r, const union ibv_gid *gid, unsigned ifindex)
{
	struct ur_reg_mcast *m;
	int ret = 0;

	if (!r->shm || r->slot < 0)
		return -ENODEV;
	ur_reg_lock_file(r);
	m = find_group(r, gid, ifindex, true);
	if (m)
		atomic_fetch_or(&m->members[r->slot / 64], 1ull << (r->slot % 64));
	else
		ret = -ENOSPC;
	ur_reg_unlock_file(r);
	return ret;
}

void ur_registry_mcast_leave(struct ur_registry *r, const union ibv_gid *gid, unsigned ifindex)
{
	struct ur_reg_mcast *m;

	if (!r->shm || r->slot < 0)
		return;
	ur_reg_lock_file(r);
	m = find_group(r, gid, ifindex, false);
	if (m)
		atomic_fetch_and(&m->members[r->slot / 64], ~(1ull << (r->slot % 64)));
	ur_reg_unlock_file(r);
}

int ur_registry_mcast_members(const struct ur_registry *r, const union ibv_gid *gid,
			      struct ur_reg_owner *out, int max)
{
	uint64_t any[UR_REG_SLOTS / 64] = { 0 };
	int n = 0;

	if (!r->shm)
		return 0;
	/* Lock-free read: a member joining meanwhile misses one datagram at
	 * most, which multicast UD allows.  A process may be a member of the
	 * group on several interfaces (one entry each): it is listed once, so
	 * that it gets each datagram once. */
	for (unsigned g = 0; g < UR_REG_MCAST_GROUPS; g++) {
		struct ur_reg_mcast *m = &r->shm->mcast[g];

		if (memcmp(m->gid, gid->raw, 16))
			continue;
		for (unsigned w = 0; w < UR_REG_SLOTS / 64; w++)
			any[w] |= atomic_load(&m->members[w]);
	}
	for (unsigned w = 0; w < UR_REG_SLOTS / 64; w++) {
		uint64_t bits = any[w];

		while (bits && n < max) {
			unsigned slot = w * 64 + (unsigned)__builtin_ctzll(bits);
			struct ur_reg_slot *s = &r->shm->slot[slot];

			bits &= bits - 1;
			out[n].pid = (pid_t)atomic_load(&s->pid);
			if (!out[n].pid)
				continue;
			out[n].port4 = atomic_load(&s->port4);
			out[n].port6 = atomic_load(&s->port6);
			out[n].self = (int)slot == r->slot;
			n++;
		}
	}
	return n;
}
