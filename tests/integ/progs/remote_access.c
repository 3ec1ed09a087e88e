/* RDMA WRITE, READ and atomics against memory they may not touch: a bad
 * rkey, the rkey of a deregistered region, addresses outside the region
 * (straddling either end, or a multi-packet WRITE whose first packets would
 * fit), a region or a QP without the needed access flag, a misaligned
 * atomic.  Each must complete at the requester with the NAK's status
 * (IBV_WC_REM_ACCESS_ERR; misaligned atomics IBV_WC_REM_INV_REQ_ERR), leave
 * not one byte of the target region or of the guard bytes around it
 * changed (nor of the requester's landing buffer, for READ and atomics),
 * and put both QPs into the error state, flushing what else was posted.
 * The same operations within bounds succeed and change exactly the bytes
 * they name: the checks can fail.
 *
 *   remote_access DEVICE GID_INDEX [CASE...]
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vt.h"

#define REGION 16384u
#define ALL_REMOTE (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

enum key { KEY_OK, KEY_BAD, KEY_DEREGISTERED };

struct op {
	const char *what;
	enum ibv_wr_opcode opcode;
	long off;                   /* from the start of the target region */
	uint32_t len;               /* WRITE/READ length (atomics: 8) */
	int mr_access;              /* of the target region */
	int qp_access;              /* of the responder QP; 0: all */
	bool qp_no_access;
	enum ibv_mtu mtu;           /* 0: the port's */
	enum key key;
};

static const char *opname(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE: return "RDMA WRITE";
	case IBV_WR_RDMA_READ: return "RDMA READ";
	case IBV_WR_ATOMIC_FETCH_AND_ADD: return "FETCH_AND_ADD";
	case IBV_WR_ATOMIC_CMP_AND_SWP: return "CMP_AND_SWP";
	default: return "?";
	}
}

static bool is_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP;
}

struct setup {
	struct vt_qp a, b;          /* requester, responder */
	struct vt_buf target, local, rbuf;
	uint32_t rkey;
};

static void setup(struct vt_dev *d, struct setup *s, const struct op *o)
{
	struct vt_qp_opts ao = { 0 }, bo = { 0 };
	struct ibv_sge sge;

	ao.mtu = bo.mtu = o->mtu;
	bo.access = o->qp_access;
	bo.no_access = o->qp_no_access;
	vt_rc_pair(d, &s->a, &ao, &s->b, &bo);
	vt_buf_init(&s->target, d, REGION, o->mr_access ? o->mr_access : ALL_REMOTE, 0x31);
	vt_buf_init(&s->local, d, REGION, IBV_ACCESS_LOCAL_WRITE, 0x52);
	vt_buf_init(&s->rbuf, d, 256, IBV_ACCESS_LOCAL_WRITE, 0x73);
	s->rkey = s->target.mr->rkey;
	if (o->key == KEY_BAD) {
		s->rkey ^= 0x00a5a500u;
	} else if (o->key == KEY_DEREGISTERED) {
		struct vt_buf gone;

		vt_buf_init(&gone, d, REGION, ALL_REMOTE, 0x11);
		s->rkey = gone.mr->rkey;
		vt_buf_free(&gone);
	}
	/* A receive on the responder, to see it flushed when the QP fails. */
	sge = vt_sge(&s->rbuf, 0, 256);
	if (vt_post_recv(&s->b, 0xb0, &sge, 1))
		vt_fail("ibv_post_recv on the responder: %s", strerror(errno));
}

static void teardown(struct setup *s)
{
	vt_qp_destroy(&s->a);
	vt_qp_destroy(&s->b);
	vt_buf_free(&s->target);
	vt_buf_free(&s->local);
	vt_buf_free(&s->rbuf);
}

static int post_op(struct setup *s, const struct op *o, uint64_t wr_id)
{
	struct ibv_sge sge = vt_sge(&s->local, 0, is_atomic(o->opcode) ? 8 : o->len);
	struct ibv_send_wr wr = vt_wr(wr_id, o->opcode, &sge);
	uint64_t raddr = (uint64_t)(uintptr_t)s->target.p + (uint64_t)o->off;

	if (is_atomic(o->opcode)) {
		uint64_t cur;

		/* CMP_AND_SWP compares with what is there: executed wrongly, it
		 * would change the target. */
		memcpy(&cur, s->target.p + (o->off >= 0 && o->off + 8 <= (long)REGION ? o->off : 0), 8);
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = s->rkey;
		wr.wr.atomic.compare_add = o->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? cur :
			0x0101010101010101ull;
		wr.wr.atomic.swap = 0x5a5a5a5a5a5a5a5aull;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = s->rkey;
	}
	return vt_post_send(&s->a, &wr);
}

