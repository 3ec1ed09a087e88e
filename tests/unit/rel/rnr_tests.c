/* Receiver not ready: RNR NAKs with the responder's timer code, waiting,
 * rnr_retry counting (7 = forever), exhaustion. */

/* One SEND meets no receive WQE; returns after the RNR NAK reached A. */
static void rnr_once(struct t_pair *p, struct t_mem *sa, uint64_t wr_id, uint8_t code)
{
	UT_EQ(t_count(), 1);
	UT_EQ(t_op(0), UR_OP_RC_SEND_ONLY);
	t_deliver(0);
	UT_EQ(t_count(), 1);
	UT_EQ(t_op(0), UR_OP_RC_ACKNOWLEDGE);
	UT_EQ(t_syn(0), UR_AETH_RNR_NAK | code);
	UT_EQ(t_psn(0), p->a.qp->comp.psn);
	t_deliver(0);
	(void)sa;
	(void)wr_id;
	/* A waits out the timer the code names; nothing is resent before. */
	if (p->a.qp->state == IBV_QPS_RTS) {
		UT_CHECK(p->a.qp->req.rnr_wait);
		UT_EQ(p->a.qp->comp.rnr_deadline, t_clock_ns + ur_rel_rnr_timer_ns(code));
		UT_EQ(p->a.qp->comp.retrans_deadline, 0);
		UT_EQ(t_count(), 0);
		t_advance(ur_rel_rnr_timer_ns(code) - 1);
		UT_EQ(t_count(), 0);
	}
}

T_PAIR_TEST(test_rnr_wait_and_retry, 256, 256, IBV_ACCESS_LOCAL_WRITE,
	    .min_rnr_timer = 14, .rnr_retry = 3, .a_psn = 0xffffff)
{
	struct ibv_wc wc;

	UT_EQ(t_post_send_mem(&p->a, 1, IBV_WR_SEND, 0, 100, IBV_SEND_SIGNALED), 0);
	rnr_once(p, &p->a.mem, 1, 14);
	UT_EQ(p->b.qp->cnt[UR_CNT_SEND_RNR_ERR], 1);
	UT_EQ(p->a.qp->cnt[UR_CNT_RCVD_RNR_ERR], 1);
	UT_EQ(p->a.qp->comp.rnr_retry_left, 2);
	/* B is still fine: an RNR NAK is not an error. */
	UT_EQ(p->b.qp->state, IBV_QPS_RTS);
	UT_EQ(p->b.qp->resp.psn, 0xffffff);
	UT_CHECK(t_cq_empty(p->b.rcq));
	/* A receive shows up; the timer expires; A resends the same PSN. */
	UT_EQ(t_post_recv_mem(&p->b, 2, 0, 256), 0);
	t_advance(ur_rel_rnr_timer_ns(14) + 1000000);
	UT_EQ(t_count(), 1);
	UT_EQ(t_psn(0), 0xffffff);
	UT_CHECK(!p->a.qp->req.rnr_wait);
	t_run();
	t_expect_recv(p, &wc, 2, 100, 0, 0);
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_SUCCESS);
	/* Progress refills the RNR budget. */
	UT_EQ(p->a.qp->comp.rnr_retry_left, 3);
}

/* The timer table: code 0 is the longest (655.36 ms), then 0.01 ms up. */
static void test_rnr_timer_table(void)
{
	UT_EQ(ur_rel_rnr_timer_ns(0), 655360000ull);
	UT_EQ(ur_rel_rnr_timer_ns(1), 10000ull);
	UT_EQ(ur_rel_rnr_timer_ns(14), 1280000ull);
	UT_EQ(ur_rel_rnr_timer_ns(31), 491520000ull);
	for (uint8_t c = 2; c < 32; c++)
		UT_CHECK(ur_rel_rnr_timer_ns(c) > ur_rel_rnr_timer_ns(c - 1));
	/* The retransmission timeout: 4.096 us * 2^timeout, 0 = none. */
	UT_EQ(ur_rel_timeout_ns(0), 0);
	UT_EQ(ur_rel_timeout_ns(14), 4096ull << 14);
	UT_EQ(ur_rel_timeout_ns(31), 4096ull << 31);
	UT_CHECK(ur_rel_timeout_ns(1) >= 4096ull << 1);
}

