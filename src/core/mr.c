#include "core/mr.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "core/limits.h"
#include "core/pd.h"
#include "util/fault_guard.h"
#include "util/log.h"
#include "util/random.h"
#include "util/vm_range.h"

/* Slots for every region and window at half load, plus reservations. */
#define MAX_SLOTS (4u * (UR_MAX_MR + UR_MAX_MW))
/* Indexes below this make keys below 2^24; every one is drawn before any
 * above it. */
#define LOW_INDEXES (1u << 16)
#define INDEX_MASK 0xffffffu

int ur_mr_table_init(struct ur_mr_table *t)
{
	memset(t, 0, sizeof(*t));
	t->size = 128;
	t->slot = calloc(t->size, sizeof(*t->slot));
	if (!t->slot)
		return -ENOMEM;
	pthread_rwlock_init(&t->lock, NULL);
	return 0;
}

void ur_mr_table_fini(struct ur_mr_table *t)
{
	pthread_rwlock_destroy(&t->lock);
	free(t->low_free);
	free(t->low_at);
	free(t->slot);
}

/* The low indexes, on the first key drawn (a context that registers
 * nothing pays nothing): all free, in any order. */
static int low_init(struct ur_mr_table *t)
{
	t->low_free = malloc(LOW_INDEXES * sizeof(*t->low_free));
	t->low_at = malloc(LOW_INDEXES * sizeof(*t->low_at));
	if (!t->low_free || !t->low_at) {
		free(t->low_free);
		free(t->low_at);
		t->low_free = t->low_at = NULL;
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < LOW_INDEXES; i++)
		t->low_free[i] = t->low_at[i] = (uint16_t)i;
	t->low_nfree = LOW_INDEXES;
	return 0;
}

/* Moves low index x to position 'to' of low_free, swapping places with
 * what is there. */
static void low_move(struct ur_mr_table *t, uint32_t x, uint32_t to)
{
	uint16_t y = t->low_free[to], from = t->low_at[x];

	t->low_free[from] = y;
	t->low_at[y] = from;
	t->low_free[to] = (uint16_t)x;
	t->low_at[x] = (uint16_t)to;
}

/* Low index x is taken: out of the free part (it is in it). */
static void low_take(struct ur_mr_table *t, uint32_t x)
{
	low_move(t, x, --t->low_nfree);
}

/* Low index x is free again: back into the free part (it is not in it). */
static void low_give(struct ur_mr_table *t, uint32_t x)
{
	low_move(t, x, t->low_nfree++);
}

/* Where index's probe starts: the top bits of a Fibonacci hash.  The low
 * indexes, all taken once 65 536 keys live, are consecutive numbers: as
 * their own slots they made one run of 65 536 full slots, and a high index
 * whose probe started in it walked the run (a quarter of them: tens of
 * thousands of steps for each such key's lookup). */
static uint32_t home(const struct ur_mr_table *t, uint32_t index)
{
	return (uint32_t)((index * 0x9e3779b97f4a7c15ull) >> (64 - __builtin_ctz(t->size)));
}

/* The slot holding index, or the empty slot where it would go. */
static uint32_t probe(const struct ur_mr_table *t, uint32_t index)
{
	uint32_t mask = t->size - 1, i = home(t, index);

	while (t->slot[i].e && t->slot[i].index != index)
		i = (i + 1) & mask;
	return i;
}

/* Backward-shift deletion: the slots after i that probed past it move up,
 * so that no probe stops early at the hole.  A low index goes back to the
 * free ones. */
static void slot_clear(struct ur_mr_table *t, uint32_t i)
{
	uint32_t mask = t->size - 1, j = i;

	if (t->slot[i].index < LOW_INDEXES)
		low_give(t, t->slot[i].index);
	for (;;) {
		uint32_t h;

		j = (j + 1) & mask;
		if (!t->slot[j].e)
			break;
		h = home(t, t->slot[j].index);
		/* Slot j stays if its home lies cyclically in (i, j]. */
		if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
			continue;
		t->slot[i] = t->slot[j];
		i = j;
	}
	t->slot[i].index = 0;
	t->slot[i].e = NULL;
	t->used--;
}

static int grow(struct ur_mr_table *t)
{
	struct ur_key_slot *old = t->slot;
	uint32_t osize = t->size;

	if (t->size >= MAX_SLOTS)
		return -ENOMEM;
	t->slot = calloc(osize * 2, sizeof(*t->slot));
	if (!t->slot) {
		t->slot = old;
		return -ENOMEM;
	}
	t->size = osize * 2;
	for (uint32_t i = 0; i < osize; i++)
		if (old[i].e)
			t->slot[probe(t, old[i].index)] = old[i];
	free(old);
	return 0;
}

