/* Loss: sequence NAKs, go-back-N, the retransmission timer, duplicates that
 * must not execute twice, lost READ responses, retry exhaustion. */

#define T_TIMEOUT_NS 10000000000ull   /* past any retransmission timeout the tests use */

/* Counts queued packets with this opcode. */
static unsigned t_count_op(uint8_t op)
{
	unsigned n = 0;

	for (unsigned i = 0; i < t_count(); i++)
		n += t_op(i) == op;
	return n;
}

/* A middle packet of a SEND is lost between peers that go back (rxe):
 * B answers the gap with exactly one sequence NAK however many later
 * packets arrive, A goes back to the lost PSN and resends from there, and
 * the message completes once. */
T_PAIR_TEST(test_loss_middle_nak_once, 6 * 256, 6 * 256, IBV_ACCESS_LOCAL_WRITE,
	    .mtu = IBV_MTU_256, .a_psn = 0xfffffd, .b_psn = 0x10, .retry_cnt = 1, .go_back = true)
{
	struct ibv_wc wc;
	uint32_t psn0 = p->o.a_psn;

	t_send_mem(p, 1, 2, 0, 6 * 256);
	UT_EQ(t_count(), 6);
	t_deliver(0);                 /* FIRST */
	t_drop(0);                    /* MIDDLE at psn0 + 1, lost */
	for (int i = 0; i < 4; i++)
		t_deliver(0);         /* the rest, out of sequence */
	UT_EQ(t_count(), 1);          /* one NAK, not four */
	UT_EQ(t_op(0), UR_OP_RC_ACKNOWLEDGE);
	UT_EQ(t_syn(0), UR_NAK_PSN_SEQ_ERR);
	UT_EQ(t_psn(0), psn_add(psn0, 1));
	UT_EQ(p->b.qp->cnt[UR_CNT_OUT_OF_SEQ_REQUEST], 4);
	t_deliver(0);
	/* Go-back-N from the lost PSN. */
	UT_EQ(t_count(), 5);
	for (unsigned i = 0; i < 5 && i < t_count(); i++)
		UT_EQ(t_psn(i), psn_add(psn0, 1 + i));
	UT_EQ(t_op(0), UR_OP_RC_SEND_MIDDLE);
	UT_EQ(t_op(4), UR_OP_RC_SEND_LAST);
	UT_EQ(p->a.qp->cnt[UR_CNT_RCVD_SEQ_ERR], 1);
	t_run();
	t_expect_recv(p, &wc, 1, 6 * 256, 0, 0);
	t_expect_wc(p->a.scq, &wc, 2, IBV_WC_SUCCESS);
	UT_CHECK(t_cq_empty(p->b.rcq));
	/* The retry budget is whole again after progress. */
	UT_EQ(p->a.qp->comp.retry_left, 1);
}

/* A second gap after the first was repaired gets its own NAK. */
T_PAIR_TEST(test_loss_two_gaps, 8 * 256, 8 * 256, IBV_ACCESS_LOCAL_WRITE, .mtu = IBV_MTU_256)
{
	struct ibv_wc wc;

	t_send_mem(p, 1, 2, 0, 8 * 256);
	t_drop(1);                    /* psn 1 */
	t_run();                      /* NAK, resend 1..7 */
	UT_EQ(p->a.qp->cnt[UR_CNT_RCVD_SEQ_ERR], 1);
	t_expect_wc(p->a.scq, &wc, 2, IBV_WC_SUCCESS);
	t_send_mem(p, 3, 4, 0, 8 * 256);
	t_drop(5);                    /* psn 13 */
	t_run();
	UT_EQ(p->a.qp->cnt[UR_CNT_RCVD_SEQ_ERR], 2);
	t_expect_wc(p->b.rcq, &wc, 1, IBV_WC_SUCCESS);
	t_expect_wc(p->b.rcq, &wc, 3, IBV_WC_SUCCESS);
	t_expect_wc(p->a.scq, &wc, 4, IBV_WC_SUCCESS);
	UT_MEMEQ(p->b.mem.buf, p->a.mem.buf, 8 * 256);
}

/* The ACK of a WRITE is lost: the timer resends the WRITE, B recognises the
 * duplicate, acknowledges it again and does not write a second time.  No
 * round trip is measured yet: the first resend comes after a quarter of
 * the QP's timeout and does not count against retry_cnt. */
T_PAIR_TEST(test_loss_ack_timer, 512, 512, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	    .a_psn = 0xffffff, .retry_cnt = 3)
{
	struct ibv_wc wc;
	uint64_t deadline;

	UT_EQ(t_post_rdma_mem(p, 5, IBV_WR_RDMA_WRITE, 0, 512, 0), 0);
	deadline = p->a.qp->comp.retrans_deadline;
	UT_EQ(deadline, t_clock_ns + ur_rel_timeout_ns(20) / 4);
	t_deliver(0);
	UT_MEMEQ(p->b.mem.buf, p->a.mem.buf, 512);
	UT_EQ(t_count(), 1);
	UT_EQ(t_op(0), UR_OP_RC_ACKNOWLEDGE);
	t_drop(0);
	/* The application overwrites the target; a second execution would
	 * show. */
	memset(p->b.mem.buf, 0xee, 512);
	/* Not yet: the timer has not expired. */
	t_advance(ur_rel_timeout_ns(20) / 4 - 1);
	UT_EQ(t_count(), 0);
	t_advance(1);
	UT_EQ(t_count(), 1);
	UT_EQ(t_op(0), UR_OP_RC_RDMA_WRITE_ONLY);
	UT_EQ(t_psn(0), 0xffffff);
	UT_EQ(p->a.qp->comp.retry_left, 3);                  /* early: not counted */
	UT_EQ(p->a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR], 1);
	t_deliver(0);
	UT_EQ(p->b.qp->cnt[UR_CNT_DUPLICATE_REQUEST], 1);
	for (int i = 0; i < 512; i++)
		if (p->b.mem.buf[i] != 0xee) {
			UT_EQ(p->b.mem.buf[i], 0xee);
			break;
		}
	UT_EQ(t_count(), 1);          /* the duplicate is acknowledged again */
	UT_EQ(t_op(0), UR_OP_RC_ACKNOWLEDGE);
	UT_EQ(t_syn(0) & UR_AETH_TYPE_MASK, UR_AETH_ACK);
	UT_EQ(t_psn(0), 0xffffff);
	t_deliver(0);
	t_expect_wc(p->a.scq, &wc, 5, IBV_WC_SUCCESS);
	UT_CHECK(t_cq_empty(p->a.scq));
	UT_EQ(p->a.qp->comp.retrans_deadline, 0);    /* nothing outstanding: no timer */
	UT_EQ(p->a.qp->comp.retry_left, 3);
}

