/* Unit tests of the QPN -> QP table (qp_table.c), white-box: collisions in
 * one probe chain, chains wrapping past the end, backward-shift deletion
 * keeping every chain reachable, growth, and a long random run checked op
 * by op against a reference model. */
#include <stdbool.h>
#include <stdint.h>

#include "ut.h"
#include "ut_rnd.h"
#include "util/compiler.h"

#include "rel/qp_table.c"

static struct ur_qp *val(uint32_t k)
{
	return (struct ur_qp *)(uintptr_t)(0x1000 + (uintptr_t)k * 8);
}

/* The linear-probing invariant: every key sits at or after its home
 * bucket with no empty slot in between; and the count is right. */
static bool table_ok(const struct ur_qp_table *t)
{
	uint32_t mask = t->size - 1, n = 0;

	if (t->size & mask)
		return false;
	for (uint32_t i = 0; i < t->size; i++) {
		uint32_t k = t->keys[i];

		if (!k) {
			if (t->vals[i])
				return false;
			continue;
		}
		n++;
		for (uint32_t j = hash32(k) & mask; j != i; j = (j + 1) & mask)
			if (!t->keys[j])
				return false;
		if (ur_qp_table_find(t, k) != t->vals[i])
			return false;
	}
	return n == t->count && 2 * t->count <= t->size;
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
	UT_EQ(t.size, 64);
	UT_EQ(colliding(64, 10, k, 31), 31);
	/* 31 keys, one chain of 31 (no growth below half full). */
	for (int i = 0; i < 31; i++)
		UT_EQ(ur_qp_table_insert(&t, k[i], val(k[i])), 0);
	UT_EQ(t.size, 64);
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
	UT_CHECK(t.keys[63] && t.keys[0]);     /* the chain went round */
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
	UT_CHECK(t.size >= 10000);
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
}

int main(void)
{
	UT_RUN(test_collisions);
	UT_RUN(test_wrap_and_interleave);
	UT_RUN(test_growth_and_update);
	UT_RUN(test_random_vs_model);
	return UT_DONE();
}
