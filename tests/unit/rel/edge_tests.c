/* Edges the main scenarios do not reach: malformed responses, memory
 * deregistered in the middle of an operation, limits of the responder's
 * resources, opcodes uroce does not execute, XRC messages changing SRQ,
 * windows on UC, invalidation errors. */

/* A READ response of the wrong size: BAD_RESP_ERR, nothing placed. */
T_PAIR_TEST(test_edge_bad_read_response, 1024, 0, 0, .mtu = IBV_MTU_256)
{
	struct ibv_wc wc;
	uint8_t pl[256];
	struct t_pkt *k;

	UT_EQ(t_post_rdma(&p->a, 1, IBV_WR_RDMA_READ, p->a.mem.buf, 600, p->a.mem.mr->lkey, 0x1000,
			  0x1234), 0);
	t_drop(0);
	/* FIRST of 100 bytes where a full MTU is due. */
	memset(pl, 0xee, sizeof(pl));
	k = t_build(UR_OP_RC_RDMA_READ_RESPONSE_FIRST, ur_qp_num(p->a.qp), 0, false, pl, 100);
	aeth_set_syn(t_hdr(k, UR_HDR_AETH), UR_AETH_ACK_UNLIMITED);
	t_inject(k);
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_BAD_RESP_ERR);
	UT_EQ(p->a.qp->state, IBV_QPS_ERR);
	UT_CHECK(t_mem_intact(&p->a.mem, 1));
}

/* The atomic's original value cannot be written locally: LOC_PROT_ERR. */
T_PAIR_TEST(test_edge_atomic_local_error, 0, 0, 0, 0)
{
	struct t_mem ro, tb;
	struct ibv_wc wc;

	t_mem_reg(&ro, &p->a, 64, 0, 1);
	t_mem_reg(&tb, &p->b, 64, T_ALL_ACCESS, 2);
	UT_EQ(t_post_atomic(&p->a, 1, IBV_WR_ATOMIC_FETCH_AND_ADD, ro.buf, ro.mr->lkey,
			    (uintptr_t)tb.buf, tb.mr->rkey, 1, 0), 0);
	t_run();
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_LOC_PROT_ERR);
	UT_CHECK(t_mem_intact(&ro, 1));
	t_mem_free(&ro);
	t_mem_free(&tb);
}

/* A region of B's that a test takes away while op (wr_id 1, len bytes
 * from A's buffer) is under way: buf's len_b bytes, each fill, registered
 * with every access; the test deregisters it. */
static struct ibv_mr *edge_rdma_vanishing(struct t_pair *p, enum ibv_wr_opcode op, uint32_t len,
					  uint8_t *buf, size_t len_b, uint8_t fill)
{
	struct ibv_mr *mr;

	memset(buf, fill, len_b);
	mr = ibv_reg_mr_iova2(&p->b.pd->ibpd, buf, len_b, (uintptr_t)buf, T_ALL_ACCESS);
	UT_EQ(t_post_rdma(&p->a, 1, op, p->a.mem.buf, len, p->a.mem.mr->lkey,
			  (uintptr_t)buf, mr->rkey), 0);
	return mr;
}

/* The target region of a WRITE is deregistered between its packets: the
 * rest is refused (NAK remote access), nothing written past that point. */
T_PAIR_TEST(test_edge_write_target_vanishes, 1024, 0, 0, .mtu = IBV_MTU_256)
{
	struct ibv_wc wc;
	uint8_t *target = malloc(1024);
	struct ibv_mr *mr = edge_rdma_vanishing(p, IBV_WR_RDMA_WRITE, 768, target, 1024, 0x11);

	t_deliver(0);
	UT_MEMEQ(target, p->a.mem.buf, 256);
	UT_EQ(ibv_dereg_mr(mr), 0);
	t_deliver(0);
	UT_EQ(p->b.qp->state, IBV_QPS_ERR);
	for (int i = 256; i < 1024; i++)
		if (target[i] != 0x11) {
			UT_EQ(target[i], 0x11);
			break;
		}
	t_run();
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_REM_ACCESS_ERR);
	free(target);
}

