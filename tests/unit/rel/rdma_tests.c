/* RDMA WRITE, READ and the atomics, including across the PSN wrap. */

static void check_write(uint32_t len, enum ibv_mtu mtu, uint32_t psn, bool imm)
{
	struct t_opts o = { .mtu = mtu, .a_psn = psn, .b_psn = psn };
	uint32_t mtub = ur_mtu_bytes(mtu), npkts = len ? (len + mtub - 1) / mtub : 1;
	uint32_t off = 24;       /* not at the start of the region */
	struct t_pair p;
	struct t_mem rb;
	struct ibv_wc wc;

	if (t_pair_open_mem(&p, &o, len + 8, len + 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE))
		return;
	t_mem_reg(&rb, &p.b, 16, IBV_ACCESS_LOCAL_WRITE, 3);
	if (imm)
		UT_EQ(t_post_recv(&p.b, 0x77, rb.buf, 16, rb.mr->lkey), 0);
	UT_EQ(t_post_rdma_mem(&p, 0x99, imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE, 0, len,
			      off), 0);
	UT_EQ(t_count(), npkts);
	for (uint32_t i = 0; i < npkts && i < t_count(); i++) {
		struct ur_pkt_view v = t_view(i);
		bool first = i == 0, last = i + 1 == npkts;
		uint8_t want = first && last ? (imm ? UR_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE
						    : UR_OP_RC_RDMA_WRITE_ONLY)
			       : first ? UR_OP_RC_RDMA_WRITE_FIRST
			       : last ? (imm ? UR_OP_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE
					     : UR_OP_RC_RDMA_WRITE_LAST)
				      : UR_OP_RC_RDMA_WRITE_MIDDLE;

		UT_EQ(v.opcode, want);
		UT_EQ(v.psn, psn_add(psn, i));
		UT_EQ(bth_ackreq(v.bth), last || (i + 1) % UR_ACK_EVERY == 0);
		if (first) {
			const uint8_t *r = ur_pkt_hdr(&v, UR_HDR_RETH);

			UT_EQ(reth_va(r), (uintptr_t)p.b.mem.buf + off);
			UT_EQ(reth_rkey(r), p.b.mem.mr->rkey);
			UT_EQ(reth_len(r), len);
		} else {
			UT_CHECK(!(v.mask & UR_OPF_RETH));
		}
	}
	t_run();
	UT_MEMEQ(p.b.mem.buf + off, p.a.mem.buf, len);
	UT_CHECK(t_mem_intact_outside(&p.b.mem, 2, off, len));
	if (imm) {
		t_expect_wc(p.b.rcq, &wc, 0x77, IBV_WC_SUCCESS);
		UT_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
		UT_EQ(wc.byte_len, len);
		UT_EQ(wc.wc_flags, IBV_WC_WITH_IMM);
		UT_EQ(wc.imm_data, htonl(0x1234abcd));
		UT_EQ(wc.qp_num, ur_qp_num(p.b.qp));
		UT_EQ(wc.src_qp, ur_qp_num(p.a.qp));
		UT_CHECK(t_mem_intact(&rb, 3));   /* WRITE with IMM writes nothing there */
	}
	UT_CHECK(t_cq_empty(p.b.rcq));
	t_expect_wc(p.a.scq, &wc, 0x99, IBV_WC_SUCCESS);
	UT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
	UT_EQ(p.b.qp->resp.psn, psn_add(psn, npkts));
	t_mem_free(&rb);
	t_pair_close(&p);
}

static void test_write(void)
{
	check_write(1, IBV_MTU_1024, 0, false);
	check_write(1024, IBV_MTU_1024, 0, false);
	check_write(1025, IBV_MTU_1024, 0, false);
	check_write(10 * 1024, IBV_MTU_1024, 0, false);
	check_write(0, IBV_MTU_1024, 0, false);
	check_write(5, IBV_MTU_256, 0, true);
	check_write(3 * 256, IBV_MTU_256, 0, true);
	check_write(0, IBV_MTU_256, 0, true);
	check_write(20 * 256 + 3, IBV_MTU_256, 0xfffff0, false);
	check_write(20 * 256 + 3, IBV_MTU_256, 0xfffff0, true);
}

