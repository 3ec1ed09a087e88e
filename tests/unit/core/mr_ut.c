/* Unit tests of the MR key table and access checks (mr.c), white-box:
 * unique keys, a new tag on every reuse of an index, growth, the bounds
 * checks at their edges (start, end, zero length, wrap-around of va + len),
 * PD and access bits, and remote access through memory windows of both
 * types. */
#include <stdint.h>

#include "ut.h"

#include "core/mr.c"

static struct ur_pd pd1, pd2;

static struct ur_mr *mk_mr(struct ur_mr_table *t, struct ur_pd *pd, uint64_t iova,
			   uint8_t *host, uint64_t len, int access)
{
	struct ur_mr *mr = calloc(1, sizeof(*mr));

	mr->pd = pd;
	mr->iova = iova;
	mr->host = host;
	mr->length = len;
	mr->access = access;
	mr->ke.kind = UR_KEY_MR;
	UT_EQ(ur_mr_table_insert(t, &mr->ke), 0);
	return mr;
}

static void rm(struct ur_mr_table *t, struct ur_mr *mr)
{
	ur_mr_table_remove(t, &mr->ke);
	free(mr);
}

static void test_keys_unique(void)
{
	struct ur_mr_table t;
	struct ur_key_entry e[300];

	UT_EQ(ur_mr_table_init(&t), 0);
	UT_EQ(ur_key_lookup(&t, 0), NULL);
	for (unsigned i = 0; i < 300; i++) {
		memset(&e[i], 0, sizeof(e[i]));
		e[i].kind = UR_KEY_MR;
		UT_EQ(ur_mr_table_insert(&t, &e[i]), 0);
		UT_CHECK(e[i].index != 0);               /* key 0 is never valid */
		UT_EQ(e[i].key >> 8, e[i].index);
		for (unsigned j = 0; j < i; j++)
			if (e[j].key == e[i].key || e[j].index == e[i].index) {
				UT_CHECK(e[j].key != e[i].key);
				UT_CHECK(e[j].index != e[i].index);
			}
	}
	UT_EQ(t.count, 300);
	UT_CHECK(t.size >= 301);
	UT_EQ(t.size & (t.size - 1), 0);
	/* Every key finds its entry after the growth; other tags do not. */
	for (unsigned i = 0; i < 300; i++) {
		UT_EQ(ur_key_lookup(&t, e[i].key), &e[i]);
		UT_EQ(ur_key_lookup(&t, e[i].key ^ 1), NULL);
		UT_EQ(ur_key_lookup(&t, e[i].key ^ 0x80), NULL);
	}
	/* Indexes past the table, and index 0 with any tag. */
	UT_EQ(ur_key_lookup(&t, t.size << 8), NULL);
	UT_EQ(ur_key_lookup(&t, 0xffffffff), NULL);
	UT_EQ(ur_key_lookup(&t, 0x7f), NULL);
	/* Removing twice, or something never inserted, changes nothing. */
	ur_mr_table_remove(&t, &e[10]);
	ur_mr_table_remove(&t, &e[10]);
	UT_EQ(t.count, 299);
	UT_EQ(ur_key_lookup(&t, e[10].key), NULL);
	{
		struct ur_key_entry stranger = { .kind = UR_KEY_MR, .index = e[11].index };

		ur_mr_table_remove(&t, &stranger);
		UT_EQ(t.count, 299);
		UT_EQ(ur_key_lookup(&t, e[11].key), &e[11]);
	}
	/* The freed index is reused first, under a new tag. */
	{
		struct ur_key_entry n = { .kind = UR_KEY_MR };
		uint32_t old = e[10].key;

		UT_EQ(ur_mr_table_insert(&t, &n), 0);
		UT_EQ(n.index, e[10].index);
		UT_CHECK(n.key != old);
		UT_EQ(ur_key_lookup(&t, old), NULL);
		UT_EQ(ur_key_lookup(&t, n.key), &n);
	}
	ur_mr_table_fini(&t);
}

/* Reusing one index: 256 different keys before a tag comes back (an 8-bit
 * tag: the 257th registration of the same slot can match a 256-times stale
 * key, the limit of this key format). */
