/* XRC domains shared between processes (rel/xrc.c): the target QP hands a
 * request for another process's SRQ over (DELIVER), parks, and answers the
 * PSN once the owner REPLYs.  One process plays both: the SRQ sits in a
 * second domain object with the target's identity (the same file), and the
 * registry says its number belongs to process t_xrc_other_pid. */

#define T_OTHER_PID 4242

struct t_xs {
	struct t_xrc x;
	struct ur_xrcd *owner;       /* the "other process's" view of the domain */
	struct ur_srq *srq;          /* its SRQ, completions on x.bcq[0] */
};

static int t_xs_open(struct t_xs *s)
{
	struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_OFLAGS, .oflags = O_CREAT };

	memset(s, 0, sizeof(*s));
	if (t_xrc_open(&s->x))
		return -1;
	s->owner = ut_xrcd(s->x.bctx, &xa);
	if (!s->owner)
		return -1;
	/* Both domain objects stand for the file (dev 1, inode 0xabc). */
	s->x.xrcd->has_inode = s->owner->has_inode = true;
	s->x.xrcd->dev = s->owner->dev = 1;
	s->x.xrcd->ino = s->owner->ino = 0xabc;
	s->srq = t_xrc_srq(s->x.bctx, s->x.bpd, s->owner, s->x.bcq[0], 8);
	if (!s->srq)
		return -1;
	t_xrc_other_pid = T_OTHER_PID;
	return 0;
}

static void t_xs_close(struct t_xs *s)
{
	t_xrc_other_pid = 0;
	t_destroy(ur_srq_destroy, s->srq);
	if (s->owner) {
		s->owner->has_inode = false;
		UT_EQ(ur_xrcd_close(s->owner), 0);
	}
	if (s->x.xrcd)
		s->x.xrcd->has_inode = false;
	t_xrc_close(&s->x);
}

/* T_XS_TEST's opening: t_xs_open, and t_xs_close at once if it fails. */
static int t_xs_fixture_open(struct t_xs *s)
{
	int ret = t_xs_open(s);

	if (ret)
		t_xs_close(s);
	return ret;
}

/* A test on t_xs_open's domain shared with the "other process": s. */
#define T_XS_TEST(name) T_FIXTURE_TEST(name, struct t_xs, s, t_xs_fixture_open, t_xs_close)

static int t_xs_recv(struct t_xs *s, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)s->x.rb.buf + off, len, s->x.rb.mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ur_srq_post_recv(s->srq, &wr, &bad);
}

/* Delivers packets and local messages until nothing moves. */
static void t_xs_pump(void)
{
	for (int i = 0; i < 1000 && (net.n || lnet.n); i++) {
		t_run();
		while (lnet.n)
			t_lmsg_deliver(0);
	}
	UT_EQ(net.n + lnet.n, 0);
}

/* A two-packet SEND and a SEND with immediate through the target into the
 * other process's SRQ, step by step: nothing is acknowledged before the
 * owner has placed it, and the packet arriving while parked is held and
 * handed over next. */