/* A READ of len bytes; responses are checked as they leave B. */
static void check_read(uint32_t len, enum ibv_mtu mtu, uint32_t psn, uint8_t rd_atomic)
{
	struct t_opts o = { .mtu = mtu, .a_psn = psn, .b_psn = psn, .rd_atomic = rd_atomic };
	uint32_t mtub = ur_mtu_bytes(mtu), npkts = len ? (len + mtub - 1) / mtub : 1;
	uint32_t chunk = UR_READ_CHUNK_PKTS * mtub, nreq = len ? (len + chunk - 1) / chunk : 1;
	struct t_pair p;
	struct ibv_wc wc;
	uint32_t seen_resp = 0, seen_req = 0;

	if (t_pair_open_mem(&p, &o, len + 8, len + 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ))
		return;
	UT_EQ(t_post_rdma_mem(&p, 0x4ead, IBV_WR_RDMA_READ, 3, len, 7), 0);
	/* Deliver packet by packet, checking each request and response. */
	while (t_count()) {
		struct ur_pkt_view v = t_view(0);

		if (v.mask & UR_OPF_REQ) {
			const uint8_t *r = ur_pkt_hdr(&v, UR_HDR_RETH);
			uint32_t want_len = ur_min(len - seen_req * chunk, chunk);

			UT_EQ(v.opcode, UR_OP_RC_RDMA_READ_REQUEST);
			UT_EQ(v.psn, psn_add(psn, seen_req * UR_READ_CHUNK_PKTS));
			UT_CHECK(bth_ackreq(v.bth));
			UT_EQ(reth_va(r), (uintptr_t)p.b.mem.buf + 7 + seen_req * chunk);
			UT_EQ(reth_len(r), want_len);
			UT_EQ(reth_rkey(r), p.b.mem.mr->rkey);
			seen_req++;
		} else {
			uint32_t in_chunk = seen_resp % UR_READ_CHUNK_PKTS;
			uint32_t chunk_pkts = ur_min(npkts - (seen_resp - in_chunk), UR_READ_CHUNK_PKTS);
			bool first = in_chunk == 0, last = in_chunk + 1 == chunk_pkts;
			uint8_t want = first && last ? UR_OP_RC_RDMA_READ_RESPONSE_ONLY
				       : first ? UR_OP_RC_RDMA_READ_RESPONSE_FIRST
				       : last ? UR_OP_RC_RDMA_READ_RESPONSE_LAST
					      : UR_OP_RC_RDMA_READ_RESPONSE_MIDDLE;

			UT_EQ(v.opcode, want);
			UT_EQ(v.psn, psn_add(psn, seen_resp));
			UT_EQ(v.qpn, ur_qp_num(p.a.qp));
			UT_EQ(!!(v.mask & UR_OPF_AETH), first || last);
			UT_EQ(v.paylen, ur_min(len - seen_resp * mtub, mtub));
			UT_MEMEQ(v.payload, p.b.mem.buf + 7 + seen_resp * mtub, v.paylen);
			seen_resp++;
		}
		t_deliver(0);
	}
	UT_EQ(seen_req, nreq);
	UT_EQ(seen_resp, npkts);
	UT_MEMEQ(p.a.mem.buf + 3, p.b.mem.buf + 7, len);
	UT_CHECK(t_mem_intact_outside(&p.a.mem, 1, 3, len));
	UT_CHECK(t_mem_intact(&p.b.mem, 2));
	t_expect_wc(p.a.scq, &wc, 0x4ead, IBV_WC_SUCCESS);
	UT_EQ(wc.opcode, IBV_WC_RDMA_READ);
	UT_EQ(wc.byte_len, len);
	UT_CHECK(t_cq_empty(p.b.rcq));
	UT_EQ(p.a.qp->req.rd_atomic, 0);
	UT_EQ(p.a.qp->comp.psn, psn_add(psn, npkts));
	UT_EQ(p.b.qp->resp.psn, psn_add(psn, npkts));
	t_pair_close(&p);
}

