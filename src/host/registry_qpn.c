/* QP numbers: blocks of 256 claimed in the shared table for this process,
 * numbers handed out of them round robin (this process's own bookkeeping,
 * under reg.lock), and who owns a number, for whoever has a packet for it. */
#include "host/registry_priv.h"

#include <stdlib.h>
#include <string.h>

#include "util/log.h"

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