/* The source region of a READ is deregistered while its responses wait
 * for the transport: the responses stop, the requester gets a remote
 * access error, and the responder does not keep executing. */
T_PAIR_TEST(test_edge_read_source_vanishes, 2048, 0, 0, .mtu = IBV_MTU_256)
{
	struct ibv_wc wc;
	uint8_t *source = malloc(2048);
	struct ibv_mr *mr = edge_rdma_vanishing(p, IBV_WR_RDMA_READ, 2048, source, 2048, 0x22);

	net.eagain_after = (int)net.sent + 3;
	t_deliver(0);
	UT_EQ(t_count(), 3);
	UT_EQ(ibv_dereg_mr(mr), 0);
	t_writable();
	UT_EQ(t_count(), 4);
	UT_EQ(t_op(3), UR_OP_RC_ACKNOWLEDGE);
	UT_EQ(t_syn(3), UR_NAK_REM_ACCESS_ERR);
	UT_EQ(t_psn(3), 3);
	t_run();
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_REM_ACCESS_ERR);
	UT_EQ(p->a.qp->state, IBV_QPS_ERR);
	UT_EQ(p->b.qp->state, IBV_QPS_ERR);
	free(source);
}

/* More READ/ATOMIC requests outstanding than max_dest_rd_atomic (the
 * requester was configured beyond the responder): NAK invalid request. */
T_PAIR_TEST(test_edge_rd_atomic_overflow, 256, 256, T_ALL_ACCESS,
	    .rd_atomic = 4, .dest_rd_atomic = 1)
{
	struct ibv_wc wc;

	UT_EQ(p->b.qp->resp.nres, 1);
	net.eagain_after = (int)net.sent + 2;   /* B's first response stalls */
	UT_EQ(t_post_rdma_mem(p, 1, IBV_WR_RDMA_READ, 0, 8, 0), 0);
	UT_EQ(t_post_atomic_mem(p, 2, IBV_WR_ATOMIC_FETCH_AND_ADD, 64, 64, 1, 0), 0);
	t_deliver(0);                 /* READ: its response cannot leave */
	t_deliver(0);                 /* atomic: no slot left */
	UT_EQ(p->b.qp->state, IBV_QPS_ERR);
	t_writable();
	t_run();
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_REM_INV_REQ_ERR);
}

/* Opcodes uroce does not execute (FLUSH, ATOMIC WRITE): NAK invalid
 * request, never a silent success. */
static void test_edge_unsupported_opcodes(void)
{
	static const uint8_t ops[] = { UR_OP_RC_FLUSH, UR_OP_RC_ATOMIC_WRITE };

	for (unsigned i = 0; i < UR_ARRAY_SIZE(ops); i++) {
		struct t_opts o = { 0 };
		struct t_pair p;
		uint8_t pl[8] = { 0 };

		if (t_pair_open(&p, &o))
			return;
		expect_nak(&p, t_build(ops[i], ur_qp_num(p.b.qp), 0, true, pl,
				       ops[i] == UR_OP_RC_ATOMIC_WRITE ? 8 : 0),
			   UR_NAK_INVALID_REQ, IBV_QPS_ERR);
		t_pair_close(&p);
	}
}