/* rnr_retry 2: two RNR NAKs are waited out, the third fails the WQE. */
T_PAIR_TEST(test_rnr_exhausted, 256, 0, 0, .min_rnr_timer = 1, .rnr_retry = 2)
{
	struct ibv_wc wc;

	UT_EQ(t_post_send_mem(&p->a, 1, IBV_WR_SEND, 0, 10, 0), 0);
	UT_EQ(t_post_send_mem(&p->a, 2, IBV_WR_SEND, 0, 10, 0), 0);
	t_drop(1);                    /* only the first matters here */
	for (int i = 0; i < 2; i++) {
		rnr_once(p, &p->a.mem, 1, 1);
		UT_EQ(p->a.qp->state, IBV_QPS_RTS);
		t_advance(ur_rel_rnr_timer_ns(1) + 1000000);
		UT_CHECK(t_count() >= 1);
		while (t_count() > 1)
			t_drop(t_count() - 1);
	}
	t_deliver(0);
	UT_EQ(t_syn(0), UR_AETH_RNR_NAK | 1);
	t_deliver(0);
	UT_EQ(p->a.qp->state, IBV_QPS_ERR);
	UT_EQ(p->a.qp->cnt[UR_CNT_RETRY_RNR_EXCEEDED_ERR], 1);
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_RNR_RETRY_EXC_ERR);
	t_expect_wc(p->a.scq, &wc, 2, IBV_WC_WR_FLUSH_ERR);
	UT_EQ(t_count(), 0);
	UT_EQ(p->b.qp->state, IBV_QPS_RTS);
}

/* rnr_retry 0: the first RNR NAK fails the WQE. */
T_PAIR_TEST(test_rnr_zero, 256, 0, 0, .rnr_retry = T_ZERO)
{
	struct ibv_wc wc;

	UT_EQ(t_post_send_mem(&p->a, 1, IBV_WR_SEND, 0, 10, 0), 0);
	t_run();
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_RNR_RETRY_EXC_ERR);
	UT_EQ(p->a.qp->state, IBV_QPS_ERR);
}

/* rnr_retry 7 means retry forever. */
T_PAIR_TEST(test_rnr_infinite, 256, 256, IBV_ACCESS_LOCAL_WRITE, .min_rnr_timer = 1, .rnr_retry = 7)
{
	struct ibv_wc wc;

	UT_EQ(t_post_send_mem(&p->a, 1, IBV_WR_SEND, 0, 10, IBV_SEND_SIGNALED), 0);
	for (int i = 0; i < 50; i++) {
		rnr_once(p, &p->a.mem, 1, 1);
		UT_EQ(p->a.qp->state, IBV_QPS_RTS);
		t_advance(ur_rel_rnr_timer_ns(1) + 1000000);
	}
	UT_EQ(p->a.qp->cnt[UR_CNT_RCVD_RNR_ERR], 50);
	UT_EQ(t_post_recv_mem(&p->b, 2, 0, 256), 0);
	t_run();
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_SUCCESS);
	t_expect_wc(p->b.rcq, &wc, 2, IBV_WC_SUCCESS);
}

/* RNR rounds for longer than the QP's timeout, each RNR NAK slower than
 * the RTO (a loaded host): early retries go out, but a responder that keeps
 * answering is not a transport timeout: no retry counts, and the SEND
 * completes once a receive is posted. */
