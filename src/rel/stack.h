/* The protocol's per-process state: one per process, shared by every
 * context and QP of it (a context's ->stack).
 *
 * Its parts are defined here, below every file of src/rel that uses them:
 * the reactor and the transports (also lent to contexts for src/core's
 * use), the process's host registry view it attached, the table of this
 * process's QPs, the QPs a full transport stopped.
 * stack_open.c assembles it at the first open and wires the transports'
 * hooks to the protocol.
 */
#ifndef UROCE_REL_STACK_H
#define UROCE_REL_STACK_H

#include <pthread.h>
#include <stdint.h>

#include "engine/engine.h"
#include "rel/mcast.h"
#include "rel/qp_table.h"
#include "rel/res.h"
#include "util/list.h"
#include "xport/xport.h"

struct ur_stack {
	struct ur_engine *engine;
	struct ur_xports xports;
	/* The process's view of the host registry (core/process.h's, attached
	 * as the stack opens, handed to the transports): QPNs, multicast
	 * members, counters. */
	struct ur_registry *reg;

	pthread_rwlock_t qps_lock;          /* qps */
	struct ur_qp_table qps;             /* this process's QPs by number */

	struct ur_mcast mcast;              /* multicast groups -> attached QPs */

	pthread_mutex_t waiting_lock;       /* waiting, and every QP's wait_link */
	struct ur_list waiting;             /* QPs a full transport stopped */
	uint64_t last_turn_ns;              /* a waiting QP last sent on its turn */
	/* The transports' last answer to who is behind (enum ur_behind) and
	 * when: many QPs' timers ask within a moment (timers.c). */
	uint64_t behind_at_ns;
	int behind_memo;
	bool selective;                     /* RC marks its requests and resends
					     * selectively to peers that hold
					     * (UROCE_SELECTIVE_RETRANSMIT=0: off) */
	bool ooo;                           /* RC tolerates reordering: holds
					     * what comes past a gap, NAKs only
					     * once UR_OOO_NAK_AFTER wait behind
					     * it (UROCE_OOO=1: on) */

	pthread_mutex_t gsi_lock;           /* attaching gsi_rx */
	void (*gsi_rx)(void *arg, const uint8_t *mad, size_t len,
		       const union ibv_gid *sgid, const union ibv_gid *dgid);
	void *gsi_arg;                      /* QP1's receiver: the CM, if loaded */

	struct ur_res res;                  /* the resource window (`uroce res`) */

	struct ur_timer housekeeping;       /* transports' ticks, port events, counters */

	/* Dropped before any QP saw them (atomic adds). */
	uint64_t malformed;                 /* not a RoCE packet */
	uint64_t no_qp;                     /* for a QP number nobody here has */
	uint64_t replies_lost;              /* XRC REPLYs that could not be sent */
};

/* The QP numbered qpn, its lock held; NULL if this process has none. */
struct ur_qp *ur_stack_lock_qp(struct ur_stack *s, uint32_t qpn);

#endif