/* XRC: a message's later packets must name the SRQ its first named. */
T_XRC_TEST(test_edge_xrc_srq_changes)
{
	uint8_t pl[256] = { 0 };
	struct t_pkt *k;
	struct ibv_wc wc;

	UT_EQ(t_xrc_recv(x, 0, 10, 0, 1024), 0);
	UT_EQ(t_xrc_recv(x, 1, 11, 1024, 1024), 0);
	k = t_build(UR_OP_XRC_SEND_FIRST, ur_qp_num(x->tgt), 0, false, pl, 256);
	xrceth_set_srqn(t_hdr(k, UR_HDR_XRCETH), x->srq[0]->srq_num);
	t_inject(k);
	k = t_build(UR_OP_XRC_SEND_LAST, ur_qp_num(x->tgt), 1, true, pl, 10);
	xrceth_set_srqn(t_hdr(k, UR_HDR_XRCETH), x->srq[1]->srq_num);
	t_inject(k);
	UT_EQ(x->tgt->state, IBV_QPS_ERR);
	UT_EQ(t_count(), 1);
	UT_EQ(t_syn(0), UR_NAK_INVALID_REQ);
	/* The receive taken for the message completes in error on its SRQ's
	 * CQ; the other SRQ is untouched. */
	t_expect_wc(x->bcq[0], &wc, 10, IBV_WC_REM_INV_REQ_ERR);
	UT_CHECK(t_cq_empty(x->bcq[1]));
	UT_EQ(x->srq[1]->rq.tail - x->srq[1]->rq.head, 1);
}

/* A window bound on a UC QP (no ACKs: the bind completes at once). */
T_PAIR_TEST(test_edge_mw_on_uc, 64, 256, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND,
	    .type = IBV_QPT_UC)
{
	struct ibv_mw *mw;
	struct ibv_send_wr wr = { .wr_id = 5, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_wc wc;

	mw = ur_verbs_alloc_mw(&p->b.pd->ibpd, IBV_MW_TYPE_1);
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){ p->b.mem.mr, (uintptr_t)p->b.mem.buf, 128,
							  IBV_ACCESS_REMOTE_WRITE };
	UT_EQ(t_post(p->b.qp, &wr), 0);
	t_expect_wc(p->b.scq, &wc, 5, IBV_WC_SUCCESS);
	UT_EQ(wc.opcode, IBV_WC_BIND_MW);
	UT_EQ(t_post_rdma(&p->a, 6, IBV_WR_RDMA_WRITE, p->a.mem.buf, 64, p->a.mem.mr->lkey,
			  (uintptr_t)p->b.mem.buf + 64, mw->rkey), 0);
	t_run();
	UT_MEMEQ(p->b.mem.buf + 64, p->a.mem.buf, 64);
	UT_EQ(ur_verbs_dealloc_mw(mw), 0);
}

/* Invalidations that must fail: an unknown key, a region's key, a window
 * bound through another QP (remote). */
