/* Unit tests of the MR key table and access checks (mr.c), white-box:
 * unique keys drawn from the CSPRNG with no pattern, the first 65 536 live
 * keys below 2^24 and different in every process, type 1 binds' reserved
 * keys, growth and the limit, the bounds
 * checks at their edges (start, end, zero length, wrap-around of va + len),
 * PD and access bits, and remote access through memory windows of both
 * types. */
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

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

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Live keys are unique and found; their neighbours (another key byte,
 * another index bit) are not; a removed key stops matching. */
static void test_keys_unique(void)
{
	enum { N = 3000 };
	struct ur_mr_table t;
	struct ur_key_entry *e = calloc(N, sizeof(*e));
	uint32_t *k = calloc(N, sizeof(*k));

	UT_EQ(ur_mr_table_init(&t), 0);
	UT_EQ(ur_key_lookup(&t, 0), NULL);
	for (unsigned i = 0; i < N; i++) {
		e[i].kind = UR_KEY_MR;
		UT_EQ(ur_mr_table_insert(&t, &e[i]), 0);
		UT_CHECK(e[i].key != 0);                 /* key 0 is never drawn */
		UT_EQ(e[i].key >> 8, e[i].index);
		k[i] = e[i].index;
	}
	UT_EQ(t.count, N);
	UT_CHECK(t.size >= 2 * N);
	UT_EQ(t.size & (t.size - 1), 0);
	qsort(k, N, sizeof(*k), cmp_u32);
	for (unsigned i = 1; i < N; i++)
		if (k[i] == k[i - 1])
			UT_CHECK(k[i] != k[i - 1]);      /* no two live indexes alike */
	for (unsigned i = 0; i < N; i++) {
		if (ur_key_lookup(&t, e[i].key) != &e[i])
			UT_EQ(ur_key_lookup(&t, e[i].key), &e[i]);
		UT_EQ(ur_key_lookup(&t, e[i].key ^ 1), NULL);
		UT_EQ(ur_key_lookup(&t, e[i].key ^ 0x80), NULL);
		UT_EQ(ur_key_lookup(&t, e[i].key | 1u << 24), NULL);  /* no high index yet */
	}
	/* Removing twice, or something never inserted, changes nothing. */
	ur_mr_table_remove(&t, &e[10]);
	ur_mr_table_remove(&t, &e[10]);
	UT_EQ(t.count, N - 1);
	UT_EQ(ur_key_lookup(&t, e[10].key), NULL);
	{
		struct ur_key_entry stranger = { .kind = UR_KEY_MR, .index = e[11].index };

		ur_mr_table_remove(&t, &stranger);
		UT_EQ(t.count, N - 1);
		UT_EQ(ur_key_lookup(&t, e[11].key), &e[11]);
	}
	/* Every other key survives the removals' slot moves. */
	for (unsigned i = 0; i < N; i += 2)
		ur_mr_table_remove(&t, &e[i]);
	for (unsigned i = 1; i < N; i += 2)
		if (ur_key_lookup(&t, e[i].key) != &e[i])
			UT_EQ(ur_key_lookup(&t, e[i].key), &e[i]);
	for (unsigned i = 0; i < N; i += 2)
		if (ur_key_lookup(&t, e[i].key))
			UT_EQ(ur_key_lookup(&t, e[i].key), NULL);
	UT_EQ(t.used, t.count);
	ur_mr_table_fini(&t);
	free(e);
	free(k);
}

/* Keys follow no pattern: 20 000 registrations, each region deregistered
 * after the next few (slots are reused all the time), as a process that
 * registers and re-registers would.  With few live regions a key is 16
 * random index bits and 8 random variant bits, the top byte 0.  Every one
 * of the 24 bits is set in about half of them (20 000 draws: 45-55 % is 14
 * standard deviations), two keys in a row differ in about 12 bits, neither
 * the difference between consecutive keys nor the index repeats the way a
 * counter's would (the same index twice in a row: expected 0.3 times), and
 * a whole key comes back at most as often as chance allows for 24 random
 * bits (expected 11.9 times in 20 000; 35 or more has odds below 1e-7). */
