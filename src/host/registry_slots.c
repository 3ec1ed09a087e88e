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
static void forget_parent(struct ur_registry *r)
{
	munmap(r->shm, sizeof(struct ur_reg_shm));
	r->shm = NULL;
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	r->slot = -1;
	free(r->blocks);
	r->blocks = NULL;
	r->nblocks = 0;
}

/* The registry whose lock is held across fork(): the first one attached,
 * which in the library is the process object's (core/process.h) and in a
 * test its own.  The one reach of a registry without a pointer handed
 * down, because the fork handler's hooks (util/atfork.h) take no
 * argument; set once, before the hooks are registered, and never
 * changed.  A registry attached after it (a second one, in tests only)
 * is not held across fork. */
static struct ur_registry *forking;

/* r->lock is held across fork(), so that a child never finds it taken by
 * a thread it does not have (one claiming a QPN block, or the engine
 * thread's counters) and its first attach does not wait for ever.  A call,
 * not a jump, after the lock: the lock-order recorder names a lock by
 * where its call returns (rel/stack_open.c). */
static void lock_for_fork(void)
{
	struct ur_registry *r = __atomic_load_n(&forking, __ATOMIC_ACQUIRE);

	pthread_mutex_lock(&r->lock);
	__asm__ volatile("" ::: "memory");
}

static void unlock_after_fork(void)
{
	struct ur_registry *r = __atomic_load_n(&forking, __ATOMIC_ACQUIRE);

	pthread_mutex_unlock(&r->lock);
}

static void watch_forks(struct ur_registry *r)
{
	static const struct ur_atfork_hooks hooks = {
		lock_for_fork, unlock_after_fork, unlock_after_fork,
	};
	struct ur_registry *none = NULL;

	/* Once, by the first attach (pthread_once passes no argument). */
	if (__atomic_load_n(&forking, __ATOMIC_ACQUIRE) ||
	    !__atomic_compare_exchange_n(&forking, &none, r, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;
	ur_atfork_register(UR_ATFORK_REGISTRY, &hooks);
}

int ur_registry_attach(struct ur_registry *r)
{
	unsigned gen = ur_fork_generation();
	pid_t me = getpid();          /* the slot's owner, as other processes see it */
	int ret;

	watch_forks(r);
	pthread_mutex_lock(&r->lock);
	if (r->shm && r->gen != gen)
		forget_parent(r);
	if (r->shm) {
		pthread_mutex_unlock(&r->lock);
		return 0;
	}
	r->gen = gen;
	ret = ur_reg_map_file(r);   /* returns with the file lock held on success */
	if (ret)
		goto out;
	/* What dead processes left (QPN blocks, multicast memberships) goes
	 * now, not when room runs out: a crash never outlives the next start. */
	ur_reg_reclaim_dead_locked(r);
	for (int pass = 0; pass < 2 && r->slot < 0; pass++) {
		for (unsigned i = 0; i < UR_REG_SLOTS; i++) {
			struct ur_reg_slot *s = &r->shm->slot[i];

			if (atomic_load(&s->pid) && (pass == 0 || ur_reg_slot_alive(s)))
				continue;
			if (atomic_load(&s->pid))
				ur_reg_release_slot(r, (int)i);
			/* Counters a free slot still shows were retired with
			 * their owner (or came after it detached): not ours. */
			for (unsigned d = 0; d < UR_REG_SLOT_DEVS; d++) {
				for (unsigned k = 0; k < UR_REG_COUNTERS; k++)
					atomic_store(&r->shm->slot_cnt[i][d].cnt[k], 0);
				atomic_store(&r->shm->slot_cnt[i][d].ifindex, 0);
			}
			s->gen++;
			s->start_time = ur_reg_proc_start_time(me);
			atomic_store(&s->port4, 0);
			atomic_store(&s->port6, 0);
			atomic_store(&s->pid, (uint32_t)me);
			r->slot = (int)i;
			break;
		}
	}
	ur_reg_unlock_file(r);
	if (r->slot < 0) {
		ur_err(NULL, "the host registry %s has no free slot: %u processes use uroce",
		       r->path, UR_REG_SLOTS);
		munmap(r->shm, sizeof(struct ur_reg_shm));
		r->shm = NULL;
		close(r->fd);
		r->fd = -1;
		ret = -EUSERS;
		goto out;
	}
	/* What namespaces that are gone left behind goes too: nobody else
	 * ever opens those files again. */
	ur_registry_sweep_dead_netns();
out:
	pthread_mutex_unlock(&r->lock);
	return ret;
}

void ur_registry_detach(struct ur_registry *r)
{
	pthread_mutex_lock(&r->lock);
	/* The table says whose the slot is: not ours once given back, nor in
	 * a child of fork() that kept its parent's view (it never attached). */
	if (r->shm && r->slot >= 0 &&
	    atomic_load(&r->shm->slot[r->slot].pid) == (uint32_t)getpid()) {
		ur_reg_lock_file(r);
		ur_reg_release_slot(r, r->slot);
		atomic_store(&r->shm->slot[r->slot].port4, 0);
		atomic_store(&r->shm->slot[r->slot].port6, 0);
		atomic_store(&r->shm->slot[r->slot].pid, 0);
		ur_reg_unlock_file(r);
	}
	pthread_mutex_unlock(&r->lock);
}

int ur_registry_set_ports(struct ur_registry *r, uint16_t port4, uint16_t port6)
{
	if (!r->shm || r->slot < 0)
		return -ENODEV;
	atomic_store(&r->shm->slot[r->slot].port4, port4);
	atomic_store(&r->shm->slot[r->slot].port6, port6);
	return 0;
}

int ur_registry_live_pids(const struct ur_registry *r, pid_t *pids, int max)
{
	pid_t me = getpid();
	int n = 0;

	if (!r->shm)
		return 0;
	for (unsigned i = 0; i < UR_REG_SLOTS && n < max; i++) {
		const struct ur_reg_slot *s = &r->shm->slot[i];
		pid_t pid = (pid_t)atomic_load(&s->pid);

		if (pid && pid != me && ur_reg_slot_alive(s))
			pids[n++] = pid;
	}
	return n;
}
