/* Many QPs on one full transport (a host's socket shared by 1000 QPs under
 * load): a QP waits longer than its QP timeout for its turn, answers arrive
 * before the requests they answer were resent, and a responder that cannot
 * send piles up duplicates.  None of that may end a healthy connection. */

/* Going back over a message of 8 packets while the transport is full: the
 * QP gets a turn (one packet out) every 0.3 QP timeout, so its resend takes
 * 2.4 timeouts before the packet that asks for an ACK leaves.  Those
 * turns are the wait for this host's wire, not the peer's silence: the
 * timer runs from each packet that leaves, nothing more counts against
 * retry_cnt (1 here: the old rule ended the QP in RETRY_EXC_ERR), and the
 * resend is not started over meanwhile. */
T_PAIR_TEST(test_congest_turns_do_not_count, 4096, 4096, IBV_ACCESS_LOCAL_WRITE,
	    .mtu = IBV_MTU_256, .retry_cnt = 1, .timeout = 10)	/* 4.19 ms */
{
	uint64_t qpt = ur_rel_timeout_ns(10);
	struct ibv_wc wc;
	unsigned turns = 0;
	uint64_t retries;

	UT_EQ(t_post_recv_mem(&p->b, 9, 0, 4096), 0);
	UT_EQ(t_post_send_mem(&p->a, 1, IBV_WR_SEND, 0, 8 * 256, IBV_SEND_SIGNALED), 0);
	UT_EQ(t_count(), 8);
	while (t_count())
		t_drop(0);                /* all lost */
	net.eagain = true;
	t_advance(qpt);                   /* the first retry (counted); its resend waits */
	UT_EQ(p->a.qp->comp.retry_left, 0);
	UT_CHECK(p->a.qp->req.blocked);
	retries = p->a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR];
	for (turns = 0; turns < 8 && p->a.qp->state == IBV_QPS_RTS; turns++) {
		t_advance(qpt * 3 / 10);
		net.eagain = false;
		net.eagain_after = (int)net.sent + 1;
		ur_progress_resume(t_stack());
		net.eagain = true;
		net.eagain_after = -1;
		t_run();                  /* the packet, and an ACK if it asked */
	}
	UT_EQ(p->a.qp->state, IBV_QPS_RTS);
	UT_EQ(turns, 8);
	UT_EQ(p->a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR], retries);   /* not started over */
	t_writable();    /* the ACK the last packet asked for */
	t_run();
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_SUCCESS);
	t_expect_wc(p->b.rcq, &wc, 9, IBV_WC_SUCCESS);
	UT_MEMEQ(p->b.mem.buf, p->a.mem.buf, 8 * 256);
}

/* A READ response arrives after the requester went back but before the
 * transport let it resend the READ: it is the answer expected next and is
 * taken (dropping it cost another round trip and, under load, another
 * timeout each time); the READ is not sent again. */
T_PAIR_TEST(test_congest_response_before_resend, 4096, 4096, T_ALL_ACCESS, .timeout = 10)
{
	uint64_t qpt = ur_rel_timeout_ns(10);
	struct t_pkt *resp;
	struct ibv_wc wc;

	UT_EQ(t_post_rdma_mem(p, 1, IBV_WR_RDMA_READ, 0, 100, 0), 0);
	UT_EQ(t_post_atomic_mem(p, 2, IBV_WR_ATOMIC_FETCH_AND_ADD, 1024, 1024, 1, 0), 0);
	UT_EQ(t_count(), 2);
	t_deliver(0);
	t_deliver(0);
	UT_EQ(t_count(), 2);              /* the READ response and the atomic ACK */
	resp = t_take(0);
	net.eagain = true;
	t_advance(qpt);                   /* goes back; the resend is refused */
	UT_CHECK(p->a.qp->req.blocked);
	UT_EQ(p->a.qp->req.psn, p->a.qp->comp.psn);
	t_inject(resp);
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_SUCCESS);
	UT_MEMEQ(p->a.mem.buf, p->b.mem.buf, 100);
	t_deliver(0);                     /* the atomic ACK, also before its resend */
	t_expect_wc(p->a.scq, &wc, 2, IBV_WC_SUCCESS);
	t_writable();
	t_run();
	UT_EQ(p->b.qp->cnt[UR_CNT_DUPLICATE_REQUEST], 0);   /* nothing was resent */
	UT_CHECK(t_cq_empty(p->a.scq));
	UT_EQ(p->a.qp->state, IBV_QPS_RTS);
}

