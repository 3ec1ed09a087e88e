/* Remote access errors: a bad rkey, a range outside the region, a missing
 * permission on the region or the QP.  Each is a NAK "remote access error",
 * IBV_WC_REM_ACCESS_ERR at the requester, both QPs in ERROR, and not one
 * byte of the target (or its guards) written. */

enum acc_case {
	ACC_BAD_RKEY,
	ACC_BEFORE_START,
	ACC_PAST_END,
	ACC_WRAP,              /* va + len wraps around 2^64 */
	ACC_MR_PERM,           /* the region lacks the remote permission */
	ACC_QP_PERM,           /* the QP lacks the remote permission */
	ACC_OTHER_PD,          /* the rkey belongs to a region of another PD */
	ACC_NR
};

static const char *const acc_name[ACC_NR] = {
	"bad rkey", "before start", "past end", "wrap", "MR permission", "QP permission", "other PD",
};

/* op: IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ, IBV_WR_ATOMIC_FETCH_AND_ADD. */
static void check_access_error(enum ibv_wr_opcode op, enum acc_case c, uint32_t len)
{
	int need = op == IBV_WR_RDMA_WRITE ? IBV_ACCESS_REMOTE_WRITE
		   : op == IBV_WR_RDMA_READ ? IBV_ACCESS_REMOTE_READ : IBV_ACCESS_REMOTE_ATOMIC;
	int qp_access = c == ACC_QP_PERM ? (T_ALL_ACCESS & ~need) : T_ALL_ACCESS;
	int mr_access = c == ACC_MR_PERM ? (T_ALL_ACCESS & ~need) : T_ALL_ACCESS;
	struct t_opts o = { .access = qp_access, .mtu = IBV_MTU_256 };
	struct t_pair p;
	struct ur_pd *other = NULL;
	struct ibv_mr *other_mr = NULL;
	struct ibv_wc wc;
	uint64_t va;
	uint32_t rkey;
	int before = ut_failures;

	if (op != IBV_WR_RDMA_WRITE)
		len = op == IBV_WR_RDMA_READ ? len : 8;
	if (t_pair_open_mem(&p, &o, 4096, 1024, mr_access))
		return;
	va = (uintptr_t)p.b.mem.buf;
	rkey = p.b.mem.mr->rkey;
	switch (c) {
	case ACC_BAD_RKEY:
		rkey ^= 0x80;             /* same index, another tag */
		break;
	case ACC_BEFORE_START:
		va -= 8;
		break;
	case ACC_PAST_END:
		va += 1024 - len + 8;
		break;
	case ACC_WRAP:
		va = UINT64_MAX - 7;
		break;
	case ACC_OTHER_PD:
		other = ut_pd(p.b.ctx);
		other_mr = ibv_reg_mr_iova2(&other->ibpd, p.b.mem.buf, 1024, (uintptr_t)p.b.mem.buf,
					    T_ALL_ACCESS);
		rkey = other_mr->rkey;
		break;
	default:
		break;
	}
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD)
		UT_EQ(t_post_atomic(&p.a, 1, op, p.a.mem.buf, p.a.mem.mr->lkey, va, rkey, 1, 0), 0);
	else
		UT_EQ(t_post_rdma(&p.a, 1, op, p.a.mem.buf, len, p.a.mem.mr->lkey, va, rkey), 0);
	UT_EQ(t_post_send_mem(&p.a, 2, IBV_WR_SEND, 0, 1, 0), 0);
	/* The request (its first packet for a WRITE) is refused at once: one
	 * NAK, the rest of the message and the SEND behind it are dropped. */
	t_deliver(0);
	UT_EQ(p.b.qp->state, IBV_QPS_ERR);
	{
		unsigned nak = t_count() - 1;

		UT_EQ(t_op(nak), UR_OP_RC_ACKNOWLEDGE);
		UT_EQ(t_syn(nak), UR_NAK_REM_ACCESS_ERR);
		UT_EQ(t_psn(nak), 0);
	}
	t_run();
	t_expect_wc(p.a.scq, &wc, 1, IBV_WC_REM_ACCESS_ERR);
	t_expect_wc(p.a.scq, &wc, 2, IBV_WC_WR_FLUSH_ERR);
	UT_EQ(p.a.qp->state, IBV_QPS_ERR);
	UT_CHECK(t_cq_empty(p.b.rcq));
	UT_CHECK(t_mem_intact(&p.b.mem, 2));
	UT_CHECK(t_mem_intact(&p.a.mem, 1));
	if (ut_failures != before)
		fprintf(stderr, "  (op %d, %s, len %u)\n", op, acc_name[c], len);
	if (other_mr)
		UT_EQ(ibv_dereg_mr(other_mr), 0);
	t_destroy(ur_pd_dealloc, other);
	t_pair_close(&p);
}

