#include "host/registry_priv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/host_uid.h"
#include "util/log.h"

/* A child of fork() inherits its parent's mapping, file (with its lock:
 * flock belongs to the open file, which they share), slot and QPN blocks.
 * They stay the parent's; the child lets its copies go and attaches as a
 * process of its own. */
static void forget_parent(void)
{
	munmap(reg.shm, sizeof(struct ur_reg_shm));
	reg.shm = NULL;
	if (reg.fd >= 0)
		close(reg.fd);
	reg.fd = -1;
	reg.slot = -1;
	free(reg.blocks);
	reg.blocks = NULL;
	reg.nblocks = 0;
}

int ur_registry_attach(void)
{
	pid_t me = getpid();
	int ret;

	pthread_mutex_lock(&reg.lock);
	if (reg.shm && reg.pid != me)
		forget_parent();
	if (reg.shm) {
		pthread_mutex_unlock(&reg.lock);
		return 0;
	}
	reg.pid = me;
	ret = ur_reg_map_file();   /* returns with the file lock held on success */
	if (ret)
		goto out;
	/* What dead processes left (QPN blocks, multicast memberships) goes
	 * now, not when room runs out: a crash never outlives the next start. */
	ur_reg_reclaim_dead_locked();
	for (int pass = 0; pass < 2 && reg.slot < 0; pass++) {
		for (unsigned i = 0; i < UR_REG_SLOTS; i++) {
			struct ur_reg_slot *s = &reg.shm->slot[i];

			if (atomic_load(&s->pid) && (pass == 0 || ur_reg_slot_alive(s)))
				continue;
			if (atomic_load(&s->pid))
				ur_reg_release_slot((int)i);
			/* Counters a free slot still shows were retired with
			 * their owner (or came after it detached): not ours. */
			for (unsigned d = 0; d < UR_REG_SLOT_DEVS; d++) {
				for (unsigned k = 0; k < UR_REG_COUNTERS; k++)
					atomic_store(&reg.shm->slot_cnt[i][d].cnt[k], 0);
				atomic_store(&reg.shm->slot_cnt[i][d].ifindex, 0);
			}
			s->gen++;
			s->start_time = ur_reg_proc_start_time(me);
			atomic_store(&s->port4, 0);
			atomic_store(&s->port6, 0);
			atomic_store(&s->pid, (uint32_t)me);
			reg.slot = (int)i;
			break;
		}
	}
	ur_reg_unlock_file();
	if (reg.slot < 0) {
		ur_err(NULL, "the host registry %s has no free slot: %u processes use uroce",
		       reg.path, UR_REG_SLOTS);
		munmap(reg.shm, sizeof(struct ur_reg_shm));
		reg.shm = NULL;
		close(reg.fd);
		reg.fd = -1;
		ret = -EUSERS;
		goto out;
	}
	/* What namespaces that are gone left behind goes too: nobody else
	 * ever opens those files again. */
	ur_registry_sweep_dead_netns();
out:
	pthread_mutex_unlock(&reg.lock);
	return ret;
}

void ur_registry_detach(void)
{
	pthread_mutex_lock(&reg.lock);
	if (reg.shm && reg.slot >= 0 &&
	    atomic_load(&reg.shm->slot[reg.slot].pid) == (uint32_t)getpid()) {
		ur_reg_lock_file();
		ur_reg_release_slot(reg.slot);
		atomic_store(&reg.shm->slot[reg.slot].port4, 0);
		atomic_store(&reg.shm->slot[reg.slot].port6, 0);
		atomic_store(&reg.shm->slot[reg.slot].pid, 0);
		ur_reg_unlock_file();
	}
	pthread_mutex_unlock(&reg.lock);
}

/* Claims the next free block after the last one claimed on this host, so a
 * block (and its QP numbers) freed by a process that ended is the last to be
 * handed out again: a late packet for an old QP finds no new QP under its
 * number, as QPNs on a NIC advance rather than repeat.  Called with the file
 * lock held, which guards the cursor. */
static int claim_block(uint32_t *block)
{
	uint16_t mine = (uint16_t)(reg.slot + 1);

	for (int pass = 0; pass < 2; pass++) {
		uint32_t start = reg.shm->next_block;

		for (uint32_t k = 0; k < UR_REG_BLOCKS; k++) {
			uint32_t b = (start + k) % UR_REG_BLOCKS;
			uint16_t expect = 0;

			if (b == 0)   /* never claimed: QPNs 0 and 1 are special */
				continue;
			if (atomic_compare_exchange_strong(&reg.shm->block_owner[b], &expect, mine)) {
				reg.shm->next_block = (b + 1) % UR_REG_BLOCKS;
				*block = b;
				return 0;
			}
		}
		if (pass == 0 && ur_reg_reclaim_dead_locked() == 0)
			break;
	}
	return -ENOSPC;
}

