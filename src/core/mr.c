#include "core/mr.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/limits.h"
#include "core/pd.h"
#include "util/copy.h"

int ur_mr_table_init(struct ur_mr_table *t)
{
	memset(t, 0, sizeof(*t));
	t->size = 64;
	t->slot = calloc(t->size, sizeof(*t->slot));
	t->tag = calloc(t->size, 1);
	if (!t->slot || !t->tag) {
		free(t->slot);
		free(t->tag);
		return -ENOMEM;
	}
	/* Index 0 is never used, so key 0 is never valid. */
	t->free_hint = 1;
	pthread_rwlock_init(&t->lock, NULL);
	return 0;
}

void ur_mr_table_fini(struct ur_mr_table *t)
{
	pthread_rwlock_destroy(&t->lock);
	free(t->slot);
	free(t->tag);
}

static int grow(struct ur_mr_table *t)
{
	uint32_t nsize = t->size * 2;
	struct ur_key_entry **ns;
	uint8_t *ntag;

	if (t->size >= UR_MAX_MR + UR_MAX_MW + 1)
		return -ENOMEM;
	ns = realloc(t->slot, nsize * sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	t->slot = ns;
	ntag = realloc(t->tag, nsize);
	if (!ntag)
		return -ENOMEM;
	t->tag = ntag;
	memset(&t->slot[t->size], 0, (nsize - t->size) * sizeof(*ns));
	memset(&t->tag[t->size], 0, nsize - t->size);
	t->free_hint = t->size;
	t->size = nsize;
	return 0;
}

int ur_mr_table_insert(struct ur_mr_table *t, struct ur_key_entry *e)
{
	uint32_t i;
	int ret = 0;

	pthread_rwlock_wrlock(&t->lock);
	if (t->count >= UR_MAX_MR + UR_MAX_MW) {
		ret = -ENOMEM;
		goto out;
	}
	for (;;) {
		for (i = t->free_hint; i < t->size; i++)
			if (!t->slot[i])
				break;
		if (i < t->size)
			break;
		for (i = 1; i < t->free_hint; i++)
			if (!t->slot[i])
				break;
		if (i < t->free_hint)
			break;
		ret = grow(t);
		if (ret)
			goto out;
	}
	t->slot[i] = e;
	t->free_hint = i + 1;
	t->count++;
	e->index = i;
	e->key = (i << 8) | t->tag[i];
	t->tag[i]++;
out:
	pthread_rwlock_unlock(&t->lock);
	return ret;
}

void ur_mr_table_remove(struct ur_mr_table *t, struct ur_key_entry *e)
{
	pthread_rwlock_wrlock(&t->lock);
	if (e->index < t->size && t->slot[e->index] == e) {
		t->slot[e->index] = NULL;
		t->count--;
		if (e->index < t->free_hint)
			t->free_hint = e->index;
	}
	pthread_rwlock_unlock(&t->lock);
}

struct ur_key_entry *ur_key_lookup(struct ur_mr_table *t, uint32_t key)
{
	uint32_t i = key >> 8;
	struct ur_key_entry *e;

	if (i == 0 || i >= t->size)
		return NULL;
	e = t->slot[i];
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

void *ur_mr_check(struct ur_mr_table *t, uint32_t key, const struct ur_pd *pd,
		  uint64_t va, uint64_t len, int access)
{
	struct ur_mr *mr = ur_mr_lookup(t, key);

	if (!mr || mr->pd != pd || (mr->access & access) != access ||
	    !inside(mr->iova, mr->length, va, len))
		return NULL;
	return mr->host + (va - mr->iova);
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
	return mw->mr->host + (va - mw->mr->iova);
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
		if (!dst)
			return false;
		ur_memcpy(dst, src, take);
		src += take;
		len -= take;
		off = 0;
	}
	return len == 0;
}
