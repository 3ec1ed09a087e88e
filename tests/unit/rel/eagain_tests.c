/* The transport says EAGAIN (socket buffer full): the QP stops exactly
 * where it was and resumes from there when the engine reports the
 * transport writable; no PSN is skipped or sent twice. */

/* Queued PSNs must be first, first + 1, ... in queue order. */
static void expect_psn_run(uint32_t first, unsigned n)
{
	UT_EQ(t_count(), n);
	for (unsigned i = 0; i < n && i < t_count(); i++)
		UT_EQ(t_psn(i), psn_add(first, i));
}

T_PAIR_TEST(test_eagain_mid_message, 4096, 4096, IBV_ACCESS_LOCAL_WRITE,
	    .mtu = IBV_MTU_256, .a_psn = 0xfffffb)
{
	struct ibv_wc wc;

	UT_EQ(t_post_recv_mem(&p->b, 1, 0, 2560), 0);
	UT_EQ(t_post_recv_mem(&p->b, 2, 2560, 1024), 0);
	net.eagain_after = 3;
	UT_EQ(t_post_send_mem(&p->a, 3, IBV_WR_SEND, 0, 2560, IBV_SEND_SIGNALED), 0);
	expect_psn_run(0xfffffb, 3);
	UT_CHECK(p->a.qp->req.blocked);
	UT_EQ(p->a.qp->req.psn, psn_add(0xfffffb, 3));
	UT_EQ(net.eagain_calls, 1);
	/* Posting more while blocked sends nothing (and does not retry the
	 * transport in a loop). */
	UT_EQ(t_post_send_mem(&p->a, 4, IBV_WR_SEND, 2560, 1024, IBV_SEND_SIGNALED), 0);
	UT_EQ(t_count(), 3);
	UT_CHECK(net.eagain_calls <= 2);
	/* Still full when the engine tries: stays blocked, nothing lost. */
	net.eagain_calls = 0;
	ur_progress_resume(t_stack());
	UT_EQ(t_count(), 3);
	UT_CHECK(p->a.qp->req.blocked);
	t_writable();
	UT_CHECK(!p->a.qp->req.blocked);
	expect_psn_run(0xfffffb, 10 + 4);
	UT_EQ(t_op(2), UR_OP_RC_SEND_MIDDLE);
	UT_EQ(t_op(3), UR_OP_RC_SEND_MIDDLE);
	UT_EQ(t_op(9), UR_OP_RC_SEND_LAST);
	UT_EQ(t_op(10), UR_OP_RC_SEND_FIRST);
	t_run();
	t_expect_wc(p->b.rcq, &wc, 1, IBV_WC_SUCCESS);
	UT_EQ(wc.byte_len, 2560);
	t_expect_wc(p->b.rcq, &wc, 2, IBV_WC_SUCCESS);
	t_expect_ok(p->a.scq, &wc, 3, 2);
	UT_MEMEQ(p->b.mem.buf, p->a.mem.buf, 3584);
	UT_EQ(p->b.qp->cnt[UR_CNT_OUT_OF_SEQ_REQUEST], 0);
	UT_EQ(p->b.qp->cnt[UR_CNT_DUPLICATE_REQUEST], 0);
}

static bool t_waiting(struct ur_qp *qp)
{
	struct ur_stack *s = t_stack();
	bool on;

	pthread_mutex_lock(&s->waiting_lock);
	on = ur_list_linked(&qp->wait_link);
	pthread_mutex_unlock(&s->waiting_lock);
	return on;
}

/* Takes the blocked QP off the stack's waiting list (the state a 1000-QP
 * storm under load once ended in: three quarters of its QPs blocked, none
 * armed for room): a drain passes it by, its timer puts it back on the
 * list, the next drain gives it its turn, and the 2560-byte SEND arrives
 * whole. */
static void lose_place_then_recover(struct t_pair *p, unsigned sent_before)
{
	struct ur_stack *s = t_stack();
	struct ibv_wc wc;

	pthread_mutex_lock(&s->waiting_lock);
	ur_list_del(&p->a.qp->wait_link);
	pthread_mutex_unlock(&s->waiting_lock);
	t_writable();                 /* a drain finds nobody waiting */
	UT_CHECK(p->a.qp->req.blocked);
	UT_EQ(t_count(), sent_before);
	for (int i = 0; i < 100 && !t_waiting(p->a.qp); i++)
		t_advance(50 * 1000 * 1000);
	UT_CHECK(t_waiting(p->a.qp));
	t_writable();
	UT_CHECK(!p->a.qp->req.blocked);
	expect_psn_run(p->a.qp->comp.psn, 10);
	t_run();
	t_expect_wc(p->b.rcq, &wc, 1, IBV_WC_SUCCESS);
	t_expect_ok(p->a.scq, &wc, 3, 1);
	UT_MEMEQ(p->b.mem.buf, p->a.mem.buf, 2560);
}

