/* Selective retransmission between peers that both mark their packets
 * (rel/held.h): the responder holds what follows a gap, the requester
 * resends only what the NAK names, and everything executes once, in
 * order. */

static unsigned t_count_psn(uint32_t psn)
{
	unsigned n = 0;

	for (unsigned i = 0; i < t_count(); i++)
		n += t_psn(i) == psn;
	return n;
}

/* As after an earlier loss: the requester knows its responder holds what
 * follows a gap, and has a round trip of tens of microseconds measured. */
static void t_learnt(struct t_side *a)
{
	a->qp->comp.peer_holds = UR_PEER_HOLDS_YES;
	a->qp->comp.srtt_ns = 30000;
	a->qp->comp.rttvar_ns = 10000;
}

/* A middle packet of a SEND is lost: one NAK, one packet resent (asking
 * for an ACK), the four held packets executed after it, one ACK of the
 * newest PSN, one completion each side, the bytes right. */
T_PAIR_TEST(test_sel_middle_one_resend, 6 * 256, 6 * 256, IBV_ACCESS_LOCAL_WRITE,
	    .mtu = IBV_MTU_256, .a_psn = 0xfffffd, .b_psn = 0x10)
{
	struct ibv_wc wc;
	uint32_t psn0 = p->o.a_psn;

	t_send_mem(p, 1, 2, 0, 6 * 256);
	UT_EQ(t_count(), 6);
	UT_CHECK(bth_selective(t_pkt(0)->buf));     /* RC packets carry the mark */
	t_deliver(0);                 /* FIRST */
	t_drop(0);                    /* MIDDLE at psn0 + 1, lost */
	for (int i = 0; i < 4; i++)
		t_deliver(0);         /* held */
	UT_EQ(p->b.qp->cnt[UR_CNT_HELD_OUT_OF_SEQ], 4);
	UT_EQ(t_count(), 1);          /* one NAK */
	UT_EQ(t_syn(0), UR_NAK_PSN_SEQ_ERR);
	UT_EQ(t_psn(0), psn_add(psn0, 1));
	UT_CHECK(!bth_selective(t_pkt(0)->buf));    /* answers are not marked */
	t_deliver(0);
	/* Only the lost packet comes again, and it asks for an ACK. */
	UT_EQ(t_count(), 1);
	UT_EQ(t_psn(0), psn_add(psn0, 1));
	UT_EQ(t_op(0), UR_OP_RC_SEND_MIDDLE);
	UT_CHECK(t_ackreq(0));
	UT_EQ(p->a.qp->cnt[UR_CNT_SELECTIVE_RESENDS], 1);
	UT_EQ(p->a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR], 0);
	t_deliver(0);
	/* The held packets ran after it: the message is whole. */
	t_expect_recv(p, &wc, 1, 6 * 256, 0, 0);
	UT_EQ(t_count(), 1);          /* one ACK, of the newest PSN */
	UT_EQ(t_op(0), UR_OP_RC_ACKNOWLEDGE);
	UT_EQ(t_syn(0) & UR_AETH_TYPE_MASK, UR_AETH_ACK);
	UT_EQ(t_psn(0), psn_add(psn0, 5));
	t_run();
	t_expect_wc(p->a.scq, &wc, 2, IBV_WC_SUCCESS);
	UT_EQ(p->a.qp->comp.peer_holds, UR_PEER_HOLDS_YES);   /* learnt from that ACK */
	UT_CHECK(t_cq_empty(p->b.rcq));
	UT_CHECK(p->b.qp->held == NULL || !ur_held_any(p->b.qp->held));
}

/* Two gaps in one window of WRITEs: after the first is filled, the
 * responder runs what it holds up to the second and NAKs that one; each
 * lost packet goes exactly twice in all, every other exactly once, and
 * the target is right. */