/* A duplicate ATOMIC is answered from the saved result, not executed again. */
T_PAIR_TEST(test_loss_atomic_duplicate, 64, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC,
	    .retry_cnt = 2)
{
	struct ibv_wc wc;
	uint64_t *target;

	target = t_target(p, 0, 40);
	UT_EQ(t_post_atomic_mem(p, 6, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 0, 2, 0), 0);
	t_deliver(0);
	UT_EQ(*target, 42);
	t_drop(0);                    /* the atomic ACK */
	t_advance(T_TIMEOUT_NS);
	UT_EQ(t_count(), 1);
	UT_EQ(t_op(0), UR_OP_RC_FETCH_ADD);
	t_deliver(0);
	UT_EQ(*target, 42);           /* not added twice */
	UT_EQ(p->b.qp->cnt[UR_CNT_DUPLICATE_REQUEST], 1);
	UT_EQ(t_count(), 1);
	UT_EQ(t_op(0), UR_OP_RC_ATOMIC_ACKNOWLEDGE);
	UT_EQ(atmack_orig(t_hdr(t_pkt(0), UR_HDR_ATMACK)), 40);
	t_deliver(0);
	t_expect_wc(p->a.scq, &wc, 6, IBV_WC_SUCCESS);
	UT_EQ(t_word(p->a.mem.buf), 40);

	/* The same with a CMP_SWP, whose second execution would fail the
	 * compare and report the swapped value. */
	*target = 7;
	UT_EQ(t_post_atomic_mem(p, 7, IBV_WR_ATOMIC_CMP_AND_SWP, 0, 0, 7, 99), 0);
	t_deliver(0);
	UT_EQ(*target, 99);
	t_drop(0);
	t_advance(T_TIMEOUT_NS);
	t_run();
	t_expect_wc(p->a.scq, &wc, 7, IBV_WC_SUCCESS);
	UT_EQ(t_word(p->a.mem.buf), 7);
	UT_EQ(*target, 99);
}

/* A READ response in the middle is lost: A asks again for the rest, B
 * answers the duplicate READ, and every byte lands where it belongs. */
static void test_loss_read_response(void)
{
	struct t_opts o = { .mtu = IBV_MTU_256, .a_psn = 0xfffffe, .retry_cnt = 1 };
	struct t_pair p;
	struct ibv_wc wc;
	uint32_t psn0 = o.a_psn;

	if (t_pair_open_mem(&p, &o, 8 * 256, 8 * 256, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ))
		return;
	UT_EQ(t_post_rdma_mem(&p, 8, IBV_WR_RDMA_READ, 0, 8 * 256 - 10, 10), 0);
	t_deliver(0);
	UT_EQ(t_count(), 8);
	t_deliver(0);
	t_deliver(0);
	t_drop(0);                    /* response psn0 + 2 */
	t_deliver(0);                 /* psn0 + 3: a gap, A asks again */
	UT_EQ(t_count_op(UR_OP_RC_RDMA_READ_REQUEST), 1);
	{
		unsigned i = t_count() - 1;
		struct ur_pkt_view v = t_view(i);
		const uint8_t *r = ur_pkt_hdr(&v, UR_HDR_RETH);

		UT_EQ(v.opcode, UR_OP_RC_RDMA_READ_REQUEST);
		UT_EQ(v.psn, psn_add(psn0, 2));
		UT_EQ(reth_va(r), (uintptr_t)p.b.mem.buf + 10 + 2 * 256);
		UT_EQ(reth_len(r), 8 * 256 - 10 - 2 * 256);
	}
	t_run();
	t_expect_wc(p.a.scq, &wc, 8, IBV_WC_SUCCESS);
	UT_EQ(wc.byte_len, 8 * 256 - 10);
	UT_MEMEQ(p.a.mem.buf, p.b.mem.buf + 10, 8 * 256 - 10);
	UT_CHECK(t_mem_intact_outside(&p.a.mem, 1, 0, 8 * 256 - 10));
	UT_EQ(p.b.qp->cnt[UR_CNT_DUPLICATE_REQUEST], 1);
	t_pair_close(&p);
}

/* Gone back, the resend waiting for room on the transport, and then the
 * answers to the first transmission arrive: a READ response past a WRITE
 * whose ACK was lost acknowledges the WRITE too, and an atomic's ACK
 * everything before it.  Taken, not dropped: both complete and nothing
 * is sent again.  (Dropped, an answer slower than the timer was dropped
 * on every round, as 1000 QPs on a loaded host showed.) */