/* The index 32 random bits r choose, or false to draw again: while low
 * indexes are free, the one at a uniform position among them (r is
 * refused in the last, partial run of low_nfree values); after, r's low
 * 24 bits if they name a free high index. */
static bool choose_index(const struct ur_mr_table *t, uint32_t r, uint32_t *index)
{
	uint64_t n = t->low_nfree;

	if (n) {
		if (r >= (1ull << 32) - (1ull << 32) % n)
			return false;
		*index = t->low_free[r % n];
		return true;
	}
	*index = r & INDEX_MASK;
	return *index >= LOW_INDEXES && !t->slot[probe(t, *index)].e;
}

/* Takes a fresh index for e (write lock held) and returns a fresh key
 * with it: the index, then an 8-bit variant, both random; never key 0. */
static int take_key(struct ur_mr_table *t, struct ur_key_entry *e, uint32_t *key)
{
	uint32_t index;
	uint64_t r;
	int ret;

	if (!t->low_free && (ret = low_init(t)))
		return ret;
	if ((t->used + 1) * 2 > t->size && (ret = grow(t)))
		return ret;
	do {
		ret = ur_random_bytes(&r, sizeof(r));
		if (ret)
			return ret;
	} while (!choose_index(t, (uint32_t)r, &index) || !(index || (r >> 32) & 0xff));
	if (index < LOW_INDEXES)
		low_take(t, index);
	t->slot[probe(t, index)] = (struct ur_key_slot){ .index = index, .e = e };
	t->used++;
	*key = index << 8 | (uint32_t)(r >> 32 & 0xff);
	return 0;
}

int ur_mr_table_insert(struct ur_mr_table *t, struct ur_key_entry *e)
{
	int ret = -ENOMEM;

	pthread_rwlock_wrlock(&t->lock);
	if (t->count < UR_MAX_MR + UR_MAX_MW)
		ret = take_key(t, e, &e->key);
	if (!ret) {
		e->index = e->key >> 8;
		e->reserved = 0;
		t->count++;
	}
	pthread_rwlock_unlock(&t->lock);
	return ret;
}

/* Frees index if it is held for e (write lock held). */
static bool release(struct ur_mr_table *t, struct ur_key_entry *e, uint32_t index)
{
	uint32_t i = probe(t, index);

	if (t->slot[i].e != e)
		return false;
	slot_clear(t, i);
	return true;
}

void ur_mr_table_remove(struct ur_mr_table *t, struct ur_key_entry *e)
{
	pthread_rwlock_wrlock(&t->lock);
	if (release(t, e, e->index)) {
		t->count--;
		/* Reservations of binds that never ran (flushed): rare, so a
		 * scan; each clear may move a later slot up, hence the rescan. */
		for (uint32_t i = 0; e->reserved && i < t->size; i++)
			if (t->slot[i].e == e) {
				slot_clear(t, i);
				e->reserved--;
				i--;
			}
		e->index = 0;
	}
	pthread_rwlock_unlock(&t->lock);
}

int ur_key_reserve(struct ur_mr_table *t, struct ur_key_entry *e, uint32_t *key)
{
	int ret;

	pthread_rwlock_wrlock(&t->lock);
	ret = take_key(t, e, key);
	if (!ret)
		e->reserved++;
	pthread_rwlock_unlock(&t->lock);
	return ret;
}

void ur_key_unreserve(struct ur_mr_table *t, struct ur_key_entry *e, uint32_t key)
{
	pthread_rwlock_wrlock(&t->lock);
	if ((key >> 8) != e->index && release(t, e, key >> 8))
		e->reserved--;
	pthread_rwlock_unlock(&t->lock);
}

int ur_key_rebind(struct ur_mr_table *t, struct ur_key_entry *e, uint32_t key)
{
	uint32_t index = key >> 8;

	if (index != e->index) {
		uint32_t i = probe(t, index);

		if (t->slot[i].e != e)
			return -EINVAL;
		release(t, e, e->index);
		e->reserved--;
		e->index = index;
	}
	e->key = key;
	return 0;
}

struct ur_key_entry *ur_key_lookup(struct ur_mr_table *t, uint32_t key)
{
	struct ur_key_entry *e;
	uint32_t i;

	i = probe(t, key >> 8);
	e = t->slot[i].e;
	if (!e || e->key != key)
		return NULL;
	return e;
}

struct ur_mr *ur_mr_lookup(struct ur_mr_table *t, uint32_t key)
{
	struct ur_key_entry *e = ur_key_lookup(t, key);

	return e && e->kind == UR_KEY_MR ? container_of(e, struct ur_mr, ke) : NULL;
}

