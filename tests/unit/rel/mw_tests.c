/* Memory windows: BIND_MW (type 1 and 2) executed in order on the send
 * queue, remote access through the window's rkey inside and outside it,
 * LOCAL_INV and SEND_WITH_INV, stale keys after a rebind, bind errors. */

#define MW_REGION 1024
#define MW_OFF 128
#define MW_LEN 256

struct t_mwenv {
	struct t_pair p;
	struct t_mem la;         /* A's local buffer */
	struct t_mem tb;         /* B's region, registered with MW_BIND */
	struct ur_mw *mw;        /* B's window */
};

static int mw_open(struct t_mwenv *e, enum ibv_mw_type type, int mr_access)
{
	struct t_opts o = { .mtu = IBV_MTU_256 };
	struct ibv_mw *ibmw;

	if (t_pair_open(&e->p, &o))
		return -1;
	t_mem_reg(&e->la, &e->p.a, 4096, IBV_ACCESS_LOCAL_WRITE, 1);
	t_mem_reg(&e->tb, &e->p.b, MW_REGION, mr_access, 2);
	ibmw = ur_verbs_alloc_mw(&e->p.b.pd->ibpd, type);
	UT_CHECK(ibmw != NULL);
	e->mw = ibmw ? to_umw(ibmw) : NULL;
	return ibmw ? 0 : -1;
}

static void mw_close(struct t_mwenv *e)
{
	if (e->mw)
		UT_EQ(ur_verbs_dealloc_mw(&e->mw->ibmw), 0);
	t_mem_free(&e->la);
	t_mem_free(&e->tb);
	t_pair_close(&e->p);
}

/* A test on mw_open's pair, buffers and window: e. */
#define MW_TEST(name, type, mr_access) \
	T_FIXTURE_TEST(name, struct t_mwenv, e, mw_open, mw_close, (type), (mr_access))

/* B binds its window over [tb + off, + len) with access, new key rkey. */
static int mw_post_bind(struct t_mwenv *e, uint64_t wr_id, uint32_t rkey, struct ibv_mr *mr,
			uint64_t off, uint64_t len, unsigned access)
{
	struct ibv_send_wr wr = { .wr_id = wr_id, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED };

	wr.bind_mw.mw = &e->mw->ibmw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)e->tb.buf + off;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = access;
	return t_post(e->p.b.qp, &wr);
}

/* Binds and checks the bind completed; returns the window's new rkey. */
static uint32_t mw_bind_ok(struct t_mwenv *e, unsigned access)
{
	uint32_t rkey = ibv_inc_rkey(e->mw->ibmw.rkey);
	struct ibv_wc wc;

	UT_EQ(mw_post_bind(e, 0xb1d, rkey, e->tb.mr, MW_OFF, MW_LEN, access), 0);
	t_expect_wc(e->p.b.scq, &wc, 0xb1d, IBV_WC_SUCCESS);
	UT_EQ(wc.opcode, IBV_WC_BIND_MW);
	UT_EQ(e->mw->ibmw.rkey, rkey);
	UT_CHECK(e->mw->bound);
	UT_EQ(t_count(), 0);          /* a bind never touches the wire */
	return rkey;
}

/* A WRITE of len bytes from A's buffer to B's region at off, with key
 * rkey, completes with status. */
static void mw_write_expect(struct t_mwenv *e, uint64_t wr_id, uint32_t len, uint64_t off,
			    uint32_t rkey, enum ibv_wc_status status)
{
	struct ibv_wc wc;

	UT_EQ(t_post_rdma(&e->p.a, wr_id, IBV_WR_RDMA_WRITE, e->la.buf, len, e->la.mr->lkey,
			  (uintptr_t)e->tb.buf + off, rkey), 0);
	t_run();
	t_expect_wc(e->p.a.scq, &wc, wr_id, status);
}

#define MW_RW (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define MR_MW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND)

/* The scene most window tests start from: mw_open's, the region with
 * MR_MW, and the window bound (mw_bind_ok) with access; its key in *rkey.
 * 0, or -1 if it could not open. */
static int mw_open_bound(struct t_mwenv *e, enum ibv_mw_type type, unsigned access,
			 uint32_t *rkey)
{
	if (mw_open(e, type, MR_MW))
		return -1;
	*rkey = mw_bind_ok(e, access);
	return 0;
}