T_PAIR_TEST(test_sel_two_gaps, 20 * 256, 20 * 256, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	    .mtu = IBV_MTU_256)
{
	struct ibv_wc wc;
	uint32_t psn0, sent[20] = { 0 };

	UT_EQ(t_post_rdma_mem(p, 7, IBV_WR_RDMA_WRITE, 0, 20 * 256, 0), 0);
	UT_EQ(t_count(), 20);
	psn0 = t_psn(0);
	for (unsigned i = 0; i < 20; i++)
		sent[i]++;
	t_drop(4);                    /* psn0 + 4 */
	t_drop(11);                   /* psn0 + 12 */
	while (t_count()) {
		if (t_dqpn(0) == ur_qp_num(p->b.qp)) {
			int32_t d = psn_diff(t_psn(0), psn0);

			if (d >= 0 && d < 20)
				sent[d]++;
		}
		t_deliver(0);
	}
	/* Counted twice above for the first transmission's delivered ones
	 * (once at posting, once here): each lost one was posted once and
	 * delivered once. */
	for (unsigned i = 0; i < 20; i++)
		UT_EQ(sent[i], 2u);
	UT_EQ(p->a.qp->cnt[UR_CNT_SELECTIVE_RESENDS], 2);
	UT_EQ(p->a.qp->cnt[UR_CNT_RCVD_SEQ_ERR], 2);
	UT_EQ(p->a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR], 0);
	t_expect_wc(p->a.scq, &wc, 7, IBV_WC_SUCCESS);
	UT_MEMEQ(p->b.mem.buf, p->a.mem.buf, 20 * 256);
}

/* Five gaps in one flight of WRITEs, with gap reports: the first gap is
 * NAKed, each later one reported as the packet after it arrives, and all
 * five go alone within one round trip; the NAKs that reach the reported
 * ones (GAP_AGAIN, naming the resend before, which left first) ask for
 * nothing more.  Each lost packet goes exactly twice, every other once,
 * and nothing goes back. */
T_PAIR_TEST(test_sel_gap_reports,
	    40 * 256, 40 * 256, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	    .mtu = IBV_MTU_256)
{
	struct ibv_wc wc;
	uint32_t psn0, sent[40] = { 0 };
	unsigned steps = 0, reports = 0;

	UT_EQ(t_post_rdma_mem(p, 9, IBV_WR_RDMA_WRITE, 0, 40 * 256, 0), 0);
	UT_EQ(t_count(), 40);
	psn0 = t_psn(0);
	for (unsigned i = 0; i < 40; i++)
		sent[i]++;
	for (unsigned gap = 0; gap < 5; gap++)
		t_drop(4 + 7 * gap);  /* psn0 + 4, 12, 20, 28, 36 */
	while (t_count() && steps++ < 1000) {
		if (t_dqpn(0) == ur_qp_num(p->b.qp)) {
			int32_t d = psn_diff(t_psn(0), psn0);

			if (d >= 0 && d < 40)
				sent[d]++;
		} else if (t_op(0) == UR_OP_RC_ACKNOWLEDGE && t_syn(0) == UR_AETH_GAP) {
			/* Names exactly the lost packet after the first gap. */
			UT_EQ(t_psn(0), psn_add(psn0, 12 + 8 * reports));
			UT_EQ(aeth_msn(t_pkt(0)->buf + UR_BTH_BYTES), 1u);
			reports++;
		}
		t_deliver(0);
	}
	t_expect_wc(p->a.scq, &wc, 9, IBV_WC_SUCCESS);
	UT_MEMEQ(p->b.mem.buf, p->a.mem.buf, 40 * 256);
	for (unsigned i = 0; i < 40; i++)
		UT_EQ(sent[i], 2u);   /* posted once, delivered once (the lost: resent) */
	UT_EQ(reports, 4u);
	UT_EQ(p->b.qp->cnt[UR_CNT_GAP_REPORTS], 4);
	UT_EQ(p->a.qp->cnt[UR_CNT_GAP_RESENDS], 4);
	UT_EQ(p->a.qp->cnt[UR_CNT_SELECTIVE_DENSE], 0);
	UT_EQ(p->a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR], 0);
	UT_EQ(p->b.qp->cnt[UR_CNT_DUPLICATE_REQUEST], 0);
	for (unsigned i = 0; i < 128; i++)
		UT_EQ(p->a.qp->comp.rs_stamp[i], 0);   /* forgotten once acknowledged */
	UT_CHECK(!p->a.qp->comp.rs_any);               /* and the ACK path stops clearing */
}