static void test_key_tags_cycle(void)
{
	struct ur_mr_table t;
	struct ur_key_entry e = { .kind = UR_KEY_MR };
	uint8_t seen[256] = { 0 };
	uint32_t idx = 0, first = 0;

	UT_EQ(ur_mr_table_init(&t), 0);
	for (int i = 0; i < 256; i++) {
		UT_EQ(ur_mr_table_insert(&t, &e), 0);
		if (i == 0) {
			idx = e.index;
			first = e.key;
		}
		UT_EQ(e.index, idx);
		UT_EQ(seen[e.key & 0xff], 0);
		seen[e.key & 0xff] = 1;
		ur_mr_table_remove(&t, &e);
	}
	UT_EQ(ur_mr_table_insert(&t, &e), 0);
	UT_EQ(e.key, first);
	ur_mr_table_fini(&t);
}

/* The table grows to its limit and no further. */
static void test_table_limit(void)
{
	enum { N = UR_MAX_MR + UR_MAX_MW };
	struct ur_mr_table t;
	struct ur_key_entry *e = calloc(N + 1, sizeof(*e));

	UT_EQ(ur_mr_table_init(&t), 0);
	for (unsigned i = 0; i < N; i++) {
		int ret = ur_mr_table_insert(&t, &e[i]);

		if (ret) {
			UT_EQ(ret, 0);
			break;
		}
	}
	UT_EQ(t.count, N);
	UT_EQ(ur_mr_table_insert(&t, &e[N]), -ENOMEM);
	UT_EQ(ur_key_lookup(&t, e[N - 1].key), &e[N - 1]);
	UT_EQ(ur_key_lookup(&t, e[0].key), &e[0]);
	ur_mr_table_remove(&t, &e[N / 2]);
	UT_EQ(ur_mr_table_insert(&t, &e[N]), 0);
	UT_EQ(e[N].index, e[N / 2].index);
	ur_mr_table_fini(&t);
	free(e);
}