static void check_mw_access(enum ibv_mw_type type)
{
	struct t_mwenv e;
	struct ibv_wc wc;
	uint32_t rkey;

	/* Inside the window: WRITE and READ through its key work, even
	 * though the region itself grants no remote access. */
	if (mw_open_bound(&e, type, MW_RW, &rkey))
		return;
	UT_EQ(t_post_rdma(&e.p.a, 1, IBV_WR_RDMA_WRITE, e.la.buf, MW_LEN, e.la.mr->lkey,
			  (uintptr_t)e.tb.buf + MW_OFF, rkey), 0);
	UT_EQ(t_post_rdma(&e.p.a, 2, IBV_WR_RDMA_READ, e.la.buf + 1024, 16, e.la.mr->lkey,
			  (uintptr_t)e.tb.buf + MW_OFF + MW_LEN - 16, rkey), 0);
	t_run();
	t_expect_ok(e.p.a.scq, &wc, 1, 2);
	UT_MEMEQ(e.tb.buf + MW_OFF, e.la.buf, MW_LEN);
	UT_CHECK(t_mem_intact_outside(&e.tb, 2, MW_OFF, MW_LEN));
	UT_MEMEQ(e.la.buf + 1024, e.la.buf + MW_LEN - 16, 16);
	/* The region's own rkey grants nothing remote. */
	mw_write_expect(&e, 3, 8, MW_OFF, e.tb.mr->rkey, IBV_WC_REM_ACCESS_ERR);
	mw_close(&e);

	/* One byte past the window (inside the region): refused. */
	if (mw_open_bound(&e, type, MW_RW, &rkey))
		return;
	mw_write_expect(&e, 4, 16, MW_OFF + MW_LEN - 15, rkey, IBV_WC_REM_ACCESS_ERR);
	UT_CHECK(t_mem_intact(&e.tb, 2));
	mw_close(&e);

	/* One byte before it. */
	if (mw_open_bound(&e, type, MW_RW, &rkey))
		return;
	UT_EQ(t_post_rdma(&e.p.a, 5, IBV_WR_RDMA_READ, e.la.buf, 16, e.la.mr->lkey,
			  (uintptr_t)e.tb.buf + MW_OFF - 1, rkey), 0);
	t_run();
	t_expect_wc(e.p.a.scq, &wc, 5, IBV_WC_REM_ACCESS_ERR);
	UT_CHECK(t_mem_intact(&e.la, 1));
	mw_close(&e);

	/* A read-only window refuses a WRITE. */
	if (mw_open_bound(&e, type, IBV_ACCESS_REMOTE_READ, &rkey))
		return;
	mw_write_expect(&e, 6, 16, MW_OFF, rkey, IBV_WC_REM_ACCESS_ERR);
	UT_CHECK(t_mem_intact(&e.tb, 2));
	mw_close(&e);

	/* Atomics through a window that allows them. */
	if (mw_open_bound(&e, type, IBV_ACCESS_REMOTE_ATOMIC, &rkey))
		return;
	memset(e.tb.buf + MW_OFF, 0, 8);
	UT_EQ(t_post_atomic(&e.p.a, 7, IBV_WR_ATOMIC_FETCH_AND_ADD, e.la.buf, e.la.mr->lkey,
			    (uintptr_t)e.tb.buf + MW_OFF, rkey, 5, 0), 0);
	t_run();
	t_expect_wc(e.p.a.scq, &wc, 7, IBV_WC_SUCCESS);
	UT_EQ(*(uint64_t *)(e.tb.buf + MW_OFF), 5);
	mw_close(&e);
}

static void test_mw_access(void)
{
	check_mw_access(IBV_MW_TYPE_1);
	check_mw_access(IBV_MW_TYPE_2);
}