/* A resend for a gap report is lost.  The NAK that reaches it names the
 * resend that filled the gap before (GAP_AGAIN): that one left first, so
 * the lost one may still come, and nothing goes.  The next resend to
 * arrive names itself: it left after the lost one, which goes alone
 * again at once, with no timer.  Each byte lands once. */
T_PAIR_TEST(test_sel_gap_resend_lost,
	    40 * 256, 40 * 256, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	    .mtu = IBV_MTU_256)
{
	struct ibv_wc wc;
	uint32_t psn0, sent[40] = { 0 };
	unsigned steps = 0, again = 0;
	bool dropped_resend = false;

	UT_EQ(t_post_rdma_mem(p, 9, IBV_WR_RDMA_WRITE, 0, 40 * 256, 0), 0);
	UT_EQ(t_count(), 40);
	psn0 = t_psn(0);
	t_drop(4);                    /* psn0 + 4: NAKed */
	t_drop(11);                   /* psn0 + 12: reported */
	t_drop(18);                   /* psn0 + 20: reported */
	while (t_count() && steps++ < 1000) {
		if (t_dqpn(0) == ur_qp_num(p->b.qp)) {
			int32_t d = psn_diff(t_psn(0), psn0);

			if (d >= 0 && d < 40)
				sent[d]++;
			if (d == 12 && sent[12] == 1 && !dropped_resend) {
				dropped_resend = true;   /* the first resend of 12 */
				t_drop(0);
				continue;
			}
		} else if (t_op(0) == UR_OP_RC_ACKNOWLEDGE && t_syn(0) == UR_AETH_GAP_AGAIN &&
			   t_psn(0) == psn_add(psn0, 12)) {
			uint32_t x = aeth_msn(t_pkt(0)->buf + UR_BTH_BYTES);

			/* First named: 4's resend, which left before 12's;
			 * then 20's, which left after. */
			UT_EQ(x, psn_add(psn0, again ? 20 : 4));
			again++;
		}
		t_deliver(0);
	}
	t_expect_wc(p->a.scq, &wc, 9, IBV_WC_SUCCESS);
	UT_MEMEQ(p->b.mem.buf, p->a.mem.buf, 40 * 256);
	UT_CHECK(dropped_resend);
	UT_EQ(again, 2u);
	UT_EQ(sent[12], 2u);          /* resent twice (the first lost), not three times */
	UT_EQ(sent[4], 1u);
	UT_EQ(sent[20], 1u);
	UT_EQ(p->a.qp->cnt[UR_CNT_GAP_RESENDS], 3);         /* 12, 20, then 12 again */
	UT_EQ(p->a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR], 0);
	UT_EQ(p->b.qp->cnt[UR_CNT_DUPLICATE_REQUEST], 0);
}

/* Delivers the packet at the head, or drops it if it is a gap report:
 * the NAKs alone tell of the gaps, as with a requester that does not
 * know reports, or when every report is lost. */
static void t_deliver_no_reports(void)
{
	if (t_op(0) == UR_OP_RC_ACKNOWLEDGE && t_syn(0) == UR_AETH_GAP)
		t_drop(0);
	else
		t_deliver(0);
}

/* Without gap reports (each lost), five gaps in one flight of WRITEs: the
 * first three are resent alone, one per round trip; the fourth NAK means
 * dense loss and the requester goes back for the rest of the flight (the
 * responder, holding it, takes those packets as duplicates); the fifth
 * gap's NAK comes once the fourth fills, when its resend has left with
 * the rest: no second going back.  The next flight goes back at its first
 * gap; having had only that one, the flight after it is selective again.
 * Each packet lands once: the target is right. */