static void test_keys_unpredictable(void)
{
	enum { N = 20000, LIVE = 8 };
	struct ur_mr_table t;
	struct ur_key_entry e[LIVE];
	uint32_t *k = calloc(N, sizeof(*k));
	unsigned ones[32] = { 0 }, same_delta = 0, repeats = 0, same_index = 0;
	uint64_t flips = 0;
	uint32_t high = 0;

	memset(e, 0, sizeof(e));
	UT_EQ(ur_mr_table_init(&t), 0);
	for (unsigned i = 0; i < N; i++) {
		struct ur_key_entry *x = &e[i % LIVE];

		if (i >= LIVE)
			ur_mr_table_remove(&t, x);
		x->kind = UR_KEY_MR;
		UT_EQ(ur_mr_table_insert(&t, x), 0);
		k[i] = x->key;
		high |= k[i] >> 24;
		for (int b = 0; b < 24; b++)
			ones[b] += (k[i] >> b) & 1;
		if (i) {
			flips += (uint64_t)__builtin_popcount(k[i] ^ k[i - 1]);
			same_index += (k[i] >> 8) == (k[i - 1] >> 8);
		}
		if (i >= 2)
			same_delta += k[i] - k[i - 1] == k[i - 1] - k[i - 2];
	}
	UT_EQ(high, 0);
	for (int b = 0; b < 24; b++) {
		UT_CHECK(ones[b] > N * 45 / 100);
		UT_CHECK(ones[b] < N * 55 / 100);
	}
	UT_CHECK(flips > 11ull * (N - 1) && flips < 13ull * (N - 1));
	UT_CHECK(same_delta <= 2);
	UT_CHECK(same_index <= 4);
	qsort(k, N, sizeof(*k), cmp_u32);
	for (unsigned i = 1; i < N; i++)
		repeats += k[i] == k[i - 1];
	UT_CHECK(repeats < 35);
	for (unsigned i = 0; i < LIVE; i++)
		ur_mr_table_remove(&t, &e[i]);
	UT_EQ(t.count, 0);
	UT_EQ(t.used, 0);
	ur_mr_table_fini(&t);
	free(k);
}

/* Keys shaped as a NIC's: the keys of the first 65 536 live entries
 * (regions, windows and type 1 binds' reservations alike) are below 2^24
 * and unique, every one found; the next one takes a higher index, and a
 * low index given back is drawn again before any other high one. */
static void test_keys_fit_24_bits(void)
{
	enum { N = 65536 };
	struct ur_mr_table t;
	struct ur_key_entry *e = calloc(N + 2, sizeof(*e));
	uint32_t *k = calloc(N, sizeof(*k)), res, over = 0;

	UT_EQ(ur_mr_table_init(&t), 0);
	for (unsigned i = 0; i < N - 1; i++) {
		e[i].kind = UR_KEY_MR;
		UT_EQ(ur_mr_table_insert(&t, &e[i]), 0);
		k[i] = e[i].key;
		over += k[i] >= 1u << 24;
	}
	e[N - 1].kind = UR_KEY_MW;
	UT_EQ(ur_mr_table_insert(&t, &e[N - 1]), 0);
	UT_EQ(ur_key_reserve(&t, &e[N - 1], &res), 0);  /* past the low ones */
	UT_CHECK(res >= 1u << 24);
	ur_key_unreserve(&t, &e[N - 1], res);
	k[N - 1] = e[N - 1].key;
	over += k[N - 1] >= 1u << 24;
	UT_EQ(over, 0);
	UT_EQ(t.low_nfree, 0);
	for (unsigned i = 0; i < N; i++)
		if (ur_key_lookup(&t, k[i]) != &e[i])
			UT_EQ(ur_key_lookup(&t, k[i]), &e[i]);
	qsort(k, N, sizeof(*k), cmp_u32);
	for (unsigned i = 1; i < N; i++)
		if (k[i] == k[i - 1])
			UT_CHECK(k[i] != k[i - 1]);
	UT_CHECK(k[0] != 0);
	/* The 65 537th: a high index, found. */
	UT_EQ(ur_mr_table_insert(&t, &e[N]), 0);
	UT_CHECK(e[N].key >= 1u << 24);
	UT_EQ(ur_key_lookup(&t, e[N].key), &e[N]);
	/* One low index given back is the next drawn. */
	{
		uint32_t freed = e[1234].key >> 8;

		ur_mr_table_remove(&t, &e[1234]);
		UT_EQ(t.low_nfree, 1);
		UT_EQ(ur_mr_table_insert(&t, &e[N + 1]), 0);
		UT_EQ(e[N + 1].key >> 8, freed);
		UT_EQ(ur_key_lookup(&t, e[N + 1].key), &e[N + 1]);
	}
	for (unsigned i = 0; i < N + 2; i++)
		ur_mr_table_remove(&t, &e[i]);
	UT_EQ(t.count, 0);
	UT_EQ(t.used, 0);
	UT_EQ(t.low_nfree, 65536);
	ur_mr_table_fini(&t);
	free(e);
	free(k);
}