T_PAIR_TEST(test_rnr_slow_naks, 256, 256, IBV_ACCESS_LOCAL_WRITE,
	    .min_rnr_timer = 1, .rnr_retry = 7, .retry_cnt = 2, .timeout = 14)
{
	uint64_t qpt = ur_rel_timeout_ns(14);
	struct ibv_wc wc;

	UT_EQ(t_post_send_mem(&p->a, 1, IBV_WR_SEND, 0, 10, IBV_SEND_SIGNALED), 0);
	/* Ten timeouts' worth of rounds: the SEND(s) reach B, the clock runs
	 * past the RTO before B's RNR NAKs reach A. */
	for (uint64_t spent = 0; spent < 10 * qpt; spent += qpt / 3) {
		while (t_count() && (t_op(0) & 0x1f) != UR_OPL_ACKNOWLEDGE)
			t_deliver(0);
		t_advance(qpt / 3);
		t_run();
		UT_EQ(p->a.qp->state, IBV_QPS_RTS);
		UT_EQ(p->a.qp->comp.retry_left, 2);
		t_advance(ur_rel_rnr_timer_ns(1));
	}
	UT_CHECK(p->a.qp->cnt[UR_CNT_RCVD_RNR_ERR] >= 10);
	UT_EQ(t_post_recv_mem(&p->b, 2, 0, 256), 0);
	t_advance(ur_rel_rnr_timer_ns(1));
	t_run();
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_SUCCESS);
	t_expect_wc(p->b.rcq, &wc, 2, IBV_WC_SUCCESS);
}

/* RNR in the middle of a stream: the message before completes, the one
 * without a receive waits, the ones after it are resent after it. */
T_PAIR_TEST(test_rnr_second_message, 2048, 2048, IBV_ACCESS_LOCAL_WRITE,
	    .min_rnr_timer = 3, .mtu = IBV_MTU_256)
{
	struct ibv_wc wc;

	UT_EQ(t_post_recv_mem(&p->b, 10, 0, 600), 0);
	for (int i = 0; i < 3; i++)
		UT_EQ(t_post_send_mem(&p->a, 20 + i, IBV_WR_SEND, 600 * i, 600, IBV_SEND_SIGNALED), 0);
	UT_EQ(t_count(), 9);
	t_run();                      /* message 2 meets RNR, 3 is dropped */
	t_expect_wc(p->b.rcq, &wc, 10, IBV_WC_SUCCESS);
	t_expect_wc(p->a.scq, &wc, 20, IBV_WC_SUCCESS);
	UT_CHECK(t_cq_empty(p->a.scq));
	UT_CHECK(p->a.qp->req.rnr_wait);
	UT_EQ(p->a.qp->comp.psn, 3);
	UT_EQ(t_post_recv_mem(&p->b, 11, 600, 600), 0);
	UT_EQ(t_post_recv_mem(&p->b, 12, 1200, 600), 0);
	t_advance(ur_rel_rnr_timer_ns(3) + 1000000);
	UT_EQ(t_count(), 6);
	UT_EQ(t_psn(0), 3);
	t_run();
	t_expect_ok(p->b.rcq, &wc, 11, 2);
	t_expect_ok(p->a.scq, &wc, 21, 2);
	UT_MEMEQ(p->b.mem.buf, p->a.mem.buf, 1800);
}

/* WRITE with immediate needs a receive WQE at its last packet: RNR there,
 * the data of the earlier packets is not written twice and the message
 * completes once a receive is posted. */
T_PAIR_TEST(test_rnr_write_imm, 1024, 1024, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	    .min_rnr_timer = 2, .mtu = IBV_MTU_256)
{
	struct t_mem rb;
	struct ibv_wc wc;

	t_mem_reg(&rb, &p->b, 16, IBV_ACCESS_LOCAL_WRITE, 3);
	UT_EQ(t_post_rdma_mem(p, 1, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 1000, 0), 0);
	UT_EQ(t_count(), 4);
	t_run();
	UT_CHECK(p->a.qp->req.rnr_wait);
	UT_EQ(p->a.qp->comp.psn, 3);   /* the first three packets are placed */
	UT_MEMEQ(p->b.mem.buf, p->a.mem.buf, 768);
	UT_EQ(t_post_recv(&p->b, 2, rb.buf, 16, rb.mr->lkey), 0);
	t_advance(ur_rel_rnr_timer_ns(2) + 1000000);
	UT_EQ(t_count(), 1);
	UT_EQ(t_op(0), UR_OP_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE);
	t_run();
	t_expect_wc(p->b.rcq, &wc, 2, IBV_WC_SUCCESS);
	UT_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	UT_EQ(wc.byte_len, 1000);
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_SUCCESS);
	UT_MEMEQ(p->b.mem.buf, p->a.mem.buf, 1000);
	t_mem_free(&rb);
}