/* The operation must fail with status and change nothing. */
static void expect_fails(struct vt_dev *d, const struct op *o, enum ibv_wc_status status)
{
	struct setup s;
	struct ibv_wc wc;
	char what[256], label[320];
	enum ibv_qp_state st;
#define L(text) (snprintf(label, sizeof(label), "%s: %s", what, (text)), label)

	snprintf(what, sizeof(what), "%s: %s", opname(o->opcode), o->what);
	setup(d, &s, o);
	if (post_op(&s, o, 0xa1)) {
		vt_fail("%s: ibv_post_send: %s", what, strerror(errno));
		teardown(&s);
		return;
	}
	if (vt_poll_one(s.a.scq, &wc, 10, what)) {
		VT_EXPECT_STATUS(what, status, wc.status);
		VT_EXPECT_EQ(L("wr_id of the failed request"), 0xa1, wc.wr_id);
	}
	vt_sleep(0.05);   /* anything that would still land, lands */
	vt_buf_unchanged(&s.target, L("target region"));
	if (o->opcode != IBV_WR_RDMA_WRITE)
		vt_buf_unchanged(&s.local, L("requester's landing buffer"));

	/* Both ends are in error: the responder after its NAK, the
	 * requester after the error completion; what is posted flushes. */
	st = vt_qp_wait_state(&s.b, IBV_QPS_ERR, 5);
	vt_check(st == IBV_QPS_ERR, "%s: responder QP after the NAK: expected ERR (6), saw state %d",
		 what, st);
	if (vt_poll_one(s.b.rcq, &wc, 5, L("responder's posted receive")))
		VT_EXPECT_STATUS(L("responder's posted receive"), IBV_WC_WR_FLUSH_ERR, wc.status);
	st = vt_qp_state(&s.a);
	vt_check(st == IBV_QPS_ERR, "%s: requester QP after the error completion: expected ERR (6), "
		 "saw state %d", what, st);
	if (post_op(&s, o, 0xa2) == 0) {
		if (vt_poll_one(s.a.scq, &wc, 5, L("a request posted after the error")))
			VT_EXPECT_STATUS(L("a request posted after the error"), IBV_WC_WR_FLUSH_ERR,
					 wc.status);
	} else {
		vt_fail("%s: ibv_post_send in the error state: %s (IBA: accepted, then flushed)",
			what, strerror(errno));
	}
	vt_buf_unchanged(&s.target, L("target region, after the flush"));
	teardown(&s);
#undef L
}

/* The same operation within its rights succeeds and changes exactly its
 * bytes. */
static void expect_ok(struct vt_dev *d, const struct op *o)
{
	struct setup s;
	struct ibv_wc wc;
	char what[256];
	size_t len = is_atomic(o->opcode) ? 8 : o->len, bad = 0;
	uint64_t before;

	snprintf(what, sizeof(what), "%s: %s", opname(o->opcode), o->what);
	setup(d, &s, o);
	memcpy(&before, s.target.p + o->off, 8);
	if (post_op(&s, o, 0xc1)) {
		vt_fail("%s: ibv_post_send: %s", what, strerror(errno));
		teardown(&s);
		return;
	}
	if (vt_poll_one(s.a.scq, &wc, 10, what))
		VT_EXPECT_STATUS(what, IBV_WC_SUCCESS, wc.status);
	for (size_t i = 0; i < REGION + 2 * VT_GUARD; i++) {
		long r = (long)i - (long)VT_GUARD;   /* offset in the region */
		bool inside = r >= o->off && r < o->off + (long)len;
		uint8_t want = vt_pattern(s.target.seed, i);

		if (inside && o->opcode == IBV_WR_RDMA_WRITE)
			want = vt_pattern(s.local.seed, VT_GUARD + (size_t)(r - o->off));
		if (inside && o->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			uint64_t v = before + 0x0101010101010101ull;

			want = ((uint8_t *)&v)[r - o->off];
		}
		if (inside && o->opcode == IBV_WR_ATOMIC_CMP_AND_SWP)
			want = 0x5a;
		bad += s.target.base[i] != want;
	}
	vt_check(!bad, "%s: the target changed exactly where it should (%zu bytes differ)", what, bad);
	if (o->opcode == IBV_WR_RDMA_READ || is_atomic(o->opcode)) {
		bad = memcmp(s.local.p, s.target.p + o->off, len) != 0;
		if (is_atomic(o->opcode))
			bad = memcmp(s.local.p, &before, 8) != 0;
		vt_check(!bad, "%s: the requester received the %s", what,
			 is_atomic(o->opcode) ? "original value" : "target's bytes");
	}
	teardown(&s);
}

