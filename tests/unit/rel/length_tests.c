/* Length and opcode-sequence errors: a SEND larger than the receive
 * buffer, a WRITE whose payload disagrees with its RETH, FIRST/MIDDLE
 * packets that are not exactly one MTU, MIDDLE without FIRST. */

/* RC: NAK invalid request, REM_INV_REQ_ERR at A, LOC_LEN_ERR for the
 * receive at B, both QPs in ERROR. */
T_PAIR_TEST(test_len_send_too_big, 1024, 512, IBV_ACCESS_LOCAL_WRITE, .mtu = IBV_MTU_256)
{
	struct ibv_wc wc;

	UT_EQ(t_post_recv_mem(&p->b, 1, 0, 300), 0);
	UT_EQ(t_post_recv_mem(&p->b, 2, 0, 300), 0);
	UT_EQ(t_post_send_mem(&p->a, 3, IBV_WR_SEND, 0, 301, IBV_SEND_SIGNALED), 0);
	t_deliver(0);                 /* 256 bytes fit */
	UT_EQ(p->b.qp->state, IBV_QPS_RTS);
	t_deliver(0);                 /* 45 more do not */
	UT_EQ(p->b.qp->state, IBV_QPS_ERR);
	UT_EQ(t_count(), 1);
	UT_EQ(t_syn(0), UR_NAK_INVALID_REQ);
	UT_EQ(t_psn(0), 1);
	t_run();
	t_expect_wc(p->a.scq, &wc, 3, IBV_WC_REM_INV_REQ_ERR);
	t_expect_wc(p->b.rcq, &wc, 1, IBV_WC_LOC_LEN_ERR);
	t_expect_wc(p->b.rcq, &wc, 2, IBV_WC_WR_FLUSH_ERR);
	UT_CHECK(t_cq_empty(p->b.rcq));
	UT_EQ(p->a.qp->state, IBV_QPS_ERR);
	/* Not one byte past the buffer. */
	UT_CHECK(t_mem_intact_outside(&p->b.mem, 2, 0, 300));
}

/* B's view of hand-built requests on a fresh pair: the packet goes in at
 * B's expected PSN, and B must answer with NAK syn and end up in state. */
static void expect_nak(struct t_pair *p, struct t_pkt *k, int syn, enum ibv_qp_state state)
{
	t_inject(k);
	UT_EQ(p->b.qp->state, state);
	if (syn < 0) {
		UT_EQ(t_count(), 0);
		return;
	}
	UT_EQ(t_count(), 1);
	UT_EQ(t_op(0), ur_qp_op_base(p->b.qp) | UR_OPL_ACKNOWLEDGE);
	UT_EQ(t_syn(0), syn);
	t_drop(0);
}

static void test_len_write_vs_reth(void)
{
	struct t_opts o = { .mtu = IBV_MTU_256 };
	static const struct { uint8_t op; uint32_t reth_len, paylen; } cases[] = {
		{ UR_OP_RC_RDMA_WRITE_ONLY, 100, 64 },      /* payload shorter */
		{ UR_OP_RC_RDMA_WRITE_ONLY, 64, 100 },      /* payload longer */
		{ UR_OP_RC_RDMA_WRITE_ONLY, 0, 4 },         /* payload with a zero length */
		{ UR_OP_RC_RDMA_WRITE_FIRST, 100, 256 },    /* FIRST longer than the RETH says */
		{ UR_OP_RC_RDMA_WRITE_FIRST, 1000, 200 },   /* FIRST shorter than the MTU */
		{ UR_OP_RC_RDMA_WRITE_ONLY, 300, 300 },     /* ONLY longer than the MTU */
		{ UR_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, 8, 4 },
	};
	uint8_t payload[512];

	memset(payload, 0xab, sizeof(payload));
	for (unsigned i = 0; i < UR_ARRAY_SIZE(cases); i++) {
		struct t_pair p;
		struct t_mem tb, rb;
		struct t_pkt *k;
		uint8_t *r;
		int before = ut_failures;

		if (t_pair_open(&p, &o))
			return;
		t_mem_reg(&tb, &p.b, 2048, T_ALL_ACCESS, 2);
		t_mem_reg(&rb, &p.b, 64, T_ALL_ACCESS, 3);
		UT_EQ(t_post_recv(&p.b, 1, rb.buf, 64, rb.mr->lkey), 0);
		k = t_build(cases[i].op, ur_qp_num(p.b.qp), 0, true, payload, cases[i].paylen);
		r = t_hdr(k, UR_HDR_RETH);
		reth_set_va(r, (uintptr_t)tb.buf);
		reth_set_rkey(r, tb.mr->rkey);
		reth_set_len(r, cases[i].reth_len);
		expect_nak(&p, k, UR_NAK_INVALID_REQ, IBV_QPS_ERR);
		UT_CHECK(t_mem_intact(&tb, 2));
		if (ut_failures != before)
			fprintf(stderr, "  (case %u)\n", i);
		t_mem_free(&tb);
		t_mem_free(&rb);
		t_pair_close(&p);
	}
}

/* FIRST and MIDDLE carry exactly one MTU; LAST and ONLY at most one.
 * (B's receive buffer is big enough for anything.) */