T_PAIR_TEST(test_loss_answers_while_gone_back, 4 * 256, 4 * 256, T_ALL_ACCESS,
	    .mtu = IBV_MTU_256, .access = T_ALL_ACCESS)
{
	struct ibv_wc wc;
	uint64_t *word;
	uint32_t psn0;

	memset(p->b.mem.buf + 2 * 256, 0x5a, 256);
	word = t_target(p, 3 * 256, 40);
	UT_EQ(t_post_rdma_mem(p, 1, IBV_WR_RDMA_WRITE, 0, 256, 0), 0);
	UT_EQ(t_post_rdma_mem(p, 2, IBV_WR_RDMA_READ, 256, 256, 2 * 256), 0);
	UT_EQ(t_post_atomic_mem(p, 3, IBV_WR_ATOMIC_FETCH_AND_ADD, 2 * 256, 3 * 256, 2, 0), 0);
	UT_EQ(t_count(), 3);
	psn0 = t_psn(0);
	for (int i = 0; i < 3; i++)
		t_deliver(0);         /* the responder executes all three */
	UT_EQ(*word, 42u);
	/* Its answers: the WRITE's ACK (lost, if it asked for one), the READ
	 * response and the atomic's ACK, held back on the way. */
	for (unsigned i = 0; i < t_count();) {
		if (t_psn(i) == psn0)
			t_drop(i);
		else
			i++;
	}
	UT_EQ(t_count(), 2);
	net.eagain = true;            /* the transport is full */
	t_advance(T_TIMEOUT_NS);      /* the requester goes back: nothing leaves */
	UT_CHECK(p->a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR] >= 1);
	UT_EQ(p->a.qp->req.psn, psn0);
	UT_EQ(t_count(), 2);
	t_deliver(0);                 /* the READ response, then the atomic's ACK */
	t_deliver(0);
	t_expect_ok(p->a.scq, &wc, 1, 3);
	UT_EQ(*(uint64_t *)(p->a.mem.buf + 2 * 256), 40u);
	UT_MEMEQ(p->a.mem.buf + 256, p->b.mem.buf + 2 * 256, 256);
	t_writable();
	UT_EQ(t_count(), 0);          /* nothing left to send again */
	UT_EQ(*word, 42u);
	UT_EQ(p->a.qp->comp.psn, p->a.qp->req.psn_max);
}

/* One lost READ response followed by the rest of the stream: one gap, one
 * request again, however many later responses arrive, so one loss cannot
 * exhaust a small retry budget. */
T_PAIR_TEST(test_loss_read_response_one_retry,
	    8 * 256, 8 * 256, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
	    .mtu = IBV_MTU_256, .retry_cnt = 1)
{
	struct ibv_wc wc;

	UT_EQ(t_post_rdma_mem(p, 8, IBV_WR_RDMA_READ, 0, 8 * 256, 0), 0);
	t_deliver(0);
	t_deliver(0);                 /* psn 0 */
	t_drop(0);                    /* psn 1 lost */
	for (int i = 0; i < 6; i++)
		t_deliver(0);         /* psn 2..7 */
	UT_EQ(t_count_op(UR_OP_RC_RDMA_READ_REQUEST), 1);
	UT_EQ(p->a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR], 1);
	t_run();
	t_expect_wc(p->a.scq, &wc, 8, IBV_WC_SUCCESS);
	UT_MEMEQ(p->a.mem.buf, p->b.mem.buf, 8 * 256);
	UT_EQ(p->a.qp->state, IBV_QPS_RTS);
}

/* A READ's response is lost and the ACKs of later SENDs arrive: each says
 * the READ was executed without its response reaching A.  One loss is one
 * retry, not one per ACK. */
T_PAIR_TEST(test_loss_read_response_acks_behind, 1024, 1024, T_ALL_ACCESS, .retry_cnt = 1)
{
	struct ibv_wc wc;

	UT_EQ(t_post_rdma_mem(p, 1, IBV_WR_RDMA_READ, 0, 64, 0), 0);
	for (int i = 0; i < 3; i++)
		UT_EQ(t_post_rdma_mem(p, 2 + i, IBV_WR_RDMA_WRITE, 512, 64, 512), 0);
	UT_EQ(t_count(), 4);
	t_deliver(0);                 /* READ: B answers */
	UT_EQ(t_op(3), UR_OP_RC_RDMA_READ_RESPONSE_ONLY);
	t_drop(3);
	t_deliver(0);                 /* WRITEs: three ACKs */
	t_deliver(0);
	t_deliver(0);
	UT_EQ(t_count_op(UR_OP_RC_ACKNOWLEDGE), 3);
	for (int i = 0; i < 3; i++)
		t_deliver(0);
	UT_CHECK(p->a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR] <= 1);
	UT_EQ(p->a.qp->state, IBV_QPS_RTS);
	t_run();
	for (int i = 0; i < 4; i++)
		t_expect_wc(p->a.scq, &wc, 1 + i, IBV_WC_SUCCESS);
	UT_MEMEQ(p->a.mem.buf, p->b.mem.buf, 64);
}

/* A READ larger than one chunk with max_rd_atomic 1: a response lost in
 * the first chunk is asked for again, and the second chunk then follows on
 * the PSNs B expects. */
static void test_loss_read_chunked(void)
{
	struct t_opts o = { .mtu = IBV_MTU_256, .rd_atomic = 1, .retry_cnt = 2 };
	uint32_t len = (UR_READ_CHUNK_PKTS + 8) * 256;
	struct t_pair p;
	struct ibv_wc wc;

	if (t_pair_open_mem(&p, &o, len, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ))
		return;
	UT_EQ(t_post_rdma_mem(&p, 9, IBV_WR_RDMA_READ, 0, len, 0), 0);
	UT_EQ(t_count(), 1);          /* one chunk at a time */
	t_deliver(0);
	UT_EQ(t_count(), UR_READ_CHUNK_PKTS);
	t_deliver(0);
	t_drop(0);                    /* psn 1 */
	t_run();
	t_expect_wc(p.a.scq, &wc, 9, IBV_WC_SUCCESS);
	UT_MEMEQ(p.a.mem.buf, p.b.mem.buf, len);
	UT_EQ(p.a.qp->state, IBV_QPS_RTS);
	UT_EQ(p.b.qp->state, IBV_QPS_RTS);
	t_pair_close(&p);
}

/* Nothing gets through: retry_cnt retransmissions, then RETRY_EXC_ERR for
 * the oldest WQE, FLUSH_ERR for the rest, in order, and the QP in ERROR. */