/* A sequence NAK of the PSN an RNR NAK named, for packets that were
 * already behind it (what rxe sends; uroce's responder now says nothing
 * past an RNR'd PSN, test_rnr_quiet_after), is not a second loss: it must
 * not cost retry_cnt, nor start the retransmission timer while A waits
 * out the RNR timer (a timeout shorter than the RNR delay would otherwise
 * burn the retry budget during every wait, and an "infinite" rnr_retry
 * would end in RETRY_EXC_ERR). */
T_PAIR_TEST(test_rnr_with_packets_behind, 256, 256, IBV_ACCESS_LOCAL_WRITE,
	    .min_rnr_timer = 0, .rnr_retry = 7, .retry_cnt = 1, .timeout = 14)
{
	struct ibv_wc wc;

	for (int round = 0; round < 5; round++) {
		struct t_pkt *nak;

		if (round == 0) {
			UT_EQ(t_post_send_mem(&p->a, 1, IBV_WR_SEND, 0, 10, IBV_SEND_SIGNALED), 0);
			UT_EQ(t_post_send_mem(&p->a, 2, IBV_WR_SEND, 0, 10, IBV_SEND_SIGNALED), 0);
		} else {
			/* The RNR timer expires: both are sent again. */
			t_advance(ur_rel_rnr_timer_ns(0) + 1000000);
		}
		UT_EQ(t_count(), 2);
		t_deliver(0);
		t_deliver(0);
		UT_EQ(t_count(), 1);
		UT_EQ(t_syn(0), UR_AETH_RNR_NAK | 0);
		t_deliver(0);
		nak = t_build(UR_OP_RC_ACKNOWLEDGE, ur_qp_num(p->a.qp), 0, false, NULL, 0);
		aeth_set_syn(t_hdr(nak, UR_HDR_AETH), UR_NAK_PSN_SEQ_ERR);
		t_inject(nak);
		UT_EQ(t_count(), 0);
		UT_EQ(p->a.qp->state, IBV_QPS_RTS);
		UT_CHECK(p->a.qp->req.rnr_wait);
		UT_EQ(p->a.qp->comp.retrans_deadline, 0);
		UT_EQ(p->a.qp->comp.retry_left, 1);
	}
	UT_EQ(t_post_recv_mem(&p->b, 3, 0, 128), 0);
	UT_EQ(t_post_recv_mem(&p->b, 4, 128, 128), 0);
	t_advance(ur_rel_rnr_timer_ns(0) + 1000000);
	t_run();
	t_expect_ok(p->a.scq, &wc, 1, 2);
}

/* After an RNR NAK the responder answers nothing past the RNR'd PSN until
 * that PSN comes again: the requester goes back to it after its wait and
 * sends all after it anew.  Here B held a WRITE's packets past a lost SEND
 * when the SEND's resend met an empty receive queue; before, every packet
 * of each round's go-back past the SEND drew an answer (a sequence NAK,
 * then a GAP_AGAIN each): 7 answers a round for 7 packets, every RNR wait,
 * for as long as the receive queue stayed empty (integ.rxctx's storm
 * ended so in RETRY_EXC_ERR on a loaded host). */