T_XS_TEST(test_xrc_shared_send)
{
	struct ur_xrc_msg m;
	struct ibv_wc wc;

	UT_EQ(t_xs_recv(s, 10, 0, 512), 0);
	UT_EQ(t_xs_recv(s, 11, 512, 512), 0);
	UT_EQ(t_xrc_send(&s->x, 1, IBV_WR_SEND, 0, 300, s->srq->srq_num), 0);
	UT_EQ(t_count(), 2);                      /* MTU 256: FIRST, LAST */
	t_deliver(0);
	UT_EQ(lnet.n, 1);
	UT_EQ(t_count(), 1);                      /* no ACK yet */
	m = t_lmsg(0);
	UT_EQ(lnet.q[0]->pid, T_OTHER_PID);
	UT_EQ(m.kind, UR_XRC_DELIVER);
	UT_EQ(m.tgt_qpn, ur_qp_num(s->x.tgt));
	UT_EQ(m.srqn, s->srq->srq_num);
	UT_EQ(m.src_qpn, ur_qp_num(s->x.ini));
	UT_EQ(m.flags, UR_XRC_F_FIRST);
	UT_EQ(m.paylen, 256);
	UT_EQ(m.xrcd_ino, 0xabc);
	UT_EQ(m.gen, s->x.tgt->xrc_gen);
	/* The LAST packet arrives while parked: held, not handed over yet. */
	t_deliver(0);
	UT_EQ(lnet.n, 1);
	UT_EQ(t_count(), 0);
	/* The owner places the first 256 bytes and says so. */
	t_lmsg_deliver(0);
	UT_EQ(lnet.n, 1);
	m = t_lmsg(0);
	UT_EQ(m.kind, UR_XRC_REPLY);
	UT_EQ(m.status, UR_XRC_OK);
	UT_EQ(m.src_pid, getpid());
	UT_CHECK(t_cq_empty(s->x.bcq[0]));
	/* REPLY: PSN 0 acknowledged, the held LAST handed over at once. */
	t_lmsg_deliver(0);
	UT_EQ(t_count(), 1);
	UT_EQ(t_op(0), UR_OP_XRC_ACKNOWLEDGE);
	UT_EQ(t_syn(0), UR_AETH_ACK_UNLIMITED);
	UT_EQ(t_psn(0), 0);
	UT_EQ(s->x.tgt->resp.psn, 1);
	UT_EQ(lnet.n, 1);
	m = t_lmsg(0);
	UT_EQ(m.flags, UR_XRC_F_LAST);
	UT_EQ(m.psn, 1);
	UT_EQ(m.paylen, 300 - 256);
	/* The rest goes by itself: the LAST again, then a SEND with immediate. */
	UT_EQ(t_xrc_send(&s->x, 2, IBV_WR_SEND_WITH_IMM, 300, 100, s->srq->srq_num), 0);
	t_xs_pump();
	t_expect_wc(s->x.bcq[0], &wc, 10, IBV_WC_SUCCESS);
	UT_EQ(wc.byte_len, 300);
	UT_EQ(wc.opcode, IBV_WC_RECV);
	UT_EQ(wc.qp_num, ur_qp_num(s->x.tgt));
	UT_EQ(wc.src_qp, ur_qp_num(s->x.ini));
	UT_MEMEQ(s->x.rb.buf, s->x.sa.buf, 300);
	t_expect_wc(s->x.bcq[0], &wc, 11, IBV_WC_SUCCESS);
	UT_EQ(wc.byte_len, 100);
	UT_EQ(wc.wc_flags, IBV_WC_WITH_IMM);
	UT_MEMEQ(s->x.rb.buf + 512, s->x.sa.buf + 300, 100);
	t_expect_ok(s->x.acq, &wc, 1, 2);
	UT_CHECK(t_cq_empty(s->x.bcq[0]));
	UT_CHECK(t_cq_empty(s->x.bcq[1]));
	UT_EQ(s->x.tgt->state, IBV_QPS_RTR);
	UT_EQ(s->x.tgt->resp.msn, 2);
}

/* A gap while parked: what cannot be held is asked for again with one
 * sequence NAK once the parked packet is placed. */
T_XS_TEST(test_xrc_shared_gap)
{
	struct ibv_wc wc;

	UT_EQ(t_xs_recv(s, 10, 0, 1024), 0);
	UT_EQ(t_xrc_send(&s->x, 1, IBV_WR_SEND, 0, 600, s->srq->srq_num), 0);
	UT_EQ(t_count(), 3);                      /* FIRST, MIDDLE, LAST */
	t_deliver(0);
	t_drop(0);                                /* MIDDLE lost */
	t_deliver(0);                             /* LAST: a gap, not held */
	UT_EQ(t_count(), 0);
	t_lmsg_deliver(0);
	t_lmsg_deliver(0);
	UT_EQ(t_count(), 2);
	UT_EQ(t_syn(0), UR_AETH_ACK_UNLIMITED);
	UT_EQ(t_psn(0), 0);
	UT_EQ(t_syn(1), UR_NAK_PSN_SEQ_ERR);
	UT_EQ(t_psn(1), 1);
	UT_EQ(lnet.n, 0);
	t_xs_pump();
	t_expect_wc(s->x.bcq[0], &wc, 10, IBV_WC_SUCCESS);
	UT_EQ(wc.byte_len, 600);
	UT_MEMEQ(s->x.rb.buf, s->x.sa.buf, 600);
	t_expect_wc(s->x.acq, &wc, 1, IBV_WC_SUCCESS);
	UT_CHECK(t_cq_empty(s->x.bcq[0]));
}

/* A duplicate of an earlier message for another SRQ arriving in the
 * middle of a message is answered, not taken for the message changing its
 * SRQ (it ended the target QP once). */
