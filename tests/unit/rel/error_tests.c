/* The ERROR state and the async events around it: flushes in order,
 * posting in ERROR, LAST_WQE_REACHED for SRQ QPs, COMM_EST, and a QP
 * reused after RESET. */

static int t_modify_state(struct ur_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr a = { .qp_state = s };

	return ur_qp_modify(qp, &a, IBV_QP_STATE);
}

T_PAIR_TEST(test_err_flush_in_order, 4096, 4096, IBV_ACCESS_LOCAL_WRITE, .mtu = IBV_MTU_256)
{
	struct ibv_wc wc;

	for (int i = 0; i < 4; i++) {
		UT_EQ(t_post_recv_mem(&p->b, 100 + i, 1024 * i, 1024), 0);
		UT_EQ(t_post_send_mem(&p->a, 200 + i, IBV_WR_SEND, 0, 600, i == 1 ? 0 : IBV_SEND_SIGNALED), 0);
	}
	/* The first message gets through; the second is half delivered. */
	for (int i = 0; i < 4; i++)
		t_deliver(0);
	while (t_count())
		t_drop(0);
	UT_EQ(t_modify_state(p->a.qp, IBV_QPS_ERR), 0);
	UT_EQ(t_modify_state(p->b.qp, IBV_QPS_ERR), 0);
	/* Requester: everything not completed, oldest first, each with an
	 * error (unsignaled ones too). */
	for (int i = 0; i < 4; i++) {
		t_expect_wc(p->a.scq, &wc, 200 + i, IBV_WC_WR_FLUSH_ERR);
		UT_EQ(wc.qp_num, ur_qp_num(p->a.qp));
	}
	UT_CHECK(t_cq_empty(p->a.scq));
	/* Responder: the first receive completed; the one in progress and
	 * the rest are flushed, in order. */
	t_expect_wc(p->b.rcq, &wc, 100, IBV_WC_SUCCESS);
	for (int i = 1; i < 4; i++) {
		t_expect_wc(p->b.rcq, &wc, 100 + i, IBV_WC_WR_FLUSH_ERR);
		UT_EQ(wc.opcode, IBV_WC_RECV);
		UT_EQ(wc.qp_num, ur_qp_num(p->b.qp));
	}
	UT_CHECK(t_cq_empty(p->b.rcq));
	/* Posting in ERROR completes at once with FLUSH_ERR. */
	UT_EQ(t_post_send_mem(&p->a, 300, IBV_WR_SEND, 0, 8, 0), 0);
	t_expect_wc(p->a.scq, &wc, 300, IBV_WC_WR_FLUSH_ERR);
	UT_EQ(t_post_recv_mem(&p->b, 301, 0, 8), 0);
	t_expect_wc(p->b.rcq, &wc, 301, IBV_WC_WR_FLUSH_ERR);
	UT_EQ(t_count(), 0);
	/* Packets for a QP in ERROR are dropped, never answered. */
	{
		uint8_t pl[4] = { 0 };

		t_inject(t_build(UR_OP_RC_SEND_ONLY, ur_qp_num(p->b.qp), p->b.qp->resp.psn, true, pl, 4));
		UT_EQ(t_count(), 0);
	}
	/* ERR -> ERR is allowed and changes nothing. */
	UT_EQ(t_modify_state(p->a.qp, IBV_QPS_ERR), 0);
	UT_CHECK(t_cq_empty(p->a.scq));
}

/* A QP with an SRQ entering ERROR: LAST_WQE_REACHED, once; the receive it
 * had taken from the SRQ for a message in progress completes (flushed);
 * the SRQ's other receives stay for other QPs. */
T_PAIR_TEST(test_err_srq_last_wqe, 4096, 4096, IBV_ACCESS_LOCAL_WRITE,
	    .mtu = IBV_MTU_256, .srq_b = true)
{
	struct ibv_wc wc;

	UT_EQ(t_post_recv_mem(&p->b, 1, 0, 1024), 0);
	UT_EQ(t_post_recv_mem(&p->b, 2, 1024, 1024), 0);
	UT_EQ(t_post_send_mem(&p->a, 3, IBV_WR_SEND, 0, 600, 0), 0);
	t_deliver(0);                 /* FIRST: B takes receive 1 from the SRQ */
	while (t_count())
		t_drop(0);
	t_async_count(p->b.ctx, IBV_EVENT_COMM_EST, NULL);   /* drain */
	UT_EQ(t_modify_state(p->b.qp, IBV_QPS_ERR), 0);
	UT_EQ(t_async_count(p->b.ctx, IBV_EVENT_QP_LAST_WQE_REACHED, p->b.qp), 1);
	t_expect_wc(p->b.rcq, &wc, 1, IBV_WC_WR_FLUSH_ERR);
	UT_CHECK(t_cq_empty(p->b.rcq));
	UT_EQ(p->b.srq->rq.tail - p->b.srq->rq.head, 1);
	UT_EQ(t_modify_state(p->b.qp, IBV_QPS_ERR), 0);
	UT_EQ(t_async_count(p->b.ctx, IBV_EVENT_QP_LAST_WQE_REACHED, p->b.qp), 0);
}

/* The first packet a QP in RTR receives raises COMM_EST, once; the
 * responder works in RTR. */