T_PAIR_TEST(test_loss_retry_exhausted, 256, 0, 0, .retry_cnt = 2)
{
	struct ibv_wc wc;

	UT_EQ(t_post_send_mem(&p->a, 1, IBV_WR_SEND, 0, 10, 0), 0);
	UT_EQ(t_post_send_mem(&p->a, 2, IBV_WR_SEND, 0, 10, 0), 0);
	UT_EQ(t_post_send_mem(&p->a, 3, IBV_WR_SEND, 0, 10, IBV_SEND_SIGNALED), 0);
	for (int round = 0; round < 2; round++) {
		UT_EQ(t_count(), 3);
		while (t_count())
			t_drop(0);
		t_advance(T_TIMEOUT_NS);
		UT_EQ(p->a.qp->state, IBV_QPS_RTS);
		UT_EQ(t_psn(0), 0);
	}
	while (t_count())
		t_drop(0);
	UT_CHECK(t_cq_empty(p->a.scq));
	t_advance(T_TIMEOUT_NS);
	UT_EQ(t_count(), 0);
	UT_EQ(p->a.qp->state, IBV_QPS_ERR);
	UT_EQ(p->a.qp->cnt[UR_CNT_RETRY_EXCEEDED_ERR], 1);
	/* Errors complete even unsignaled WQEs. */
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_RETRY_EXC_ERR);
	UT_EQ(wc.qp_num, ur_qp_num(p->a.qp));
	t_expect_wc(p->a.scq, &wc, 2, IBV_WC_WR_FLUSH_ERR);
	t_expect_wc(p->a.scq, &wc, 3, IBV_WC_WR_FLUSH_ERR);
	UT_CHECK(t_cq_empty(p->a.scq));
	/* The timer is off for good. */
	UT_EQ(p->a.qp->comp.retrans_deadline, 0);
	t_advance(2 * T_TIMEOUT_NS);
	UT_EQ(t_count(), 0);
}

/* What a QP that gives up tells (rel/giveup.c): each counted retry since
 * its last progress is marked (the timer's, where the requester stood,
 * the QP's packet counts then), progress clears them, and the give-up
 * finds one mark per retry of retry_cnt. */
T_PAIR_TEST(test_loss_giveup_marks, 256, 256, IBV_ACCESS_LOCAL_WRITE, .retry_cnt = 2)
{
	struct ur_comp_state *c = &p->a.qp->comp;
	struct ibv_wc wc;
	uint32_t psn;

	UT_EQ(t_post_recv_mem(&p->b, 9, 0, 256), 0);
	UT_EQ(t_post_send_mem(&p->a, 1, IBV_WR_SEND, 0, 10, IBV_SEND_SIGNALED), 0);
	t_drop(0);
	t_advance(T_TIMEOUT_NS);          /* one counted retry */
	UT_EQ(c->nmarks, 1);
	UT_CHECK(c->marks[0].timer);
	UT_EQ(c->marks[0].psn, c->psn);
	UT_EQ(c->marks[0].rcvd, 0u);
	t_run();                          /* its resend and the ACK: progress */
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_SUCCESS);
	UT_EQ(c->nmarks, 0);
	UT_CHECK(c->progress_ns != 0);
	UT_EQ(p->a.qp->cnt[UR_CNT_RCVD_PKTS], 1u);
	UT_CHECK(p->a.qp->rx_ns != 0 && p->a.qp->tx_ns != 0);

	psn = c->psn;
	UT_EQ(t_post_send_mem(&p->a, 2, IBV_WR_SEND, 0, 10, IBV_SEND_SIGNALED), 0);
	for (int round = 0; round < 3; round++) {
		while (t_count())
			t_drop(0);
		t_advance(T_TIMEOUT_NS);
	}
	UT_EQ(p->a.qp->state, IBV_QPS_ERR);
	t_expect_wc(p->a.scq, &wc, 2, IBV_WC_RETRY_EXC_ERR);
	UT_EQ(c->nmarks, 2);
	for (int i = 0; i < 2; i++) {
		UT_CHECK(c->marks[i].timer);
		UT_EQ(c->marks[i].psn, psn);
		UT_EQ(c->marks[i].rcvd, 1u);   /* nothing since the progress */
	}
	UT_CHECK(c->marks[1].ns > c->marks[0].ns);
	UT_CHECK(c->marks[1].sent > c->marks[0].sent);   /* the resend between */
}

/* retry_cnt 0: the first timeout fails the WQE. */
T_PAIR_TEST(test_loss_retry_zero, 256, 0, 0, .retry_cnt = T_ZERO)
{
	struct ibv_wc wc;

	UT_EQ(t_post_send_mem(&p->a, 1, IBV_WR_SEND, 0, 10, IBV_SEND_SIGNALED), 0);
	t_drop(0);
	t_advance(T_TIMEOUT_NS);
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_RETRY_EXC_ERR);
	UT_EQ(p->a.qp->state, IBV_QPS_ERR);
}

/* Two losses in one window halve the congestion window once: the second
 * go-back (its resend lost again) comes before what was in flight at the
 * first is acknowledged.  Halving on each took the window to a quarter
 * for what TCP's recovery counts as one congestion event. */
T_PAIR_TEST(test_loss_window_halves_once, 16 * 256, 16 * 256, IBV_ACCESS_LOCAL_WRITE,
	    .mtu = IBV_MTU_256, .go_back = true)
{
	struct ibv_wc wc;
	uint32_t psn0, cwnd0, target;
	bool dropped_again = false;
	unsigned steps = 0;

	t_send_mem(p, 1, 2, 0, 16 * 256);
	UT_EQ(t_count(), 16);
	cwnd0 = p->a.qp->req.cwnd;
	psn0 = t_psn(0);
	target = (psn0 + 10) & 0xffffff;
	t_drop(2);
	while (t_count() && steps++ < 1000) {
		/* After the first go-back, its resend of PSN 10 is lost too. */
		if (!dropped_again && p->a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR] == 1 &&
		    t_dqpn(0) == ur_qp_num(p->b.qp) && t_psn(0) == target) {
			t_drop(0);
			dropped_again = true;
			continue;
		}
		t_deliver(0);
	}
	UT_CHECK(dropped_again);
	UT_EQ(p->a.qp->cnt[UR_CNT_RCVD_SEQ_ERR], 2);
	UT_EQ(p->a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR], 2);
	UT_CHECK(p->a.qp->req.cwnd >= cwnd0 / 2);     /* halved once, not twice */
	t_expect_wc(p->a.scq, &wc, 2, IBV_WC_SUCCESS);
	t_expect_wc(p->b.rcq, &wc, 1, IBV_WC_SUCCESS);
	UT_MEMEQ(p->b.mem.buf, p->a.mem.buf, 16 * 256);
}