T_PAIR_TEST(test_sel_dense_goes_back,
	    40 * 256, 40 * 256, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	    .mtu = IBV_MTU_256)
{
	struct ibv_wc wc;
	unsigned steps = 0;

	UT_EQ(t_post_rdma_mem(p, 9, IBV_WR_RDMA_WRITE, 0, 40 * 256, 0), 0);
	UT_EQ(t_count(), 40);
	for (unsigned gap = 0; gap < 5; gap++)
		t_drop(4 + 7 * gap);  /* psn0 + 4, 12, 20, 28, 36 */
	while (t_count() && steps++ < 1000)
		t_deliver_no_reports();
	t_expect_wc(p->a.scq, &wc, 9, IBV_WC_SUCCESS);
	UT_EQ(p->a.qp->cnt[UR_CNT_SELECTIVE_RESENDS], 3);
	UT_EQ(p->a.qp->cnt[UR_CNT_SELECTIVE_DENSE], 1);
	UT_EQ(p->a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR], 1);
	UT_CHECK(p->b.qp->cnt[UR_CNT_DUPLICATE_REQUEST] > 0);   /* the held tail, again */
	UT_MEMEQ(p->b.mem.buf, p->a.mem.buf, 40 * 256);
	for (int flight = 0; flight < 2; flight++) {
		memset(p->a.mem.buf, 0x41 + flight, 40 * 256);
		UT_EQ(t_post_rdma_mem(p, 10 + flight, IBV_WR_RDMA_WRITE, 0, 40 * 256, 0), 0);
		UT_CHECK(t_count() > 11);      /* the window, halved by going back */
		t_drop(10);
		steps = 0;
		while (t_count() && steps++ < 1000)
			t_deliver_no_reports();
		t_expect_wc(p->a.scq, &wc, 10 + flight, IBV_WC_SUCCESS);
		UT_MEMEQ(p->b.mem.buf, p->a.mem.buf, 40 * 256);
	}
	UT_EQ(p->a.qp->cnt[UR_CNT_SELECTIVE_DENSE], 2);      /* the second flight: at once */
	UT_EQ(p->a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR], 2);
	UT_EQ(p->a.qp->cnt[UR_CNT_SELECTIVE_RESENDS], 4);    /* the third: alone again */
	/* All acknowledged: the rules' marks moved with the ACKs (left
	 * behind, they would be ahead again once the PSNs wrap). */
	UT_CHECK(!p->a.qp->comp.sel_gone_back);
	UT_EQ(p->a.qp->comp.sel_flight_end, p->a.qp->comp.psn);
}

/* The resend is lost too: at the timer from the round trip the packet
 * goes alone once more (the rest is held); lost again, at the QP's
 * timeout the requester goes back as before.  The held packets are not
 * executed a second time (the atomic after the gap adds once). */
T_PAIR_TEST(test_sel_resend_lost, 8 * 256, 9 * 256, T_ALL_ACCESS,
	    .mtu = IBV_MTU_256, .access = T_ALL_ACCESS)
{
	struct ibv_wc wc;
	uint64_t *word;
	uint32_t lost;

	t_learnt(&p->a);
	word = t_target(p, 8 * 256, 5);
	UT_EQ(t_post_rdma_mem(p, 1, IBV_WR_RDMA_WRITE, 0, 8 * 256, 0), 0);
	UT_EQ(t_post_atomic_mem(p, 2, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 8 * 256, 3, 0), 0);
	UT_EQ(t_count(), 9);
	lost = t_psn(2);
	t_drop(2);
	for (int i = 0; i < 8; i++)
		t_deliver(0);         /* two before, six held (the atomic among them) */
	UT_EQ(p->b.qp->cnt[UR_CNT_HELD_OUT_OF_SEQ], 6);
	UT_EQ(*word, 5u);             /* not executed past the gap */
	UT_EQ(t_count(), 1);
	UT_EQ(t_syn(0), UR_NAK_PSN_SEQ_ERR);
	t_deliver(0);                 /* the NAK */
	UT_EQ(t_count(), 1);
	UT_EQ(t_psn(0), lost);
	t_drop(0);                    /* the resend, lost */
	UT_EQ(t_count(), 0);
	UT_EQ(p->a.qp->cnt[UR_CNT_SELECTIVE_RESENDS], 1);
	/* A round trip of tens of microseconds: the lone resend is given up
	 * on after the lower floor, not the millisecond a window waits. */
	UT_CHECK(p->a.qp->comp.retrans_deadline - t_clock_ns <= UR_MIN_RTO_ALONE_NS);
	t_advance(p->a.qp->comp.retrans_deadline - t_clock_ns);   /* the RTO */
	UT_EQ(t_count(), 1);          /* alone again, not the window */
	UT_EQ(t_psn(0), lost);
	UT_CHECK(t_ackreq(0));
	UT_EQ(p->a.qp->cnt[UR_CNT_SELECTIVE_RESENDS], 2);
	UT_EQ(p->a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR], 0);
	t_drop(0);                    /* lost again */
	t_advance(T_TIMEOUT_NS);      /* the QP's timeout: go back */
	UT_CHECK(p->a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR] >= 1);
	UT_CHECK(t_count() > 1);
	t_run();
	t_expect_ok(p->a.scq, &wc, 1, 2);
	UT_EQ(*word, 8u);             /* added once */
	UT_EQ(*(uint64_t *)p->a.mem.buf, 5u);
	UT_MEMEQ(p->b.mem.buf + 256, p->a.mem.buf + 256, 7 * 256);
}