T_XRC_TEST(test_xrc_dup_other_srq_mid_message)
{
	struct t_pkt *dup;
	struct ibv_wc wc;

	UT_EQ(t_xrc_recv(x, 0, 10, 0, 512), 0);
	UT_EQ(t_xrc_recv(x, 1, 11, 512, 512), 0);
	UT_EQ(t_xrc_send(x, 1, IBV_WR_SEND, 0, 10, x->srq[1]->srq_num), 0);
	UT_EQ(t_xrc_send(x, 2, IBV_WR_SEND, 0, 300, x->srq[0]->srq_num), 0);
	UT_EQ(t_count(), 3);
	dup = t_copy(0);
	t_deliver(0);                             /* message 1 */
	t_deliver(0);                             /* message 2, FIRST */
	t_inject(dup);                            /* message 1 again */
	t_deliver(0);                             /* message 2, LAST */
	t_run();
	t_expect_wc(x->bcq[1], &wc, 11, IBV_WC_SUCCESS);
	t_expect_wc(x->bcq[0], &wc, 10, IBV_WC_SUCCESS);
	UT_EQ(wc.byte_len, 300);
	t_expect_ok(x->acq, &wc, 1, 2);
	UT_EQ(x->tgt->state, IBV_QPS_RTR);
}

/* The owner's SRQ is empty: the REPLY says RNR, the target RNR NAKs, and
 * the retry after a receive is posted succeeds. */
T_XS_TEST(test_xrc_shared_rnr)
{
	struct ibv_wc wc;

	UT_EQ(t_xrc_send(&s->x, 1, IBV_WR_SEND, 0, 100, s->srq->srq_num), 0);
	t_deliver(0);
	t_lmsg_deliver(0);
	UT_EQ(t_lmsg(0).status, UR_XRC_RNR);
	t_lmsg_deliver(0);
	UT_EQ(t_count(), 1);
	UT_EQ(t_syn(0) & UR_AETH_TYPE_MASK, UR_AETH_RNR_NAK);
	UT_EQ(s->x.tgt->resp.psn, 0);
	t_run();
	UT_CHECK(t_cq_empty(s->x.acq));
	UT_EQ(t_xs_recv(s, 10, 0, 512), 0);
	t_advance(1000000000ull);                 /* the RNR timer */
	t_xs_pump();
	t_expect_wc(s->x.bcq[0], &wc, 10, IBV_WC_SUCCESS);
	UT_EQ(wc.byte_len, 100);
	t_expect_wc(s->x.acq, &wc, 1, IBV_WC_SUCCESS);
}

/* A REPLY lost (the target's socket was full): the requester retransmits,
 * the target hands the packet over again, and the owner answers without
 * placing it twice. */
T_XS_TEST(test_xrc_shared_lost_reply)
{
	struct ibv_wc wc;

	UT_EQ(t_xs_recv(s, 10, 0, 512), 0);
	UT_EQ(t_xs_recv(s, 11, 512, 512), 0);
	UT_EQ(t_xrc_send(&s->x, 1, IBV_WR_SEND, 0, 100, s->srq->srq_num), 0);
	t_deliver(0);
	t_lmsg_deliver(0);                        /* placed, completed */
	t_lmsg_drop(0);                           /* its REPLY lost */
	t_expect_wc(s->x.bcq[0], &wc, 10, IBV_WC_SUCCESS);
	UT_EQ(t_count(), 0);
	/* A retransmission right after the hand-over is not handed again. */
	t_advance(5000000000ull);                 /* the requester's timeout */
	UT_EQ(t_count(), 1);
	t_deliver(0);
	UT_EQ(lnet.n, 1);
	UT_EQ(t_lmsg(0).kind, UR_XRC_DELIVER);
	/* ... and tells the requester to wait (RNR), not to spend retries. */
	UT_EQ(t_count(), 1);
	UT_EQ(t_syn(0) & UR_AETH_TYPE_MASK, UR_AETH_RNR_NAK);
	UT_EQ(t_psn(0), 0);
	t_xs_pump();
	t_expect_wc(s->x.acq, &wc, 1, IBV_WC_SUCCESS);
	UT_CHECK(t_cq_empty(s->x.bcq[0]));         /* not placed twice */
	UT_EQ(s->srq->rq.tail - s->srq->rq.head, 1);
}

/* The owner vanished with the packet: the next retransmission finds it
 * gone, and the target NAKs invalid request. */
