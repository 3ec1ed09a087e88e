/* Work queues: power-of-two rings of fixed-size slots with free-running
 * indices.  Used under the owning QP's (or SRQ's) lock, so the indices need
 * no atomics: producer (post) and consumers (requester, responder,
 * completer) all hold that lock. */
#ifndef UROCE_CORE_WQ_H
#define UROCE_CORE_WQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

/* A receive WQE as posted (a QP's RQ, an SRQ). */
struct ur_recv_wqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t length;         /* sum of the SGE lengths */
	struct ibv_sge sge[];
};

struct ur_wq {
	uint8_t *buf;
	size_t slot_size;
	uint32_t size;     /* slots, a power of two */
	uint32_t max;      /* usable entries (the max_wr granted) */
	uint32_t head;     /* oldest entry in use */
	uint32_t tail;     /* next free slot */
};

int ur_wq_init(struct ur_wq *q, uint32_t max, size_t slot_size);
void ur_wq_fini(struct ur_wq *q);
/* Posts the chain of receive requests at wr into q (a QP's RQ or an SRQ, its
 * owner's lock held), each of at most max_sge SGEs: 0, or -ENOMEM (q full)
 * or -EINVAL (more SGEs) with *bad the request that failed; those before
 * it stay posted. */
int ur_wq_post_recv(struct ur_wq *q, struct ibv_recv_wr *wr, uint32_t max_sge,
		    struct ibv_recv_wr **bad);


static inline void *ur_wq_slot(const struct ur_wq *q, uint32_t idx)
{
	return q->buf + (size_t)(idx & (q->size - 1)) * q->slot_size;
}

static inline uint32_t ur_wq_used(const struct ur_wq *q)
{
	return q->tail - q->head;
}

static inline bool ur_wq_full(const struct ur_wq *q)
{
	return ur_wq_used(q) >= q->max;
}

static inline bool ur_wq_empty(const struct ur_wq *q)
{
	return q->tail == q->head;
}

#endif