static void test_edge_invalidate_errors(void)
{
	for (int c = 0; c < 2; c++) {
		struct t_opts o = { 0 };
		struct t_pair p;
		struct t_mem tb;
		struct ibv_send_wr wr = { .wr_id = 7, .opcode = IBV_WR_LOCAL_INV };
		struct ibv_wc wc;

		if (t_pair_open(&p, &o))
			return;
		t_mem_reg(&tb, &p.b, 64, T_ALL_ACCESS, 2);
		wr.invalidate_rkey = c ? tb.mr->rkey : 0x12345600;
		UT_EQ(t_post(p.b.qp, &wr), 0);
		t_expect_wc(p.b.scq, &wc, 7, IBV_WC_MW_BIND_ERR);
		UT_EQ(p.b.qp->state, IBV_QPS_ERR);
		t_mem_free(&tb);
		t_pair_close(&p);
	}
	/* Remote: the type 2 window was bound through B's QP; a SEND with
	 * invalidate arriving on another QP of the same PD is refused. */
	{
		struct t_opts o = { 0 };
		struct t_pair p, q;
		struct t_mem tb, rb, sa;
		struct ibv_mw *mw;
		struct ibv_send_wr wr = { .wr_id = 8, .opcode = IBV_WR_BIND_MW };
		struct ibv_sge sge;
		struct ibv_send_wr inv = { .wr_id = 9, .opcode = IBV_WR_SEND_WITH_INV, .sg_list = &sge,
					   .num_sge = 1 };
		struct ibv_wc wc;

		if (t_pair_open(&p, &o))
			return;
		t_mem_reg(&tb, &p.b, 256, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND, 2);
		mw = ur_verbs_alloc_mw(&p.b.pd->ibpd, IBV_MW_TYPE_2);
		wr.bind_mw.mw = mw;
		wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
		wr.bind_mw.bind_info = (struct ibv_mw_bind_info){ tb.mr, (uintptr_t)tb.buf, 128,
								  IBV_ACCESS_REMOTE_WRITE };
		UT_EQ(t_post(p.b.qp, &wr), 0);
		UT_CHECK(to_umw(mw)->bound);
		/* A second QP on B's context and PD, connected to a second A. */
		memset(&q, 0, sizeof(q));
		UT_EQ(t_side_open(&q.a, &o, false), 0);
		q.b = p.b;                     /* borrow B's context and PD */
		{
			struct ibv_qp_init_attr_ex qa = { .qp_type = IBV_QPT_RC,
							  .comp_mask = IBV_QP_INIT_ATTR_PD };

			qa.pd = &p.b.pd->ibpd;
			qa.send_cq = qa.recv_cq = (struct ibv_cq *)&p.b.rcq->ibcq;
			qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
			qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
			q.b.qp = ut_qp(p.b.ctx, &qa);
		}
		UT_EQ(t_to_init(q.a.qp, T_ALL_ACCESS), 0);
		UT_EQ(t_to_init(q.b.qp, T_ALL_ACCESS), 0);
		UT_EQ(t_connect(q.a.qp, ur_qp_num(q.b.qp), 0, 0, &o), 0);
		UT_EQ(t_connect(q.b.qp, ur_qp_num(q.a.qp), 0, 0, &o), 0);
		t_mem_reg(&rb, &p.b, 64, IBV_ACCESS_LOCAL_WRITE, 3);
		t_mem_reg(&sa, &q.a, 64, IBV_ACCESS_LOCAL_WRITE, 4);
		{
			struct ibv_sge r = { (uintptr_t)rb.buf, 64, rb.mr->lkey };
			struct ibv_recv_wr rw = { .wr_id = 10, .sg_list = &r, .num_sge = 1 }, *bad;

			UT_EQ(ur_qp_post_recv(q.b.qp, &rw, &bad), 0);
		}
		sge = (struct ibv_sge){ (uintptr_t)sa.buf, 8, sa.mr->lkey };
		inv.invalidate_rkey = mw->rkey;
		UT_EQ(t_post(q.a.qp, &inv), 0);
		t_run();
		t_expect_wc(q.a.scq, &wc, 9, IBV_WC_REM_INV_REQ_ERR);
		UT_CHECK(to_umw(mw)->bound);
		t_mem_free(&rb);
		t_mem_free(&sa);
		UT_EQ(ur_qp_destroy(q.b.qp), 0);
		t_side_close(&q.a);
		UT_EQ(ur_verbs_dealloc_mw(mw), 0);
		t_mem_free(&tb);
		t_pair_close(&p);
	}
}

/* UC: a SEND bigger than the receive: dropped, the receive serves the
 * next message. */
T_PAIR_TEST(test_edge_uc_too_big, 1024, 1024, IBV_ACCESS_LOCAL_WRITE,
	    .type = IBV_QPT_UC, .mtu = IBV_MTU_256)
{
	struct ibv_wc wc;

	UT_EQ(t_post_recv_mem(&p->b, 1, 0, 300), 0);
	UT_EQ(t_post_send_mem(&p->a, 2, IBV_WR_SEND, 0, 600, 0), 0);
	UT_EQ(t_post_send_mem(&p->a, 3, IBV_WR_SEND, 600, 200, 0), 0);
	t_run();
	t_expect_recv(p, &wc, 1, 200, 0, 600);
	UT_CHECK(t_mem_intact_outside(&p->b.mem, 2, 0, 300));
	UT_EQ(p->b.qp->state, IBV_QPS_RTS);
}
