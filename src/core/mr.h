/* Memory regions and the key table that maps lkeys/rkeys to them.
 *
 * A key is (table index << 8) | 8-bit tag; the tag changes each time an
 * index is reused, so a stale key held by a peer stops matching.  Lookups
 * happen on the data path under a read lock that also keeps the region
 * registered while its bytes are being copied.
 */
#ifndef UROCE_CORE_MR_H
#define UROCE_CORE_MR_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

struct ur_pd;

struct ur_mr {
	struct ibv_mr ibmr;
	struct ur_pd *pd;
	uint64_t iova;         /* the address the peer uses */
	uint8_t *host;         /* where iova lands in this process */
	uint64_t length;
	int access;            /* IBV_ACCESS_* */
	uint32_t index;
};

static inline struct ur_mr *to_umr(struct ibv_mr *ibmr)
{
	return (struct ur_mr *)ibmr;
}

struct ur_mr_table {
	pthread_rwlock_t lock;
	struct ur_mr **slot;
	uint8_t *tag;          /* next tag per slot */
	uint32_t size;
	uint32_t free_hint;
	uint32_t count;
};

int ur_mr_table_init(struct ur_mr_table *t);
void ur_mr_table_fini(struct ur_mr_table *t);
int ur_mr_table_insert(struct ur_mr_table *t, struct ur_mr *mr);
void ur_mr_table_remove(struct ur_mr_table *t, struct ur_mr *mr);

/* Data-path lookups: call between ur_mr_read_lock/unlock.  Each checks the
 * key, the PD, that [va, va+len) lies inside the region and that the access
 * bits are granted, and returns the host address or NULL. */
static inline void ur_mr_read_lock(struct ur_mr_table *t)
{
	pthread_rwlock_rdlock(&t->lock);
}

static inline void ur_mr_read_unlock(struct ur_mr_table *t)
{
	pthread_rwlock_unlock(&t->lock);
}

struct ur_mr *ur_mr_lookup(struct ur_mr_table *t, uint32_t key);
/* access 0 means local read (always allowed for an lkey). */
void *ur_mr_check(struct ur_mr_table *t, uint32_t key, const struct ur_pd *pd,
		  uint64_t va, uint64_t len, int access);

#endif