/* Each process draws its own keys: four children's first keys (a counter
 * would give all the same) are all different and below 2^24.  Four
 * random 24-bit keys collide with odds below 1e-6. */
static void test_keys_differ_across_processes(void)
{
	enum { P = 4, K = 8 };
	uint32_t first[P][K];
	int fds[2];

	UT_EQ(pipe(fds), 0);
	for (int p = 0; p < P; p++) {
		pid_t pid = fork();

		UT_CHECK(pid >= 0);
		if (pid == 0) {
			struct ur_mr_table t;
			struct ur_key_entry e[K];
			uint32_t key[K];

			memset(e, 0, sizeof(e));
			if (ur_mr_table_init(&t))
				_exit(1);
			for (int i = 0; i < K; i++) {
				if (ur_mr_table_insert(&t, &e[i]))
					_exit(1);
				key[i] = e[i].key;
			}
			_exit(write(fds[1], key, sizeof(key)) == (ssize_t)sizeof(key) ? 0 : 1);
		}
	}
	close(fds[1]);
	for (int p = 0; p < P; p++) {
		int status;

		UT_EQ(read(fds[0], first[p], sizeof(first[p])), (ssize_t)sizeof(first[p]));
		UT_CHECK(wait(&status) > 0);
		UT_EQ(status, 0);
	}
	close(fds[0]);
	for (int p = 0; p < P; p++) {
		for (int i = 0; i < K; i++)
			UT_CHECK(first[p][i] < 1u << 24);
		for (int q = 0; q < p; q++)
			UT_CHECK(first[p][0] != first[q][0]);
	}
}

/* A type 1 bind's key: reserved at post (it matches nothing yet and no
 * registration can draw its index), the window's key once the bind runs
 * (the old one then stops matching); a reservation given back, or left
 * behind by a bind that never ran, goes with the window. */