/* [va, va+len) inside [start, start+size), overflow-safe. */
static bool inside(uint64_t start, uint64_t size, uint64_t va, uint64_t len)
{
	uint64_t off;

	if (va < start)
		return false;
	off = va - start;
	return off <= size && len <= size - off;
}

/* The host address of [va, va+len) in mr, whose bounds it lies in; for an
 * implicit region, only if the process maps it so (reading, and writing
 * when access asks for it), or NULL. */
static void *host_of(const struct ur_mr *mr, uint64_t va, uint64_t len, int access)
{
	if (mr->implicit)
		return ur_vm_range_ok(va, len, access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
							  IBV_ACCESS_REMOTE_ATOMIC))
		       ? (void *)(uintptr_t)va : NULL;
	return mr->host + (va - mr->iova);
}

void *ur_mr_check(struct ur_mr_table *t, uint32_t key, const struct ur_pd *pd,
		  uint64_t va, uint64_t len, int access)
{
	struct ur_mr *mr = ur_mr_lookup(t, key);

	if (!mr || mr->pd != pd || (mr->access & access) != access ||
	    !inside(mr->iova, mr->length, va, len))
		return NULL;
	return host_of(mr, va, len, access);
}

void *ur_mr_check_remote(struct ur_mr_table *t, uint32_t key, const struct ur_pd *pd,
			 const void *qp, uint64_t va, uint64_t len, int access)
{
	struct ur_key_entry *e = ur_key_lookup(t, key);
	struct ur_mw *mw;

	if (!e)
		return NULL;
	if (e->kind == UR_KEY_MR)
		return ur_mr_check(t, key, pd, va, len, access);
	mw = container_of(e, struct ur_mw, ke);
	if (!mw->bound || (mw->access & access) != access ||
	    !inside(mw->addr, mw->length, va, len))
		return NULL;
	/* Type 1: reachable through any QP of its PD; type 2: only its QP. */
	if (mw->ibmw.type == IBV_MW_TYPE_1 ? mw->pd != pd : mw->qp != qp)
		return NULL;
	return host_of(mw->mr, va, len, access);
}

bool ur_mr_scatter(struct ur_mr_table *t, const struct ur_pd *pd, const struct ibv_sge *sge,
		   uint32_t nsge, uint32_t off, const uint8_t *src, uint32_t len)
{
	for (uint32_t i = 0; i < nsge && len; i++) {
		uint32_t take;
		void *dst;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		take = ur_min(sge[i].length - off, len);
		dst = ur_mr_check(t, sge[i].lkey, pd, sge[i].addr + off, take,
				  IBV_ACCESS_LOCAL_WRITE);
		/* Unmapped under a live region: a protection error. */
		if (!dst || !ur_guarded_copy(dst, src, take))
			return false;
		src += take;
		len -= take;
		off = 0;
	}
	return len == 0;
}

int ur_mr_create(struct ibv_pd *ibpd, void *addr, size_t length, uint64_t iova, unsigned access,
		 bool implicit, struct ur_mr **out)
{
	struct ur_pd *pd = to_upd(ibpd);
	struct ur_context *ctx = pd->ctx;
	struct ur_mr *mr = calloc(1, sizeof(*mr));
	int ret;

	if (!mr)
		return -ENOMEM;
	mr->pd = pd;
	mr->host = addr;
	mr->length = length;
	mr->iova = (access & IBV_ACCESS_ZERO_BASED) || implicit ? 0 : iova;
	mr->implicit = implicit;
	mr->access = (int)access;
	mr->ibmr.context = ibpd->context;
	mr->ibmr.pd = ibpd;
	mr->ibmr.addr = addr;
	mr->ibmr.length = length;
	mr->ke.kind = UR_KEY_MR;
	ret = ur_mr_table_insert(&ctx->mrs, &mr->ke);
	if (ret) {
		free(mr);
		return ret;
	}
	mr->ibmr.lkey = mr->ibmr.rkey = mr->ke.key;
	mr->ibmr.handle = mr->ke.index;
	atomic_fetch_add(&pd->users, 1);
	ur_mr_expose(ctx, mr);
	*out = mr;
	return 0;
}

void ur_mr_destroy(struct ur_context *ctx, struct ur_mr *mr)
{
	/* Peers copying into it directly are waited out first, then the
	 * table's write lock waits out our own copies. */
	ur_mr_revoke(ctx, mr);
	ur_mr_table_remove(&ctx->mrs, &mr->ke);
	ur_mr_share_forget(mr);
	atomic_fetch_sub(&mr->pd->users, 1);
	if (mr->dm_users)
		__atomic_sub_fetch(mr->dm_users, 1, __ATOMIC_RELEASE);
	free(mr);
}