/* The NAK is lost: nothing else tells the requester of the gap, and its
 * window waits.  At the timer from the round trip (the lower floor) it
 * probes with the oldest PSN alone, which had arrived; the answer names
 * the gap, whose PSN goes alone at once and fills it; the responder runs
 * what it held and acknowledges it all.  No going back, one timer, the
 * target right. */
T_PAIR_TEST(test_sel_nak_lost_probe,
	    8 * 256, 8 * 256, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, .mtu = IBV_MTU_256)
{
	struct ibv_wc wc;
	uint32_t lost;

	t_learnt(&p->a);
	UT_EQ(t_post_rdma_mem(p, 1, IBV_WR_RDMA_WRITE, 0, 8 * 256, 0), 0);
	UT_EQ(t_count(), 8);
	lost = t_psn(2);
	t_drop(2);
	for (int i = 0; i < 7; i++)
		t_deliver(0);         /* two before the gap, five held */
	UT_EQ(p->b.qp->cnt[UR_CNT_HELD_OUT_OF_SEQ], 5);
	UT_EQ(t_count(), 1);
	UT_EQ(t_syn(0), UR_NAK_PSN_SEQ_ERR);
	t_drop(0);                    /* the NAK, lost */
	UT_EQ(t_count(), 0);
	UT_CHECK(p->a.qp->comp.retrans_deadline - t_clock_ns <= UR_MIN_RTO_ALONE_NS);
	t_advance(p->a.qp->comp.retrans_deadline - t_clock_ns);
	UT_EQ(t_count(), 1);          /* the probe: the oldest PSN alone, arrived already */
	UT_EQ(t_psn(0), psn_add(lost, -2 & UR_PSN_MASK));
	UT_CHECK(t_ackreq(0));
	UT_EQ(p->a.qp->cnt[UR_CNT_TIMER_RESENDS], 1);
	UT_EQ(p->a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR], 0);
	t_deliver(0);                 /* a duplicate, answered with where the responder stands */
	UT_EQ(t_count(), 1);
	UT_EQ(t_op(0), UR_OP_RC_ACKNOWLEDGE);
	UT_EQ(t_psn(0), psn_add(lost, -1 & UR_PSN_MASK));
	t_deliver(0);                 /* which names the gap: its PSN alone, at once */
	UT_EQ(t_count(), 1);
	UT_EQ(t_psn(0), lost);
	UT_CHECK(t_ackreq(0));
	t_deliver(0);                 /* fills the gap: the held five run */
	UT_EQ(t_count(), 1);
	UT_EQ(t_op(0), UR_OP_RC_ACKNOWLEDGE);
	UT_EQ(t_syn(0) & UR_AETH_TYPE_MASK, UR_AETH_ACK);
	UT_EQ(t_psn(0), psn_add(lost, 5));
	t_deliver(0);
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_SUCCESS);
	UT_EQ(t_count(), 0);
	UT_EQ(p->a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR], 0);
	UT_EQ(p->a.qp->cnt[UR_CNT_TIMER_RESENDS], 1);
	UT_EQ(p->b.qp->cnt[UR_CNT_DUPLICATE_REQUEST], 1);   /* the probe */
	UT_EQ(p->a.qp->comp.retrans_deadline, 0);
	UT_MEMEQ(p->b.mem.buf, p->a.mem.buf, 8 * 256);
}