static void test_read(void)
{
	check_read(1, IBV_MTU_1024, 0, 0);
	check_read(1024, IBV_MTU_1024, 0, 0);
	check_read(4 * 1024 + 1, IBV_MTU_1024, 0, 0);
	check_read(0, IBV_MTU_1024, 0, 0);
	/* Larger than one READ chunk: several requests. */
	check_read(UR_READ_CHUNK_PKTS * 256, IBV_MTU_256, 0, 0);
	check_read(UR_READ_CHUNK_PKTS * 256 * 2 + 100, IBV_MTU_256, 0, 0);
	check_read(UR_READ_CHUNK_PKTS * 256 * 2 + 100, IBV_MTU_256, 0, 1);
	/* Across the wrap. */
	check_read(10 * 256, IBV_MTU_256, 0xfffff0, 0);
	check_read(UR_READ_CHUNK_PKTS * 256 + 1, IBV_MTU_256, 0xffffe8, 1);
}

static void check_atomic(uint32_t psn)
{
	struct t_opts o = { .a_psn = psn, .b_psn = psn };
	struct t_pair p;
	struct ibv_wc wc;
	uint64_t *target, *orig;

	if (t_pair_open_mem(&p, &o, 64, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC))
		return;
	target = (uint64_t *)(p.b.mem.buf + 16);
	orig = (uint64_t *)(p.a.mem.buf + 8);
	*target = 0x1111222233334444ull;

	/* CMP_SWP that matches: swapped, original returned. */
	UT_EQ(t_post_atomic(&p.a, 1, IBV_WR_ATOMIC_CMP_AND_SWP, orig, p.a.mem.mr->lkey,
			    (uintptr_t)target, p.b.mem.mr->rkey, 0x1111222233334444ull, 0xabcdull), 0);
	UT_EQ(t_count(), 1);
	{
		struct ur_pkt_view v = t_view(0);
		const uint8_t *a = ur_pkt_hdr(&v, UR_HDR_ATMETH);

		UT_EQ(v.opcode, UR_OP_RC_COMPARE_SWAP);
		UT_EQ(v.psn, psn);
		UT_CHECK(bth_ackreq(v.bth));
		UT_EQ(atmeth_va(a), (uintptr_t)target);
		UT_EQ(atmeth_rkey(a), p.b.mem.mr->rkey);
		UT_EQ(atmeth_swap_add(a), 0xabcdull);
		UT_EQ(atmeth_comp(a), 0x1111222233334444ull);
	}
	t_deliver(0);
	UT_EQ(t_count(), 1);
	UT_EQ(t_op(0), UR_OP_RC_ATOMIC_ACKNOWLEDGE);
	UT_EQ(t_psn(0), psn);
	t_run();
	UT_EQ(*target, 0xabcdull);
	UT_EQ(*orig, 0x1111222233334444ull);
	t_expect_wc(p.a.scq, &wc, 1, IBV_WC_SUCCESS);
	UT_EQ(wc.opcode, IBV_WC_COMP_SWAP);
	UT_EQ(wc.byte_len, 8);

	/* CMP_SWP that does not match: unchanged, original returned. */
	UT_EQ(t_post_atomic(&p.a, 2, IBV_WR_ATOMIC_CMP_AND_SWP, orig, p.a.mem.mr->lkey,
			    (uintptr_t)target, p.b.mem.mr->rkey, 5, 6), 0);
	t_run();
	UT_EQ(*target, 0xabcdull);
	UT_EQ(*orig, 0xabcdull);
	t_expect_wc(p.a.scq, &wc, 2, IBV_WC_SUCCESS);

	/* FETCH_ADD, wrapping at 2^64. */
	*target = 0xfffffffffffffffeull;
	UT_EQ(t_post_atomic(&p.a, 3, IBV_WR_ATOMIC_FETCH_AND_ADD, orig, p.a.mem.mr->lkey,
			    (uintptr_t)target, p.b.mem.mr->rkey, 3, 0), 0);
	UT_EQ(t_op(0), UR_OP_RC_FETCH_ADD);
	UT_EQ(atmeth_swap_add(t_hdr(t_pkt(0), UR_HDR_ATMETH)), 3);
	t_run();
	UT_EQ(*target, 1);
	UT_EQ(*orig, 0xfffffffffffffffeull);
	t_expect_wc(p.a.scq, &wc, 3, IBV_WC_SUCCESS);
	UT_EQ(wc.opcode, IBV_WC_FETCH_ADD);

	/* Several outstanding at once, up to max_rd_atomic, answered in order. */
	*target = 100;
	for (int i = 0; i < 4; i++)
		UT_EQ(t_post_atomic(&p.a, 10 + i, IBV_WR_ATOMIC_FETCH_AND_ADD,
				    p.a.mem.buf + 8 * i, p.a.mem.mr->lkey, (uintptr_t)target, p.b.mem.mr->rkey,
				    1, 0), 0);
	UT_EQ(t_count(), 4);
	t_run();
	UT_EQ(*target, 104);
	for (int i = 0; i < 4; i++) {
		uint64_t got;

		memcpy(&got, p.a.mem.buf + 8 * i, 8);
		UT_EQ(got, 100 + i);
		t_expect_wc(p.a.scq, &wc, 10 + i, IBV_WC_SUCCESS);
	}
	UT_EQ(p.a.qp->req.rd_atomic, 0);
	UT_EQ(p.b.qp->resp.psn, psn_add(psn, 7));
	t_pair_close(&p);
}