static void test_xrc_shared_owner_gone(void)
{
	struct t_xs s;
	struct ibv_wc wc;

	if (t_xs_open(&s))
		goto out;
	UT_EQ(t_xrc_send(&s.x, 1, IBV_WR_SEND, 0, 100, s.srq->srq_num), 0);
	t_deliver(0);
	t_lmsg_drop(0);
	t_xrc_other_dead = true;
	t_advance(5000000000ull);
	t_run();
	UT_EQ(lnet.n, 0);
	t_expect_wc(s.x.acq, &wc, 1, IBV_WC_REM_INV_REQ_ERR);
	UT_EQ(s.x.tgt->state, IBV_QPS_ERR);
	/* Its socket gone: refused at once, without parking. */
	t_xs_close(&s);
	if (t_xs_open(&s))
		goto out;
	lnet.fail = -ESRCH;
	UT_EQ(t_xrc_send(&s.x, 1, IBV_WR_SEND, 0, 100, s.srq->srq_num), 0);
	t_run();
	t_expect_wc(s.x.acq, &wc, 1, IBV_WC_REM_INV_REQ_ERR);
out:
	t_xs_close(&s);
}

/* What the owner refuses, and what the target refuses by itself. */
static void test_xrc_shared_refused(void)
{
	struct t_xs s;
	struct ibv_wc wc;
	uint32_t bogus;

	/* An SRQ number owned by the other process but in no domain there. */
	if (t_xs_open(&s))
		goto out;
	bogus = s.srq->srq_num ^ 0x400000;
	UT_EQ(t_xrc_send(&s.x, 1, IBV_WR_SEND, 0, 10, bogus), 0);
	t_xs_pump();
	t_expect_wc(s.x.acq, &wc, 1, IBV_WC_REM_INV_REQ_ERR);
	t_xs_close(&s);
	/* A receive buffer too small: an error on both sides. */
	if (t_xs_open(&s))
		goto out;
	UT_EQ(t_xs_recv(&s, 10, 0, 50), 0);
	UT_EQ(t_xrc_send(&s.x, 1, IBV_WR_SEND, 0, 100, s.srq->srq_num), 0);
	t_xs_pump();
	t_expect_wc(s.x.bcq[0], &wc, 10, IBV_WC_LOC_LEN_ERR);
	UT_EQ(wc.qp_num, ur_qp_num(s.x.tgt));
	t_expect_wc(s.x.acq, &wc, 1, IBV_WC_REM_INV_REQ_ERR);
	t_xs_close(&s);
	/* RDMA WRITE into the other process's memory: a remote access error,
	 * and nothing handed over. */
	if (t_xs_open(&s))
		goto out;
	UT_EQ(t_xrc_send(&s.x, 1, IBV_WR_RDMA_WRITE, 0, 100, s.srq->srq_num), 0);
	t_run();
	UT_EQ(lnet.n, 0);
	t_expect_wc(s.x.acq, &wc, 1, IBV_WC_REM_ACCESS_ERR);
	t_xs_close(&s);
	/* An anonymous domain is never shared. */
	if (t_xs_open(&s))
		goto out;
	s.x.xrcd->has_inode = false;
	UT_EQ(t_xrc_send(&s.x, 1, IBV_WR_SEND, 0, 10, s.srq->srq_num), 0);
	t_run();
	UT_EQ(lnet.n, 0);
	t_expect_wc(s.x.acq, &wc, 1, IBV_WC_REM_INV_REQ_ERR);
out:
	t_xs_close(&s);
}

/* A REPLY for an earlier incarnation of the target QP changes nothing. */
T_XS_TEST(test_xrc_shared_stale_reply)
{
	struct ur_xrc_msg m;
	struct ibv_wc wc;

	UT_EQ(t_xs_recv(s, 10, 0, 512), 0);
	UT_EQ(t_xrc_send(&s->x, 1, IBV_WR_SEND, 0, 100, s->srq->srq_num), 0);
	t_deliver(0);
	t_lmsg_deliver(0);
	memcpy(&m, lnet.q[0]->buf, sizeof(m));
	m.gen ^= 1;
	memcpy(lnet.q[0]->buf, &m, sizeof(m));
	t_lmsg_deliver(0);
	UT_EQ(t_count(), 0);
	UT_CHECK(s->x.tgt->resp.xrc_wait);
	t_advance(5000000000ull);
	t_xs_pump();
	t_expect_wc(s->x.acq, &wc, 1, IBV_WC_SUCCESS);
	t_expect_wc(s->x.bcq[0], &wc, 10, IBV_WC_SUCCESS);
	UT_CHECK(t_cq_empty(s->x.bcq[0]));
}