static void test_len_send_packet_sizes(void)
{
	struct t_opts o = { .mtu = IBV_MTU_256 };
	static const struct { uint8_t op1, op2; uint32_t len1, len2; bool ok; } cases[] = {
		{ UR_OP_RC_SEND_FIRST, 0, 255, 0, false },
		{ UR_OP_RC_SEND_FIRST, 0, 260, 0, false },
		{ UR_OP_RC_SEND_FIRST, UR_OP_RC_SEND_MIDDLE, 256, 128, false },
		{ UR_OP_RC_SEND_FIRST, UR_OP_RC_SEND_LAST, 256, 260, false },
		{ UR_OP_RC_SEND_ONLY, 0, 257, 0, false },
		{ UR_OP_RC_SEND_FIRST, UR_OP_RC_SEND_LAST, 256, 256, true },
		{ UR_OP_RC_SEND_ONLY, 0, 256, 0, true },
	};
	uint8_t payload[512];

	memset(payload, 0x3c, sizeof(payload));
	for (unsigned i = 0; i < UR_ARRAY_SIZE(cases); i++) {
		struct t_pair p;
		struct t_mem rb;
		int before = ut_failures;

		if (t_pair_open(&p, &o))
			return;
		t_mem_reg(&rb, &p.b, 4096, T_ALL_ACCESS, 3);
		UT_EQ(t_post_recv(&p.b, 1, rb.buf, 4096, rb.mr->lkey), 0);
		if (cases[i].op2) {
			t_inject(t_build(cases[i].op1, ur_qp_num(p.b.qp), 0, false, payload, cases[i].len1));
			if (cases[i].len1 == 256)
				UT_EQ(p.b.qp->state, IBV_QPS_RTS);
			expect_nak(&p, t_build(cases[i].op2, ur_qp_num(p.b.qp), 1, true, payload,
					       cases[i].len2),
				   cases[i].ok ? UR_AETH_ACK_UNLIMITED : UR_NAK_INVALID_REQ,
				   cases[i].ok ? IBV_QPS_RTS : IBV_QPS_ERR);
		} else {
			expect_nak(&p, t_build(cases[i].op1, ur_qp_num(p.b.qp), 0, true, payload,
					       cases[i].len1),
				   cases[i].ok ? UR_AETH_ACK_UNLIMITED : UR_NAK_INVALID_REQ,
				   cases[i].ok ? IBV_QPS_RTS : IBV_QPS_ERR);
		}
		if (ut_failures != before)
			fprintf(stderr, "  (case %u)\n", i);
		t_mem_free(&rb);
		t_pair_close(&p);
	}
}

/* MIDDLE without FIRST, a new FIRST inside a message, a WRITE MIDDLE
 * inside a SEND: RC answers NAK invalid request and fails both sides. */
static void test_seq_rc_out_of_order(void)
{
	struct t_opts o = { .mtu = IBV_MTU_256 };
	struct t_pair p;
	struct t_mem rb;
	struct ibv_wc wc;

	/* The requester's own first packet, turned into a MIDDLE. */
	if (t_pair_open_mem(&p, &o, 1024, 1024, IBV_ACCESS_LOCAL_WRITE))
		return;
	UT_EQ(t_post_recv_mem(&p.b, 1, 0, 1024), 0);
	UT_EQ(t_post_send_mem(&p.a, 2, IBV_WR_SEND, 0, 768, IBV_SEND_SIGNALED), 0);
	UT_EQ(t_count(), 3);
	bth_set_opcode(t_pkt(0)->buf, UR_OP_RC_SEND_MIDDLE);
	t_deliver(0);
	UT_EQ(p.b.qp->state, IBV_QPS_ERR);
	t_run();
	t_expect_wc(p.a.scq, &wc, 2, IBV_WC_REM_INV_REQ_ERR);
	t_expect_wc(p.b.rcq, &wc, 1, IBV_WC_WR_FLUSH_ERR);
	UT_CHECK(t_mem_intact(&p.b.mem, 2));
	t_pair_close(&p);

	/* Hand-built: FIRST, then FIRST again; FIRST, then WRITE MIDDLE. */
	for (int c = 0; c < 3; c++) {
		static const uint8_t second[] = {
			UR_OP_RC_SEND_FIRST, UR_OP_RC_RDMA_WRITE_MIDDLE, UR_OP_RC_RDMA_READ_REQUEST,
		};
		uint8_t payload[256] = { 0 };
		struct t_pkt *k;

		if (t_pair_open(&p, &o))
			return;
		t_mem_reg(&rb, &p.b, 1024, IBV_ACCESS_LOCAL_WRITE, 2);
		UT_EQ(t_post_recv(&p.b, 1, rb.buf, 1024, rb.mr->lkey), 0);
		t_inject(t_build(UR_OP_RC_SEND_FIRST, ur_qp_num(p.b.qp), 0, false, payload, 256));
		k = t_build(second[c], ur_qp_num(p.b.qp), 1, true, payload,
			    second[c] == UR_OP_RC_RDMA_READ_REQUEST ? 0 : 256);
		expect_nak(&p, k, UR_NAK_INVALID_REQ, IBV_QPS_ERR);
		/* The receive in progress completes in error, not silently. */
		t_expect_wc(p.b.rcq, &wc, 1, IBV_WC_REM_INV_REQ_ERR);
		t_mem_free(&rb);
		t_pair_close(&p);
	}
}
