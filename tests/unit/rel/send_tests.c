/* SEND: segmentation at the path MTU, opcodes, PSNs, pad, AckReq, data
 * placement and the completions on both sides. */

/* One SEND of len bytes from A to B over a path MTU of mtu, both sides
 * starting at PSN psn; every packet is checked as it leaves. */
static void check_send(uint32_t len, enum ibv_mtu mtu, uint32_t psn, bool imm, bool solicited)
{
	struct t_opts o = { .mtu = mtu, .a_psn = psn, .b_psn = psn };
	uint32_t mtub = ur_mtu_bytes(mtu), npkts = len ? (len + mtub - 1) / mtub : 1;
	struct t_pair p;
	struct ibv_wc wc;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .wr_id = 0x5e5d, .sg_list = &sge, .num_sge = 1 };

	if (t_pair_open_mem(&p, &o, len + 16, len + 16, IBV_ACCESS_LOCAL_WRITE))
		return;
	UT_EQ(t_post_recv_mem(&p.b, 0x4ec, 0, (uint32_t)p.b.mem.len), 0);
	sge = (struct ibv_sge){ (uintptr_t)p.a.mem.buf, len, p.a.mem.mr->lkey };
	wr.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
	wr.imm_data = htonl(0xfeedbeef);
	wr.send_flags = IBV_SEND_SIGNALED | (solicited ? IBV_SEND_SOLICITED : 0);
	UT_EQ(t_post(p.a.qp, &wr), 0);

	UT_EQ(t_count(), npkts);
	for (uint32_t i = 0; i < npkts && i < t_count(); i++) {
		struct ur_pkt_view v = t_view(i);
		bool first = i == 0, last = i + 1 == npkts;
		uint32_t want_len = last ? len - i * mtub : mtub;
		uint8_t want = first && last ? (imm ? UR_OP_RC_SEND_ONLY_WITH_IMMEDIATE : UR_OP_RC_SEND_ONLY)
			       : first ? UR_OP_RC_SEND_FIRST
			       : last ? (imm ? UR_OP_RC_SEND_LAST_WITH_IMMEDIATE : UR_OP_RC_SEND_LAST)
				      : UR_OP_RC_SEND_MIDDLE;
		bool want_ackreq = last || (i + 1) % UR_ACK_EVERY == 0;

		UT_EQ(v.opcode, want);
		UT_EQ(v.psn, psn_add(psn, i));
		UT_EQ(v.qpn, ur_qp_num(p.b.qp));
		UT_EQ(v.paylen, want_len);
		UT_EQ(v.pad, (4 - (want_len & 3)) & 3);
		UT_EQ(bth_ackreq(v.bth), want_ackreq);
		UT_EQ(bth_se(v.bth), solicited && last);
		UT_EQ(bth_pkey(v.bth), 0xffff);
		UT_MEMEQ(v.payload, p.a.mem.buf + i * mtub, want_len);
		if (v.mask & UR_OPF_IMMDT)
			UT_EQ(immdt_get(ur_pkt_hdr(&v, UR_HDR_IMMDT)), htonl(0xfeedbeef));
	}
	/* Nothing completes before the ACK. */
	UT_CHECK(t_cq_empty(p.a.scq));
	t_run();

	t_expect_wc(p.b.rcq, &wc, 0x4ec, IBV_WC_SUCCESS);
	UT_EQ(wc.opcode, IBV_WC_RECV);
	UT_EQ(wc.byte_len, len);
	UT_EQ(wc.qp_num, ur_qp_num(p.b.qp));
	UT_EQ(wc.src_qp, ur_qp_num(p.a.qp));
	UT_EQ(wc.wc_flags, imm ? IBV_WC_WITH_IMM : 0);
	if (imm)
		UT_EQ(wc.imm_data, htonl(0xfeedbeef));
	UT_MEMEQ(p.b.mem.buf, p.a.mem.buf, len);
	/* Past the message the receive buffer and its guards are untouched. */
	UT_CHECK(t_mem_intact_outside(&p.b.mem, 2, 0, len));
	t_expect_wc(p.a.scq, &wc, 0x5e5d, IBV_WC_SUCCESS);
	UT_EQ(wc.opcode, IBV_WC_SEND);
	UT_EQ(wc.qp_num, ur_qp_num(p.a.qp));
	UT_CHECK(t_cq_empty(p.a.scq));
	UT_CHECK(t_cq_empty(p.b.rcq));
	/* Both sides agree on where the next message starts. */
	UT_EQ(p.a.qp->req.psn, psn_add(psn, npkts));
	UT_EQ(p.a.qp->comp.psn, psn_add(psn, npkts));
	UT_EQ(p.b.qp->resp.psn, psn_add(psn, npkts));
	UT_EQ(p.b.qp->resp.msn, 1);
	UT_EQ(p.a.qp->state, IBV_QPS_RTS);
	UT_EQ(p.b.qp->state, IBV_QPS_RTS);
	t_pair_close(&p);
}