/* Rebinding moves the window and changes its key: the old key is dead. */
static void test_mw_rebind_stale_key(void)
{
	struct t_mwenv e;
	struct ibv_wc wc;
	uint32_t k1, k2;

	if (mw_open_bound(&e, IBV_MW_TYPE_1, MW_RW, &k1))
		return;
	k2 = mw_bind_ok(&e, MW_RW);
	UT_CHECK(k1 != k2);
	UT_EQ(k1 >> 8, k2 >> 8);
	mw_write_expect(&e, 1, 8, MW_OFF, k2, IBV_WC_SUCCESS);
	mw_write_expect(&e, 2, 8, MW_OFF + 8, k1, IBV_WC_REM_ACCESS_ERR);
	UT_CHECK(t_mem_intact_outside(&e.tb, 2, MW_OFF, 8));
	mw_close(&e);

	/* Type 1: a zero-length bind unbinds; the key then reaches nothing. */
	if (mw_open_bound(&e, IBV_MW_TYPE_1, MW_RW, &k1))
		return;
	UT_EQ(e.tb.mr->rkey == 0, 0);
	UT_EQ(to_umr(e.tb.mr)->windows, 1);
	UT_EQ(ibv_dereg_mr(e.tb.mr), EBUSY);     /* a window is bound to it */
	k2 = ibv_inc_rkey(k1);
	UT_EQ(mw_post_bind(&e, 9, k2, NULL, 0, 0, 0), 0);
	t_expect_wc(e.p.b.scq, &wc, 9, IBV_WC_SUCCESS);
	UT_CHECK(!e.mw->bound);
	UT_EQ(to_umr(e.tb.mr)->windows, 0);
	mw_write_expect(&e, 3, 8, MW_OFF, k2, IBV_WC_REM_ACCESS_ERR);
	mw_close(&e);
}

/* B invalidates rkey (LOCAL_INV, wr_id 0x1a, signaled): the completion
 * has status, and is left in *wc. */
#define mw_local_inv(e, rkey, wcp, status)                                     \
	do {                                                                   \
		struct ibv_send_wr _wr = { .wr_id = 0x1a, .opcode = IBV_WR_LOCAL_INV, \
					   .send_flags = IBV_SEND_SIGNALED,      \
					   .invalidate_rkey = (rkey) };          \
		UT_EQ(t_post((e)->p.b.qp, &_wr), 0);                           \
		t_expect_wc((e)->p.b.scq, (wcp), 0x1a, (status));              \
	} while (0)

/* LOCAL_INV on a type 2 window: completes as LOCAL_INV, then the key fails. */
static void test_mw_local_inv(void)
{
	struct t_mwenv e;
	struct ibv_wc wc;
	uint32_t rkey;

	if (mw_open_bound(&e, IBV_MW_TYPE_2, MW_RW, &rkey))
		return;
	mw_local_inv(&e, rkey, &wc, IBV_WC_SUCCESS);
	UT_EQ(wc.opcode, IBV_WC_LOCAL_INV);
	UT_CHECK(!e.mw->bound);
	UT_EQ(to_umr(e.tb.mr)->windows, 0);
	mw_write_expect(&e, 1, 8, MW_OFF, rkey, IBV_WC_REM_ACCESS_ERR);
	UT_CHECK(t_mem_intact(&e.tb, 2));
	mw_close(&e);

	/* A type 2 window can be bound again once invalidated, under a new key. */
	if (mw_open_bound(&e, IBV_MW_TYPE_2, MW_RW, &rkey))
		return;
	mw_local_inv(&e, rkey, &wc, IBV_WC_SUCCESS);
	rkey = mw_bind_ok(&e, MW_RW);
	mw_write_expect(&e, 2, 8, MW_OFF, rkey, IBV_WC_SUCCESS);
	mw_close(&e);

	/* LOCAL_INV of a type 1 window, or of an unknown key: an error. */
	if (mw_open_bound(&e, IBV_MW_TYPE_1, MW_RW, &rkey))
		return;
	mw_local_inv(&e, rkey, &wc, IBV_WC_MW_BIND_ERR);
	UT_EQ(e.p.b.qp->state, IBV_QPS_ERR);
	UT_CHECK(e.mw->bound);
	mw_close(&e);
}

/* SEND with invalidate: the receive completion says which key; the key
 * is dead afterwards. */
