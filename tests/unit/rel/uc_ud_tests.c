/* UC: no ACKs, a lost packet loses its message only.  UD: DETH, Q_Key,
 * the 40-byte GRH, datagrams dropped when nobody can take them. */

T_PAIR_TEST(test_uc_send, 1024, 1024, IBV_ACCESS_LOCAL_WRITE,
	    .type = IBV_QPT_UC, .mtu = IBV_MTU_256, .a_psn = 0xfffffe)
{
	struct ibv_wc wc;

	UT_EQ(t_post_recv_mem(&p->b, 1, 0, 1024), 0);
	UT_EQ(t_post_send_mem(&p->a, 2, IBV_WR_SEND_WITH_IMM, 0, 600, IBV_SEND_SIGNALED), 0);
	/* Complete at once: nothing will acknowledge it. */
	t_expect_wc(p->a.scq, &wc, 2, IBV_WC_SUCCESS);
	UT_EQ(t_count(), 3);
	UT_EQ(t_op(0), UR_OP_UC_SEND_FIRST);
	UT_EQ(t_op(1), UR_OP_UC_SEND_MIDDLE);
	UT_EQ(t_op(2), UR_OP_UC_SEND_LAST_WITH_IMMEDIATE);
	for (unsigned i = 0; i < 3; i++) {
		UT_CHECK(!t_ackreq(i));
		UT_EQ(t_psn(i), psn_add(0xfffffe, i));
	}
	t_run();
	UT_EQ(t_count(), 0);          /* and B does not acknowledge */
	t_expect_wc(p->b.rcq, &wc, 1, IBV_WC_SUCCESS);
	UT_EQ(wc.byte_len, 600);
	UT_EQ(wc.wc_flags, IBV_WC_WITH_IMM);
	UT_EQ(wc.src_qp, ur_qp_num(p->a.qp));
	UT_MEMEQ(p->b.mem.buf, p->a.mem.buf, 600);
	/* Read and atomics do not exist on UC. */
	UT_EQ(t_post_rdma(&p->a, 3, IBV_WR_RDMA_READ, p->a.mem.buf, 8, p->a.mem.mr->lkey, 0, 0), -EINVAL);
}

/* A packet of the first message is lost: that message is dropped, its
 * receive WQE takes the next message, which arrives intact. */
T_PAIR_TEST(test_uc_loss_drops_message, 2048, 2048, IBV_ACCESS_LOCAL_WRITE,
	    .type = IBV_QPT_UC, .mtu = IBV_MTU_256)
{
	struct ibv_wc wc;

	UT_EQ(t_post_recv_mem(&p->b, 1, 0, 1024), 0);
	UT_EQ(t_post_recv_mem(&p->b, 2, 1024, 1024), 0);
	UT_EQ(t_post_send_mem(&p->a, 3, IBV_WR_SEND, 0, 1024, 0), 0);
	UT_EQ(t_post_send_mem(&p->a, 4, IBV_WR_SEND, 1024, 512, 0), 0);
	UT_EQ(t_count(), 6);
	t_drop(2);                    /* message 1, third packet */
	t_run();
	t_expect_recv(p, &wc, 1, 512, 0, 1024);
	UT_CHECK(t_cq_empty(p->b.rcq));
	UT_EQ(p->b.qp->state, IBV_QPS_RTS);
	UT_EQ(p->b.qp->resp.psn, 6);
	UT_EQ(p->b.qp->cnt[UR_CNT_OUT_OF_SEQ_REQUEST], 1);

	/* The next message completes into the second receive. */
	UT_EQ(t_post_send_mem(&p->a, 5, IBV_WR_SEND, 0, 300, 0), 0);
	t_run();
	t_expect_recv(p, &wc, 2, 300, 1024, 0);
}

/* A UC pair (MTU 256), a receive of 1024 bytes at B, and two unsignaled
 * SENDs from A: len1 bytes from the start of its buffer, len2 from 1024. */
static int uc_open_two_sends(struct t_pair *p, uint32_t len1, uint32_t len2)
{
	struct t_opts o = { .type = IBV_QPT_UC, .mtu = IBV_MTU_256 };

	if (t_pair_open_mem(p, &o, 2048, 2048, IBV_ACCESS_LOCAL_WRITE))
		return -1;
	UT_EQ(t_post_recv_mem(&p->b, 1, 0, 1024), 0);
	UT_EQ(t_post_send_mem(&p->a, 3, IBV_WR_SEND, 0, len1, 0), 0);
	UT_EQ(t_post_send_mem(&p->a, 4, IBV_WR_SEND, 1024, len2, 0), 0);
	return 0;
}