/* A responder that cannot send keeps its READ answers queued; the
 * requester goes back and asks again.  A duplicate is answered from the
 * slot of its original, not from a new one: duplicates filled the ring and
 * the next new READ, within max_dest_rd_atomic, was refused with a NAK
 * invalid request that ended the QP. */
T_PAIR_TEST(test_congest_dup_reads_share_slots, 4096, 4096, T_ALL_ACCESS, .rd_atomic = 4)
{
	struct t_pkt *r4, *dup[3];
	struct ibv_wc wc;

	for (int i = 0; i < 4; i++)
		UT_EQ(t_post_rdma_mem(p, 1 + i, IBV_WR_RDMA_READ, 1024 * i, 300 + i, 1024 * i), 0);
	UT_EQ(t_count(), 4);
	r4 = t_take(3);
	for (int i = 0; i < 3; i++)
		dup[i] = t_copy(i);
	net.eagain = true;
	for (int i = 0; i < 3; i++)
		t_deliver(0);             /* executed; answers wait */
	for (int i = 0; i < 3; i++)
		t_inject(dup[i]);         /* asked again while they wait */
	UT_EQ(p->b.qp->cnt[UR_CNT_DUPLICATE_REQUEST], 3);
	t_inject(r4);                     /* the fourth of four allowed */
	UT_EQ(p->b.qp->state, IBV_QPS_RTS);
	t_writable();
	t_run();
	for (int i = 0; i < 4; i++)
		t_expect_wc(p->a.scq, &wc, 1 + i, IBV_WC_SUCCESS);
	for (int i = 0; i < 4; i++)
		UT_MEMEQ(p->a.mem.buf + 1024 * i, p->b.mem.buf + 1024 * i, 300 + i);
	UT_EQ(p->a.qp->state, IBV_QPS_RTS);
}

/* An atomic's answer reached the requester, which then asked anew (one
 * new request within max_dest_rd_atomic); a repeat of the first request,
 * sent before its answer came, arrives while the responder cannot send.
 * The repeat took the ring's read pointer back to the first slot, and the
 * new request found every slot "with output" and was refused with a NAK
 * invalid request that ended both QPs (perftest's ib_atomic_bw -q 4 under
 * ASan, and a long soak).  The repeat gives way instead. */
T_PAIR_TEST(test_congest_repeat_gives_way, 4096, 4096, T_ALL_ACCESS, .rd_atomic = 2)
{
	struct t_pkt *dup, *a3;
	struct ibv_wc wc;
	uint64_t v;

	memset(p->b.mem.buf, 0, 8);
	for (int i = 0; i < 2; i++)
		UT_EQ(t_post_atomic_mem(p, 1 + i, IBV_WR_ATOMIC_FETCH_AND_ADD, 8 * i, 0, 1, 0), 0);
	UT_EQ(t_count(), 2);
	dup = t_copy(0);
	t_deliver(0);
	t_deliver(0);                     /* both executed and answered */
	UT_EQ(t_count(), 2);
	t_deliver(0);                     /* the first answer */
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_SUCCESS);
	UT_EQ(t_post_atomic_mem(p, 3, IBV_WR_ATOMIC_FETCH_AND_ADD, 16, 0, 1, 0), 0);
	UT_EQ(t_count(), 2);              /* the second answer, the third request */
	a3 = t_take(1);
	net.eagain = true;
	t_inject(dup);                    /* its answer cannot leave */
	UT_EQ(p->b.qp->cnt[UR_CNT_DUPLICATE_REQUEST], 1);
	t_inject(a3);
	UT_EQ(p->b.qp->state, IBV_QPS_RTS);
	t_writable();
	t_run();
	t_expect_ok(p->a.scq, &wc, 2, 2);
	memcpy(&v, p->b.mem.buf, 8);
	UT_EQ(v, 3);                      /* each executed once */
	memcpy(&v, p->a.mem.buf + 16, 8);
	UT_EQ(v, 2);                      /* the third saw the first two */
	UT_EQ(p->a.qp->state, IBV_QPS_RTS);
	UT_EQ(p->b.qp->state, IBV_QPS_RTS);
}

