/* Unit tests of the QPN -> QP table (qp_table.c), white-box: collisions in
 * one probe chain, chains wrapping past the end, backward-shift deletion
 * keeping every chain reachable, growth, a long random run checked op
 * by op against a reference model, and readers without the lock beside
 * a writer. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "ut.h"
#include "ut_rnd.h"
#include "util/compiler.h"

/* Every slot written where readers may look: the count must be odd then,
 * so that a racing reader looks again. */
static unsigned written, written_even;
#define UR_QP_TABLE_WRITTEN(t) (written++, written_even += !((t)->seq & 1))

#include "rel/qp_table.c"

static struct ur_qp *val(uint32_t k)
{
	return (struct ur_qp *)(uintptr_t)(0x1000 + (uintptr_t)k * 8);
}

/* The linear-probing invariant: every key sits at or after its home
 * bucket with no empty slot in between; and the count is right. */
static bool table_ok(const struct ur_qp_table *t)
{
	uint32_t mask = t->slots->size - 1, n = 0;

	if (t->slots->size & mask)
		return false;
	for (uint32_t i = 0; i < t->slots->size; i++) {
		uint32_t k = t->slots->keys[i];

		if (!k) {
			if (t->slots->vals[i])
				return false;
			continue;
		}
		n++;
		for (uint32_t j = hash32(k) & mask; j != i; j = (j + 1) & mask)
			if (!t->slots->keys[j])
				return false;
		if (ur_qp_table_find(t, k) != t->slots->vals[i])
			return false;
	}
	return n == t->count && 2 * t->count <= t->slots->size;
}

/* QPNs whose home bucket in a table of `size` slots is `home`. */
static unsigned colliding(uint32_t size, uint32_t home, uint32_t *out, unsigned max)
{
	unsigned n = 0;

	for (uint32_t k = 1; k < 0x1000000 && n < max; k++)
		if ((hash32(k) & (size - 1)) == home)
			out[n++] = k;
	return n;
}

static void test_collisions(void)
{
	struct ur_qp_table t;
	uint32_t k[31];

	UT_EQ(ur_qp_table_init(&t), 0);
	UT_EQ(t.slots->size, 64);
	UT_EQ(colliding(64, 10, k, 31), 31);
	/* 31 keys, one chain of 31 (no growth below half full). */
	for (int i = 0; i < 31; i++)
		UT_EQ(ur_qp_table_insert(&t, k[i], val(k[i])), 0);
	UT_EQ(t.slots->size, 64);
	UT_CHECK(table_ok(&t));
	for (int i = 0; i < 31; i++)
		UT_EQ(ur_qp_table_find(&t, k[i]), val(k[i]));
	/* Remove from the middle, the start and the end of the chain. */
	static const int order[] = { 15, 0, 30, 1, 29, 14, 16 };
	for (unsigned r = 0; r < UR_ARRAY_SIZE(order); r++) {
		ur_qp_table_remove(&t, k[order[r]]);
		UT_EQ(ur_qp_table_find(&t, k[order[r]]), NULL);
		UT_CHECK(table_ok(&t));
	}
	for (int i = 0; i < 31; i++) {
		bool gone = false;

		for (unsigned r = 0; r < UR_ARRAY_SIZE(order); r++)
			gone |= order[r] == i;
		UT_EQ(ur_qp_table_find(&t, k[i]), gone ? NULL : val(k[i]));
	}
	/* Removing what is absent changes nothing. */
	ur_qp_table_remove(&t, k[15]);
	ur_qp_table_remove(&t, 0x777777);
	UT_EQ(t.count, 24);
	UT_CHECK(table_ok(&t));
	ur_qp_table_fini(&t);
}

/* A chain that starts in the last bucket wraps to the first, and two
 * chains interleave; deleting from one must not strand the other. */
static void test_wrap_and_interleave(void)
{
	struct ur_qp_table t;
	uint32_t a[12], b[12];

	UT_EQ(ur_qp_table_init(&t), 0);
	UT_EQ(colliding(64, 62, a, 12), 12);
	UT_EQ(colliding(64, 1, b, 12), 12);
	for (int i = 0; i < 12; i++) {
		UT_EQ(ur_qp_table_insert(&t, a[i], val(a[i])), 0);
		UT_EQ(ur_qp_table_insert(&t, b[i], val(b[i])), 0);
	}
	UT_CHECK(table_ok(&t));
	UT_CHECK(t.slots->keys[63] && t.slots->keys[0]);     /* the chain went round */
	for (int i = 0; i < 12; i += 2) {
		ur_qp_table_remove(&t, a[i]);
		UT_CHECK(table_ok(&t));
	}
	for (int i = 0; i < 12; i++) {
		UT_EQ(ur_qp_table_find(&t, a[i]), i % 2 ? val(a[i]) : NULL);
		UT_EQ(ur_qp_table_find(&t, b[i]), val(b[i]));
	}
	for (int i = 0; i < 12; i++)
		ur_qp_table_remove(&t, b[i]);
	UT_CHECK(table_ok(&t));
	UT_EQ(t.count, 6);
	ur_qp_table_fini(&t);
}