#define RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
#define RR (IBV_ACCESS_REMOTE_READ)
#define RA (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC)
#define LW (IBV_ACCESS_LOCAL_WRITE)

static const enum ibv_wr_opcode all_ops[] = {
	IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ, IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_CMP_AND_SWP,
};

static void for_all_ops(struct vt_dev *d, struct op o, enum ibv_wc_status status)
{
	for (unsigned i = 0; i < sizeof(all_ops) / sizeof(all_ops[0]); i++) {
		o.opcode = all_ops[i];
		expect_fails(d, &o, status);
	}
}

static void case_bad_rkey(struct vt_dev *d)
{
	for_all_ops(d, (struct op){ .what = "bad rkey", .off = 64, .len = 64, .key = KEY_BAD },
		    IBV_WC_REM_ACCESS_ERR);
	for_all_ops(d, (struct op){ .what = "rkey of a deregistered region", .off = 64, .len = 64,
				    .key = KEY_DEREGISTERED }, IBV_WC_REM_ACCESS_ERR);
}

static void case_out_of_range(struct vt_dev *d)
{
	struct op o = { .len = 64 };

	o.what = "straddling the end of the region";
	o.off = REGION - 32;
	for (unsigned i = 0; i < 2; i++) {
		o.opcode = all_ops[i];
		expect_fails(d, &o, IBV_WC_REM_ACCESS_ERR);
	}
	o.what = "starting before the region";
	o.off = -32;
	for (unsigned i = 0; i < 2; i++) {
		o.opcode = all_ops[i];
		expect_fails(d, &o, IBV_WC_REM_ACCESS_ERR);
	}
	o.what = "just past the end of the region";
	o.off = REGION;
	o.len = 8;
	for_all_ops(d, o, IBV_WC_REM_ACCESS_ERR);
	o.what = "8 bytes before the region";
	o.off = -8;
	for_all_ops(d, o, IBV_WC_REM_ACCESS_ERR);
	/* Eight packets of 1024 bytes: the first four would fit. */
	o = (struct op){ .what = "8 KiB in 1 KiB packets, the last 4 KiB past the end",
			 .opcode = IBV_WR_RDMA_WRITE, .off = REGION - 4096, .len = 8192,
			 .mtu = IBV_MTU_1024 };
	expect_fails(d, &o, IBV_WC_REM_ACCESS_ERR);
	o.opcode = IBV_WR_RDMA_READ;
	expect_fails(d, &o, IBV_WC_REM_ACCESS_ERR);
}

static void case_mr_access(struct vt_dev *d)
{
	for_all_ops(d, (struct op){ .what = "region with local write only", .off = 128, .len = 64,
				    .mr_access = LW }, IBV_WC_REM_ACCESS_ERR);
	expect_fails(d, &(struct op){ .what = "region with remote read only",
				      .opcode = IBV_WR_RDMA_WRITE, .off = 128, .len = 64,
				      .mr_access = RR }, IBV_WC_REM_ACCESS_ERR);
	expect_fails(d, &(struct op){ .what = "region with remote read only",
				      .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD, .off = 128,
				      .mr_access = RR }, IBV_WC_REM_ACCESS_ERR);
	expect_fails(d, &(struct op){ .what = "region with remote write only",
				      .opcode = IBV_WR_RDMA_READ, .off = 128, .len = 64,
				      .mr_access = RW }, IBV_WC_REM_ACCESS_ERR);
	expect_fails(d, &(struct op){ .what = "region with remote write only",
				      .opcode = IBV_WR_ATOMIC_CMP_AND_SWP, .off = 128,
				      .mr_access = RW }, IBV_WC_REM_ACCESS_ERR);
	expect_fails(d, &(struct op){ .what = "region with remote atomic only",
				      .opcode = IBV_WR_RDMA_WRITE, .off = 128, .len = 64,
				      .mr_access = RA }, IBV_WC_REM_ACCESS_ERR);
	expect_fails(d, &(struct op){ .what = "region with remote atomic only",
				      .opcode = IBV_WR_RDMA_READ, .off = 128, .len = 64,
				      .mr_access = RA }, IBV_WC_REM_ACCESS_ERR);
}