/* Turns come in the order the QPs came to wait: three QPs blocked on a
 * full transport, and each drain makes room for two packets.  The first
 * drain is the first QP's, the second the second's, the third the
 * third's; a drain with no room at all costs nobody a place.  (Giving all
 * of them a try at every drain put them back in the same order, and only
 * the first ever sent.) */
static void test_congest_fair_turns(void)
{
	struct t_opts o = { .mtu = IBV_MTU_256 };
	struct t_pair p[3];
	struct t_mem sa[3], rb[3];
	struct ibv_wc wc;

	for (int i = 0; i < 3; i++) {
		if (t_pair_open(&p[i], &o))
			return;
		t_mem_reg(&sa[i], &p[i].a, 1024, IBV_ACCESS_LOCAL_WRITE, (uint8_t)(1 + i));
		t_mem_reg(&rb[i], &p[i].b, 1024, IBV_ACCESS_LOCAL_WRITE, (uint8_t)(4 + i));
		UT_EQ(t_post_recv(&p[i].b, 9, rb[i].buf, 1024, rb[i].mr->lkey), 0);
	}
	net.eagain = true;
	for (int i = 0; i < 3; i++) {
		UT_EQ(t_post_send(&p[i].a, 1, IBV_WR_SEND, sa[i].buf, 1024, sa[i].mr->lkey,
				  IBV_SEND_SIGNALED), 0);
		UT_CHECK(p[i].a.qp->req.blocked);
	}
	UT_EQ(t_count(), 0);
	/* No room at all: the head stays the head. */
	net.eagain = false;
	net.eagain_after = (int)net.sent;
	ur_progress_resume(t_stack());
	UT_EQ(t_count(), 0);
	for (int turn = 0; turn < 3; turn++) {
		net.eagain = false;
		net.eagain_after = (int)net.sent + 2;
		ur_progress_resume(t_stack());
		UT_EQ(t_count(), 2u * (turn + 1));
		UT_EQ(t_dqpn(2 * turn), ur_qp_num(p[turn].b.qp));
		UT_EQ(t_dqpn(2 * turn + 1), ur_qp_num(p[turn].b.qp));
	}
	t_writable();
	t_run();
	for (int i = 0; i < 3; i++) {
		t_expect_wc(p[i].a.scq, &wc, 1, IBV_WC_SUCCESS);
		t_expect_wc(p[i].b.rcq, &wc, 9, IBV_WC_SUCCESS);
		UT_MEMEQ(rb[i].buf, sa[i].buf, 1024);
		t_mem_free(&sa[i]);
		t_mem_free(&rb[i]);
		t_pair_close(&p[i]);
	}
}

/* Waiting in line: a QP whose resend cannot leave (the transport is full),
 * whether other QPs' turns keep draining it or nothing drains at all (a
 * peer process that reads its socket late), has nothing out on the wire
 * to time out, so its retries do not count, for up to UR_MAX_TURN_WAIT QP
 * timeouts; past that (a peer that takes nothing) they count again and
 * the QP ends in RETRY_EXC_ERR. */
T_PAIR_TEST(test_congest_wait_in_line, 256, 0, 0, .retry_cnt = 1, .timeout = 10)
{
	uint64_t qpt = ur_rel_timeout_ns(10);
	struct ibv_wc wc;

	UT_EQ(t_post_send_mem(&p->a, 1, IBV_WR_SEND, 0, 100, IBV_SEND_SIGNALED), 0);
	t_drop(0);
	net.eagain = true;
	t_advance(qpt);                   /* counted; the resend waits in line */
	UT_EQ(p->a.qp->comp.retry_left, 0);
	UT_CHECK(p->a.qp->req.blocked);
	for (int i = 0; i < 10; i++) {
		t_stack()->last_turn_ns = t_clock_ns;     /* others' turns drain */
		t_advance(qpt);
		UT_EQ(p->a.qp->state, IBV_QPS_RTS);
	}
	UT_EQ(t_count(), 0);
	/* Nothing drains any more: still this host's wait, up to the bound. */
	for (unsigned i = 11; i < UR_MAX_TURN_WAIT; i++) {
		t_advance(qpt);
		UT_EQ(p->a.qp->state, IBV_QPS_RTS);
	}
	UT_EQ(p->a.qp->comp.retry_left, 0);
	for (int i = 0; i < 3 && p->a.qp->state == IBV_QPS_RTS; i++)
		t_advance(qpt);
	UT_EQ(p->a.qp->state, IBV_QPS_ERR);
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_RETRY_EXC_ERR);
	net.eagain = false;
}