/* The very first message, before any round trip is measured, gets early
 * retries too: with retry_cnt 0 it survives two losses in a row (sent at
 * 0, resent at a quarter and at three quarters of the QP's timeout, none
 * counted).  Before, it had retry_cnt + 1 tries at whole timeouts: a
 * pingpong's first message at 20 % loss each way (a try fails 36 % of
 * the time) ended in RETRY_EXC_ERR for some fault seeds every time. */
T_PAIR_TEST(test_loss_first_message, 256, 256, IBV_ACCESS_LOCAL_WRITE,
	    .retry_cnt = T_ZERO, .timeout = 10)	/* 4.19 ms */
{
	uint64_t qpt = ur_rel_timeout_ns(10);
	struct ibv_wc wc;

	UT_EQ(t_post_recv_mem(&p->b, 9, 0, 256), 0);
	UT_EQ(t_post_send_mem(&p->a, 1, IBV_WR_SEND, 0, 10, IBV_SEND_SIGNALED), 0);
	t_drop(0);
	t_advance(qpt / 4);
	UT_EQ(t_count(), 1);              /* early, uncounted */
	t_drop(0);
	t_advance(qpt / 2);
	UT_EQ(t_count(), 1);              /* again, before the timeout */
	UT_EQ(p->a.qp->state, IBV_QPS_RTS);
	t_run();
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_SUCCESS);
	t_expect_wc(p->b.rcq, &wc, 9, IBV_WC_SUCCESS);
	UT_EQ(p->a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR], 2);
}

/* The timer from the measured round trip: once a round trip is measured
 * (50 us here), a lost last packet is resent after the RTO's floor (1 ms),
 * not the QP's timeout (4 s), and again after twice that; neither counts
 * against retry_cnt.  A peer that has vanished still ends the request only
 * after (retry_cnt + 1) whole QP timeouts, as before. */
T_PAIR_TEST(test_loss_rtt_timer, 256, 256, IBV_ACCESS_LOCAL_WRITE,
	    .retry_cnt = 2, .timeout = 10)	/* 4.19 ms */
{
	uint64_t qpt = ur_rel_timeout_ns(10), t0;
	struct ibv_wc wc;

	/* Nothing measured yet: a quarter of the QP's timeout. */
	UT_EQ(t_post_recv_mem(&p->b, 9, 0, 256), 0);
	UT_EQ(t_post_send_mem(&p->a, 1, IBV_WR_SEND, 0, 10, IBV_SEND_SIGNALED), 0);
	UT_EQ(p->a.qp->comp.retrans_deadline, t_clock_ns + qpt / 4);
	t_advance(50000);
	t_run();
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_SUCCESS);
	t_expect_wc(p->b.rcq, &wc, 9, IBV_WC_SUCCESS);
	UT_EQ(p->a.qp->comp.srtt_ns, 50000);
	/* A tail loss: resent after 1 ms, then after 2 ms, uncounted. */
	UT_EQ(t_post_recv_mem(&p->b, 10, 0, 256), 0);
	UT_EQ(t_post_send_mem(&p->a, 2, IBV_WR_SEND, 0, 10, IBV_SEND_SIGNALED), 0);
	UT_EQ(p->a.qp->comp.retrans_deadline, t_clock_ns + UR_MIN_RTO_NS);
	t_drop(0);
	t_advance(UR_MIN_RTO_NS - 1);
	UT_EQ(t_count(), 0);
	t_advance(1);
	UT_EQ(t_count(), 1);
	UT_EQ(p->a.qp->comp.retry_left, 2);
	UT_EQ(p->a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR], 1);
	UT_EQ(p->a.qp->comp.retrans_deadline, t_clock_ns + 2 * UR_MIN_RTO_NS);
	t_drop(0);
	t_advance(2 * UR_MIN_RTO_NS);
	UT_EQ(t_count(), 1);
	t_run();
	t_expect_wc(p->a.scq, &wc, 2, IBV_WC_SUCCESS);
	t_expect_wc(p->b.rcq, &wc, 10, IBV_WC_SUCCESS);
	UT_EQ(p->a.qp->comp.backoff, 0);
	UT_EQ(p->a.qp->comp.retry_left, 2);
	/* The peer is gone: every packet lost.  RETRY_EXC_ERR no sooner than
	 * three QP timeouts, and no later than four. */
	UT_EQ(t_post_send_mem(&p->a, 3, IBV_WR_SEND, 0, 10, IBV_SEND_SIGNALED), 0);
	t0 = t_clock_ns;
	while (p->a.qp->state == IBV_QPS_RTS && t_clock_ns - t0 < 10 * qpt) {
		while (t_count())
			t_drop(0);
		t_advance(100000);
	}
	UT_EQ(p->a.qp->state, IBV_QPS_ERR);
	UT_CHECK(t_clock_ns - t0 >= 3 * qpt);
	UT_CHECK(t_clock_ns - t0 <= 4 * qpt);
	UT_EQ(p->a.qp->comp.retry_left, 0);
	t_expect_wc(p->a.scq, &wc, 3, IBV_WC_RETRY_EXC_ERR);
}

/* A peer that never takes a packet again (a frozen process of this host:
 * its socket full, the transport refusing with EAGAIN): the retry timer
 * still runs though going back sent nothing.  The waits for room count
 * only once they passed UR_MAX_TURN_WAIT QP timeouts (a peer that reads
 * late is not a dead one), and then the oldest WQE ends in RETRY_EXC_ERR,
 * the next in FLUSH_ERR, never a wait without end. */