static void test_mw_send_with_inv(void)
{
	struct t_mwenv e;
	struct ibv_wc wc;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .wr_id = 0x51, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_INV, .send_flags = IBV_SEND_SIGNALED };
	uint32_t rkey;

	if (mw_open_bound(&e, IBV_MW_TYPE_2, MW_RW, &rkey))
		return;
	UT_EQ(t_post_recv(&e.p.b, 0x52, e.tb.buf + 600, 400, e.tb.mr->lkey), 0);
	sge = (struct ibv_sge){ (uintptr_t)e.la.buf, 300, e.la.mr->lkey };   /* two packets */
	wr.invalidate_rkey = rkey;
	UT_EQ(t_post(e.p.a.qp, &wr), 0);
	UT_EQ(t_count(), 2);
	UT_EQ(t_op(0), UR_OP_RC_SEND_FIRST);
	UT_EQ(t_op(1), UR_OP_RC_SEND_LAST_WITH_INVALIDATE);
	UT_EQ(ieth_rkey(t_hdr(t_pkt(1), UR_HDR_IETH)), rkey);
	t_run();
	t_expect_wc(e.p.b.rcq, &wc, 0x52, IBV_WC_SUCCESS);
	UT_EQ(wc.byte_len, 300);
	UT_EQ(wc.wc_flags, IBV_WC_WITH_INV);
	UT_EQ(wc.invalidated_rkey, rkey);
	t_expect_wc(e.p.a.scq, &wc, 0x51, IBV_WC_SUCCESS);
	UT_CHECK(!e.mw->bound);
	mw_write_expect(&e, 1, 8, MW_OFF, rkey, IBV_WC_REM_ACCESS_ERR);
	UT_CHECK(t_mem_intact_outside(&e.tb, 2, 600, 300));
	mw_close(&e);

	/* Invalidating a type 1 window remotely is refused: NAK invalid
	 * request, and the window stays bound. */
	if (mw_open_bound(&e, IBV_MW_TYPE_1, MW_RW, &rkey))
		return;
	UT_EQ(t_post_recv(&e.p.b, 0x52, e.tb.buf + 600, 400, e.tb.mr->lkey), 0);
	sge = (struct ibv_sge){ (uintptr_t)e.la.buf, 300, e.la.mr->lkey };
	wr.invalidate_rkey = rkey;
	UT_EQ(t_post(e.p.a.qp, &wr), 0);
	t_run();
	t_expect_wc(e.p.a.scq, &wc, 0x51, IBV_WC_REM_INV_REQ_ERR);
	t_expect_wc(e.p.b.rcq, &wc, 0x52, IBV_WC_REM_INV_REQ_ERR);
	UT_CHECK(e.mw->bound);
	mw_close(&e);
}

/* Bind errors: MW_BIND_ERR for the bind, the QP in ERROR, the window as it
 * was. */
enum bind_case {
	BIND_NO_MW_BIND,         /* region registered without IBV_ACCESS_MW_BIND */
	BIND_OUTSIDE,            /* window past the region's end */
	BIND_INDEX,              /* new rkey with other index bits */
	BIND_TYPE2_TWICE,        /* type 2 bound again while bound */
	BIND_OTHER_PD_MR,        /* region of another PD */
	BIND_WRITE_NO_LOCAL,     /* remote write window on a region without local write */
	BIND_ZERO_BASED,         /* access flags the device does not offer */
	BIND_NR
};