/* A probe answered while newer packets are on their way: the answer
 * acknowledges everything the requester had sent when the timer fired,
 * and what is outstanding was sent since, so nothing goes alone again
 * (before, every such ACK sent the oldest PSN once more until a NAK came). */
T_PAIR_TEST(test_sel_probe_then_new_sends,
	    8 * 256, 8 * 256, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, .mtu = IBV_MTU_256)
{
	struct ibv_wc wc;
	uint32_t psn0;

	t_learnt(&p->a);
	UT_EQ(t_post_rdma_mem(p, 1, IBV_WR_RDMA_WRITE, 0, 4 * 256, 0), 0);
	UT_EQ(t_count(), 4);
	psn0 = t_psn(0);
	for (int i = 0; i < 4; i++)
		t_deliver(0);
	UT_EQ(t_count(), 1);          /* the ACK of all four, lost */
	t_drop(0);
	t_advance(p->a.qp->comp.retrans_deadline - t_clock_ns);
	UT_EQ(t_count(), 1);          /* the probe */
	UT_EQ(t_psn(0), psn0);
	t_deliver(0);                 /* a duplicate: answered with an ACK of all four */
	UT_EQ(t_count(), 1);
	UT_EQ(t_psn(0), psn_add(psn0, 3));
	UT_EQ(t_post_rdma_mem(p, 2, IBV_WR_RDMA_WRITE, 4 * 256, 4 * 256, 4 * 256), 0);
	UT_EQ(t_count(), 5);          /* the answer, then the new WRITE */
	t_deliver(0);                 /* the answer: the new WRITE's packets are on their way */
	UT_EQ(t_count(), 4);
	UT_EQ(t_psn(0), psn_add(psn0, 4));
	UT_EQ(p->a.qp->cnt[UR_CNT_SELECTIVE_RESENDS], 1);   /* the probe alone */
	t_run();
	t_expect_ok(p->a.scq, &wc, 1, 2);
	UT_MEMEQ(p->b.mem.buf, p->a.mem.buf, 8 * 256);
	UT_EQ(p->b.qp->cnt[UR_CNT_DUPLICATE_REQUEST], 1);   /* the probe */
}

/* The window's tail is lost (nothing after it tells the responder of a
 * gap).  The probe's answer acknowledges exactly what the probe sent, with
 * more outstanding: the responder holds nothing past it, so the requester
 * goes back for the rest at once, an early retry that does not count
 * against retry_cnt. */
T_PAIR_TEST(test_sel_tail_lost_probe,
	    6 * 256, 6 * 256, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, .mtu = IBV_MTU_256)
{
	struct ibv_wc wc;
	uint32_t psn0;
	uint8_t retry_left;

	t_learnt(&p->a);
	UT_EQ(t_post_rdma_mem(p, 1, IBV_WR_RDMA_WRITE, 0, 6 * 256, 0), 0);
	UT_EQ(t_count(), 6);
	psn0 = t_psn(0);
	retry_left = p->a.qp->comp.retry_left;
	t_deliver(0);
	t_deliver(0);                 /* two arrive, unacknowledged (no ACK asked) */
	for (int i = 0; i < 4; i++)
		t_drop(0);            /* the tail, lost */
	t_run();
	UT_EQ(t_count(), 0);
	t_advance(p->a.qp->comp.retrans_deadline - t_clock_ns);
	UT_EQ(t_count(), 1);          /* the probe: the oldest PSN alone, a duplicate */
	UT_EQ(t_psn(0), psn0);
	UT_EQ(p->a.qp->cnt[UR_CNT_TIMER_RESENDS], 1);
	t_deliver(0);
	UT_EQ(t_count(), 1);          /* answered: an ACK of the two that arrived */
	UT_EQ(t_op(0), UR_OP_RC_ACKNOWLEDGE);
	UT_EQ(t_psn(0), psn_add(psn0, 1));
	t_deliver(0);
	UT_EQ(t_count(), 1);          /* so the next PSN, the responder's gap, goes alone at once */
	UT_EQ(t_psn(0), psn_add(psn0, 2));
	t_deliver(0);
	UT_EQ(t_count(), 1);          /* answered by an ACK of exactly it */
	UT_EQ(t_op(0), UR_OP_RC_ACKNOWLEDGE);
	UT_EQ(t_psn(0), psn_add(psn0, 2));
	t_deliver(0);
	UT_EQ(t_count(), 3);          /* nothing held after it: the rest goes back */
	UT_EQ(t_psn(0), psn_add(psn0, 3));
	t_run();
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_SUCCESS);
	UT_MEMEQ(p->b.mem.buf, p->a.mem.buf, 6 * 256);
	UT_EQ(p->a.qp->cnt[UR_CNT_TIMER_RESENDS], 1);       /* one timer, not one per packet */
	UT_EQ(p->a.qp->comp.retry_left, retry_left);         /* nothing counted */
	UT_EQ(p->a.qp->cnt[UR_CNT_RETRY_EXCEEDED_ERR], 0);
}