/* Blocked with packets in flight: its retransmission deadline runs. */
T_PAIR_TEST(test_blocked_off_the_list, 4096, 4096, IBV_ACCESS_LOCAL_WRITE, .mtu = IBV_MTU_256)
{
	UT_EQ(t_post_recv_mem(&p->b, 1, 0, 2560), 0);
	net.eagain_after = 3;
	UT_EQ(t_post_send_mem(&p->a, 3, IBV_WR_SEND, 0, 2560, IBV_SEND_SIGNALED), 0);
	UT_CHECK(p->a.qp->req.blocked);
	UT_CHECK(t_waiting(p->a.qp));
	lose_place_then_recover(p, 3);
}

/* Blocked on its first packet, nothing in flight: no deadline runs, so a
 * timer of its own checks on it while it waits. */
T_PAIR_TEST(test_blocked_first_packet_off_the_list, 4096, 4096, IBV_ACCESS_LOCAL_WRITE,
	    .mtu = IBV_MTU_256)
{
	UT_EQ(t_post_recv_mem(&p->b, 1, 0, 2560), 0);
	net.eagain_after = 0;
	UT_EQ(t_post_send_mem(&p->a, 3, IBV_WR_SEND, 0, 2560, IBV_SEND_SIGNALED), 0);
	UT_CHECK(p->a.qp->req.blocked);
	UT_CHECK(t_waiting(p->a.qp));
	UT_EQ(p->a.qp->comp.retrans_deadline, 0);
	lose_place_then_recover(p, 0);
}

/* Every possible stopping point of a 3-message stream (SEND, WRITE,
 * READ) gives the same packets as an uninterrupted run. */
static void test_eagain_every_point(void)
{
	for (int stop = 0; stop < 9; stop++) {
		struct t_opts o = { .mtu = IBV_MTU_256, .a_psn = 0xfffffe };
		struct t_pair p;
		struct ibv_wc wc;
		int before = ut_failures;

		if (t_pair_open_mem(&p, &o, 4096, 4096, T_ALL_ACCESS))
			return;
		UT_EQ(t_post_recv_mem(&p.b, 1, 0, 1024), 0);
		net.eagain_after = stop;
		UT_EQ(t_post_send_mem(&p.a, 2, IBV_WR_SEND, 0, 700, IBV_SEND_SIGNALED), 0);
		UT_EQ(t_post_rdma_mem(&p, 3, IBV_WR_RDMA_WRITE, 1024, 600, 1024), 0);
		UT_EQ(t_post_rdma_mem(&p, 4, IBV_WR_RDMA_READ, 2048, 500, 2048), 0);
		t_writable();
		/* 3 + 3 packets, then the READ request at the PSN after them. */
		expect_psn_run(0xfffffe, 7);
		UT_EQ(t_op(6), UR_OP_RC_RDMA_READ_REQUEST);
		t_run();
		t_expect_ok(p.a.scq, &wc, 2, 3);
		t_expect_wc(p.b.rcq, &wc, 1, IBV_WC_SUCCESS);
		UT_MEMEQ(p.b.mem.buf, p.a.mem.buf, 700);
		UT_MEMEQ(p.b.mem.buf + 1024, p.a.mem.buf + 1024, 600);
		UT_MEMEQ(p.a.mem.buf + 2048, p.b.mem.buf + 2048, 500);
		if (ut_failures != before)
			fprintf(stderr, "  (stop after %d)\n", stop);
		t_pair_close(&p);
	}
}

/* The responder blocks in the middle of a READ response stream and when
 * sending an ACK; both resume where they stopped. */