int ur_registry_alloc_qpn(uint32_t *qpn)
{
	struct owned_block *ob;
	uint32_t block;
	int ret;

	pthread_mutex_lock(&reg.lock);
	if (!reg.shm) {
		pthread_mutex_unlock(&reg.lock);
		return -ENODEV;
	}
	for (unsigned i = 0; i < reg.nblocks; i++) {
		ob = &reg.blocks[i];
		for (uint32_t k = 0; k < UR_REG_BLOCK_QPNS; k++) {
			uint32_t bit = (ob->next + k) % UR_REG_BLOCK_QPNS;

			if (ob->used[bit / 64] & (1ull << (bit % 64)))
				continue;
			ob->used[bit / 64] |= 1ull << (bit % 64);
			ob->next = bit + 1;
			*qpn = (ob->block << UR_REG_BLOCK_SHIFT) | bit;
			pthread_mutex_unlock(&reg.lock);
			return 0;
		}
	}
	ob = realloc(reg.blocks, (reg.nblocks + 1) * sizeof(*ob));
	if (!ob) {
		pthread_mutex_unlock(&reg.lock);
		return -ENOMEM;
	}
	reg.blocks = ob;
	ur_reg_lock_file();
	ret = claim_block(&block);
	ur_reg_unlock_file();
	if (ret) {
		pthread_mutex_unlock(&reg.lock);
		ur_err(NULL, "no QP numbers left on this host (registry %s)", reg.path);
		return ret;
	}
	ob = &reg.blocks[reg.nblocks++];
	memset(ob, 0, sizeof(*ob));
	ob->block = block;
	/* Block 0 is never claimed, so QPNs 0 and 1 (special in IB) never occur. */
	ob->used[0] = 1;
	ob->next = 1;
	*qpn = block << UR_REG_BLOCK_SHIFT;
	pthread_mutex_unlock(&reg.lock);
	return 0;
}

void ur_registry_free_qpn(uint32_t qpn)
{
	uint32_t block = qpn >> UR_REG_BLOCK_SHIFT, bit = qpn & (UR_REG_BLOCK_QPNS - 1);

	pthread_mutex_lock(&reg.lock);
	for (unsigned i = 0; i < reg.nblocks; i++)
		if (reg.blocks[i].block == block)
			reg.blocks[i].used[bit / 64] &= ~(1ull << (bit % 64));
	pthread_mutex_unlock(&reg.lock);
}

int ur_registry_set_ports(uint16_t port4, uint16_t port6)
{
	if (!reg.shm || reg.slot < 0)
		return -ENODEV;
	atomic_store(&reg.shm->slot[reg.slot].port4, port4);
	atomic_store(&reg.shm->slot[reg.slot].port6, port6);
	return 0;
}

int ur_registry_lookup(uint32_t qpn, struct ur_reg_owner *out)
{
	uint32_t block = (qpn >> UR_REG_BLOCK_SHIFT) & (UR_REG_BLOCKS - 1);
	uint16_t owner;
	struct ur_reg_slot *s;

	if (!reg.shm)
		return -ENODEV;
	owner = atomic_load(&reg.shm->block_owner[block]);
	if (!owner || owner > UR_REG_SLOTS)
		return -ENOENT;
	s = &reg.shm->slot[owner - 1];
	out->pid = (pid_t)atomic_load(&s->pid);
	if (!out->pid)
		return -ENOENT;
	out->port4 = atomic_load(&s->port4);
	out->port6 = atomic_load(&s->port6);
	out->self = (int)(owner - 1) == reg.slot;
	return 0;
}

/* ---- multicast membership ----------------------------------------------- */

static bool group_empty(const struct ur_reg_mcast *m)
{
	for (unsigned i = 0; i < UR_REG_SLOTS / 64; i++)
		if (atomic_load(&m->members[i]))
			return false;
	return true;
}

/* File lock held.  The entry for (gid, ifindex), or a free one if make. */
static struct ur_reg_mcast *find_group(const union ibv_gid *gid, unsigned ifindex, bool make)
{
	struct ur_reg_mcast *free_entry = NULL;