/* ... and the wait in line is bounded: after UR_MAX_TURN_WAIT QP timeouts
 * the retries count even while others drain. */
static void test_congest_wait_in_line_bounded(void)
{
	struct t_opts o = { .retry_cnt = 1, .timeout = 10 };
	uint64_t qpt = ur_rel_timeout_ns(10);
	struct t_pair p;
	struct ibv_wc wc;
	unsigned periods = 0;

	if (t_pair_open_mem(&p, &o, 256, 0, 0))
		return;
	UT_EQ(t_post_send_mem(&p.a, 1, IBV_WR_SEND, 0, 100, IBV_SEND_SIGNALED), 0);
	t_drop(0);
	net.eagain = true;
	t_advance(qpt);
	while (p.a.qp->state == IBV_QPS_RTS && periods < 4 * UR_MAX_TURN_WAIT) {
		t_stack()->last_turn_ns = t_clock_ns;
		t_advance(qpt);
		periods++;
	}
	UT_EQ(p.a.qp->state, IBV_QPS_ERR);
	UT_CHECK(periods >= UR_MAX_TURN_WAIT - 1 && periods <= UR_MAX_TURN_WAIT + 2);
	t_expect_wc(p.a.scq, &wc, 1, IBV_WC_RETRY_EXC_ERR);
	net.eagain = false;
	t_pair_close(&p);
}

/* An ACK that comes while the requester went back and cannot resend (its
 * transport full) moves it over READs the responder has: their answers
 * are still to come, so they count against max_rd_atomic as if resent.
 * Counted as none, the requester sent new READs in their place and, as
 * their answers came, more again: the responder, its answers held up too,
 * had more READs than max_dest_rd_atomic and refused the next with an
 * invalid request NAK (REM_INV_REQ_ERR ended a 10-minute soak). */
T_PAIR_TEST(test_congest_ff_counts_reads, 4096, 4096, T_ALL_ACCESS, .rd_atomic = 2, .timeout = 14)
{
	struct t_mem rb;
	struct t_pkt *resp[2];
	struct ibv_wc wc;
	unsigned naks = 0;

	t_mem_reg(&rb, &p->b, 4096, IBV_ACCESS_LOCAL_WRITE, 3);
	UT_EQ(t_post_recv(&p->b, 100, rb.buf, 4096, rb.mr->lkey), 0);
	/* X, Y: READs; Z: a SEND; then four more READs. */
	for (int i = 0; i < 2; i++)
		UT_EQ(t_post_rdma_mem(p, 1 + i, IBV_WR_RDMA_READ, 64 * i, 64, 64 * i), 0);
	UT_EQ(t_post_send_mem(&p->a, 3, IBV_WR_SEND, 1024, 16, IBV_SEND_SIGNALED), 0);
	for (int i = 0; i < 4; i++)
		UT_EQ(t_post_rdma(&p->a, 4 + i, IBV_WR_RDMA_READ, p->a.mem.buf + 128 + 64 * i, 64, p->a.mem.mr->lkey,
				  (uintptr_t)p->b.mem.buf + 128 + 64 * i, p->b.mem.mr->rkey), 0);
	UT_EQ(t_count(), 3);              /* X, Y, Z: max_rd_atomic holds the rest */
	for (int i = 0; i < 3; i++)
		t_deliver(0);
	UT_EQ(t_count(), 3);              /* X's and Y's answers, Z's ACK */
	UT_EQ(t_op(2), UR_OP_RC_ACKNOWLEDGE);
	resp[0] = t_take(0);
	resp[1] = t_take(0);
	/* A goes back and cannot resend; then Z's ACK arrives. */
	net.eagain = true;
	t_advance(ur_rel_timeout_ns(14) / 4 + 1);
	UT_CHECK(p->a.qp->req.blocked);
	t_deliver(0);
	/* Room again: A may send new READs only as X's and Y's answers come. */
	t_writable();
	t_inject(resp[0]);
	t_inject(resp[1]);
	/* B's transport full while it takes what A sent since. */
	net.eagain = true;
	while (t_count()) {
		if (t_dqpn(0) == ur_qp_num(p->b.qp))
			t_deliver(0);
		else
			t_drop(0);
	}
	UT_EQ(p->b.qp->state, IBV_QPS_RTS);
	t_writable();
	for (int round = 0; round < 5; round++) {   /* timers fire in between */
		while (t_count()) {
			if ((t_op(0) & 0x1f) == UR_OPL_ACKNOWLEDGE && (t_syn(0) & UR_AETH_TYPE_MASK) == UR_AETH_NAK)
				naks++;
			t_deliver(0);
		}
		t_advance(ur_rel_timeout_ns(14));
	}
	UT_EQ(naks, 0);
	for (uint64_t id = 1; id <= 7; id++)
		t_expect_wc(p->a.scq, &wc, id, IBV_WC_SUCCESS);
	t_expect_wc(p->b.rcq, &wc, 100, IBV_WC_SUCCESS);
	UT_MEMEQ(p->a.mem.buf, p->b.mem.buf, 128);
	UT_MEMEQ(p->a.mem.buf + 128, p->b.mem.buf + 128, 256);
	UT_EQ(p->a.qp->state, IBV_QPS_RTS);
	UT_EQ(p->b.qp->state, IBV_QPS_RTS);
	t_mem_free(&rb);
}