T_PAIR_TEST(test_loss_peer_frozen, 256, 0, 0, .retry_cnt = 2, .timeout = 10)
{
	uint64_t qpt = ur_rel_timeout_ns(10);
	struct ibv_wc wc;

	UT_EQ(t_post_send_mem(&p->a, 1, IBV_WR_SEND, 0, 10, 0), 0);
	UT_EQ(t_post_send_mem(&p->a, 2, IBV_WR_SEND, 0, 10, IBV_SEND_SIGNALED), 0);
	while (t_count())
		t_drop(0);
	net.eagain = true;
	t_advance(qpt);                   /* the loss: counted; the resend is refused */
	for (unsigned i = 1; i < UR_MAX_TURN_WAIT; i++) {
		UT_CHECK(p->a.qp->comp.retrans_deadline != 0);
		t_advance(qpt);
		UT_EQ(p->a.qp->state, IBV_QPS_RTS);
	}
	for (int i = 0; i < 4 && p->a.qp->state == IBV_QPS_RTS; i++)
		t_advance(qpt);
	UT_EQ(t_count(), 0);
	UT_EQ(p->a.qp->state, IBV_QPS_ERR);
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_RETRY_EXC_ERR);
	t_expect_wc(p->a.scq, &wc, 2, IBV_WC_WR_FLUSH_ERR);
	UT_CHECK(t_cq_empty(p->a.scq));
	net.eagain = false;
}

/* Go-back-N across several WQEs: the lost packet is in the second of three
 * messages; the first is acknowledged, the second resent from inside, the
 * third from its start. */
T_PAIR_TEST(test_loss_gbn_across_wqes,
	    3 * 1024, 3 * 1024, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	    .mtu = IBV_MTU_256)
{
	struct ibv_wc wc;

	for (int i = 0; i < 3; i++)
		UT_EQ(t_post_rdma_mem(p, 10 + i, IBV_WR_RDMA_WRITE, 1024 * i, 1024, 1024 * i), 0);
	UT_EQ(t_count(), 12);
	t_drop(6);                    /* second WRITE, third packet (psn 6) */
	t_run();
	for (int i = 0; i < 3; i++)
		t_expect_wc(p->a.scq, &wc, 10 + i, IBV_WC_SUCCESS);
	UT_MEMEQ(p->b.mem.buf, p->a.mem.buf, 3 * 1024);
	UT_EQ(p->a.qp->cnt[UR_CNT_RCVD_SEQ_ERR], 1);
	UT_EQ(p->b.qp->resp.psn, 12);
}

/* Packets delivered twice, and stale ACKs: nothing completes twice. */
T_PAIR_TEST(test_loss_duplicates_everywhere, 1024, 1024, IBV_ACCESS_LOCAL_WRITE, .mtu = IBV_MTU_256)
{
	struct ibv_wc wc;

	UT_EQ(t_post_recv_mem(&p->b, 1, 0, 1024), 0);
	t_send_mem(p, 2, 3, 0, 1024);
	for (int i = 0; i < 4; i++) {
		struct t_pkt *dup = t_copy(0);

		t_deliver(0);
		t_inject(dup);        /* each packet twice */
	}
	/* One ACK per duplicate with AckReq... at most; then stale ACKs twice. */
	while (t_count()) {
		struct t_pkt *dup = t_copy(0);

		t_deliver(0);
		t_inject(dup);
	}
	t_expect_wc(p->b.rcq, &wc, 1, IBV_WC_SUCCESS);
	UT_CHECK(t_cq_empty(p->b.rcq));    /* the second receive is still posted */
	t_expect_wc(p->a.scq, &wc, 3, IBV_WC_SUCCESS);
	UT_CHECK(t_cq_empty(p->a.scq));
	UT_EQ(p->b.qp->rq.tail - p->b.qp->rq.head, 1);
}

/* A READ response acknowledges every request before the READ: the SEND
 * whose ACK was lost completes with it, without a retry (retry_cnt 0 would
 * fail the QP). */
T_PAIR_TEST(test_loss_ack_before_read, 1024, 1024, T_ALL_ACCESS, .retry_cnt = T_ZERO)
{
	struct ibv_wc wc;

	UT_EQ(t_post_recv_mem(&p->b, 1, 512, 512), 0);
	UT_EQ(t_post_send_mem(&p->a, 2, IBV_WR_SEND, 512, 16, IBV_SEND_SIGNALED), 0);
	UT_EQ(t_post_rdma_mem(p, 3, IBV_WR_RDMA_READ, 0, 64, 0), 0);
	t_deliver(0);
	t_deliver(0);
	UT_EQ(t_count(), 2);
	UT_EQ(t_op(0), UR_OP_RC_ACKNOWLEDGE);
	t_drop(0);
	t_deliver(0);                 /* the READ response */
	UT_EQ(t_count(), 0);
	t_expect_ok(p->a.scq, &wc, 2, 2);
	UT_EQ(p->a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR], 0);
	UT_EQ(p->a.qp->comp.psn, 2);
	UT_EQ(p->a.qp->state, IBV_QPS_RTS);
	UT_MEMEQ(p->a.mem.buf, p->b.mem.buf, 64);
}

/* SEND (ACK lost), READ (response lost), WRITE (ACK arrives): the WRITE's
 * ACK completes the SEND and reveals the lost READ response; the READ is
 * asked for again at its own PSN and everything completes. */
T_PAIR_TEST(test_loss_ack_and_read_response, 1024, 1024, T_ALL_ACCESS, 0)
{
	struct ibv_wc wc;

	UT_EQ(t_post_recv_mem(&p->b, 1, 512, 512), 0);
	UT_EQ(t_post_send_mem(&p->a, 2, IBV_WR_SEND, 512, 16, IBV_SEND_SIGNALED), 0);
	UT_EQ(t_post_rdma_mem(p, 3, IBV_WR_RDMA_READ, 0, 64, 0), 0);
	UT_EQ(t_post_rdma_mem(p, 4, IBV_WR_RDMA_WRITE, 256, 64, 256), 0);
	t_deliver(0);
	t_deliver(0);
	t_deliver(0);
	UT_EQ(t_count(), 3);          /* ACK 0, READ response 1, ACK 2 */
	t_drop(0);
	t_drop(0);
	t_run();
	for (int i = 0; i < 3; i++)
		t_expect_wc(p->a.scq, &wc, 2 + i, IBV_WC_SUCCESS);
	UT_EQ(p->a.qp->state, IBV_QPS_RTS);
	UT_MEMEQ(p->a.mem.buf, p->b.mem.buf, 64);
	UT_MEMEQ(p->b.mem.buf + 256, p->a.mem.buf + 256, 64);
}