static void test_access_errors(void)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ, IBV_WR_ATOMIC_FETCH_AND_ADD,
	};

	for (unsigned i = 0; i < UR_ARRAY_SIZE(ops); i++)
		for (int c = 0; c < ACC_NR; c++) {
			check_access_error(ops[i], (enum acc_case)c, 16);
			if (ops[i] != IBV_WR_ATOMIC_FETCH_AND_ADD)
				check_access_error(ops[i], (enum acc_case)c, 600);   /* 3 packets */
		}
}

/* Memory unmapped under a live region (NICs pin it and write pages
 * nobody sees; uroce reaches it through the process's mappings): every
 * access to it is an error completion, never a fault.  op: what A posts;
 * IBV_WR_SEND with b_side: A sends into a receive posted there on B;
 * IBV_WR_SEND without: A sends from there. */
static void check_unmapped(enum ibv_wr_opcode op, bool b_side, enum ibv_wc_status a_status)
{
	struct t_opts o = { .mtu = IBV_MTU_256 };
	struct t_pair p;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	uint8_t *gone;
	uint64_t va;
	int before = ut_failures;

	if (t_pair_open_mem(&p, &o, 4096, 4096, T_ALL_ACCESS))
		return;
	mr = t_mem_reg_half_unmapped(b_side ? &p.b : &p.a, T_ALL_ACCESS, &gone);
	if (!mr)
		goto out;
	va = (uintptr_t)gone + 64;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD)
		UT_EQ(t_post_atomic(&p.a, 1, op, p.a.mem.buf, p.a.mem.mr->lkey, va, mr->rkey, 1, 0), 0);
	else if (op != IBV_WR_SEND && b_side)
		UT_EQ(t_post_rdma(&p.a, 1, op, p.a.mem.buf, 600, p.a.mem.mr->lkey, va, mr->rkey), 0);
	else if (op != IBV_WR_SEND)      /* into A's unmapped page, from B */
		UT_EQ(t_post_rdma(&p.a, 1, op, gone, 600, mr->lkey, (uintptr_t)p.b.mem.buf,
				  p.b.mem.mr->rkey), 0);
	else if (b_side) {
		UT_EQ(t_post_recv(&p.b, 9, gone, 1024, mr->lkey), 0);
		UT_EQ(t_post_send_mem(&p.a, 1, IBV_WR_SEND, 0, 600, 0), 0);
	} else {
		UT_EQ(t_post_send(&p.a, 1, IBV_WR_SEND, gone, 600, mr->lkey, 0), 0);
	}
	t_run();
	t_expect_wc(p.a.scq, &wc, 1, a_status);
	UT_EQ(p.a.qp->state, IBV_QPS_ERR);
	if (op == IBV_WR_SEND && b_side)
		t_expect_wc(p.b.rcq, &wc, 9, IBV_WC_LOC_PROT_ERR);
	UT_CHECK(t_mem_intact(&p.a.mem, 1));
	UT_CHECK(t_mem_intact(&p.b.mem, 2));
	if (ut_failures != before)
		fprintf(stderr, "  (op %d, %s side)\n", op, b_side ? "responder" : "requester");
	t_mem_free_half_unmapped(mr);
out:
	t_pair_close(&p);
}

