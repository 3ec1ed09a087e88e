#include "rel/qp_table.h"

#include <errno.h>
#include <stdlib.h>

static uint32_t hash32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

static int alloc(struct ur_qp_table *t, uint32_t size)
{
	t->keys = calloc(size, sizeof(*t->keys));
	t->vals = calloc(size, sizeof(*t->vals));
	if (!t->keys || !t->vals) {
		free(t->keys);
		free(t->vals);
		return -ENOMEM;
	}
	t->size = size;
	t->count = 0;
	return 0;
}

int ur_qp_table_init(struct ur_qp_table *t)
{
	return alloc(t, 64);
}

void ur_qp_table_fini(struct ur_qp_table *t)
{
	free(t->keys);
	free(t->vals);
}

static void put(struct ur_qp_table *t, uint32_t qpn, struct ur_qp *qp)
{
	uint32_t i = hash32(qpn) & (t->size - 1);

	while (t->keys[i] && t->keys[i] != qpn)
		i = (i + 1) & (t->size - 1);
	if (!t->keys[i])
		t->count++;
	t->keys[i] = qpn;
	t->vals[i] = qp;
}

int ur_qp_table_insert(struct ur_qp_table *t, uint32_t qpn, struct ur_qp *qp)
{
	if ((t->count + 1) * 2 > t->size) {
		struct ur_qp_table old = *t;

		if (alloc(t, old.size * 2)) {
			*t = old;
			return -ENOMEM;
		}
		for (uint32_t i = 0; i < old.size; i++)
			if (old.keys[i])
				put(t, old.keys[i], old.vals[i]);
		ur_qp_table_fini(&old);
	}
	put(t, qpn, qp);
	return 0;
}

void ur_qp_table_remove(struct ur_qp_table *t, uint32_t qpn)
{
	uint32_t mask = t->size - 1, i = hash32(qpn) & mask, j;

	while (t->keys[i] != qpn) {
		if (!t->keys[i])
			return;
		i = (i + 1) & mask;
	}
	t->keys[i] = 0;
	t->vals[i] = NULL;
	t->count--;
	/* Shift back later entries whose probe chain crossed the hole. */
	for (j = (i + 1) & mask; t->keys[j]; j = (j + 1) & mask) {
		uint32_t home = hash32(t->keys[j]) & mask;

		if (((j - home) & mask) >= ((j - i) & mask)) {
			t->keys[i] = t->keys[j];
			t->vals[i] = t->vals[j];
			t->keys[j] = 0;
			t->vals[j] = NULL;
			i = j;
		}
	}
}

struct ur_qp *ur_qp_table_find(const struct ur_qp_table *t, uint32_t qpn)
{
	uint32_t mask = t->size - 1, i = hash32(qpn) & mask;

	while (t->keys[i]) {
		if (t->keys[i] == qpn)
			return t->vals[i];
		i = (i + 1) & mask;
	}
	return NULL;
}