static void test_atomics(void)
{
	check_atomic(0);
	check_atomic(0xfffffd);
}

/* max_rd_atomic bounds the READ/ATOMIC requests in flight; the rest wait
 * for responses, and SENDs behind them are not held back. */
T_PAIR_TEST(test_rd_atomic_limit, 4096, 4096, T_ALL_ACCESS, .rd_atomic = 2)
{
	struct ibv_wc wc;

	for (int i = 0; i < 5; i++)
		UT_EQ(t_post_rdma_mem(p, i, IBV_WR_RDMA_READ, 100 * i, 100, 100 * i), 0);
	UT_EQ(t_count(), 2);
	UT_EQ(p->a.qp->req.rd_atomic, 2);
	t_deliver(0);            /* B answers the first; A gets room for one more */
	t_deliver(1);
	UT_EQ(t_count(), 2);     /* the second request, and now the third */
	UT_EQ(t_op(1), UR_OP_RC_RDMA_READ_REQUEST);
	t_run();
	for (int i = 0; i < 5; i++)
		t_expect_wc(p->a.scq, &wc, i, IBV_WC_SUCCESS);
	UT_MEMEQ(p->a.mem.buf, p->b.mem.buf, 500);
}

/* A FENCE waits for every READ/ATOMIC before it. */
static void test_fence(void)
{
	struct t_opts o = { 0 };
	struct t_pair p;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE };
	struct ibv_wc wc;

	if (t_pair_open_mem(&p, &o, 256, 256, T_ALL_ACCESS))
		return;
	UT_EQ(t_post_rdma_mem(&p, 8, IBV_WR_RDMA_READ, 0, 64, 0), 0);
	sge = (struct ibv_sge){ (uintptr_t)p.a.mem.buf + 128, 64, p.a.mem.mr->lkey };
	wr.wr.rdma.remote_addr = (uintptr_t)p.b.mem.buf;
	wr.wr.rdma.rkey = p.b.mem.mr->rkey;
	UT_EQ(t_post(p.a.qp, &wr), 0);
	UT_EQ(t_count(), 1);     /* the WRITE waits behind the READ */
	t_deliver(0);
	UT_EQ(t_count(), 1);
	UT_EQ(t_op(0), UR_OP_RC_RDMA_READ_RESPONSE_ONLY);
	t_deliver(0);            /* the READ completes: now the WRITE goes */
	UT_EQ(t_count(), 1);
	UT_EQ(t_op(0), UR_OP_RC_RDMA_WRITE_ONLY);
	t_run();
	t_expect_ok(p.a.scq, &wc, 8, 2);
	t_pair_close(&p);
}