static void test_growth_and_update(void)
{
	struct ur_qp_table t;

	UT_EQ(ur_qp_table_init(&t), 0);
	for (uint32_t i = 1; i <= 5000; i++)
		UT_EQ(ur_qp_table_insert(&t, i * 257, val(i)), 0);
	UT_EQ(t.count, 5000);
	UT_CHECK(t.slots->size >= 10000);
	UT_CHECK(table_ok(&t));
	for (uint32_t i = 1; i <= 5000; i++)
		UT_EQ(ur_qp_table_find(&t, i * 257), val(i));
	/* Inserting a key again replaces its value, not adds it. */
	UT_EQ(ur_qp_table_insert(&t, 257, val(99999)), 0);
	UT_EQ(t.count, 5000);
	UT_EQ(ur_qp_table_find(&t, 257), val(99999));
	UT_EQ(ur_qp_table_find(&t, 256), NULL);
	UT_CHECK(table_ok(&t));
	ur_qp_table_fini(&t);
}

/* 200000 random operations on a universe of keys with many collisions,
 * each checked against a plain array. */
static void test_random_vs_model(void)
{
	enum { U = 3000, OPS = 200000 };
	static uint32_t keys[U];
	static struct ur_qp *model[U];
	struct ur_qp_table t;
	unsigned n = 0, bad = 0;

	/* Half the universe collides in a few buckets of the first sizes. */
	n = colliding(64, 7, keys, U / 4);
	n += colliding(256, 200, keys + n, U / 4);
	while (n < U) {
		uint32_t k = (uint32_t)(ut_rnd() & 0xffffff);
		bool dup = !k;

		for (unsigned i = 0; i < n && !dup; i++)
			dup = keys[i] == k;
		if (!dup)
			keys[n++] = k;
	}
	UT_EQ(ur_qp_table_init(&t), 0);
	for (unsigned op = 0; op < OPS; op++) {
		unsigned i = (unsigned)(ut_rnd() % U);
		unsigned what = (unsigned)(ut_rnd() % 10);

		if (what < 4) {
			struct ur_qp *v = val(keys[i] ^ op);

			if (ur_qp_table_insert(&t, keys[i], v))
				bad++;
			model[i] = v;
		} else if (what < 8) {
			ur_qp_table_remove(&t, keys[i]);
			model[i] = NULL;
		}
		if (ur_qp_table_find(&t, keys[i]) != model[i])
			bad++;
		if (op % 20000 == 0) {
			unsigned live = 0;

			UT_CHECK(table_ok(&t));
			for (unsigned j = 0; j < U; j++) {
				live += model[j] != NULL;
				if (ur_qp_table_find(&t, keys[j]) != model[j])
					bad++;
			}
			UT_EQ(t.count, live);
		}
	}
	UT_EQ(bad, 0);
	UT_CHECK(table_ok(&t));
	ur_qp_table_fini(&t);
	/* Every insert and every shift of a removal wrote while the count
	 * was odd. */
	UT_CHECK(written > OPS / 2);
	UT_EQ(written_even, 0);
}

/* Readers without the lock while one writer inserts and removes keys that
 * collide with theirs (shifting their entries back and forth) and grows
 * the table: a key that stays is always found, with its value; a key
 * never inserted is never found. */
enum { STAY = 64, CHURN = 4000 };
static uint32_t stay_keys[STAY], churn_keys[CHURN];
static struct ur_qp_table racing_t;
static int writer_done;

static void *racing_reader(void *arg)
{
	unsigned *bad = arg, round = 0;

	while (!__atomic_load_n(&writer_done, __ATOMIC_ACQUIRE) || round < 3) {
		for (unsigned i = 0; i < STAY; i++)
			*bad += ur_qp_table_find_racing(&racing_t, stay_keys[i]) != val(stay_keys[i]);
		/* Odd keys of the churn set are never inserted. */
		for (unsigned i = 1; i < CHURN; i += 64)
			*bad += ur_qp_table_find_racing(&racing_t, churn_keys[i]) != NULL;
		round++;
	}
	return NULL;
}

static void test_racing_readers(void)
{
	pthread_t th[2];
	unsigned bad[2] = { 0, 0 }, n;

	/* All colliding in the first size's bucket 5 and the next's 69: the
	 * stay keys sit in chains the churn keeps shifting. */
	n = colliding(64, 5, stay_keys, STAY / 2);
	n += colliding(128, 69, stay_keys + n, STAY - n);
	UT_EQ(n, STAY);
	UT_EQ(colliding(64, 6, churn_keys, CHURN), CHURN);
	UT_EQ(ur_qp_table_init(&racing_t), 0);
	for (unsigned i = 0; i < STAY; i++)
		UT_EQ(ur_qp_table_insert(&racing_t, stay_keys[i], val(stay_keys[i])), 0);
	for (int i = 0; i < 2; i++)
		UT_EQ(pthread_create(&th[i], NULL, racing_reader, &bad[i]), 0);
	for (unsigned round = 0; round < 40; round++) {
		for (unsigned i = 0; i < CHURN; i += 2)
			UT_EQ(ur_qp_table_insert(&racing_t, churn_keys[i], val(churn_keys[i])), 0);
		for (unsigned i = 0; i < CHURN; i += 2)
			ur_qp_table_remove(&racing_t, churn_keys[i]);
	}
	__atomic_store_n(&writer_done, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	UT_EQ(bad[0], 0);
	UT_EQ(bad[1], 0);
	UT_CHECK(racing_t.slots->outgrown != NULL);    /* it grew under them */
	UT_CHECK(table_ok(&racing_t));
	ur_qp_table_fini(&racing_t);
}

int main(void)
{
	UT_RUN(test_collisions);
	UT_RUN(test_wrap_and_interleave);
	UT_RUN(test_growth_and_update);
	UT_RUN(test_random_vs_model);
	UT_RUN(test_racing_readers);
	return UT_DONE();
}