static void test_access_unmapped(void)
{
	check_unmapped(IBV_WR_RDMA_WRITE, true, IBV_WC_REM_ACCESS_ERR);
	check_unmapped(IBV_WR_RDMA_READ, true, IBV_WC_REM_ACCESS_ERR);
	check_unmapped(IBV_WR_ATOMIC_FETCH_AND_ADD, true, IBV_WC_REM_ACCESS_ERR);
	check_unmapped(IBV_WR_SEND, true, IBV_WC_REM_OP_ERR);
	check_unmapped(IBV_WR_SEND, false, IBV_WC_LOC_PROT_ERR);
	/* A READ's response lands in unmapped local memory. */
	check_unmapped(IBV_WR_RDMA_READ, false, IBV_WC_LOC_PROT_ERR);
}

/* The exact edges: the last byte of the region is writable, one more is
 * not; zero bytes anywhere need no valid key at all. */
T_PAIR_TEST(test_access_edges, 256, 100, T_ALL_ACCESS, 0)
{
	struct ibv_wc wc;

	UT_EQ(t_post_rdma_mem(p, 1, IBV_WR_RDMA_WRITE, 0, 10, 90), 0);
	UT_EQ(t_post_rdma_mem(p, 2, IBV_WR_RDMA_READ, 16, 100, 0), 0);
	/* Atomic on the last 8 bytes (aligned: the region starts aligned). */
	UT_EQ(t_post_atomic_mem(p, 3, IBV_WR_ATOMIC_FETCH_AND_ADD, 128, 88, 1, 0), 0);
	/* Zero-length WRITE with a key that names nothing. */
	UT_EQ(t_post_rdma(&p->a, 4, IBV_WR_RDMA_WRITE, p->a.mem.buf, 0, p->a.mem.mr->lkey, 0x12345678,
			  0x99), 0);
	t_run();
	for (int i = 1; i <= 4; i++)
		t_expect_wc(p->a.scq, &wc, i, IBV_WC_SUCCESS);
	UT_EQ(p->b.qp->state, IBV_QPS_RTS);
}

/* A stale rkey: the region was deregistered and a new one registered over
 * the same bytes; the old key must not reach the new region. */
T_PAIR_TEST(test_access_stale_rkey, 0, 0, 0, 0)
{
	struct t_mem la, tb, tb2;
	struct ibv_wc wc;
	uint32_t old_rkey;

	t_mem_reg(&la, &p->a, 64, IBV_ACCESS_LOCAL_WRITE, 1);
	t_mem_reg(&tb, &p->b, 64, T_ALL_ACCESS, 2);
	old_rkey = tb.mr->rkey;
	t_mem_free(&tb);
	t_mem_reg(&tb2, &p->b, 64, T_ALL_ACCESS, 3);
	UT_CHECK(tb2.mr->rkey != old_rkey);
	UT_EQ(t_post_rdma(&p->a, 1, IBV_WR_RDMA_WRITE, la.buf, 8, la.mr->lkey,
			  (uintptr_t)tb2.buf, old_rkey), 0);
	t_run();
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_REM_ACCESS_ERR);
	UT_CHECK(t_mem_intact(&tb2, 3));
	t_mem_free(&la);
	t_mem_free(&tb2);
}

/* Errors at the requester's own side: an SGE outside its region fails
 * with LOC_PROT_ERR before anything is sent; a READ response into a
 * region without local write too. */
