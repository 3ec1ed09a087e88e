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

/* Keys and values in one allocation after the header. */
static struct ur_qp_slots *slots_new(uint32_t size)
{
	struct ur_qp_slots *sl = calloc(1, sizeof(*sl) + size * (sizeof(uint32_t) +
								 sizeof(struct ur_qp *)));

	if (!sl)
		return NULL;
	sl->size = size;
	sl->vals = (struct ur_qp **)(sl + 1);
	sl->keys = (uint32_t *)(sl->vals + size);
	return sl;
}

int ur_qp_table_init(struct ur_qp_table *t)
{
	t->slots = slots_new(64);
	t->count = 0;
	t->seq = 0;
	return t->slots ? 0 : -ENOMEM;
}

void ur_qp_table_fini(struct ur_qp_table *t)
{
	for (struct ur_qp_slots *sl = t->slots, *next; sl; sl = next) {
		next = sl->outgrown;
		free(sl);
	}
	t->slots = NULL;
}

/* A change: the count odd around it, so that a racing reader that saw
 * any of it looks again.  Slots are stored with release and loaded with
 * acquire (plain moves on x86), no fences: a reader that loads a slot
 * written in a change sees the count odd, or past it, when it looks at
 * the count again after. */
static void change_begin(struct ur_qp_table *t)
{
	__atomic_store_n(&t->seq, t->seq + 1, __ATOMIC_RELAXED);
}

static void change_end(struct ur_qp_table *t)
{
	__atomic_store_n(&t->seq, t->seq + 1, __ATOMIC_RELEASE);
}

/* The unit test's look at every slot written where readers may be. */
#ifndef UR_QP_TABLE_WRITTEN
#define UR_QP_TABLE_WRITTEN(t) ((void)0)
#endif

/* t: the table whose readers may see sl (NULL: slots not yet published). */
static void slot_set(const struct ur_qp_table *t, struct ur_qp_slots *sl, uint32_t i,
		     uint32_t qpn, struct ur_qp *qp)
{
	__atomic_store_n(&sl->keys[i], qpn, __ATOMIC_RELEASE);
	__atomic_store_n(&sl->vals[i], qp, __ATOMIC_RELEASE);
	if (t)
		UR_QP_TABLE_WRITTEN(t);
}

static void put(const struct ur_qp_table *t, struct ur_qp_slots *sl, uint32_t *count,
		uint32_t qpn, struct ur_qp *qp)
{
	uint32_t i = hash32(qpn) & (sl->size - 1);

	while (sl->keys[i] && sl->keys[i] != qpn)
		i = (i + 1) & (sl->size - 1);
	if (!sl->keys[i])
		(*count)++;
	slot_set(t, sl, i, qpn, qp);
}

int ur_qp_table_insert(struct ur_qp_table *t, uint32_t qpn, struct ur_qp *qp)
{
	struct ur_qp_slots *sl = t->slots;

	if ((t->count + 1) * 2 > sl->size) {
		struct ur_qp_slots *bigger = slots_new(sl->size * 2);
		uint32_t n = 0;

		if (!bigger)
			return -ENOMEM;
		for (uint32_t i = 0; i < sl->size; i++)
			if (sl->keys[i])
				put(NULL, bigger, &n, sl->keys[i], sl->vals[i]);
		bigger->outgrown = sl;
		sl = bigger;
	}
	change_begin(t);
	__atomic_store_n(&t->slots, sl, __ATOMIC_RELEASE);
	put(t, sl, &t->count, qpn, qp);
	change_end(t);
	return 0;
}

void ur_qp_table_remove(struct ur_qp_table *t, uint32_t qpn)
{
	struct ur_qp_slots *sl = t->slots;
	uint32_t mask = sl->size - 1, i = hash32(qpn) & mask, j;

	while (sl->keys[i] != qpn) {
		if (!sl->keys[i])
			return;
		i = (i + 1) & mask;
	}
	change_begin(t);
	slot_set(t, sl, i, 0, NULL);
	t->count--;
	/* Shift back later entries whose probe chain crossed the hole. */
	for (j = (i + 1) & mask; sl->keys[j]; j = (j + 1) & mask) {
		uint32_t home = hash32(sl->keys[j]) & mask;

		if (((j - home) & mask) >= ((j - i) & mask)) {
			slot_set(t, sl, i, sl->keys[j], sl->vals[j]);
			slot_set(t, sl, j, 0, NULL);
			i = j;
		}
	}
	change_end(t);
}

struct ur_qp *ur_qp_table_find(const struct ur_qp_table *t, uint32_t qpn)
{
	const struct ur_qp_slots *sl = t->slots;
	uint32_t mask = sl->size - 1, i = hash32(qpn) & mask;

	while (sl->keys[i]) {
		if (sl->keys[i] == qpn)
			return sl->vals[i];
		i = (i + 1) & mask;
	}
	return NULL;
}

/* A look at slots that may be changing under it: bounded, so that a torn
 * view cannot keep it probing; the caller's count check discards it. */
static struct ur_qp *look(const struct ur_qp_slots *sl, uint32_t qpn)
{
	uint32_t mask = sl->size - 1, i = hash32(qpn) & mask, k;

	for (uint32_t n = 0; n <= mask; n++, i = (i + 1) & mask) {
		k = __atomic_load_n(&sl->keys[i], __ATOMIC_ACQUIRE);
		if (!k)
			break;
		if (k == qpn)
			return __atomic_load_n(&sl->vals[i], __ATOMIC_ACQUIRE);
	}
	return NULL;
}

struct ur_qp *ur_qp_table_find_racing(const struct ur_qp_table *t, uint32_t qpn)
{
	for (;;) {
		unsigned seq = __atomic_load_n(&t->seq, __ATOMIC_ACQUIRE);
		struct ur_qp *qp;

		if (seq & 1) {
#if defined(__x86_64__) || defined(__i386__)
			__builtin_ia32_pause();
#endif
			continue;
		}
		qp = look(__atomic_load_n(&t->slots, __ATOMIC_ACQUIRE), qpn);
		if (__atomic_load_n(&t->seq, __ATOMIC_RELAXED) == seq)
			return qp;
	}
}
