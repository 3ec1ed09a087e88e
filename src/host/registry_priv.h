/* The host registry's insides, shared by its files: the layout of the
 * shared file, the QPN blocks a process's view (struct ur_registry,
 * registry.h) keeps, and the file lock that serialises changes to the
 * table.
 *
 * The files, one job each, call each other one way, from the top:
 * registry_counters.c (publish, sum; a reader with no slot attaches) ->
 * registry_slots.c (attach, detach) -> registry_sweep.c (gone network
 * namespaces' files) -> registry_file.c (name, open, map);
 * registry_slots.c and registry_qpn.c (QPN blocks) -> registry_reclaim.c
 * (what a slot held goes back; dead slots) -> registry_liveness.c (is a
 * slot's process alive), which the sweep asks too; registry_listen.c (the
 * CM's listeners) -> registry_mcast.c (group memberships).
 *
 * Locks: `r->lock` (a mutex) guards this process's view, and is held
 * across fork() (registry_slots.c); the file lock (flock on the registry
 * file) guards changes other processes could race with, and is taken
 * under `r->lock` where both are held. */
#ifndef UROCE_HOST_REGISTRY_PRIV_H
#define UROCE_HOST_REGISTRY_PRIV_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/types.h>

#include "host/registry.h"

struct ur_reg_slot {
	_Atomic uint32_t pid;         /* 0: free */
	uint32_t gen;
	uint64_t start_time;          /* /proc/<pid>/stat field 22 */
	_Atomic uint16_t port4;
	_Atomic uint16_t port6;
	uint32_t reserved[3];
};

struct ur_reg_devcnt {
	_Atomic uint32_t ifindex;     /* 0: unused */
	uint32_t reserved;
	_Atomic uint64_t cnt[UR_REG_COUNTERS];
};

struct ur_reg_mcast {
	uint8_t gid[16];
	uint32_t ifindex;
	uint32_t reserved;
	_Atomic uint64_t members[UR_REG_SLOTS / 64];   /* bit = slot */
};

/* Offsets, not pointers: every process maps it at its own address. */
struct ur_reg_shm {
	uint32_t magic;
	uint32_t version;
	uint32_t layout_size;
	uint32_t nslots;
	uint32_t nblocks;
	uint32_t next_block;          /* claim cursor (under the file lock) */
	uint32_t reserved[2];
	struct ur_reg_slot slot[UR_REG_SLOTS];
	_Atomic uint16_t block_owner[UR_REG_BLOCKS];   /* slot + 1; 0: free */
	struct ur_reg_mcast mcast[UR_REG_MCAST_GROUPS];
	struct ur_reg_devcnt slot_cnt[UR_REG_SLOTS][UR_REG_SLOT_DEVS];
	struct ur_reg_devcnt retired[UR_REG_RETIRED_DEVS];
};

_Static_assert(sizeof(struct ur_reg_slot) == 32, "slot layout");
_Static_assert(offsetof(struct ur_reg_shm, slot) == 32, "header layout");
_Static_assert(offsetof(struct ur_reg_shm, block_owner) == 32 + 32 * UR_REG_SLOTS,
	       "block table layout");
_Static_assert(sizeof(struct ur_reg_mcast) == 24 + UR_REG_SLOTS / 8, "multicast entry layout");
_Static_assert(sizeof(struct ur_reg_devcnt) == 8 + 8 * UR_REG_COUNTERS, "counter block layout");
/* Any change of layout must come with a new UR_REG_VERSION (the file name
 * carries it), then this size is updated to match. */
_Static_assert(UR_REG_VERSION == 7 && sizeof(struct ur_reg_shm) == 2910752,
	       "registry layout changed: bump UR_REG_VERSION");
_Static_assert(offsetof(struct ur_reg_shm, mcast) ==
	       32 + 32 * UR_REG_SLOTS + 2 * UR_REG_BLOCKS, "multicast table layout");

/* A block of QPNs this process claimed, and which of them it uses. */
struct ur_reg_block {
	uint32_t block;
	uint32_t next;                /* round-robin cursor: delays QPN reuse */
	uint64_t used[UR_REG_BLOCK_QPNS / 64];
};

/* The file lock: serialises changes to the shared table among the
 * processes of the host.  Taken under r->lock where both are held. */
static inline void ur_reg_lock_file(const struct ur_registry *r)
{
	while (flock(r->fd, LOCK_EX) && errno == EINTR)
		;
}

static inline void ur_reg_unlock_file(const struct ur_registry *r)
{
	flock(r->fd, LOCK_UN);
}

/* registry_file.c */
/* The inode of this process's network namespace (0 if unknown): part of
 * the registry's name. */
unsigned long ur_reg_netns_id(void);
/* Opens and maps this namespace's registry into r (fd, shm, path),
 * creating it if new.  0 with the file lock held, or -errno with it
 * released. */
int ur_reg_map_file(struct ur_registry *r);

/* registry_liveness.c */
/* Field 22 of /proc/PID/stat, 0 if the process is not there. */
uint64_t ur_reg_proc_start_time(pid_t pid);
/* The slot names a process that lives and is the one that took it. */
bool ur_reg_slot_alive(const struct ur_reg_slot *s);

/* registry_reclaim.c, the file lock held */
/* Everything the slot owned goes back (it stays taken: the caller frees it). */
void ur_reg_release_slot(struct ur_registry *r, int slot);
/* Releases and frees the slots of dead processes; returns how many. */
int ur_reg_reclaim_dead_locked(struct ur_registry *r);

#endif
