/* Completion queues (cq.c, cq_ex.c), their events on completion channels
 * (channel.h).
 *
 * The protocol pushes completions under the CQ's spinlock; the application
 * polls them with ibv_poll_cq or the ibv_cq_ex interface.  A CQ armed with
 * ibv_req_notify_cq posts one event to its channel at the next (solicited)
 * completion, after the spinlock is released.
 */
#ifndef UROCE_CORE_CQ_H
#define UROCE_CORE_CQ_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "core/channel.h"
#include "engine/engine.h"
#include "util/compiler.h"
#include "util/list.h"

struct ur_context;

struct ur_cqe {
	struct ibv_wc wc;
	uint64_t ts_ns;        /* completion time (CLOCK_MONOTONIC) */
	uint64_t tm_tag;       /* tag matching (ibv_wc_read_tm_info) */
	uint32_t tm_priv;
};

struct ur_cq {
	struct ibv_cq_ex ibcq;         /* ibv_cq prefix + the extended poll ops */
	struct ur_context *ctx;
	struct ur_list ctx_link;       /* on ctx->cqs */
	pthread_spinlock_t lock;
	struct ur_cqe *ring;
	uint32_t size;                 /* power of two > depth */
	uint32_t depth;                /* the usable entries (ibv_cq.cqe) */
	uint32_t head, tail;           /* free-running consumer/producer */
	bool armed, solicited_only;
	bool overrun;                  /* a completion was lost: CQ error */
	uint64_t wc_flags_ex;          /* IBV_WC_EX_WITH_* asked at creation */
	uint32_t events_reported;      /* channel events read by the application:
					  ibv_destroy_cq waits for their acks */
	uint32_t users;                /* QPs/SRQs using it: destroy -> EBUSY */
	struct ur_cqe cur;             /* ibv_start_poll/next_poll cursor */

	/* Event moderation (ibv_modify_cq): an armed CQ reports an event after
	 * mod_count completions or mod_period_us after the first, whichever
	 * comes first; an error completion reports at once. */
	uint16_t mod_count;
	uint16_t mod_period_us;
	uint32_t mod_pending;
	bool mod_timer_armed;          /* decided under the lock, armed after it */
	bool mod_timer_ready;          /* registered with the reactor (ibcq.mutex) */
	struct ur_timer mod_timer;
};

static inline struct ur_cq *to_ucq(struct ibv_cq *ibcq)
{
	return container_of((struct ibv_cq_ex *)ibcq, struct ur_cq, ibcq);
}

/* Reads one event from a completion channel: the CQ it is for, counted
 * as reported (destroy waits for its acknowledgement).  Blocking unless
 * the fd is O_NONBLOCK.  0 or -errno. */
int ur_cq_get_event(struct ur_comp_channel *ch, struct ur_cq **cq);

int ur_cq_create(struct ur_context *ctx, const struct ibv_cq_init_attr_ex *attr,
		 struct ur_cq **out);
int ur_cq_destroy(struct ur_cq *cq);
int ur_cq_resize(struct ur_cq *cq, int cqe);
int ur_cq_poll(struct ur_cq *cq, int n, struct ibv_wc *wc);
/* The extended interface: its accessors, and the start of a poll, which
 * holds the CQ lock until ibv_end_poll when it returns 0 (-ENOENT: empty). */
void ur_cq_init_ex_ops(struct ur_cq *cq);
int ur_cq_start_poll(struct ur_cq *cq);
/* The next completion of a started poll; -ENOENT: none. */
int ur_cq_next_poll(struct ur_cq *cq);
int ur_cq_req_notify(struct ur_cq *cq, int solicited_only);
/* Whether the CQ holds nothing, read without its lock: a poll that finds
 * it so takes no lock.  An entry pushed before the caller learnt of it
 * (an event, a flag it synchronised with) is seen. */
static inline bool ur_cq_looks_empty(struct ur_cq *cq)
{
	return __atomic_load_n(&cq->tail, __ATOMIC_ACQUIRE) ==
	       __atomic_load_n(&cq->head, __ATOMIC_RELAXED);
}

/* Whether the CQ is armed: its next completion posts an event.  Read
 * without the lock: a hint for how the caller will wait. */
bool ur_cq_armed(struct ur_cq *cq);
int ur_cq_modify(struct ur_cq *cq, const struct ibv_modify_cq_attr *attr);

/* Removes the queued completions of one QP, as a device does when the QP
 * is reset or destroyed: they describe work that no longer exists. */
void ur_cq_purge_qp(struct ur_cq *cq, uint32_t qp_num);

/* Producer side.  solicited: the completion came with the SE bit.  Returns
 * -ENOSPC on overrun (the completion is lost and a CQ error event raised). */
int ur_cq_push(struct ur_cq *cq, const struct ibv_wc *wc, bool solicited);
/* The same, with a tag-matching completion's tag and application context. */
int ur_cq_push_tm(struct ur_cq *cq, const struct ibv_wc *wc, bool solicited, uint64_t tag,
		  uint32_t priv);

#endif
