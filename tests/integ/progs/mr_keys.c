/* Memory keys cannot be guessed: registered and re-registered thousands of
 * times through the verbs, keys never repeat among live regions, follow no
 * counter (with few regions live a key is 24 random bits under a zero top
 * byte, as a NIC's: each of them set in about half of the keys, two in a
 * row differing in about 12 bits, the index part changing every time), and a type 1 window
 * gets a whole new key at every ibv_bind_mw, after which its old key is
 * refused (IBV_WC_REM_ACCESS_ERR, not a byte changed) and the new one
 * works.  A range whose address or iova plus length wraps past 2^64 is
 * refused with EINVAL.  Each run prints its first region's rkey ("first rkey 0x...") so
 * that the script can check that two processes start from different keys.
 *
 *   mr_keys DEVICE GID_INDEX [CASE...]
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt.h"

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Statistics of a sequence of keys, checked as mr_ut checks the table: the
 * bounds hold for random 24-bit keys with odds of failing below 1e-4. */
static void check_random(const char *what, uint32_t *k, unsigned n)
{
	unsigned ones[24] = { 0 }, same_index = 0, same_delta = 0, repeats = 0, worst = 0;
	uint32_t high = 0;
	uint64_t flips = 0;
	/* Pairs of equal keys among n random 24-bit ones: Poisson, this mean. */
	double pairs = (double)n * (n - 1) / 2 / (1 << 24);

	for (unsigned i = 0; i < n; i++) {
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
	vt_check(high == 0, "%s: every key fits in 24 bits, as a NIC's first keys do "
		 "(top bits seen: 0x%x)", what, high);
	for (int b = 0; b < 24; b++) {
		unsigned off = ones[b] > n / 2 ? ones[b] - n / 2 : n / 2 - ones[b];

		if (off > worst)
			worst = off;
	}
	/* Five standard deviations of a fair bit's count (sqrt(n) / 2). */
	vt_check(worst < 2.5 * sqrt(n), "%s: every key bit below 2^24 is set in about half of "
		 "%u keys (farthest from half: %u, bound %.0f)", what, n, worst, 2.5 * sqrt(n));
	vt_check(flips > 11ull * (n - 1) && flips < 13ull * (n - 1),
		 "%s: consecutive keys differ in 11-13 bits on average (%.2f)", what,
		 (double)flips / (n - 1));
	/* The same index twice in a row: 1 in 65 528 per pair. */
	vt_check(same_index <= 4, "%s: the index part changes from one key to the next "
		 "(unchanged %u times)", what, same_index);
	vt_check(same_delta <= 2, "%s: no constant step between keys (%u repeated steps)",
		 what, same_delta);
	qsort(k, n, sizeof(*k), cmp_u32);
	for (unsigned i = 1; i < n; i++)
		repeats += k[i] == k[i - 1];
	vt_check(repeats <= pairs + 6 * sqrt(pairs) + 4, "%s: a whole key comes back no more "
		 "often than chance (%u repeats in %u keys, %.2f expected)", what, repeats, n, pairs);
}

/* 8 regions live at a time, each deregistered and registered again over
 * the same bytes: 6000 registrations. */
static void case_regs(struct vt_dev *d)
{
	enum { N = 6000, LIVE = 8, LEN = 4096 };
	uint8_t *buf = calloc(LIVE, LEN);
	struct ibv_mr *mr[LIVE] = { 0 };
	uint32_t *k = calloc(N, sizeof(*k));
	bool dup_live = false, lkey_differs = false;

	for (unsigned i = 0; i < N; i++) {
		unsigned s = i % LIVE;

		if (mr[s] && ibv_dereg_mr(mr[s])) {
			vt_fail("ibv_dereg_mr: %s", strerror(errno));
			break;
		}
		mr[s] = ibv_reg_mr(d->pd, buf + s * LEN, LEN,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (!mr[s]) {
			vt_fail("ibv_reg_mr #%u: %s", i, strerror(errno));
			break;
		}
		k[i] = mr[s]->rkey;
		if (i == 0)
			printf("first rkey 0x%08x\n", k[0]);
		lkey_differs |= mr[s]->lkey != mr[s]->rkey;
		for (unsigned j = 0; j < LIVE; j++)
			if (j != s && mr[j] && (mr[j]->rkey >> 8) == (k[i] >> 8))
				dup_live = true;
	}
	vt_check(!dup_live, "no two live regions share an index");
	vt_check(!lkey_differs, "lkey and rkey are the same key");
	check_random("ibv_reg_mr", k, N);
	for (unsigned s = 0; s < LIVE; s++)
		if (mr[s])
			ibv_dereg_mr(mr[s]);
	free(k);
	free(buf);
}

static int write_with(struct vt_qp *a, struct vt_buf *src, uint8_t *dst, uint32_t rkey,
		      uint64_t wr_id)
{
	struct ibv_sge sge = vt_sge(src, 0, 64);
	struct ibv_send_wr wr = vt_wr(wr_id, IBV_WR_RDMA_WRITE, &sge);

	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)dst;
	wr.wr.rdma.rkey = rkey;
	return vt_post_send(a, &wr);
}

/* 500 type 1 binds of one window: a new index each time; then the last key
 * works and the one before it is refused. */
static void case_mw1(struct vt_dev *d)
{
	enum { N = 500 };
	struct vt_qp a, b;
	struct vt_buf target, src;
	struct ibv_mw *mw;
	struct ibv_wc wc;
	uint32_t *k = calloc(N, sizeof(*k)), prev = 0;
	unsigned done = 0;

	vt_rc_pair(d, &a, NULL, &b, NULL);
	vt_buf_init(&target, d, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		    IBV_ACCESS_MW_BIND, 0x21);
	vt_buf_init(&src, d, 4096, IBV_ACCESS_LOCAL_WRITE, 0x43);
	mw = ibv_alloc_mw(d->pd, IBV_MW_TYPE_1);
	if (!mw) {
		vt_fail("ibv_alloc_mw: %s", strerror(errno));
		goto out;
	}
	for (unsigned i = 0; i < N; i++) {
		struct ibv_mw_bind bind = {
			.wr_id = i,
			.send_flags = IBV_SEND_SIGNALED,
			.bind_info = {
				.mr = target.mr,
				.addr = (uint64_t)(uintptr_t)target.p,
				.length = 4096,
				.mw_access_flags = IBV_ACCESS_REMOTE_WRITE,
			},
		};

		prev = mw->rkey;
		if (ibv_bind_mw(b.qp, mw, &bind)) {
			vt_fail("ibv_bind_mw #%u: %s", i, strerror(errno));
			break;
		}
		if (vt_poll(b.scq, &wc, 1, 5) != 1 || wc.status != IBV_WC_SUCCESS) {
			vt_fail("bind #%u did not complete successfully", i);
			break;
		}
		k[done++] = mw->rkey;
	}
	vt_check(done == N, "%u type 1 binds completed", done);
	if (done == N) {
		uint32_t *copy = malloc(N * sizeof(*copy));

		memcpy(copy, k, N * sizeof(*copy));
		check_random("ibv_bind_mw", copy, N);
		free(copy);
	}
	/* The previous key: refused, nothing written. */
	if (write_with(&a, &src, target.p, prev, 1) == 0 && vt_poll_one(a.scq, &wc, 10, "stale key"))
		VT_EXPECT_STATUS("WRITE through the window's previous key", IBV_WC_REM_ACCESS_ERR,
				 wc.status);
	vt_sleep(0.05);
	vt_buf_unchanged(&target, "window's region after the stale-key WRITE");
	/* The current key, on a fresh pair (the other one is in error now). */
	vt_qp_destroy(&a);
	vt_qp_destroy(&b);
	vt_rc_pair(d, &a, NULL, &b, NULL);
	if (write_with(&a, &src, target.p, mw->rkey, 2) == 0 && vt_poll_one(a.scq, &wc, 10, "key"))
		VT_EXPECT_STATUS("WRITE through the window's current key", IBV_WC_SUCCESS, wc.status);
	vt_check(memcmp(target.p, src.p, 64) == 0, "the current key's WRITE landed");
	ibv_dealloc_mw(mw);
out:
	vt_qp_destroy(&a);
	vt_qp_destroy(&b);
	vt_buf_free(&target);
	vt_buf_free(&src);
	free(k);
}

static void expect_refused(struct ibv_mr *mr, const char *what)
{
	int err = errno;

	if (mr) {
		vt_fail("%s: registered (length 0x%zx), expected EINVAL", what, mr->length);
		ibv_dereg_mr(mr);
		return;
	}
	vt_check(err == EINVAL, "%s: refused with EINVAL (saw %s)", what, strerror(err));
}

/* A range whose end wraps past 2^64, by its address or by its iova, is
 * refused: its bounds would otherwise reach the whole address space.  The
 * highest iova range that does not wrap is accepted and reachable. */
static void case_overflow(struct vt_dev *d)
{
	enum { LEN = 4096 };
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	uint8_t *buf = aligned_alloc(LEN, 2 * LEN);
	struct ibv_mr *mr;

	memset(buf, 0, 2 * LEN);
	expect_refused(ibv_reg_mr(d->pd, buf + 8, SIZE_MAX - 4, acc), "address + length wraps");
	expect_refused(ibv_reg_mr(d->pd, buf + 8, SIZE_MAX - 7 - (uintptr_t)buf, acc),
		       "address + length reaches 2^64 exactly");
	expect_refused(ibv_reg_mr_iova(d->pd, buf, LEN, UINT64_MAX - 100, acc),
		       "iova + length wraps");
	expect_refused(ibv_reg_mr_iova(d->pd, buf, LEN, UINT64_MAX - LEN + 2, acc),
		       "iova + length wraps by one byte");
	mr = ibv_reg_mr_iova(d->pd, buf, LEN, UINT64_MAX - LEN + 1, acc);
	vt_check(mr != NULL, "the highest iova range that does not wrap is registered (%s)",
		 mr ? "ok" : strerror(errno));
	if (mr) {
		struct vt_qp a, b;
		struct vt_buf src;
		struct ibv_wc wc;
		struct ibv_sge sge;
		struct ibv_send_wr wr;

		vt_rc_pair(d, &a, NULL, &b, NULL);
		vt_buf_init(&src, d, 64, IBV_ACCESS_LOCAL_WRITE, 0x5a);
		sge = vt_sge(&src, 0, 16);
		wr = vt_wr(1, IBV_WR_RDMA_WRITE, &sge);
		wr.wr.rdma.remote_addr = UINT64_MAX - 15;     /* the region's last 16 bytes */
		wr.wr.rdma.rkey = mr->rkey;
		if (vt_post_send(&a, &wr) == 0 && vt_poll_one(a.scq, &wc, 10, "top WRITE"))
			VT_EXPECT_STATUS("WRITE to the last 16 bytes below 2^64", IBV_WC_SUCCESS,
					 wc.status);
		vt_check(memcmp(buf + LEN - 16, src.p, 16) == 0, "it landed at the region's end");
		vt_qp_destroy(&a);
		vt_qp_destroy(&b);
		vt_buf_free(&src);
		ibv_dereg_mr(mr);
	}
	free(buf);
}

static const struct vt_case cases[] = {
	{ "regs", case_regs },
	{ "mw1", case_mw1 },
	{ "overflow", case_overflow },
	{ NULL, NULL },
};

VT_MAIN(cases)