/* A late duplicate of an atomic long answered takes a free slot behind an
 * answer that cannot leave yet (the responder's transport full); the next
 * new request, within max_dest_rd_atomic, finds the ring full.  The
 * duplicate's slot gives way, wherever it is, and the new request is
 * executed (it was refused with an invalid request NAK while only the
 * oldest slot could give way). */
T_PAIR_TEST(test_congest_late_dup_gives_way, 4096, 4096, T_ALL_ACCESS, .rd_atomic = 2)
{
	struct t_pkt *dup1;
	struct ibv_wc wc;
	uint64_t v;

	memset(p->b.mem.buf, 0, 8);
	/* A READ (a late duplicate of it finds its slot reused and takes a
	 * new one) and an atomic. */
	UT_EQ(t_post_rdma_mem(p, 1, IBV_WR_RDMA_READ, 64, 8, 64), 0);
	UT_EQ(t_post_atomic_mem(p, 2, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, 0, 1, 0), 0);
	dup1 = t_copy(0);                 /* the READ, arriving late */
	t_run();
	t_expect_ok(p->a.scq, &wc, 1, 2);
	for (int i = 2; i < 4; i++)
		UT_EQ(t_post_atomic_mem(p, 1 + i, IBV_WR_ATOMIC_FETCH_AND_ADD, 8 * i, 0, 1, 0), 0);
	UT_EQ(t_count(), 2);
	net.eagain = true;
	t_deliver(0);                     /* the third: executed, its answer held */
	t_inject(dup1);                   /* the late duplicate: a free slot */
	UT_EQ(p->b.qp->cnt[UR_CNT_DUPLICATE_REQUEST], 1);
	t_deliver(0);                     /* the fourth */
	UT_EQ(p->b.qp->state, IBV_QPS_RTS);
	t_writable();
	t_run();
	t_expect_ok(p->a.scq, &wc, 3, 2);
	memcpy(&v, p->b.mem.buf, 8);
	UT_EQ(v, 3);                      /* each executed once */
	memcpy(&v, p->a.mem.buf + 24, 8);
	UT_EQ(v, 2);                      /* the fourth saw the two before it */
	UT_EQ(p->a.qp->state, IBV_QPS_RTS);
	UT_EQ(p->b.qp->state, IBV_QPS_RTS);
}

/* A count of outstanding READ/atomics left too high (by any path) with
 * nothing unanswered must not hold READs back: no timer runs then to go
 * back and reset it, and the READ would never leave. */
T_PAIR_TEST(test_congest_stale_rd_count, 4096, 4096, T_ALL_ACCESS, .rd_atomic = 2)
{
	struct ibv_wc wc;

	p->a.qp->req.rd_atomic = 2;        /* stale: nothing was ever sent */
	UT_EQ(t_post_rdma_mem(p, 1, IBV_WR_RDMA_READ, 0, 64, 0), 0);
	UT_EQ(t_count(), 1);              /* the READ left */
	t_run();
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_SUCCESS);
	UT_MEMEQ(p->a.mem.buf, p->b.mem.buf, 64);
}