/* Two atomics outstanding; the first one's ACK is lost, the second's
 * arrives: responses come in order, so the first one's response was lost.
 * A asks again at once, without waiting out the retransmission timer, and
 * the duplicate is answered from the saved result. */
T_PAIR_TEST(test_loss_atomic_ack_then_next,
	    64, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC, .rd_atomic = 4)
{
	struct ibv_wc wc;
	uint64_t *target;

	target = t_target(p, 0, 10);
	UT_EQ(t_post_atomic_mem(p, 1, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 0, 1, 0), 0);
	UT_EQ(t_post_atomic_mem(p, 2, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, 0, 1, 0), 0);
	t_deliver(0);
	t_deliver(0);
	UT_EQ(*target, 12);
	UT_EQ(t_count(), 2);
	t_drop(0);                    /* the first atomic's ACK */
	t_deliver(0);                 /* the second's */
	/* Go-back-N: both again, from the first. */
	UT_EQ(t_count_op(UR_OP_RC_FETCH_ADD), 2);
	UT_EQ(t_psn(0), 0);
	UT_EQ(t_psn(1), 1);
	t_run();
	UT_EQ(p->b.qp->cnt[UR_CNT_DUPLICATE_REQUEST], 2);
	t_expect_ok(p->a.scq, &wc, 1, 2);
	UT_EQ(t_word(p->a.mem.buf), 10);
	UT_EQ(t_word(p->a.mem.buf + 8), 11);
	UT_EQ(*target, 12);
}

/* A sequence NAK for a PSN past an atomic whose ACK was lost: the NAK
 * acknowledges what precedes it except that atomic, whose response is
 * still needed.  A must resend from the atomic, at the atomic's own PSN:
 * sending it (or anything) at another PSN than the first time makes B
 * execute it twice or take one request for another. */
T_PAIR_TEST(test_loss_seq_nak_past_atomic, 4096, 4096, T_ALL_ACCESS, .mtu = IBV_MTU_256)
{
	struct ibv_wc wc;
	uint64_t *counter;

	counter = t_target(p, 0, 50);
	UT_EQ(t_post_atomic_mem(p, 1, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 0, 1, 0), 0);
	UT_EQ(t_post_recv_mem(&p->b, 9, 1024, 1024), 0);
	UT_EQ(t_post_send_mem(&p->a, 2, IBV_WR_SEND, 1024, 768, IBV_SEND_SIGNALED), 0);
	UT_EQ(t_count(), 4);          /* atomic 0, SEND 1..3 */
	t_deliver(0);                 /* the atomic executes */
	UT_EQ(*counter, 51);
	t_deliver(0);                 /* SEND FIRST */
	t_drop(0);                    /* SEND MIDDLE psn 2 lost */
	t_deliver(0);                 /* SEND LAST: NAK psn 2 */
	UT_EQ(t_count(), 2);
	UT_EQ(t_op(0), UR_OP_RC_ATOMIC_ACKNOWLEDGE);
	t_drop(0);                    /* the atomic's response lost */
	UT_EQ(t_syn(0), UR_NAK_PSN_SEQ_ERR);
	UT_EQ(t_psn(0), 2);
	t_deliver(0);
	/* Whatever A resends goes out at its original PSN. */
	for (unsigned i = 0; i < t_count(); i++) {
		uint8_t op = t_op(i);
		uint32_t psn = t_psn(i);

		if (op == UR_OP_RC_FETCH_ADD)
			UT_EQ(psn, 0);
		else if (op == UR_OP_RC_SEND_FIRST)
			UT_EQ(psn, 1);
		else if (op == UR_OP_RC_SEND_MIDDLE)
			UT_EQ(psn, 2);
		else if (op == UR_OP_RC_SEND_LAST)
			UT_EQ(psn, 3);
	}
	t_run();
	t_advance(T_TIMEOUT_NS);
	t_run();
	t_expect_ok(p->a.scq, &wc, 1, 2);
	UT_EQ(*counter, 51);          /* added once */
	UT_EQ(t_word(p->a.mem.buf), 50);
	t_expect_wc(p->b.rcq, &wc, 9, IBV_WC_SUCCESS);
	UT_MEMEQ(p->b.mem.buf + 1024, p->a.mem.buf + 1024, 768);
}

/* Every ACK of a long message is lost, B has it all.  After the timeout A
 * goes back and resends, with a smaller window, only the start; B answers
 * each duplicate with an ACK of the newest PSN it has, which is past
 * everything A has resent so far.  That ACK acknowledges what A sent before
 * going back, so it must be taken: the message completes. */
T_PAIR_TEST(test_loss_ack_beyond_resend, 40 * 256, 40 * 256, IBV_ACCESS_LOCAL_WRITE,
	    .mtu = IBV_MTU_256, .retry_cnt = 3, .a_psn = 0xfffff0)
{
	struct ibv_wc wc;

	t_send_mem(p, 1, 2, 0, 40 * 256);
	UT_EQ(t_count(), 40);
	for (int i = 0; i < 40; i++)
		t_deliver(0);
	t_expect_wc(p->b.rcq, &wc, 1, IBV_WC_SUCCESS);
	while (t_count())
		t_drop(0);            /* the ACKs */
	t_advance(T_TIMEOUT_NS);
	UT_CHECK(t_count() < 40);     /* the window shrank: only a part again */
	t_run();
	t_expect_wc(p->a.scq, &wc, 2, IBV_WC_SUCCESS);
	UT_EQ(p->a.qp->state, IBV_QPS_RTS);
	UT_EQ(p->a.qp->comp.psn, psn_add(0xfffff0, 40));
	UT_CHECK(t_cq_empty(p->b.rcq));
}

