/* The host registry: a small shared-memory table, one per user and network
 * namespace, that makes QP numbers unique across every process of the host
 * and says which process owns each one.  The process holding port 4791
 * uses it to hand packets to their owner; senders use it to reach a local
 * peer directly.
 *
 * QP numbers come in blocks of 256 claimed by a process; a process that
 * dies leaves its slot behind, and the next process to need room reclaims
 * it (liveness is checked by pid and start time, so pid reuse is harmless).
 */
#ifndef UROCE_XPORT_REGISTRY_H
#define UROCE_XPORT_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define UR_REG_MAGIC 0x75524547u      /* "uREG" */
#define UR_REG_VERSION 1u
#define UR_REG_SLOTS 1024u
#define UR_REG_BLOCK_SHIFT 8u
#define UR_REG_BLOCK_QPNS (1u << UR_REG_BLOCK_SHIFT)
#define UR_REG_BLOCKS (1u << (24u - UR_REG_BLOCK_SHIFT))

struct ur_reg_owner {
	pid_t pid;
	uint16_t port4, port6;        /* its direct UDP ports (0: none) */
	bool self;
};

/* Maps the registry and claims this process's slot. 0 or -errno. */
int ur_registry_attach(void);
void ur_registry_detach(void);

int ur_registry_alloc_qpn(uint32_t *qpn);
void ur_registry_free_qpn(uint32_t qpn);
int ur_registry_set_ports(uint16_t port4, uint16_t port6);
/* Who owns qpn on this host; -ENOENT if nobody (or a dead process). */
int ur_registry_lookup(uint32_t qpn, struct ur_reg_owner *out);

/* The lock file whose exclusive holder serves UDP port 4791 here. */
int ur_registry_router_lock_path(char *buf, size_t len);
/* Where the registry lives, for messages. */
const char *ur_registry_path(void);

/* Test hooks: reclaim what dead processes left. Returns slots reclaimed. */
int ur_registry_reclaim_dead(void);

#endif