static void test_key_reserve_rebind(void)
{
	struct ur_mr_table t;
	struct ur_key_entry w = { .kind = UR_KEY_MW }, r = { .kind = UR_KEY_MR };
	uint32_t old, k1, k2, k3;

	UT_EQ(ur_mr_table_init(&t), 0);
	UT_EQ(ur_mr_table_insert(&t, &w), 0);
	old = w.key;
	UT_EQ(ur_key_reserve(&t, &w, &k1), 0);
	UT_CHECK((k1 >> 8) != (old >> 8));
	UT_EQ(w.reserved, 1);
	UT_EQ(t.used, 2);
	UT_EQ(ur_key_lookup(&t, k1), NULL);
	UT_EQ(ur_key_lookup(&t, old), &w);
	/* A key neither its own nor reserved for it is refused. */
	UT_EQ(ur_mr_table_insert(&t, &r), 0);
	UT_EQ(ur_key_rebind(&t, &w, r.key), -EINVAL);
	UT_EQ(ur_key_rebind(&t, &w, 1u << 31 | 0x55), -EINVAL);  /* an index nobody holds */
	UT_EQ(ur_key_lookup(&t, r.key), &r);
	/* The bind runs. */
	UT_EQ(ur_key_rebind(&t, &w, k1), 0);
	UT_EQ(w.key, k1);
	UT_EQ(w.index, k1 >> 8);
	UT_EQ(w.reserved, 0);
	UT_EQ(ur_key_lookup(&t, k1), &w);
	UT_EQ(ur_key_lookup(&t, old), NULL);
	UT_EQ(t.used, 2);
	/* The same index with another key byte (type 2's way). */
	UT_EQ(ur_key_rebind(&t, &w, (k1 & ~0xffu) | ((k1 + 1) & 0xff)), 0);
	UT_EQ(ur_key_lookup(&t, k1), NULL);
	/* Given back. */
	UT_EQ(ur_key_reserve(&t, &w, &k2), 0);
	ur_key_unreserve(&t, &w, k2);
	UT_EQ(w.reserved, 0);
	UT_EQ(t.used, 2);
	ur_key_unreserve(&t, &w, w.key);            /* its own: kept */
	UT_EQ(ur_key_lookup(&t, w.key), &w);
	/* Left behind by flushed binds: removed with the window. */
	UT_EQ(ur_key_reserve(&t, &w, &k2), 0);
	UT_EQ(ur_key_reserve(&t, &w, &k3), 0);
	UT_EQ(t.used, 4);
	ur_mr_table_remove(&t, &w);
	UT_EQ(t.used, 1);
	UT_EQ(t.count, 1);
	UT_EQ(ur_key_rebind(&t, &w, k2), -EINVAL);
	UT_EQ(ur_key_lookup(&t, r.key), &r);
	ur_mr_table_remove(&t, &r);
	ur_mr_table_fini(&t);
}

/* The longest walk from a live key's home slot to its slot: what its
 * every lookup pays. */
static uint32_t longest_probe(const struct ur_mr_table *t)
{
	uint32_t mask = t->size - 1, longest = 0;

	for (uint32_t i = 0; i < t->size; i++)
		if (t->slot[i].e && ((i - home(t, t->slot[i].index)) & mask) > longest)
			longest = (i - home(t, t->slot[i].index)) & mask;
	return longest;
}

/* The table grows to its limit and no further, and full it is still
 * found in a few steps (its 65 536 consecutive low indexes once made one
 * run of full slots that a quarter of the high ones walked). */
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
	UT_CHECK(longest_probe(&t) < 256);
	UT_EQ(ur_mr_table_insert(&t, &e[N]), -ENOMEM);
	UT_EQ(ur_key_lookup(&t, e[N - 1].key), &e[N - 1]);
	UT_EQ(ur_key_lookup(&t, e[0].key), &e[0]);
	ur_mr_table_remove(&t, &e[N / 2]);
	UT_EQ(ur_mr_table_insert(&t, &e[N]), 0);
	UT_EQ(ur_key_lookup(&t, e[N].key), &e[N]);
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

	/* A stale key: the region registered again over the same bytes. */
	mr = mk_mr(&t, &pd1, 0x1000, host, 0x100, IBV_ACCESS_LOCAL_WRITE);
	k = mr->ke.key;
	rm(&t, mr);
	mr = mk_mr(&t, &pd1, 0x1000, host, 0x100, IBV_ACCESS_LOCAL_WRITE);
	UT_CHECK(mr->ke.key != k);
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
	/* A rebind under a new key byte: the old key stops working. */
	{
		uint32_t old = mw1.ke.key;

		UT_EQ(ur_key_rebind(&t, &mw1.ke, (old & ~0xffu) | ((old + 1) & 0xff)), 0);
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
	UT_RUN(test_keys_unpredictable);
	UT_RUN(test_keys_fit_24_bits);
	UT_RUN(test_keys_differ_across_processes);
	UT_RUN(test_key_reserve_rebind);
	UT_RUN(test_table_limit);
	UT_RUN(test_check_bounds);
	UT_RUN(test_check_windows);
	return UT_DONE();
}