/* A path that loses the same tail of every burst (a receiving socket that
 * holds ten datagrams, its reader busy): of each flight A sends, only the
 * first ten packets reach B.  A 64-packet SEND still completes: a resend
 * after a timeout asks for an ACK on its first packet, so B says how far
 * it got and A goes on from there.  (Seen between namespaces: with no
 * AckReq among the first ten, B acknowledged nothing, every resend lost
 * the same tail, and A ended in RETRY_EXC_ERR.) */
T_PAIR_TEST(test_loss_same_tail_every_flight, 64 * 256, 64 * 256, IBV_ACCESS_LOCAL_WRITE,
	    .mtu = IBV_MTU_256, .retry_cnt = 7)
{
	struct ibv_wc wc;
	unsigned rounds = 0;

	t_send_mem(p, 1, 2, 0, 64 * 256);
	while (rounds++ < 100) {
		unsigned to_b = 0, steps = 0;

		/* One flight: B takes the first ten, A every answer. */
		while (t_count() && steps++ < 10000) {
			if (t_dqpn(0) != ur_qp_num(p->b.qp))
				t_deliver(0);
			else if (to_b++ < 10)
				t_deliver(0);
			else
				t_drop(0);
		}
		if (!p->a.qp->comp.retrans_deadline)
			break;        /* nothing outstanding */
		t_advance(p->a.qp->comp.retrans_deadline - t_clock_ns);
	}
	UT_EQ(p->a.qp->state, IBV_QPS_RTS);
	t_expect_wc(p->a.scq, &wc, 2, IBV_WC_SUCCESS);
	t_expect_wc(p->b.rcq, &wc, 1, IBV_WC_SUCCESS);
	UT_MEMEQ(p->b.mem.buf, p->a.mem.buf, 64 * 256);
}

/* B keeps what each atomic returned so that a duplicate is answered
 * without executing again.  A READ asked again twice (its responses were
 * lost twice) must not push that saved result out: the atomic's duplicate
 * then found nothing, was never answered, and the WQE ended in
 * RETRY_EXC_ERR. */
T_PAIR_TEST(test_loss_atomic_saved_after_read_dups, 4096, 4096, T_ALL_ACCESS,
	    .mtu = IBV_MTU_256, .rd_atomic = 2)
{
	struct ibv_wc wc;
	uint64_t *counter;

	counter = t_target(p, 2048, 100);
	UT_EQ(t_post_rdma_mem(p, 1, IBV_WR_RDMA_READ, 0, 4 * 256, 0), 0);
	UT_EQ(t_post_atomic_mem(p, 2, IBV_WR_ATOMIC_FETCH_AND_ADD, 2048, 2048, 1, 0), 0);
	t_deliver(0);                 /* READ psn 0..3 */
	t_deliver(0);                 /* atomic psn 4: executes */
	UT_EQ(*counter, 101);
	UT_EQ(t_count(), 5);          /* responses 0..3, atomic ACK 4 */
	t_drop(4);                    /* atomic ACK lost */
	t_deliver(0);                 /* response 0 */
	t_drop(0);                    /* response 1 lost */
	t_deliver(0);                 /* response 2: a gap, A asks again from 1 */
	t_drop(0);                    /* response 3 (A is retrying already) */
	/* A sent READ again from psn 1, and the atomic behind it. */
	UT_EQ(t_count(), 2);
	UT_EQ(t_op(0), UR_OP_RC_RDMA_READ_REQUEST);
	UT_EQ(t_op(1), UR_OP_RC_FETCH_ADD);
	t_deliver(0);                 /* duplicate READ: B answers 1..3 */
	/* Now queued: the atomic (dup), responses 1..3. */
	t_drop(1);                    /* response 1 lost again */
	t_drop(1);
	t_drop(1);
	t_advance(T_TIMEOUT_NS);      /* A goes back to 1 again */
	/* Queued: the atomic resent the first time, then READ from 1 and the
	 * atomic again.  The second duplicate READ reaches B first. */
	UT_EQ(t_count(), 3);
	UT_EQ(t_op(1), UR_OP_RC_RDMA_READ_REQUEST);
	t_deliver(1);
	t_run();
	t_advance(T_TIMEOUT_NS);
	t_run();
	t_expect_ok(p->a.scq, &wc, 1, 2);
	UT_EQ(*counter, 101);
	UT_EQ(t_word(p->a.mem.buf + 2048), 100);
	UT_MEMEQ(p->a.mem.buf, p->b.mem.buf, 4 * 256);
}

/* WRITE (ACK lost), atomic (ACK lost), READ (response arrives): the READ
 * response completes the WRITE before it but not the atomic, whose result
 * A still needs.  When the timer goes back, the atomic goes out again at
 * its own PSN (B answers it from the saved result), not at the WRITE's. */
T_PAIR_TEST(test_loss_read_response_past_atomic, 4096, 4096, T_ALL_ACCESS, 0)
{
	struct ibv_wc wc;
	uint64_t *counter;

	counter = t_target(p, 2048, 5);
	UT_EQ(t_post_rdma_mem(p, 1, IBV_WR_RDMA_WRITE, 512, 16, 512), 0);
	UT_EQ(t_post_atomic_mem(p, 2, IBV_WR_ATOMIC_FETCH_AND_ADD, 2048, 2048, 1, 0), 0);
	UT_EQ(t_post_rdma_mem(p, 3, IBV_WR_RDMA_READ, 0, 64, 0), 0);
	t_deliver(0);
	t_deliver(0);
	t_deliver(0);
	UT_EQ(*counter, 6);
	UT_EQ(t_count(), 3);          /* ACK 0, atomic ACK 1, READ response 2 */
	t_drop(0);
	t_drop(0);
	t_deliver(0);
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_SUCCESS);   /* implied by the response */
	t_advance(T_TIMEOUT_NS);
	UT_CHECK(t_count() >= 1);
	UT_EQ(t_op(0), UR_OP_RC_FETCH_ADD);
	UT_EQ(t_psn(0), 1);
	t_run();
	t_expect_ok(p->a.scq, &wc, 2, 2);
	UT_EQ(*counter, 6);
	UT_EQ(t_word(p->a.mem.buf + 2048), 5);
}