/* A requester that does not mark its packets (rxe) gets go-back-N from
 * uroce's responder: nothing held, every packet past the gap dropped and
 * sent again. */
T_PAIR_TEST(test_sel_unmarked_requester, 6 * 256, 6 * 256, IBV_ACCESS_LOCAL_WRITE,
	    .mtu = IBV_MTU_256, .go_back = true)
{
	struct ibv_wc wc;
	uint32_t psn0;

	t_send_mem(p, 1, 2, 0, 6 * 256);
	UT_CHECK(!bth_selective(t_pkt(0)->buf));
	psn0 = t_psn(0);
	t_deliver(0);                 /* FIRST */
	t_drop(0);
	for (int i = 0; i < 4; i++)
		t_deliver(0);
	UT_EQ(p->b.qp->cnt[UR_CNT_HELD_OUT_OF_SEQ], 0);
	t_deliver(0);                 /* the NAK */
	UT_EQ(t_count_psn(psn_add(psn0, 5)), 1u);   /* all of it again */
	UT_EQ(t_count(), 5);
	t_run();
	t_expect_wc(p->b.rcq, &wc, 1, IBV_WC_SUCCESS);
	t_expect_wc(p->a.scq, &wc, 2, IBV_WC_SUCCESS);
	UT_MEMEQ(p->b.mem.buf, p->a.mem.buf, 6 * 256);
}

/* A responder that goes back (rxe; simulated by requests arriving without
 * the mark, so B holds nothing) answers the packet resent alone with an
 * ACK of just that PSN: the requester goes back for the rest at once, and
 * after three such answers goes back at the NAK, resending nothing alone. */
T_PAIR_TEST(test_sel_learns_go_back,
	    8 * 256, 8 * 256, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, .mtu = IBV_MTU_256)
{
	struct ibv_wc wc;

	for (int round = 0; round < 4; round++) {
		unsigned steps = 0;

		UT_EQ(t_post_rdma_mem(p, 10 + round, IBV_WR_RDMA_WRITE, 0, 8 * 256, 0), 0);
		UT_EQ(t_count(), 8);
		t_drop(3);
		while (t_count() && steps++ < 1000) {
			if (t_dqpn(0) == ur_qp_num(p->b.qp))
				t_pkt(0)->buf[8] &= (uint8_t)~UR_BTH_SELECTIVE;
			t_deliver(0);
		}
		t_expect_wc(p->a.scq, &wc, 10 + round, IBV_WC_SUCCESS);
		UT_EQ(p->a.qp->comp.peer_holds, round < 2 ? UR_PEER_HOLDS_UNKNOWN : UR_PEER_HOLDS_NO);
	}
	UT_EQ(p->b.qp->cnt[UR_CNT_HELD_OUT_OF_SEQ], 0);
	UT_EQ(p->a.qp->cnt[UR_CNT_SELECTIVE_RESENDS], 3);    /* the first three losses */
	UT_EQ(p->a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR], 4);  /* one go-back each */
	UT_MEMEQ(p->b.mem.buf, p->a.mem.buf, 8 * 256);
}
