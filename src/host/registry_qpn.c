/* QP numbers: blocks of 256 claimed in the shared table for this process,
 * numbers handed out of them round robin (this process's own bookkeeping,
 * under r->lock), and who owns a number, for whoever has a packet for it. */
#include "host/registry_priv.h"

#include <stdlib.h>
#include <string.h>

#include "util/log.h"

/* Claims the next free block after the last one claimed on this host, so a
 * block (and its QP numbers) freed by a process that ended is the last to be
 * handed out again: a late packet for an old QP finds no new QP under its
 * number, as QPNs on a NIC advance rather than repeat.  Called with the file
 * lock held, which guards the cursor. */
static int claim_block(struct ur_registry *r, uint32_t *block)
{
	uint16_t mine = (uint16_t)(r->slot + 1);

	for (int pass = 0; pass < 2; pass++) {
		uint32_t start = r->shm->next_block;

		for (uint32_t k = 0; k < UR_REG_BLOCKS; k++) {
			uint32_t b = (start + k) % UR_REG_BLOCKS;
			uint16_t expect = 0;

			if (b == 0)   /* never claimed: QPNs 0 and 1 are special */
				continue;
			if (atomic_compare_exchange_strong(&r->shm->block_owner[b], &expect, mine)) {
				r->shm->next_block = (b + 1) % UR_REG_BLOCKS;
				*block = b;
				return 0;
			}
		}
		if (pass == 0 && ur_reg_reclaim_dead_locked(r) == 0)
			break;
	}
	return -ENOSPC;
}

int ur_registry_alloc_qpn(struct ur_registry *r, uint32_t *qpn)
{
	struct ur_reg_block *ob;
	uint32_t block;
	int ret;

	pthread_mutex_lock(&r->lock);
	if (!r->shm) {
		pthread_mutex_unlock(&r->lock);
		return -ENODEV;
	}
	for (unsigned i = 0; i < r->nblocks; i++) {
		ob = &r->blocks[i];
		for (uint32_t k = 0; k < UR_REG_BLOCK_QPNS; k++) {
			uint32_t bit = (ob->next + k) % UR_REG_BLOCK_QPNS;

			if (ob->used[bit / 64] & (1ull << (bit % 64)))
				continue;
			ob->used[bit / 64] |= 1ull << (bit % 64);
			ob->next = bit + 1;
			*qpn = (ob->block << UR_REG_BLOCK_SHIFT) | bit;
			pthread_mutex_unlock(&r->lock);
			return 0;
		}
	}
	ob = realloc(r->blocks, (r->nblocks + 1) * sizeof(*ob));
	if (!ob) {
		pthread_mutex_unlock(&r->lock);
		return -ENOMEM;
	}
	r->blocks = ob;
	ur_reg_lock_file(r);
	ret = claim_block(r, &block);
	ur_reg_unlock_file(r);
	if (ret) {
		pthread_mutex_unlock(&r->lock);
		ur_err(NULL, "no QP numbers left on this host (registry %s)", r->path);
		return ret;
	}
	ob = &r->blocks[r->nblocks++];
	memset(ob, 0, sizeof(*ob));
	ob->block = block;
	/* Block 0 is never claimed, so QPNs 0 and 1 (special in IB) never occur. */
	ob->used[0] = 1;
	ob->next = 1;
	*qpn = block << UR_REG_BLOCK_SHIFT;
	pthread_mutex_unlock(&r->lock);
	return 0;
}

void ur_registry_free_qpn(struct ur_registry *r, uint32_t qpn)
{
	uint32_t block = qpn >> UR_REG_BLOCK_SHIFT, bit = qpn & (UR_REG_BLOCK_QPNS - 1);

	pthread_mutex_lock(&r->lock);
	for (unsigned i = 0; i < r->nblocks; i++)
		if (r->blocks[i].block == block)
			r->blocks[i].used[bit / 64] &= ~(1ull << (bit % 64));
	pthread_mutex_unlock(&r->lock);
}

int ur_registry_lookup(const struct ur_registry *r, uint32_t qpn, struct ur_reg_owner *out)
{
	uint32_t block = (qpn >> UR_REG_BLOCK_SHIFT) & (UR_REG_BLOCKS - 1);
	uint16_t owner;
	struct ur_reg_slot *s;

	if (!r->shm)
		return -ENODEV;
	owner = atomic_load(&r->shm->block_owner[block]);
	if (!owner || owner > UR_REG_SLOTS)
		return -ENOENT;
	s = &r->shm->slot[owner - 1];
	out->pid = (pid_t)atomic_load(&s->pid);
	if (!out->pid)
		return -ENOENT;
	out->port4 = atomic_load(&s->port4);
	out->port6 = atomic_load(&s->port6);
	out->self = (int)(owner - 1) == r->slot;
	return 0;
}