static void check_bind_error(enum bind_case c)
{
	enum ibv_mw_type type = c == BIND_TYPE2_TWICE ? IBV_MW_TYPE_2 : IBV_MW_TYPE_1;
	int mr_access = c == BIND_NO_MW_BIND ? IBV_ACCESS_LOCAL_WRITE
			: c == BIND_WRITE_NO_LOCAL ? IBV_ACCESS_MW_BIND : MR_MW;
	struct t_mwenv e;
	struct ibv_wc wc;
	struct ibv_mr *mr;
	struct ur_pd *other = NULL;
	uint32_t rkey;
	uint64_t off = MW_OFF, len = MW_LEN;
	unsigned access = MW_RW;
	int before = ut_failures;

	if (mw_open(&e, type, mr_access))
		return;
	mr = e.tb.mr;
	if (c == BIND_TYPE2_TWICE)
		mw_bind_ok(&e, MW_RW);
	rkey = ibv_inc_rkey(e.mw->ibmw.rkey);
	switch (c) {
	case BIND_OUTSIDE:
		off = MW_REGION - 8;
		len = 16;
		break;
	case BIND_INDEX:
		rkey += 0x100;
		break;
	case BIND_OTHER_PD_MR:
		other = ut_pd(e.p.b.ctx);
		mr = ibv_reg_mr_iova2(&other->ibpd, e.tb.buf, MW_REGION, (uintptr_t)e.tb.buf, MR_MW);
		break;
	case BIND_ZERO_BASED:
		access |= IBV_ACCESS_ZERO_BASED;
		break;
	default:
		break;
	}
	{
		uint32_t old_rkey = e.mw->ibmw.rkey;
		bool was_bound = e.mw->bound;

		UT_EQ(mw_post_bind(&e, 0xbad, rkey, mr, off, len, access), 0);
		t_expect_wc(e.p.b.scq, &wc, 0xbad, IBV_WC_MW_BIND_ERR);
		UT_EQ(e.p.b.qp->state, IBV_QPS_ERR);
		UT_EQ(e.mw->ibmw.rkey, old_rkey);
		UT_EQ(e.mw->bound, was_bound);
	}
	if (ut_failures != before)
		fprintf(stderr, "  (bind case %d)\n", c);
	if (mr != e.tb.mr)
		UT_EQ(ibv_dereg_mr(mr), 0);
	t_destroy(ur_pd_dealloc, other);
	mw_close(&e);
}

static void test_mw_bind_errors(void)
{
	for (int c = 0; c < BIND_NR; c++)
		check_bind_error((enum bind_case)c);
}

/* A bind behind an unacknowledged SEND completes after it, in order. */
MW_TEST(test_mw_bind_ordering, IBV_MW_TYPE_2, MR_MW)
{
	struct ibv_wc wc;

	UT_EQ(t_post_recv(&e->p.a, 1, e->la.buf, 64, e->la.mr->lkey), 0);
	UT_EQ(t_post_send(&e->p.b, 2, IBV_WR_SEND, e->tb.buf, 16, e->tb.mr->lkey, IBV_SEND_SIGNALED), 0);
	UT_EQ(mw_post_bind(e, 3, ibv_inc_rkey(e->mw->ibmw.rkey), e->tb.mr, MW_OFF, MW_LEN, MW_RW), 0);
	/* Executed already (later requests may rely on it)... */
	UT_CHECK(e->mw->bound);
	/* ...but completed only after the SEND. */
	UT_CHECK(t_cq_empty(e->p.b.scq));
	t_run();
	t_expect_ok(e->p.b.scq, &wc, 2, 2);
	UT_EQ(wc.opcode, IBV_WC_BIND_MW);
	t_expect_wc(e->p.a.rcq, &wc, 1, IBV_WC_SUCCESS);
}

/* A bind behind a READ (or an atomic) and nothing after it: it completes
 * when the READ's response arrives, not never. */
static void test_mw_bind_after_read(void)
{
	for (int atomic = 0; atomic < 2; atomic++) {
		struct t_mwenv e;
		struct t_mem ra;
		struct ibv_wc wc;

		if (mw_open(&e, IBV_MW_TYPE_2, MR_MW))
			return;
		t_mem_reg(&ra, &e.p.a, 64, T_ALL_ACCESS, 3);   /* what B reads */
		if (atomic)
			UT_EQ(t_post_atomic(&e.p.b, 1, IBV_WR_ATOMIC_FETCH_AND_ADD, e.tb.buf, e.tb.mr->lkey,
					    (uintptr_t)ra.buf, ra.mr->rkey, 1, 0), 0);
		else
			UT_EQ(t_post_rdma(&e.p.b, 1, IBV_WR_RDMA_READ, e.tb.buf, 64, e.tb.mr->lkey,
					  (uintptr_t)ra.buf, ra.mr->rkey), 0);
		UT_EQ(mw_post_bind(&e, 2, ibv_inc_rkey(e.mw->ibmw.rkey), e.tb.mr, MW_OFF, MW_LEN, MW_RW), 0);
		t_run();
		t_expect_ok(e.p.b.scq, &wc, 1, 2);
		UT_EQ(wc.opcode, IBV_WC_BIND_MW);
		t_mem_free(&ra);
		mw_close(&e);
	}
}