T_PAIR_TEST(test_rnr_quiet_after,
	    8 * 256, 8 * 256, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	    .mtu = IBV_MTU_256, .min_rnr_timer = 1, .rnr_retry = 7)
{
	struct ibv_wc wc;
	uint32_t a = 0;

	a = ur_qp_num(p->a.qp);
	UT_EQ(t_post_send_mem(&p->a, 1, IBV_WR_SEND, 0, 100, IBV_SEND_SIGNALED), 0);
	UT_EQ(t_post_rdma_mem(p, 2, IBV_WR_RDMA_WRITE, 256, 6 * 256, 256), 0);
	UT_EQ(t_count(), 7);
	/* The SEND is lost: B holds the WRITE past the gap and NAKs it. */
	t_drop(0);
	for (int i = 0; i < 6; i++)
		t_deliver(0);
	UT_CHECK(ur_held_any(p->b.qp->held));
	/* A resends the SEND alone; it meets the empty receive queue. */
	while (t_count() && t_dqpn(0) == a)
		t_deliver(0);
	UT_EQ(t_count(), 1);
	UT_EQ(t_op(0), UR_OP_RC_SEND_ONLY);
	t_deliver(0);
	UT_EQ(t_count(), 1);
	UT_EQ(t_syn(0), UR_AETH_RNR_NAK | 1);
	UT_CHECK(!ur_held_any(p->b.qp->held));     /* it comes again: held for nothing */
	t_deliver(0);
	for (int round = 0; round < 4; round++) {
		unsigned sent = 0;

		/* A's wait ends: it goes back to the SEND and sends what follows. */
		t_advance(ur_rel_rnr_timer_ns(1) + 1000);
		while (t_count() && t_dqpn(0) != a) {
			t_deliver(0);
			sent++;
		}
		UT_CHECK(sent >= 2);
		UT_EQ(t_count(), 1);                   /* one answer: the RNR NAK */
		UT_EQ(t_syn(0), UR_AETH_RNR_NAK | 1);
		UT_EQ(t_psn(0), p->a.qp->comp.psn);
		t_deliver(0);
		UT_EQ(p->a.qp->state, IBV_QPS_RTS);
	}
	UT_EQ(t_post_recv_mem(&p->b, 3, 0, 256), 0);
	t_advance(ur_rel_rnr_timer_ns(1) + 1000);
	t_run();
	t_expect_recv(p, &wc, 3, 100, 0, 0);
	t_expect_ok(p->a.scq, &wc, 1, 2);
	UT_MEMEQ(p->b.mem.buf + 256, p->a.mem.buf + 256, 6 * 256);
	UT_EQ(p->a.qp->cnt[UR_CNT_RETRY_EXCEEDED_ERR], 0);
}

/* An RNR NAK for a SEND behind an atomic whose ACK was lost: after the
 * RNR wait A resends from the atomic at the atomic's PSN, and B answers
 * it as the duplicate it is (the atomic must not execute twice). */
T_PAIR_TEST(test_rnr_past_atomic, 1024, 1024, T_ALL_ACCESS, .min_rnr_timer = 1)
{
	struct ibv_wc wc;
	uint64_t *counter;

	counter = t_target(p, 0, 7);
	UT_EQ(t_post_atomic_mem(p, 1, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 0, 1, 0), 0);
	UT_EQ(t_post_send_mem(&p->a, 2, IBV_WR_SEND, 512, 16, IBV_SEND_SIGNALED), 0);
	t_deliver(0);
	t_deliver(0);
	UT_EQ(*counter, 8);
	UT_EQ(t_count(), 2);
	t_drop(0);                    /* the atomic ACK */
	UT_EQ(t_syn(0), UR_AETH_RNR_NAK | 1);
	t_deliver(0);
	UT_EQ(t_post_recv_mem(&p->b, 3, 512, 64), 0);
	t_advance(ur_rel_rnr_timer_ns(1) + 1000);
	UT_CHECK(t_count() >= 1);
	UT_EQ(t_op(0), UR_OP_RC_FETCH_ADD);
	UT_EQ(t_psn(0), 0);
	t_run();
	t_expect_ok(p->a.scq, &wc, 1, 2);
	UT_EQ(*counter, 8);
	UT_EQ(t_word(p->a.mem.buf), 7);
}
