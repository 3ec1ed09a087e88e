#include "core/mr.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/limits.h"
#include "core/pd.h"

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
	struct ur_mr **ns;
	uint8_t *ntag;

	if (t->size >= UR_MAX_MR + 1)
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

int ur_mr_table_insert(struct ur_mr_table *t, struct ur_mr *mr)
{
	uint32_t i;
	int ret = 0;

	pthread_rwlock_wrlock(&t->lock);
	if (t->count >= UR_MAX_MR) {
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
	t->slot[i] = mr;
	t->free_hint = i + 1;
	t->count++;
	mr->index = i;
	mr->ibmr.lkey = (i << 8) | t->tag[i];
	mr->ibmr.rkey = mr->ibmr.lkey;
	t->tag[i]++;
out:
	pthread_rwlock_unlock(&t->lock);
	return ret;
}

void ur_mr_table_remove(struct ur_mr_table *t, struct ur_mr *mr)
{
	pthread_rwlock_wrlock(&t->lock);
	if (mr->index < t->size && t->slot[mr->index] == mr) {
		t->slot[mr->index] = NULL;
		t->count--;
		if (mr->index < t->free_hint)
			t->free_hint = mr->index;
	}
	pthread_rwlock_unlock(&t->lock);
}

struct ur_mr *ur_mr_lookup(struct ur_mr_table *t, uint32_t key)
{
	uint32_t i = key >> 8;
	struct ur_mr *mr;

	if (i == 0 || i >= t->size)
		return NULL;
	mr = t->slot[i];
	if (!mr || mr->ibmr.lkey != key)
		return NULL;
	return mr;
}

void *ur_mr_check(struct ur_mr_table *t, uint32_t key, const struct ur_pd *pd,
		  uint64_t va, uint64_t len, int access)
{
	struct ur_mr *mr = ur_mr_lookup(t, key);
	uint64_t off;

	if (!mr || mr->pd != pd)
		return NULL;
	if ((mr->access & access) != access)
		return NULL;
	/* Overflow-safe: va >= iova and len <= length - (va - iova). */
	if (va < mr->iova)
		return NULL;
	off = va - mr->iova;
	if (off > mr->length || len > mr->length - off)
		return NULL;
	return mr->host + off;
}