T_PAIR_TEST(test_err_comm_est, 0, 0, 0, .b_rtr = true)
{
	struct t_mem sa, rb;
	struct ibv_wc wc;

	UT_EQ(p->b.qp->state, IBV_QPS_RTR);
	t_mem_reg(&sa, &p->a, 64, IBV_ACCESS_LOCAL_WRITE, 1);
	t_mem_reg(&rb, &p->b, 64, IBV_ACCESS_LOCAL_WRITE, 2);
	UT_EQ(t_async_count(p->b.ctx, IBV_EVENT_COMM_EST, NULL), 0);
	UT_EQ(t_post_recv(&p->b, 1, rb.buf, 32, rb.mr->lkey), 0);
	UT_EQ(t_post_recv(&p->b, 2, rb.buf + 32, 32, rb.mr->lkey), 0);
	UT_EQ(t_post_send(&p->a, 3, IBV_WR_SEND, sa.buf, 8, sa.mr->lkey, 0), 0);
	UT_EQ(t_post_send(&p->a, 4, IBV_WR_SEND, sa.buf, 8, sa.mr->lkey, 0), 0);
	t_run();
	UT_EQ(t_async_count(p->b.ctx, IBV_EVENT_COMM_EST, p->b.qp), 1);
	UT_EQ(t_async_count(p->a.ctx, IBV_EVENT_COMM_EST, NULL), 0);   /* A was in RTS */
	t_expect_ok(p->b.rcq, &wc, 1, 2);
	/* B cannot send in RTR. */
	UT_EQ(t_post_send(&p->b, 5, IBV_WR_SEND, rb.buf, 8, rb.mr->lkey, 0), -EINVAL);
	t_mem_free(&sa);
	t_mem_free(&rb);
}

/* ERROR -> RESET -> INIT -> RTR -> RTS: the QP starts afresh, with the
 * PSNs it is given, and works. */
T_PAIR_TEST(test_err_reset_reuse, 64, 64, IBV_ACCESS_LOCAL_WRITE, 0)
{
	struct ibv_wc wc;

	UT_EQ(t_post_send_mem(&p->a, 1, IBV_WR_SEND, 0, 8, 0), 0);
	UT_EQ(t_post_recv_mem(&p->b, 2, 0, 32), 0);
	UT_EQ(t_modify_state(p->a.qp, IBV_QPS_ERR), 0);
	UT_EQ(t_modify_state(p->b.qp, IBV_QPS_ERR), 0);
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_WR_FLUSH_ERR);
	t_expect_wc(p->b.rcq, &wc, 2, IBV_WC_WR_FLUSH_ERR);
	while (t_count())
		t_drop(0);
	UT_EQ(t_modify_state(p->a.qp, IBV_QPS_RESET), 0);
	UT_EQ(t_modify_state(p->b.qp, IBV_QPS_RESET), 0);
	UT_EQ(p->a.qp->sq.head, p->a.qp->sq.tail);
	UT_EQ(t_to_init(p->a.qp, T_ALL_ACCESS), 0);
	UT_EQ(t_to_init(p->b.qp, T_ALL_ACCESS), 0);
	p->o.a_psn = 0x777777;
	p->o.b_psn = 0x100;
	UT_EQ(t_connect(p->a.qp, ur_qp_num(p->b.qp), p->o.b_psn, p->o.a_psn, &p->o), 0);
	UT_EQ(t_connect(p->b.qp, ur_qp_num(p->a.qp), p->o.a_psn, p->o.b_psn, &p->o), 0);
	UT_CHECK(t_cq_empty(p->a.scq));
	UT_EQ(t_post_recv_mem(&p->b, 3, 0, 32), 0);
	UT_EQ(t_post_send_mem(&p->a, 4, IBV_WR_SEND, 0, 8, IBV_SEND_SIGNALED), 0);
	UT_EQ(t_psn(0), 0x777777);
	t_run();
	t_expect_wc(p->b.rcq, &wc, 3, IBV_WC_SUCCESS);
	t_expect_wc(p->a.scq, &wc, 4, IBV_WC_SUCCESS);
}

/* Responses arriving after the requester entered ERROR change nothing. */
T_PAIR_TEST(test_err_late_responses, 256, 256, T_ALL_ACCESS, 0)
{
	struct ibv_wc wc;

	UT_EQ(t_post_rdma_mem(p, 1, IBV_WR_RDMA_READ, 0, 64, 0), 0);
	t_deliver(0);
	UT_EQ(t_modify_state(p->a.qp, IBV_QPS_ERR), 0);
	t_run();
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_WR_FLUSH_ERR);
	UT_CHECK(t_cq_empty(p->a.scq));
	UT_CHECK(t_mem_intact(&p->a.mem, 1));
}

/* The requester's packets go out in the state they were posted in: none
 * before RTS, none after ERROR. */
static void test_err_post_states(void)
{
	struct t_opts o = { 0 };
	struct t_side s;
	struct t_mem sa;

	t_net_reset();
	if (t_side_open(&s, &o, false))
		return;
	t_mem_reg(&sa, &s, 64, IBV_ACCESS_LOCAL_WRITE, 1);
	UT_EQ(t_post_send(&s, 1, IBV_WR_SEND, sa.buf, 8, sa.mr->lkey, 0), -EINVAL);   /* RESET */
	UT_EQ(t_to_init(s.qp, 0), 0);
	UT_EQ(t_post_send(&s, 1, IBV_WR_SEND, sa.buf, 8, sa.mr->lkey, 0), -EINVAL);   /* INIT */
	/* Receives may be posted from INIT on (and even in RESET). */
	UT_EQ(t_post_recv(&s, 2, sa.buf, 8, sa.mr->lkey), 0);
	UT_EQ(t_count(), 0);
	t_mem_free(&sa);
	t_side_close(&s);
}