static void test_check_bounds(void)
{
	struct ur_mr_table t;
	static uint8_t host[0x100];
	struct ur_mr *mr;
	uint32_t k;

	UT_EQ(ur_mr_table_init(&t), 0);
	mr = mk_mr(&t, &pd1, 0x1000, host, 0x100, IBV_ACCESS_LOCAL_WRITE);
	k = mr->ke.key;
	UT_EQ(ur_mr_check(&t, k, &pd1, 0x1000, 0x100, 0), host);
	UT_EQ(ur_mr_check(&t, k, &pd1, 0x1010, 0x10, 0), host + 0x10);
	UT_EQ(ur_mr_check(&t, k, &pd1, 0x10ff, 1, 0), host + 0xff);
	UT_EQ(ur_mr_check(&t, k, &pd1, 0x0fff, 1, 0), NULL);       /* before the start */
	UT_EQ(ur_mr_check(&t, k, &pd1, 0x0fff, 2, 0), NULL);
	UT_EQ(ur_mr_check(&t, k, &pd1, 0x10ff, 2, 0), NULL);       /* past the end */
	UT_EQ(ur_mr_check(&t, k, &pd1, 0x1000, 0x101, 0), NULL);
	UT_EQ(ur_mr_check(&t, k, &pd1, 0x1100, 0, 0), host + 0x100);   /* empty, at the end */
	UT_EQ(ur_mr_check(&t, k, &pd1, 0x1101, 0, 0), NULL);
	UT_EQ(ur_mr_check(&t, k, &pd1, 0x0fff, 0, 0), NULL);
	/* va + len wrapping around 2^64 must not look small. */
	UT_EQ(ur_mr_check(&t, k, &pd1, 0x1080, UINT64_MAX, 0), NULL);
	UT_EQ(ur_mr_check(&t, k, &pd1, 0x1080, UINT64_MAX - 0x1080 + 1, 0), NULL);
	UT_EQ(ur_mr_check(&t, k, &pd1, UINT64_MAX, 2, 0), NULL);
	UT_EQ(ur_mr_check(&t, k, &pd1, UINT64_MAX, 0, 0), NULL);
	/* PD, key and access bits. */
	UT_EQ(ur_mr_check(&t, k, &pd2, 0x1000, 1, 0), NULL);
	UT_EQ(ur_mr_check(&t, k, NULL, 0x1000, 1, 0), NULL);
	UT_EQ(ur_mr_check(&t, k + 1, &pd1, 0x1000, 1, 0), NULL);
	UT_EQ(ur_mr_check(&t, k, &pd1, 0x1000, 1, IBV_ACCESS_LOCAL_WRITE), host);
	UT_EQ(ur_mr_check(&t, k, &pd1, 0x1000, 1, IBV_ACCESS_REMOTE_WRITE), NULL);
	UT_EQ(ur_mr_check(&t, k, &pd1, 0x1000, 1, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ), NULL);
	/* Remote access through an MR key: the same checks. */
	UT_EQ(ur_mr_check_remote(&t, k, &pd1, NULL, 0x1000, 1, IBV_ACCESS_REMOTE_READ), NULL);
	rm(&t, mr);

	/* A region at the very top of the address space. */
	mr = mk_mr(&t, &pd1, UINT64_MAX - 0xff, host, 0x100, IBV_ACCESS_LOCAL_WRITE |
		   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	k = mr->ke.key;
	UT_EQ(ur_mr_check(&t, k, &pd1, UINT64_MAX, 1, 0), host + 0xff);
	UT_EQ(ur_mr_check(&t, k, &pd1, UINT64_MAX, 2, 0), NULL);
	UT_EQ(ur_mr_check(&t, k, &pd1, UINT64_MAX - 0xff, 0x100, 0), host);
	UT_EQ(ur_mr_check(&t, k, &pd1, UINT64_MAX - 0xff, 0x101, 0), NULL);
	UT_EQ(ur_mr_check_remote(&t, k, &pd1, NULL, UINT64_MAX - 0xf, 0x10,
				 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ), host + 0xf0);
	rm(&t, mr);

	/* A zero-length region: only an empty access at its start. */
	mr = mk_mr(&t, &pd1, 0x5000, host, 0, IBV_ACCESS_LOCAL_WRITE);
	k = mr->ke.key;
	UT_EQ(ur_mr_check(&t, k, &pd1, 0x5000, 0, 0), host);
	UT_EQ(ur_mr_check(&t, k, &pd1, 0x5000, 1, 0), NULL);
	UT_EQ(ur_mr_check(&t, k, &pd1, 0x5001, 0, 0), NULL);
	rm(&t, mr);

	/* A stale key: the slot reused by another region. */
	mr = mk_mr(&t, &pd1, 0x1000, host, 0x100, IBV_ACCESS_LOCAL_WRITE);
	k = mr->ke.key;
	rm(&t, mr);
	mr = mk_mr(&t, &pd1, 0x1000, host, 0x100, IBV_ACCESS_LOCAL_WRITE);
	UT_EQ(mr->ke.key >> 8, k >> 8);
	UT_EQ(ur_mr_check(&t, k, &pd1, 0x1000, 1, 0), NULL);
	UT_EQ(ur_mr_check(&t, mr->ke.key, &pd1, 0x1000, 1, 0), host);
	rm(&t, mr);
	ur_mr_table_fini(&t);
}

/* Memory windows: remote access only while bound, inside the window,
 * with the window's access; a type 1 window through any QP of its PD, a
 * type 2 window only through the QP it was bound on.  The window's key
 * never works as an lkey. */
static void test_check_windows(void)
{
	struct ur_mr_table t;
	static uint8_t host[0x1000];
	int qp_a, qp_b;            /* stand-ins: only their addresses matter */
	struct ur_mr *mr;
	struct ur_mw mw1 = { .pd = &pd1 }, mw2 = { .pd = &pd1 };

	UT_EQ(ur_mr_table_init(&t), 0);
	mr = mk_mr(&t, &pd1, 0x10000, host, 0x1000, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	mw1.ibmw.type = IBV_MW_TYPE_1;
	mw2.ibmw.type = IBV_MW_TYPE_2;
	mw1.ke.kind = mw2.ke.kind = UR_KEY_MW;
	UT_EQ(ur_mr_table_insert(&t, &mw1.ke), 0);
	UT_EQ(ur_mr_table_insert(&t, &mw2.ke), 0);

	/* Unbound: nothing. */
	UT_EQ(ur_mr_check_remote(&t, mw1.ke.key, &pd1, &qp_a, 0x10100, 1, 0), NULL);
	/* The region itself grants no remote access. */
	UT_EQ(ur_mr_check_remote(&t, mr->ke.key, &pd1, &qp_a, 0x10100, 1, IBV_ACCESS_REMOTE_READ), NULL);

	/* Bind both over [0x10100, 0x10200), read and write. */
	for (int i = 0; i < 2; i++) {
		struct ur_mw *w = i ? &mw2 : &mw1;

		w->mr = mr;
		w->addr = 0x10100;
		w->length = 0x100;
		w->access = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
		w->qp = i ? (const void *)&qp_a : NULL;
		w->bound = true;
	}
	UT_EQ(ur_mr_check_remote(&t, mw1.ke.key, &pd1, &qp_b, 0x10100, 0x100,
				 IBV_ACCESS_REMOTE_WRITE), host + 0x100);
	UT_EQ(ur_mr_check_remote(&t, mw1.ke.key, &pd1, &qp_b, 0x101ff, 1, IBV_ACCESS_REMOTE_READ),
	      host + 0x1ff);
	UT_EQ(ur_mr_check_remote(&t, mw1.ke.key, &pd1, &qp_b, 0x100ff, 1, IBV_ACCESS_REMOTE_READ), NULL);
	UT_EQ(ur_mr_check_remote(&t, mw1.ke.key, &pd1, &qp_b, 0x101ff, 2, IBV_ACCESS_REMOTE_READ), NULL);
	UT_EQ(ur_mr_check_remote(&t, mw1.ke.key, &pd1, &qp_b, 0x10100, UINT64_MAX,
				 IBV_ACCESS_REMOTE_READ), NULL);
	UT_EQ(ur_mr_check_remote(&t, mw1.ke.key, &pd1, &qp_b, 0x10100, 8,
				 IBV_ACCESS_REMOTE_ATOMIC), NULL);
	/* Type 1: the PD decides, not the QP. */
	UT_EQ(ur_mr_check_remote(&t, mw1.ke.key, &pd2, &qp_a, 0x10100, 1, IBV_ACCESS_REMOTE_READ), NULL);
	/* Type 2: only through qp_a. */
	UT_EQ(ur_mr_check_remote(&t, mw2.ke.key, &pd1, &qp_a, 0x10100, 1, IBV_ACCESS_REMOTE_READ),
	      host + 0x100);
	UT_EQ(ur_mr_check_remote(&t, mw2.ke.key, &pd1, &qp_b, 0x10100, 1, IBV_ACCESS_REMOTE_READ), NULL);
	/* A window key is never an lkey. */
	UT_EQ(ur_mr_check(&t, mw1.ke.key, &pd1, 0x10100, 1, 0), NULL);
	UT_EQ(ur_mr_lookup(&t, mw2.ke.key), NULL);
	/* A rebind under a new tag: the old key stops working. */
	{
		uint32_t old = mw1.ke.key;

		mw1.ke.key = (old & ~0xffu) | ((old + 1) & 0xff);
		UT_EQ(ur_mr_check_remote(&t, old, &pd1, &qp_a, 0x10100, 1, IBV_ACCESS_REMOTE_READ), NULL);
		UT_EQ(ur_mr_check_remote(&t, mw1.ke.key, &pd1, &qp_a, 0x10100, 1,
					 IBV_ACCESS_REMOTE_READ), host + 0x100);
	}
	/* Unbound again: nothing. */
	mw2.bound = false;
	UT_EQ(ur_mr_check_remote(&t, mw2.ke.key, &pd1, &qp_a, 0x10100, 1, IBV_ACCESS_REMOTE_READ), NULL);
	ur_mr_table_remove(&t, &mw1.ke);
	ur_mr_table_remove(&t, &mw2.ke);
	rm(&t, mr);
	ur_mr_table_fini(&t);
}

int main(void)
{
	UT_RUN(test_keys_unique);
	UT_RUN(test_key_tags_cycle);
	UT_RUN(test_table_limit);
	UT_RUN(test_check_bounds);
	UT_RUN(test_check_windows);
	return UT_DONE();
}
