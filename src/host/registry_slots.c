/* This process's slot in the registry: attach maps the file (after a
 * fork, anew: the parent's mapping and slot stay the parent's), reclaims
 * what dead processes left, takes a free slot and sweeps what gone network
 * namespaces left; detach gives the slot and all it held back.  And the
 * slot's direct UDP ports, which senders on this host read. */
#include "host/registry_priv.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/atfork.h"
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

/* reg.lock is held across fork(), so that a child never finds it taken by
 * a thread it does not have (one claiming a QPN block, or the engine
 * thread's counters) and its first attach does not wait for ever.  A call,
 * not a jump, after the lock: the lock-order recorder names a lock by
 * where its call returns (rel/stack_open.c). */
static void lock_for_fork(void)
{
	pthread_mutex_lock(&reg.lock);
	__asm__ volatile("" ::: "memory");
}

static void unlock_after_fork(void)
{
	pthread_mutex_unlock(&reg.lock);
}

static void watch_forks(void)
{
	static const struct ur_atfork_hooks hooks = {
		lock_for_fork, unlock_after_fork, unlock_after_fork,
	};

	ur_atfork_register(UR_ATFORK_REGISTRY, &hooks);
}

int ur_registry_attach(void)
{
	static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
	unsigned gen = ur_fork_generation();
	pid_t me = getpid();          /* the slot's owner, as other processes see it */
	int ret;

	pthread_once(&fork_once, watch_forks);
	pthread_mutex_lock(&reg.lock);
	if (reg.shm && reg.gen != gen)
		forget_parent();
	if (reg.shm) {
		pthread_mutex_unlock(&reg.lock);
		return 0;
	}
	reg.gen = gen;
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
	/* The table says whose the slot is: not ours once given back, nor in
	 * a child of fork() that kept its parent's view (it never attached). */
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

int ur_registry_set_ports(uint16_t port4, uint16_t port6)
{
	if (!reg.shm || reg.slot < 0)
		return -ENODEV;
	atomic_store(&reg.shm->slot[reg.slot].port4, port4);
	atomic_store(&reg.shm->slot[reg.slot].port6, port6);
	return 0;
}