T_PAIR_TEST(test_eagain_responder, 4096, 4096, T_ALL_ACCESS, .mtu = IBV_MTU_256)
{
	struct ibv_wc wc;

	UT_EQ(t_post_rdma_mem(p, 1, IBV_WR_RDMA_READ, 0, 6 * 256, 0), 0);
	UT_EQ(t_post_rdma_mem(p, 2, IBV_WR_RDMA_WRITE, 2048, 10, 2048), 0);
	UT_EQ(t_count(), 2);
	net.eagain_after = (int)net.sent + 2;
	t_deliver(0);                 /* READ: two responses get out */
	UT_EQ(t_count(), 3);
	UT_CHECK(p->b.qp->req.blocked);
	t_deliver(0);                 /* the WRITE executes; its ACK waits */
	UT_MEMEQ(p->b.mem.buf + 2048, p->a.mem.buf + 2048, 10);
	UT_EQ(t_count(), 2);
	t_writable();
	UT_EQ(t_count(), 2 + 4 + 1);
	for (unsigned i = 0; i < 6; i++)
		UT_EQ(t_psn(i), i);
	UT_EQ(t_op(6), UR_OP_RC_ACKNOWLEDGE);   /* after the responses it follows */
	UT_EQ(t_psn(6), 6);
	t_run();
	t_expect_ok(p->a.scq, &wc, 1, 2);
	UT_MEMEQ(p->a.mem.buf, p->b.mem.buf, 6 * 256);
}

/* A NAK that meets a full transport is still sent once it drains, although
 * the responder entered ERROR meanwhile: otherwise the requester never
 * learns of the remote access error and ends with RETRY_EXC_ERR. */
T_PAIR_TEST(test_eagain_nak_survives_error, 64, 64, T_ALL_ACCESS, 0)
{
	struct ibv_wc wc;

	UT_EQ(t_post_rdma(&p->a, 1, IBV_WR_RDMA_WRITE, p->a.mem.buf, 8, p->a.mem.mr->lkey,
			  (uintptr_t)p->b.mem.buf, p->b.mem.mr->rkey ^ 0x10), 0);
	net.eagain_after = (int)net.sent;
	t_deliver(0);
	UT_EQ(p->b.qp->state, IBV_QPS_ERR);
	UT_EQ(t_count(), 0);
	t_writable();
	UT_EQ(t_count(), 1);
	if (t_count() == 1)
		UT_EQ(t_syn(0), UR_NAK_REM_ACCESS_ERR);
	t_run();
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_REM_ACCESS_ERR);
	UT_CHECK(t_mem_intact(&p->b.mem, 2));
}

/* A transport that refuses a packet for good (not EAGAIN): it is lost,
 * counted, and retransmission repairs it. */
T_PAIR_TEST(test_xport_hard_error, 64, 64, IBV_ACCESS_LOCAL_WRITE, 0)
{
	struct ibv_wc wc;

	UT_EQ(t_post_recv_mem(&p->b, 1, 0, 64), 0);
	net.fail_errno = EHOSTUNREACH;
	UT_EQ(t_post_send_mem(&p->a, 2, IBV_WR_SEND, 0, 8, IBV_SEND_SIGNALED), 0);
	UT_EQ(t_count(), 0);
	UT_EQ(p->a.qp->cnt[UR_CNT_DROPPED], 1);
	UT_CHECK(!p->a.qp->req.blocked);
	net.fail_errno = 0;
	t_advance(T_TIMEOUT_NS);
	t_run();
	t_expect_wc(p->a.scq, &wc, 2, IBV_WC_SUCCESS);
	t_expect_wc(p->b.rcq, &wc, 1, IBV_WC_SUCCESS);
}

/* A QP destroyed while it waits for the transport, or with its timers
 * armed, is gone from the engine's lists: the engine resuming stalled
 * QPs or firing timers afterwards touches nothing freed (ASan checks). */
static void test_destroy_while_waiting(void)
{
	struct t_opts o = { .min_rnr_timer = 1 };
	struct t_pair p;
	struct t_mem sa;

	if (t_pair_open(&p, &o))
		return;
	t_mem_reg(&sa, &p.a, 4096, IBV_ACCESS_LOCAL_WRITE, 1);
	net.eagain_after = 1;
	UT_EQ(t_post_send(&p.a, 1, IBV_WR_SEND, sa.buf, 3000, sa.mr->lkey, 0), 0);
	UT_CHECK(p.a.qp->req.blocked);
	UT_CHECK(p.a.qp->comp.retrans_deadline != 0);
	t_deliver(0);                 /* B: RNR NAK, B blocked too */
	UT_CHECK(p.b.qp->req.blocked);
	t_mem_free(&sa);
	t_pair_close(&p);             /* destroys both */
	net.eagain = false;
	ur_progress_resume(t_stack());
	t_advance(T_TIMEOUT_NS);
	UT_CHECK(ur_list_empty(&t_stack()->waiting));
}