static void case_qp_access(struct vt_dev *d)
{
	for_all_ops(d, (struct op){ .what = "responder QP without remote access", .off = 128,
				    .len = 64, .qp_no_access = true }, IBV_WC_REM_ACCESS_ERR);
	expect_fails(d, &(struct op){ .what = "responder QP with remote read only",
				      .opcode = IBV_WR_RDMA_WRITE, .off = 128, .len = 64,
				      .qp_access = IBV_ACCESS_REMOTE_READ }, IBV_WC_REM_ACCESS_ERR);
	expect_fails(d, &(struct op){ .what = "responder QP with remote write only",
				      .opcode = IBV_WR_RDMA_READ, .off = 128, .len = 64,
				      .qp_access = IBV_ACCESS_REMOTE_WRITE }, IBV_WC_REM_ACCESS_ERR);
	expect_fails(d, &(struct op){ .what = "responder QP with remote write only",
				      .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD, .off = 128,
				      .qp_access = IBV_ACCESS_REMOTE_WRITE }, IBV_WC_REM_ACCESS_ERR);
}

static void case_misaligned_atomic(struct vt_dev *d)
{
	expect_fails(d, &(struct op){ .what = "address not 8-byte aligned",
				      .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD, .off = 132 },
		     IBV_WC_REM_INV_REQ_ERR);
	expect_fails(d, &(struct op){ .what = "address not 8-byte aligned",
				      .opcode = IBV_WR_ATOMIC_CMP_AND_SWP, .off = 130 },
		     IBV_WC_REM_INV_REQ_ERR);
}

/* Positive controls: the checks above can fail. */
static void case_within_rights(struct vt_dev *d)
{
	expect_ok(d, &(struct op){ .what = "first 64 bytes", .opcode = IBV_WR_RDMA_WRITE, .len = 64 });
	expect_ok(d, &(struct op){ .what = "last 64 bytes", .opcode = IBV_WR_RDMA_WRITE,
				   .off = REGION - 64, .len = 64 });
	expect_ok(d, &(struct op){ .what = "the whole region in 1 KiB packets",
				   .opcode = IBV_WR_RDMA_WRITE, .len = REGION, .mtu = IBV_MTU_1024 });
	expect_ok(d, &(struct op){ .what = "last 64 bytes", .opcode = IBV_WR_RDMA_READ,
				   .off = REGION - 64, .len = 64 });
	expect_ok(d, &(struct op){ .what = "the whole region in 1 KiB packets",
				   .opcode = IBV_WR_RDMA_READ, .len = REGION, .mtu = IBV_MTU_1024 });
	expect_ok(d, &(struct op){ .what = "last 8 bytes", .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
				   .off = REGION - 8 });
	expect_ok(d, &(struct op){ .what = "first 8 bytes", .opcode = IBV_WR_ATOMIC_CMP_AND_SWP });
	expect_ok(d, &(struct op){ .what = "region with remote read only", .opcode = IBV_WR_RDMA_READ,
				   .off = 128, .len = 64, .mr_access = RR });
	expect_ok(d, &(struct op){ .what = "region with remote atomic only",
				   .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD, .off = 128, .mr_access = RA });
	expect_ok(d, &(struct op){ .what = "region with remote write only", .opcode = IBV_WR_RDMA_WRITE,
				   .off = 128, .len = 64, .mr_access = RW });
}

static const struct vt_case cases[] = {
	{ "within_rights", case_within_rights },
	{ "bad_rkey", case_bad_rkey },
	{ "out_of_range", case_out_of_range },
	{ "mr_access", case_mr_access },
	{ "qp_access", case_qp_access },
	{ "misaligned_atomic", case_misaligned_atomic },
	{ NULL, NULL },
};

VT_MAIN(cases)
