/* The host registry: a small shared-memory table, one per user and network
 * namespace, that makes QP numbers unique across every process of the host
 * and says which process owns each one.  The process holding port 4791
 * uses it to hand packets to their owner; senders use it to reach a local
 * peer directly.
 *
 * QP numbers come in blocks of 256 claimed by a process; a process that
 * dies leaves its slot behind, and the next process to need room reclaims
 * it (liveness is checked by pid and start time, so pid reuse is harmless).
 * A network namespace that is gone leaves its file: the next process of
 * the user to attach, in any namespace, removes it once nothing uses it.
 */
#ifndef UROCE_XPORT_REGISTRY_H
#define UROCE_XPORT_REGISTRY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <infiniband/verbs.h>

#define UR_REG_MAGIC 0x75524547u      /* "uREG" */
#define UR_REG_VERSION 7u            /* part of the file name: versions never meet */
#define UR_REG_SLOTS 1024u
#define UR_REG_BLOCK_SHIFT 8u
#define UR_REG_BLOCK_QPNS (1u << UR_REG_BLOCK_SHIFT)
#define UR_REG_BLOCKS (1u << (24u - UR_REG_BLOCK_SHIFT))
#define UR_REG_MCAST_GROUPS 256u
#define UR_REG_SLOT_DEVS 8u          /* devices a process publishes counters for */
#define UR_REG_RETIRED_DEVS 64u
#define UR_REG_COUNTERS 40u          /* room for enum ur_counter */

struct ur_reg_shm;
struct ur_reg_block;

/* A process's view of the registry: the file it mapped, the slot it holds
 * there, the QPN blocks it claimed.  One per process: the process object
 * (core/process.h) holds it, and whoever has a context, the stack or a
 * transport reaches it through the pointer they were given.  Its insides
 * are registry*.c's: r->lock guards them, and is held across fork()
 * (registry_slots.c); registry_priv.h has the layout they map. */
struct ur_registry {
	pthread_mutex_t lock;         /* the view; held across fork() */
	int fd;                       /* the registry file (its flock: the file lock) */
	struct ur_reg_shm *shm;       /* NULL: not attached */
	int slot;                     /* ours, or -1 */
	char path[128];
	struct ur_reg_block *blocks;  /* the QPN blocks we claimed */
	unsigned nblocks;
	unsigned gen;                 /* the fork generation whose mapping, file and slot these are */
};

/* Not attached: what a registry starts as (statically, nothing to free). */
#define UR_REGISTRY_INIT { .lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1, .slot = -1 }

struct ur_reg_owner {
	pid_t pid;
	uint16_t port4, port6;        /* its direct UDP ports (0: none) */
	bool self;
};

/* Maps the registry into r (UR_REGISTRY_INIT before the first attach) and
 * claims this process's slot; again after fork(), in the child, a slot of
 * its own.  0 or -errno. */
int ur_registry_attach(struct ur_registry *r);
void ur_registry_detach(struct ur_registry *r);

int ur_registry_alloc_qpn(struct ur_registry *r, uint32_t *qpn);
void ur_registry_free_qpn(struct ur_registry *r, uint32_t qpn);
int ur_registry_set_ports(struct ur_registry *r, uint16_t port4, uint16_t port6);
/* Who owns qpn on this host; -ENOENT if nobody.  A process that died
 * keeps its blocks until they are reclaimed (at the next attach, or when
 * QPNs run out), so the owner found may be dead: what is sent to it is
 * lost, as it would be for a QP that no longer exists.  Checking liveness
 * here would cost a system call per packet. */
int ur_registry_lookup(const struct ur_registry *r, uint32_t qpn, struct ur_reg_owner *out);

/* Multicast membership: which processes of the host have QPs attached to
 * a group, so that the process serving port 4791 hands each datagram to
 * every member. */
/* Marks / clears this process as a member; -ENOSPC when the table is full. */
int ur_registry_mcast_join(struct ur_registry *r, const union ibv_gid *gid, unsigned ifindex);
void ur_registry_mcast_leave(struct ur_registry *r, const union ibv_gid *gid, unsigned ifindex);
/* The pids of the members of a group (self flagged); returns how many. */
int ur_registry_mcast_members(const struct ur_registry *r, const union ibv_gid *gid,
			      struct ur_reg_owner *out, int max);

/* The communication manager's listeners, kept in the group table under
 * keys no multicast group has: which process listens on a service ID, so
 * that a REQ arriving at port 4791 reaches it.  Service ID 0 lists every
 * process with a CM (one of them answers a REQ nobody listens for). */
int ur_registry_cm_listen(struct ur_registry *r, uint64_t service_id);
void ur_registry_cm_unlisten(struct ur_registry *r, uint64_t service_id);
/* A live listener of service_id: 0, or -ENOENT. */
int ur_registry_cm_listener(const struct ur_registry *r, uint64_t service_id,
			    struct ur_reg_owner *out);

/* Counters: each process publishes its per-device totals (by interface
 * index); a process that ends or dies has its totals folded into a
 * retired table, so the sum is monotonic like a NIC's. */
int ur_registry_publish_counters(struct ur_registry *r, unsigned ifindex, const uint64_t *cnt,
				 unsigned n);
/* The host-wide totals of an interface's device; maps the registry
 * read-only-in-spirit (no slot claimed) if this process has none. */
int ur_registry_read_counters(struct ur_registry *r, unsigned ifindex, uint64_t *cnt, unsigned n);

/* Opens (creating it, mode 0600) a file of this user's in /dev/shm: the
 * fd, or -EPERM if someone else owns it or may read or write it, or
 * -errno.  Links are not followed. */
int ur_registry_open_private(const char *path);
/* The registry file of this user and network namespace. */
int ur_registry_file_path(char *buf, size_t len);
/* The lock file whose exclusive holder serves UDP port 4791 here. */
int ur_registry_router_lock_path(char *buf, size_t len);
/* Where r lives, for messages ("" if it never attached). */
const char *ur_registry_path(const struct ur_registry *r);

/* The live processes of this host that may be the peer at gid owning QP
 * number qpn: in this network namespace if gid is one of its addresses,
 * else in any that has it (this process left out).  Up to max into pids,
 * their number, or -EAGAIN when another thread is looking
 * (registry_peers.c).  An answer for the same block of numbers at the same
 * address serves for 2 ms when max is 4. */
int ur_registry_host_owners(uint32_t qpn, const union ibv_gid *gid, pid_t *pids, int max);

/* The other live processes attached to r (this namespace's), up to max
 * into pids, in slot order: their number.  For a process that hands
 * port 4791 on as it exits (xport/udp). */
int ur_registry_live_pids(const struct ur_registry *r, pid_t *pids, int max);

/* Test hooks: reclaim what dead processes left. Returns slots reclaimed. */
int ur_registry_reclaim_dead(struct ur_registry *r);
/* Removes the registries (and router lock files) this user's processes
 * left in network namespaces that are gone, as every attach does.
 * Returns registries removed. */
int ur_registry_sweep_dead_netns(void);

#endif
