/* Memory regions, memory windows, and the key table that maps lkeys and
 * rkeys to them.
 *
 * A key is, as the IBA names its parts, a 24-bit index and an 8-bit key
 * (the variant).  Both are drawn from the kernel's CSPRNG at every
 * registration, window allocation and type 1 bind, so that a peer that was
 * not given a key cannot guess one and a stale key stops matching.  Laid
 * out as a NIC's and rxe's keys are, the first regions' keys fit in 24
 * bits (programs print them with %06x): while any of the 2^16 low indexes
 * is free, the index is drawn uniformly among the free low ones, so the
 * keys of the first 65 536 live regions and windows are below 2^24 and
 * carry 24 unpredictable bits (16 of index, 8 of variant; a guess hits
 * one of N live keys with probability N / 2^24); past that, among the
 * free higher ones (up to 32 bits).  Key 0 is never drawn.  A type 2 bind
 * keeps the window's index and takes the 8-bit key the consumer chose (the
 * IBA leaves that byte to the consumer).  The table is open addressing on
 * the index, O(1); the low indexes' free set is an array with each
 * index's place in it, so a draw among them is O(1) too.  Lookups happen
 * on the data path under a read lock that also keeps the region registered
 * while its bytes are being copied.
 */
#ifndef UROCE_CORE_MR_H
#define UROCE_CORE_MR_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "util/compiler.h"
#include "util/list.h"
#include "util/vm_share.h"

struct ur_context;
struct ur_pd;

enum ur_key_kind {
	UR_KEY_MR = 1,
	UR_KEY_MW,
};

/* What a key table slot points to, embedded in an MR or an MW. */
struct ur_key_entry {
	uint8_t kind;
	uint32_t index;        /* key >> 8: where the table finds it */
	uint32_t key;          /* the valid key (an MW's changes at each bind) */
	uint32_t reserved;     /* indexes held for type 1 binds not yet run */
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
	uint32_t *dm_users;    /* over device memory: its count of regions (verbs/dm.c) */
	bool exposed;          /* published to transports that copy into us */
	bool shared;           /* its pages moved into a memfd peers map (share) */
	struct ur_vm_share share;
	/* mr_share.c: bytes peers copied into and out of it by the kernel,
	 * whether a move was tried (or is queued), its place in the queue. */
	uint64_t placed_by_kernel;
	bool share_tried;
	bool share_queued;
	struct ur_list share_link;
	/* On mr_share.c's list of published private regions while it is one:
	 * a neighbour's move takes it along when they share a page. */
	bool in_private;
	struct ur_list private_link;
	bool implicit;         /* implicit on-demand: the whole address space,
				* each access checked against the mappings */
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

/* One index in use: an entry's own, or one reserved for a type 1 bind. */
struct ur_key_slot {
	uint32_t index;
	struct ur_key_entry *e;  /* NULL: empty */
};

struct ur_mr_table {
	pthread_rwlock_t lock;
	struct ur_key_slot *slot;   /* linear probing; at most half full */
	uint32_t size;              /* a power of two */
	uint32_t used;              /* slots taken */
	uint32_t count;             /* entries (regions and windows) */
	uint16_t *low_free;         /* the 2^16 low indexes, the free ones first */
	uint16_t *low_at;           /* each low index's place in low_free */
	uint32_t low_nfree;
};

int ur_mr_table_init(struct ur_mr_table *t);
void ur_mr_table_fini(struct ur_mr_table *t);
/* Draws a fresh key for e and sets e->index and e->key; -ENOMEM past the
 * limits, or the CSPRNG's error. */
int ur_mr_table_insert(struct ur_mr_table *t, struct ur_key_entry *e);
/* Takes e and every index reserved for it out of the table. */
void ur_mr_table_remove(struct ur_mr_table *t, struct ur_key_entry *e);

/* A type 1 bind's new key: a fresh index is reserved for e now (no other
 * key can take it) but matches nothing until the bind runs and calls
 * ur_key_rebind; ur_key_unreserve gives it back if the bind is never
 * posted. */
int ur_key_reserve(struct ur_mr_table *t, struct ur_key_entry *e, uint32_t *key);
void ur_key_unreserve(struct ur_mr_table *t, struct ur_key_entry *e, uint32_t key);
/* Makes key e's valid key (write lock held): its index is e's own or one
 * reserved for e, which then becomes e's own.  -EINVAL otherwise. */
int ur_key_rebind(struct ur_mr_table *t, struct ur_key_entry *e, uint32_t key);

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

/* A region of ibpd over [addr, addr + length) seen at iova (implicit: the
 * whole address space, zero-based), keyed in its context's table, its
 * ibv_mr filled and published to peers (ur_mr_expose); the arguments
 * checked by the caller.  ur_mr_destroy takes it back from the peers and
 * the table (no window may be bound to it) and frees it. */
int ur_mr_create(struct ibv_pd *ibpd, void *addr, size_t length, uint64_t iova, unsigned access,
		 bool implicit, struct ur_mr **out);
void ur_mr_destroy(struct ur_context *ctx, struct ur_mr *mr);

/* A region with remote access, published to the transports that copy
 * into (or out of) this process directly; ur_mr_revoke takes it back and
 * returns once no peer copies into it any more.  Before any change to the
 * region and before it goes.
 *
 * Exposing publishes the file the region's pages are shared through
 * already (util/vm_share.h); private pages move into a memfd later, once
 * peers copy into the region (ur_mr_note_placed), or at once with
 * UROCE_SHM_SHARE_MR=1, so that peers copy with memcpy;
 * UROCE_SHM_SHARE_MR=0 (or single copy off) does neither: peers then copy
 * with the kernel.  Revoking moves them back. */
void ur_mr_expose(struct ur_context *ctx, struct ur_mr *mr);
void ur_mr_revoke(struct ur_context *ctx, struct ur_mr *mr);

/* A peer copied len bytes straight into or out of mr (a WRITE or READ
 * placed by its sender): by the kernel unless mr is shared.  Enough of
 * them queue its move into a memfd (mr_share.c).  The table's read lock
 * held. */
void ur_mr_note_placed(struct ur_context *ctx, struct ur_mr *mr, uint64_t len);
/* mr, out of the key table and about to be freed, off the queue of moves;
 * every region of ctx, which closes. */
void ur_mr_share_forget(struct ur_mr *mr);
void ur_mr_share_forget_context(struct ur_context *ctx);

/* Memory windows (mw.c), executed for a QP.  A BIND_MW or LOCAL_INV work
 * request: its completion status. */
struct ur_qp;
struct ur_send_wqe;
enum ibv_wc_status ur_mw_local_op(struct ur_qp *qp, struct ur_send_wqe *w);
/* SEND with invalidate at the responder: false if rkey may not be. */
bool ur_mw_remote_invalidate(struct ur_qp *qp, uint32_t rkey);

#endif