static void test_access_local(void)
{
	struct t_opts o = { 0 };
	struct t_pair p;
	struct t_mem la, ro, tb;

	struct ibv_wc wc;

	if (t_pair_open(&p, &o))
		return;
	t_mem_reg(&la, &p.a, 64, IBV_ACCESS_LOCAL_WRITE, 1);
	t_mem_reg(&tb, &p.b, 64, T_ALL_ACCESS, 2);
	UT_EQ(t_post_rdma(&p.a, 1, IBV_WR_RDMA_WRITE, la.buf + 60, 8, la.mr->lkey,
			  (uintptr_t)tb.buf, tb.mr->rkey), 0);
	UT_EQ(t_count(), 0);
	t_expect_wc(p.a.scq, &wc, 1, IBV_WC_LOC_PROT_ERR);
	UT_EQ(p.a.qp->state, IBV_QPS_ERR);
	UT_CHECK(t_mem_intact(&tb, 2));
	t_mem_free(&la);
	t_mem_free(&tb);
	t_pair_close(&p);

	if (t_pair_open(&p, &o))
		return;
	t_mem_reg(&ro, &p.a, 64, 0, 4);              /* no local write */
	t_mem_reg(&tb, &p.b, 64, T_ALL_ACCESS, 2);
	UT_EQ(t_post_rdma(&p.a, 2, IBV_WR_RDMA_READ, ro.buf, 8, ro.mr->lkey,
			  (uintptr_t)tb.buf, tb.mr->rkey), 0);
	t_run();
	t_expect_wc(p.a.scq, &wc, 2, IBV_WC_LOC_PROT_ERR);
	UT_CHECK(t_mem_intact(&ro, 4));
	t_mem_free(&ro);
	t_mem_free(&tb);
	t_pair_close(&p);
}

/* A misaligned atomic is an invalid request. */
T_PAIR_TEST(test_access_atomic_misaligned, 64, 64, T_ALL_ACCESS, 0)
{
	struct ibv_wc wc;

	UT_EQ(t_post_atomic_mem(p, 1, IBV_WR_ATOMIC_CMP_AND_SWP, 0, 4, 0, 1), 0);
	t_run();
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_REM_INV_REQ_ERR);
	UT_CHECK(t_mem_intact(&p->b.mem, 2));
	UT_EQ(p->b.qp->state, IBV_QPS_ERR);
}

/* A receive posted with an lkey that does not grant local write: RC fails
 * the receive (LOC_PROT_ERR) and the sender (REM_OP_ERR), both QPs to
 * ERROR; UD completes the receive in error and carries on. */
static void test_access_recv_lkey(void)
{
	struct t_opts o = { 0 };
	struct t_pair p;
	struct t_mem sa, ro;
	struct ibv_wc wc;

	if (t_pair_open(&p, &o))
		return;
	t_mem_reg(&sa, &p.a, 64, IBV_ACCESS_LOCAL_WRITE, 1);
	t_mem_reg(&ro, &p.b, 64, 0, 2);           /* read-only */
	UT_EQ(t_post_recv(&p.b, 1, ro.buf, 64, ro.mr->lkey), 0);
	UT_EQ(t_post_send(&p.a, 2, IBV_WR_SEND, sa.buf, 16, sa.mr->lkey, 0), 0);
	t_run();
	t_expect_wc(p.b.rcq, &wc, 1, IBV_WC_LOC_PROT_ERR);
	t_expect_wc(p.a.scq, &wc, 2, IBV_WC_REM_OP_ERR);
	UT_EQ(p.a.qp->state, IBV_QPS_ERR);
	UT_EQ(p.b.qp->state, IBV_QPS_ERR);
	UT_CHECK(t_mem_intact(&ro, 2));
	t_mem_free(&sa);
	t_mem_free(&ro);
	t_pair_close(&p);

	{
		struct t_ud u;

		if (t_ud_open(&u, false))
			return;
		t_mem_reg(&sa, &u.a, 64, IBV_ACCESS_LOCAL_WRITE, 1);
		t_mem_reg(&ro, &u.b, 128, 0, 2);
		UT_EQ(t_post_recv(&u.b, 3, ro.buf, 128, ro.mr->lkey), 0);
		UT_EQ(t_ud_send(&u, 4, sa.buf, 16, sa.mr->lkey, T_QKEY, false), 0);
		t_run();
		t_expect_wc(u.b.rcq, &wc, 3, IBV_WC_LOC_PROT_ERR);
		UT_EQ(u.b.qp->state, IBV_QPS_RTS);
		UT_CHECK(t_mem_intact(&ro, 2));
		t_mem_free(&sa);
		t_mem_free(&ro);
		t_ud_close(&u);
	}
}