static void test_send_sizes(void)
{
	check_send(1, IBV_MTU_1024, 0, false, false);
	check_send(1024, IBV_MTU_1024, 0, false, false);
	check_send(1025, IBV_MTU_1024, 0, false, false);
	check_send(10 * 1024, IBV_MTU_1024, 0, false, false);
	check_send(0, IBV_MTU_1024, 0, false, false);
	check_send(3, IBV_MTU_256, 100, false, false);
	check_send(4096, IBV_MTU_4096, 7, false, false);
}

static void test_send_imm_solicited(void)
{
	check_send(1, IBV_MTU_1024, 0, true, true);
	check_send(2049, IBV_MTU_1024, 0, true, true);
	check_send(0, IBV_MTU_256, 0, true, false);
}

/* More than UR_ACK_EVERY packets: an ACK is asked for every 16. */
static void test_send_ackreq_every(void)
{
	check_send(40 * 256 - 5, IBV_MTU_256, 0, false, false);
}

/* Every packet of a message crossing the 2^24 wrap. */
static void test_send_psn_wrap(void)
{
	check_send(10 * 256, IBV_MTU_256, 0xfffff0, false, false);
	check_send(40 * 256, IBV_MTU_256, 0xfffffe, true, false);
	check_send(1, IBV_MTU_256, 0xffffff, false, false);
}