/* The last packet of a message is lost and the next message is a single
 * packet: the first message must not complete with the second's data. */
static void test_uc_loss_last_packet(void)
{
	struct t_pair p;
	struct ibv_wc wc;

	if (uc_open_two_sends(&p, 512, 100))
		return;
	t_drop(1);
	t_run();
	t_expect_recv(&p, &wc, 1, 100, 0, 1024);
	t_pair_close(&p);
}

/* UC: a MIDDLE where a message must start is dropped with the rest of its
 * message, without an error; the next message is received cleanly. */
static void test_uc_out_of_order(void)
{
	struct t_pair p;
	struct ibv_wc wc;

	if (uc_open_two_sends(&p, 768, 700))
		return;
	bth_set_opcode(t_pkt(0)->buf, UR_OP_UC_SEND_MIDDLE);
	t_run();
	UT_EQ(p.b.qp->state, IBV_QPS_RTS);
	t_expect_recv(&p, &wc, 1, 700, 0, 1024);
	UT_CHECK(t_cq_empty(p.b.rcq));
	t_pair_close(&p);
}

/* UC without a receive WQE: the message is dropped (no RNR on UC). */
T_PAIR_TEST(test_uc_no_receive, 2048, 2048, IBV_ACCESS_LOCAL_WRITE,
	    .type = IBV_QPT_UC, .mtu = IBV_MTU_256)
{
	struct ibv_wc wc;

	UT_EQ(t_post_send_mem(&p->a, 3, IBV_WR_SEND, 0, 600, 0), 0);
	t_run();
	UT_EQ(t_count(), 0);
	UT_EQ(p->b.qp->state, IBV_QPS_RTS);
	UT_EQ(p->b.qp->cnt[UR_CNT_SEND_RNR_ERR], 1);
	UT_EQ(t_post_recv_mem(&p->b, 1, 0, 1024), 0);
	UT_EQ(t_post_send_mem(&p->a, 4, IBV_WR_SEND, 1024, 10, 0), 0);
	t_run();
	t_expect_wc(p->b.rcq, &wc, 1, IBV_WC_SUCCESS);
	UT_EQ(wc.byte_len, 10);
}

/* UC WRITE with a lost packet: the immediate is not delivered; a WRITE
 * with a bad rkey is dropped without an error. */
T_PAIR_TEST(test_uc_write, 2048, 2048, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	    .type = IBV_QPT_UC, .mtu = IBV_MTU_256)
{
	struct t_mem rb;
	struct ibv_wc wc;

	t_mem_reg(&rb, &p->b, 64, IBV_ACCESS_LOCAL_WRITE, 3);
	UT_EQ(t_post_recv(&p->b, 1, rb.buf, 64, rb.mr->lkey), 0);
	UT_EQ(t_post_rdma_mem(p, 2, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 768, 0), 0);
	t_drop(1);
	t_run();
	UT_CHECK(t_cq_empty(p->b.rcq));
	/* A bad rkey: dropped, the QP carries on. */
	UT_EQ(t_post_rdma(&p->a, 3, IBV_WR_RDMA_WRITE_WITH_IMM, p->a.mem.buf, 100, p->a.mem.mr->lkey,
			  (uintptr_t)p->b.mem.buf, p->b.mem.mr->rkey + 1), 0);
	t_run();
	UT_CHECK(t_cq_empty(p->b.rcq));
	UT_EQ(p->b.qp->state, IBV_QPS_RTS);
	UT_MEMEQ(p->b.mem.buf, p->a.mem.buf, 256);         /* the first packet had landed */
	UT_CHECK(t_mem_intact_outside(&p->b.mem, 2, 0, 256));
	/* A good one now completes into the receive still posted. */
	UT_EQ(t_post_rdma_mem(p, 4, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 300, 1024), 0);
	t_run();
	t_expect_wc(p->b.rcq, &wc, 1, IBV_WC_SUCCESS);
	UT_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	UT_EQ(wc.byte_len, 300);
	UT_MEMEQ(p->b.mem.buf + 1024, p->a.mem.buf, 300);
	t_mem_free(&rb);
}

