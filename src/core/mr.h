/* Memory regions, memory windows, and the key table that maps lkeys and
 * rkeys to them.
 *
 * A key is (table index << 8) | 8-bit tag; the tag changes each time an
 * index is reused (and, for a memory window, at every bind), so a stale
 * key held by a peer stops matching.  Lookups happen on the data path
 * under a read lock that also keeps the region registered while its bytes
 * are being copied.
 */
#ifndef UROCE_CORE_MR_H
#define UROCE_CORE_MR_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "util/compiler.h"

struct ur_pd;

enum ur_key_kind {
	UR_KEY_MR = 1,
	UR_KEY_MW,
};

/* What a key table slot points to, embedded in an MR or an MW. */
struct ur_key_entry {
	uint8_t kind;
	uint32_t index;
	uint32_t key;          /* the valid key (an MW's changes at each bind) */
};

struct ur_mr {
	struct ibv_mr ibmr;
	struct ur_key_entry ke;
	struct ur_pd *pd;
	uint64_t iova;         /* the address the peer uses */
	uint8_t *host;         /* where iova lands in this process */
	uint64_t length;
	int access;            /* IBV_ACCESS_* */
	uint32_t windows;      /* MWs bound to it: dereg fails with EBUSY */
};

struct ur_mw {
	struct ibv_mw ibmw;
	struct ur_key_entry ke;
	struct ur_pd *pd;
	bool bound;
	struct ur_mr *mr;      /* the region it exposes a part of */
	uint64_t addr;         /* window start, in the MR's iova space */
	uint64_t length;
	int access;            /* remote access the bind granted */
	const void *qp;        /* type 2: the only QP it may be reached through */
};

static inline struct ur_mr *to_umr(struct ibv_mr *ibmr)
{
	return container_of(ibmr, struct ur_mr, ibmr);
}

static inline struct ur_mw *to_umw(struct ibv_mw *ibmw)
{
	return container_of(ibmw, struct ur_mw, ibmw);
}

struct ur_mr_table {
	pthread_rwlock_t lock;
	struct ur_key_entry **slot;
	uint8_t *tag;          /* next tag per slot */
	uint32_t size;
	uint32_t free_hint;
	uint32_t count;
};

int ur_mr_table_init(struct ur_mr_table *t);
void ur_mr_table_fini(struct ur_mr_table *t);
/* Takes a free index and sets e->index and e->key. */
int ur_mr_table_insert(struct ur_mr_table *t, struct ur_key_entry *e);
void ur_mr_table_remove(struct ur_mr_table *t, struct ur_key_entry *e);

/* Data-path lookups: call between ur_mr_read_lock/unlock. */
static inline void ur_mr_read_lock(struct ur_mr_table *t)
{
	pthread_rwlock_rdlock(&t->lock);
}

static inline void ur_mr_read_unlock(struct ur_mr_table *t)
{
	pthread_rwlock_unlock(&t->lock);
}

/* The MR an lkey names (never an MW), or NULL. */
struct ur_mr *ur_mr_lookup(struct ur_mr_table *t, uint32_t key);
struct ur_key_entry *ur_key_lookup(struct ur_mr_table *t, uint32_t key);

/* Local access through an lkey: checks the key, the PD, that
 * [va, va+len) lies inside the region and that the access bits (0 for a
 * read) are granted.  Returns the host address or NULL. */
void *ur_mr_check(struct ur_mr_table *t, uint32_t key, const struct ur_pd *pd,
		  uint64_t va, uint64_t len, int access);

/* Remote access through an rkey, which may name an MR or a bound MW; qp
 * is the responder QP (a type 2 window is reachable only through the QP it
 * was bound on).  Same checks, same result. */
void *ur_mr_check_remote(struct ur_mr_table *t, uint32_t key, const struct ur_pd *pd,
			 const void *qp, uint64_t va, uint64_t len, int access);

/* Scatters len bytes into SGEs, starting at byte offset off of the list:
 * every SGE's lkey must name an MR of pd granting local write.  False (and
 * maybe some bytes placed) if one does not.  Read lock held. */
bool ur_mr_scatter(struct ur_mr_table *t, const struct ur_pd *pd, const struct ibv_sge *sge,
		   uint32_t nsge, uint32_t off, const uint8_t *src, uint32_t len);

/* Memory windows (mw.c), executed for a QP.  A BIND_MW or LOCAL_INV work
 * request: its completion status. */
struct ur_qp;
struct ur_send_wqe;
enum ibv_wc_status ur_mw_local_op(struct ur_qp *qp, struct ur_send_wqe *w);
/* SEND with invalidate at the responder: false if rkey may not be. */
bool ur_mw_remote_invalidate(struct ur_qp *qp, uint32_t rkey);

#endif