/* Gather from several SGEs, scatter into several, inline data. */
static void test_send_sge_inline(void)
{
	struct t_opts o = { .mtu = IBV_MTU_256, .max_inline = 64 };
	struct t_pair p;
	struct t_mem sa, rb;
	struct ibv_wc wc;
	struct ibv_sge s[3], r[3];
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = s, .num_sge = 3, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibv_recv_wr rw = { .wr_id = 2, .sg_list = r, .num_sge = 3 }, *rbad;
	uint8_t expect[1000];

	if (t_pair_open(&p, &o))
		return;
	t_mem_reg(&sa, &p.a, 1024, IBV_ACCESS_LOCAL_WRITE, 3);
	t_mem_reg(&rb, &p.b, 1024, IBV_ACCESS_LOCAL_WRITE, 4);
	/* 300 + 1 + 399 bytes gathered; scattered into 10 + 500 + 400. */
	s[0] = (struct ibv_sge){ (uintptr_t)sa.buf + 5, 300, sa.mr->lkey };
	s[1] = (struct ibv_sge){ (uintptr_t)sa.buf + 900, 1, sa.mr->lkey };
	s[2] = (struct ibv_sge){ (uintptr_t)sa.buf + 400, 399, sa.mr->lkey };
	memcpy(expect, sa.buf + 5, 300);
	memcpy(expect + 300, sa.buf + 900, 1);
	memcpy(expect + 301, sa.buf + 400, 399);
	r[0] = (struct ibv_sge){ (uintptr_t)rb.buf + 1000, 10, rb.mr->lkey };
	r[1] = (struct ibv_sge){ (uintptr_t)rb.buf, 500, rb.mr->lkey };
	r[2] = (struct ibv_sge){ (uintptr_t)rb.buf + 500, 400, rb.mr->lkey };
	UT_EQ(ur_qp_post_recv(p.b.qp, &rw, &rbad), 0);
	UT_EQ(t_post(p.a.qp, &wr), 0);
	UT_EQ(t_count(), 3);
	t_run();
	t_expect_wc(p.b.rcq, &wc, 2, IBV_WC_SUCCESS);
	UT_EQ(wc.byte_len, 700);
	UT_MEMEQ(rb.buf + 1000, expect, 10);
	UT_MEMEQ(rb.buf, expect + 10, 500);
	UT_MEMEQ(rb.buf + 500, expect + 510, 190);
	t_expect_wc(p.a.scq, &wc, 1, IBV_WC_SUCCESS);

	/* Inline: the data is copied at post time, the buffer may change. */
	{
		uint8_t msg[50];
		struct ibv_sge is = { (uintptr_t)msg, sizeof(msg), 0 /* lkey unused */ };
		struct ibv_send_wr iw = { .wr_id = 3, .sg_list = &is, .num_sge = 1,
					  .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE };

		memset(msg, 0x5a, sizeof(msg));
		rw.wr_id = 4;
		rw.num_sge = 1;
		r[0] = (struct ibv_sge){ (uintptr_t)rb.buf, 64, rb.mr->lkey };
		UT_EQ(ur_qp_post_recv(p.b.qp, &rw, &rbad), 0);
		UT_EQ(t_post(p.a.qp, &iw), 0);
		memset(msg, 0, sizeof(msg));
		t_run();
		t_expect_wc(p.b.rcq, &wc, 4, IBV_WC_SUCCESS);
		UT_EQ(wc.byte_len, 50);
		for (int i = 0; i < 50; i++)
			UT_EQ(rb.buf[i], 0x5a);
		t_expect_wc(p.a.scq, &wc, 3, IBV_WC_SUCCESS);
		/* Too long for max_inline_data: refused at post. */
		is.length = 65;
		UT_EQ(t_post(p.a.qp, &iw), -EINVAL);
	}
	t_mem_free(&sa);
	t_mem_free(&rb);
	t_pair_close(&p);
}

/* Several messages outstanding: one ACK for the last completes them all,
 * in order; unsignaled ones complete silently. */
T_PAIR_TEST(test_send_coalesced_ack, 0, 0, 0, 0)
{
	struct t_mem sa, rb;
	struct ibv_wc wc[8];

	t_mem_reg(&sa, &p->a, 4096, IBV_ACCESS_LOCAL_WRITE, 5);
	t_mem_reg(&rb, &p->b, 4096, IBV_ACCESS_LOCAL_WRITE, 6);
	for (int i = 0; i < 4; i++) {
		UT_EQ(t_post_recv(&p->b, 100 + i, rb.buf + i * 1024, 1024, rb.mr->lkey), 0);
		UT_EQ(t_post_send(&p->a, 200 + i, IBV_WR_SEND, sa.buf + i * 1024, 1024, sa.mr->lkey,
				  i == 2 ? 0 : IBV_SEND_SIGNALED), 0);
	}
	UT_EQ(t_count(), 4);
	/* B receives all four, each asks for an ACK; only the last ACK gets
	 * through. */
	for (int i = 0; i < 4; i++)
		t_deliver(0);
	UT_EQ(t_count(), 4);
	for (unsigned i = 0; i < 4; i++) {
		UT_EQ(t_op(i), UR_OP_RC_ACKNOWLEDGE);
		UT_EQ(t_psn(i), i);
	}
	t_drop(0);
	t_drop(0);
	t_drop(0);
	t_deliver(0);
	UT_EQ(t_poll(p->a.scq, wc, 8), 3);
	UT_EQ(wc[0].wr_id, 200);
	UT_EQ(wc[1].wr_id, 201);
	UT_EQ(wc[2].wr_id, 203);
	UT_EQ(t_poll(p->b.rcq, wc, 8), 4);
	for (int i = 0; i < 4; i++)
		UT_EQ(wc[i].wr_id, 100 + i);
	UT_MEMEQ(rb.buf, sa.buf, 4096);
	UT_EQ(p->a.qp->sq.head, p->a.qp->sq.tail);
	t_mem_free(&sa);
	t_mem_free(&rb);
}