/* ---- UD ------------------------------------------------------------------- */

#define T_QKEY 0x11111111u

struct t_ud {
	struct t_side a, b;
	struct ur_ah *ah;        /* A's handle towards 127.0.0.1 */
	struct t_mem sa, rb;     /* t_ud_open_mem's: A's source, B's receive buffer */
};

static int t_ud_open(struct t_ud *u, bool srq_b)
{
	struct t_opts o = { .type = IBV_QPT_UD };
	struct ibv_qp_attr a = { 0 };
	struct ibv_ah_attr av = t_av();
	struct t_side *s[2] = { &u->a, &u->b };
	int ret = 0;

	memset(u, 0, sizeof(*u));
	t_net_reset();
	for (int i = 0; i < 2 && !ret; i++) {
		ret = t_side_open(s[i], &o, i == 1 && srq_b);
		if (!ret)
			ret = t_to_init(s[i]->qp, 0);
		a.qp_state = IBV_QPS_RTR;
		if (!ret)
			ret = ur_qp_modify(s[i]->qp, &a, IBV_QP_STATE);
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 0x123;
		if (!ret)
			ret = ur_qp_modify(s[i]->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	}
	if (!ret) {
		u->ah = ut_ah(u->a.pd, &av);
		if (!u->ah)
			ret = -errno;
	}
	UT_EQ(ret, 0);
	return ret;
}

static void t_ud_close(struct t_ud *u)
{
	t_mem_free(&u->sa);
	t_mem_free(&u->rb);
	if (u->ah)
		UT_EQ(ur_ah_destroy(u->ah), 0);
	t_side_close(&u->a);
	t_side_close(&u->b);
	t_net_reset();
}

static int t_ud_send(struct t_ud *u, uint64_t wr_id, void *buf, uint32_t len, uint32_t lkey,
		     uint32_t qkey, bool imm)
{
	struct ibv_sge sge = { (uintptr_t)buf, len, lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
				  .opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };

	wr.imm_data = htonl(0xabad1dea);
	wr.wr.ud.ah = &u->ah->ibah;
	wr.wr.ud.remote_qpn = ur_qp_num(u->b.qp);
	wr.wr.ud.remote_qkey = qkey;
	return t_post(u->a.qp, &wr);
}

/* The pair of t_ud_open with a buffer on each side: A's of sa_len bytes
 * (seed 1), B's of 512 (seed 2); t_ud_close frees them. */
static int t_ud_open_mem(struct t_ud *u, bool srq_b, size_t sa_len)
{
	if (t_ud_open(u, srq_b))
		return -1;
	t_mem_reg(&u->sa, &u->a, sa_len, IBV_ACCESS_LOCAL_WRITE, 1);
	t_mem_reg(&u->rb, &u->b, 512, IBV_ACCESS_LOCAL_WRITE, 2);
	return 0;
}

/* A test on t_ud_open_mem's pair and buffers: u. */
#define T_UD_TEST(name, srq_b, sa_len) \
	T_FIXTURE_TEST(name, struct t_ud, u, t_ud_open_mem, t_ud_close, (srq_b), (sa_len))

/* A datagram of len bytes from the start of A's buffer (t_ud_open_mem). */
static int t_ud_send_sa(struct t_ud *u, uint64_t wr_id, uint32_t len, uint32_t qkey, bool imm)
{
	return t_ud_send(u, wr_id, u->sa.buf, len, u->sa.mr->lkey, qkey, imm);
}

/* A receive of len bytes at the start of B's buffer (t_ud_open_mem). */
static int t_ud_recv_rb(struct t_ud *u, uint64_t wr_id, uint32_t len)
{
	return t_post_recv(&u->b, wr_id, u->rb.buf, len, u->rb.mr->lkey);
}

T_UD_TEST(test_ud_grh, false, 256)
{
	struct ibv_wc wc;
	uint8_t *ip;

	UT_EQ(t_ud_recv_rb(u, 1, 512), 0);
	UT_EQ(t_ud_send_sa(u, 2, 100, T_QKEY, true), 0);
	t_expect_wc(u->a.scq, &wc, 2, IBV_WC_SUCCESS);
	UT_EQ(t_count(), 1);
	{
		struct ur_pkt_view v = t_view(0);
		const uint8_t *d = ur_pkt_hdr(&v, UR_HDR_DETH);

		UT_EQ(v.opcode, UR_OP_UD_SEND_ONLY_WITH_IMMEDIATE);
		UT_EQ(v.qpn, ur_qp_num(u->b.qp));
		UT_EQ(v.psn, 0x123);
		UT_EQ(deth_qkey(d), T_QKEY);
		UT_EQ(deth_sqp(d), ur_qp_num(u->a.qp));
	}
	t_run();
	t_expect_wc(u->b.rcq, &wc, 1, IBV_WC_SUCCESS);
	UT_EQ(wc.opcode, IBV_WC_RECV);
	UT_EQ(wc.byte_len, 40 + 100);
	UT_EQ(wc.src_qp, ur_qp_num(u->a.qp));
	UT_EQ(wc.qp_num, ur_qp_num(u->b.qp));
	UT_EQ(wc.wc_flags, IBV_WC_GRH | IBV_WC_WITH_IMM);
	UT_EQ(wc.imm_data, htonl(0xabad1dea));
	/* IPv4: 20 zero bytes, then the IPv4 header. */
	for (int i = 0; i < 20; i++)
		UT_EQ(u->rb.buf[i], 0);
	ip = u->rb.buf + 20;
	UT_EQ(ip[0], 0x45);
	UT_EQ(ip[9], 17);
	UT_EQ(ip[8], 64);
	UT_EQ(ur_get_be32(ip + 12), INADDR_LOOPBACK);
	UT_EQ(ur_get_be32(ip + 16), INADDR_LOOPBACK);
	/* total length: IP + UDP + BTH + DETH + ImmDt + payload + ICRC */
	UT_EQ(ur_get_be16(ip + 2), 20 + 8 + 12 + 8 + 4 + 100 + 4);
	UT_MEMEQ(u->rb.buf + 40, u->sa.buf, 100);
	UT_CHECK(t_mem_intact_outside(&u->rb, 2, 0, 140));
}

/* IPv6 peers get an IPv6 header as the GRH. */
T_UD_TEST(test_ud_grh_ipv6, false, 256)
{
	struct ibv_wc wc;
	struct ur_rx_meta m;
	struct t_pkt *k;

	UT_EQ(t_ud_recv_rb(u, 1, 512), 0);
	UT_EQ(t_ud_send_sa(u, 2, 33, T_QKEY, false), 0);
	memset(&m, 0, sizeof(m));
	m.ipv6 = true;
	m.sgid.raw[15] = 1;
	m.dgid.raw[0] = 0xfe;
	m.dgid.raw[1] = 0x80;
	m.dgid.raw[15] = 2;
	m.traffic_class = 0xb8;
	m.hop_limit = 7;
	k = t_take(0);
	ur_recv_packet(t_stack(), k->buf, k->len, &m);
	free(k);
	t_expect_wc(u->b.rcq, &wc, 1, IBV_WC_SUCCESS);
	UT_EQ(wc.byte_len, 40 + 33);
	UT_EQ(u->rb.buf[0] >> 4, 6);
	UT_EQ(((u->rb.buf[0] & 0xf) << 4) | (u->rb.buf[1] >> 4), 0xb8);
	UT_EQ(u->rb.buf[6], 17);
	UT_EQ(u->rb.buf[7], 7);
	UT_EQ(ur_get_be16(u->rb.buf + 4), 8 + 12 + 8 + 36 + 4);
	UT_MEMEQ(u->rb.buf + 8, m.sgid.raw, 16);
	UT_MEMEQ(u->rb.buf + 24, m.dgid.raw, 16);
	UT_MEMEQ(u->rb.buf + 40, u->sa.buf, 33);
}

/* A datagram for a receive posted in memory unmapped under its live
 * region (UCX at teardown): a protection error completion, not a fault;
 * the next receive works. */
T_UD_TEST(test_ud_recv_unmapped, false, 256)
{
	struct ibv_mr *mr;
	struct ibv_wc wc;
	uint8_t *gone;

	mr = t_mem_reg_half_unmapped(&u->b, IBV_ACCESS_LOCAL_WRITE, &gone);
	if (mr) {
		UT_EQ(t_post_recv(&u->b, 1, gone, 512, mr->lkey), 0);
		UT_EQ(t_ud_recv_rb(u, 2, 512), 0);
		UT_EQ(t_ud_send_sa(u, 3, 100, T_QKEY, false), 0);
		UT_EQ(t_ud_send_sa(u, 4, 100, T_QKEY, false), 0);
		t_run();
		t_expect_wc(u->b.rcq, &wc, 1, IBV_WC_LOC_PROT_ERR);
		t_expect_wc(u->b.rcq, &wc, 2, IBV_WC_SUCCESS);
		UT_MEMEQ(u->rb.buf + 40, u->sa.buf, 100);
		t_mem_free_half_unmapped(mr);
	}
}

T_UD_TEST(test_ud_qkey, false, 256)
{
	struct ibv_wc wc;

	UT_EQ(t_ud_recv_rb(u, 1, 512), 0);
	UT_EQ(t_ud_send_sa(u, 2, 10, T_QKEY + 1, false), 0);
	t_run();
	t_expect_wc(u->a.scq, &wc, 2, IBV_WC_SUCCESS);   /* the sender cannot know */
	UT_CHECK(t_cq_empty(u->b.rcq));
	UT_EQ(u->b.qp->cnt[UR_CNT_QKEY_VIOLATIONS], 1);
	UT_CHECK(t_mem_intact(&u->rb, 2));
	/* The receive is still there for a datagram with the right Q_Key;
	 * a Q_Key with the high bit set means "the sending QP's own". */
	UT_EQ(t_ud_send_sa(u, 3, 10, 0x80000000u, false), 0);
	UT_EQ(deth_qkey(t_hdr(t_pkt(0), UR_HDR_DETH)), T_QKEY);
	t_run();
	t_expect_wc(u->b.rcq, &wc, 1, IBV_WC_SUCCESS);
}

T_UD_TEST(test_ud_drops, false, 4096)
{
	struct ibv_wc wc;

	/* No receive posted: dropped, counted. */
	UT_EQ(t_ud_send_sa(u, 1, 10, T_QKEY, false), 0);
	t_run();
	UT_EQ(u->b.qp->cnt[UR_CNT_SEND_RNR_ERR], 1);
	UT_CHECK(t_cq_empty(u->b.rcq));
	UT_EQ(u->b.qp->state, IBV_QPS_RTS);
	/* A receive too small for GRH + payload: LOC_LEN_ERR, nothing
	 * written, the QP carries on. */
	UT_EQ(t_ud_recv_rb(u, 2, 40 + 9), 0);
	UT_EQ(t_ud_recv_rb(u, 3, 512), 0);
	UT_EQ(t_ud_send_sa(u, 4, 10, T_QKEY, false), 0);
	t_run();
	t_expect_wc(u->b.rcq, &wc, 2, IBV_WC_LOC_LEN_ERR);
	UT_CHECK(t_mem_intact(&u->rb, 2));
	UT_EQ(t_ud_send_sa(u, 5, 10, T_QKEY, false), 0);
	t_run();
	t_expect_wc(u->b.rcq, &wc, 3, IBV_WC_SUCCESS);
	/* A datagram cannot exceed the MTU: refused at post. */
	UT_EQ(t_ud_send_sa(u, 6, u->a.qp->mtu + 1, T_QKEY, false), -EINVAL);
	UT_EQ(t_ud_send_sa(u, 7, u->a.qp->mtu, T_QKEY, false), 0);
	UT_EQ(t_count(), 1);
	/* RC opcodes mean nothing to a UD QP. */
	t_run();
	{
		uint8_t pl[4] = { 0 };

		t_inject(t_build(UR_OP_RC_SEND_ONLY, ur_qp_num(u->b.qp), 0, false, pl, 4));
		UT_CHECK(u->b.qp->cnt[UR_CNT_DROPPED] >= 1);
	}
}

/* A UD QP receiving from an SRQ. */
T_UD_TEST(test_ud_srq, true, 256)
{
	struct ibv_wc wc;

	UT_EQ(t_ud_recv_rb(u, 1, 512), 0);
	UT_EQ(t_ud_send_sa(u, 2, 10, T_QKEY, false), 0);
	t_run();
	t_expect_wc(u->b.rcq, &wc, 1, IBV_WC_SUCCESS);
	UT_EQ(wc.byte_len, 50);
}