	for (unsigned g = 0; g < UR_REG_MCAST_GROUPS; g++) {
		struct ur_reg_mcast *m = &reg.shm->mcast[g];

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

int ur_registry_mcast_join(const union ibv_gid *gid, unsigned ifindex)
{
	struct ur_reg_mcast *m;
	int ret = 0;

	if (!reg.shm || reg.slot < 0)
		return -ENODEV;
	ur_reg_lock_file();
	m = find_group(gid, ifindex, true);
	if (m)
		atomic_fetch_or(&m->members[reg.slot / 64], 1ull << (reg.slot % 64));
	else
		ret = -ENOSPC;
	ur_reg_unlock_file();
	return ret;
}

void ur_registry_mcast_leave(const union ibv_gid *gid, unsigned ifindex)
{
	struct ur_reg_mcast *m;

	if (!reg.shm || reg.slot < 0)
		return;
	ur_reg_lock_file();
	m = find_group(gid, ifindex, false);
	if (m)
		atomic_fetch_and(&m->members[reg.slot / 64], ~(1ull << (reg.slot % 64)));
	ur_reg_unlock_file();
}

int ur_registry_mcast_members(const union ibv_gid *gid, struct ur_reg_owner *out, int max)
{
	uint64_t any[UR_REG_SLOTS / 64] = { 0 };
	int n = 0;

	if (!reg.shm)
		return 0;
	/* Lock-free read: a member joining meanwhile misses one datagram at
	 * most, which multicast UD allows.  A process may be a member of the
	 * group on several interfaces (one entry each): it is listed once, so
	 * that it gets each datagram once. */
	for (unsigned g = 0; g < UR_REG_MCAST_GROUPS; g++) {
		struct ur_reg_mcast *m = &reg.shm->mcast[g];

		if (memcmp(m->gid, gid->raw, 16))
			continue;
		for (unsigned w = 0; w < UR_REG_SLOTS / 64; w++)
			any[w] |= atomic_load(&m->members[w]);
	}
	for (unsigned w = 0; w < UR_REG_SLOTS / 64; w++) {
		uint64_t bits = any[w];

		while (bits && n < max) {
			unsigned slot = w * 64 + (unsigned)__builtin_ctzll(bits);
			struct ur_reg_slot *s = &reg.shm->slot[slot];

			bits &= bits - 1;
			out[n].pid = (pid_t)atomic_load(&s->pid);
			if (!out[n].pid)
				continue;
			out[n].port4 = atomic_load(&s->port4);
			out[n].port6 = atomic_load(&s->port6);
			out[n].self = (int)slot == reg.slot;
			n++;
		}
	}
	return n;
}

/* ---- counters ----------------------------------------------------------- */

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

/* A CM service ID as a group key: "urCM", zeros, the ID.  Multicast GIDs
 * begin with 0xff, so no group is ever mistaken for one. */
#define UR_REG_CM_IFINDEX 0xffffffffu

static void cm_key(union ibv_gid *g, uint64_t service_id)
{
	memset(g, 0, sizeof(*g));
	memcpy(g->raw, "urCM", 4);
	for (int i = 0; i < 8; i++)
		g->raw[8 + i] = (uint8_t)(service_id >> (56 - 8 * i));
}

int ur_registry_cm_listen(uint64_t service_id)
{
	union ibv_gid g;

	cm_key(&g, service_id);
	return ur_registry_mcast_join(&g, UR_REG_CM_IFINDEX);
}

void ur_registry_cm_unlisten(uint64_t service_id)
{
	union ibv_gid g;

	cm_key(&g, service_id);
	ur_registry_mcast_leave(&g, UR_REG_CM_IFINDEX);
}

int ur_registry_cm_listener(uint64_t service_id, struct ur_reg_owner *out)
{
	struct ur_reg_owner o[8];
	union ibv_gid g;
	int n;

	cm_key(&g, service_id);
	n = ur_registry_mcast_members(&g, o, (int)(sizeof(o) / sizeof(o[0])));
	/* A REQ is rare: checking that the listener lives is affordable, and
	 * a dead one's entry stays until its slot is reclaimed. */
	for (int i = 0; i < n; i++)
		if (o[i].self || kill(o[i].pid, 0) == 0 || errno == EPERM) {
			*out = o[i];
			return 0;
		}
	return -ENOENT;
}
