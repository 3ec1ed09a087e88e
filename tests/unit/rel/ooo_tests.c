/* Out-of-order tolerance (UROCE_OOO=1, rel/rel_priv.h UR_OOO_NAK_AFTER):
 * a request or READ response that arrives past a gap is held, and the gap
 * fills by itself when the network only reordered: no NAK, no resend, one
 * execution each, in order.  A gap with three packets held behind it is a
 * loss, recovered as before. */

/* Whether the queue holds an answer (ACK/NAK) for side a. */
static bool t_answer_queued(const struct t_pair *p)
{
	for (unsigned i = 0; i < t_count(); i++)
		if (t_dqpn(i) == ur_qp_num(p->a.qp))
			return true;
	return false;
}

/* Every answer to a still queued is an ACK, never a NAK; delivers all. */
static void t_deliver_all_expect_no_nak(void)
{
	while (t_count()) {
		if (t_op(0) == UR_OP_RC_ACKNOWLEDGE)
			UT_EQ(t_syn(0) & UR_AETH_TYPE_MASK, UR_AETH_ACK);
		t_deliver(0);
	}
}

/* A pair that tolerates reordering and goes back on a loss, with 8 packets
 * of op (a WRITE's requests, or a READ's responses once its request is
 * delivered) queued: local from a to remote on b. */
struct ooo_run {
	struct t_pair p;
	struct t_mem local, remote;
};

static int ooo_open(struct ooo_run *r, enum ibv_wr_opcode op)
{
	struct t_opts o = { .mtu = IBV_MTU_256, .go_back = true, .ooo = true };

	if (t_pair_open(&r->p, &o))
		return -1;
	t_mem_reg(&r->local, &r->p.a, 8 * 256, IBV_ACCESS_LOCAL_WRITE, 1);
	t_mem_reg(&r->remote, &r->p.b, 8 * 256,
		  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, 2);
	if (op == IBV_WR_RDMA_READ)
		memset(r->local.buf, 0, 8 * 256);
	UT_EQ(t_post_rdma(&r->p.a, 7, op, r->local.buf, 8 * 256, r->local.mr->lkey,
			  (uintptr_t)r->remote.buf, r->remote.mr->rkey), 0);
	if (op == IBV_WR_RDMA_READ) {
		UT_EQ(t_count(), 1);
		t_deliver(0);         /* the request */
	}
	UT_EQ(t_count(), 8);
	return 0;
}

/* Everything delivered: one completion, the bytes right either way. */
static void ooo_close(struct ooo_run *r)
{
	struct ibv_wc wc;

	t_run();
	t_expect_wc(r->p.a.scq, &wc, 7, IBV_WC_SUCCESS);
	UT_MEMEQ(r->local.buf, r->remote.buf, 8 * 256);
	t_mem_free(&r->local);
	t_mem_free(&r->remote);
	t_pair_close(&r->p);
}

/* A test on ooo_open's pair with op's 8 packets queued: r, checked and
 * closed by ooo_close after the body. */
#define OOO_TEST(name, op) T_FIXTURE_TEST(name, struct ooo_run, r, ooo_open, ooo_close, (op))

/* A WRITE's third packet comes before its second, between peers that go
 * back: nothing is NAKed or sent again, and the target is right. */
OOO_TEST(test_ooo_write_reordered, IBV_WR_RDMA_WRITE)
{
	t_deliver(0);                 /* FIRST */
	t_deliver(1);                 /* the third: held */
	UT_EQ(r->p.b.qp->cnt[UR_CNT_HELD_OUT_OF_SEQ], 1);
	UT_CHECK(!t_answer_queued(&r->p));   /* no NAK: it may be reordering */
	t_deliver(0);                 /* the second: both run */
	t_deliver_all_expect_no_nak();
	UT_EQ(r->p.a.qp->cnt[UR_CNT_RCVD_SEQ_ERR], 0);
	UT_EQ(r->p.a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR], 0);
	UT_EQ(r->p.b.qp->cnt[UR_CNT_DUPLICATE_REQUEST], 0);   /* nothing came twice */
	UT_CHECK(!ur_held_any(r->p.b.qp->held));
}

/* A WRITE's second packet is lost: no NAK while one or two wait behind
 * the gap, the NAK with the third, then go-back-N as before. */
OOO_TEST(test_ooo_write_loss_nak_after_three, IBV_WR_RDMA_WRITE)
{
	uint32_t psn0;

	psn0 = t_psn(0);
	t_deliver(0);
	t_drop(0);                    /* psn0 + 1, lost */
	t_deliver(0);
	t_deliver(0);
	UT_CHECK(!t_answer_queued(&r->p));   /* two held: not yet a loss */
	t_deliver(0);                 /* the third held */
	UT_CHECK(t_answer_queued(&r->p));
	UT_EQ(t_op(t_count() - 1), UR_OP_RC_ACKNOWLEDGE);
	UT_EQ(t_syn(t_count() - 1), UR_NAK_PSN_SEQ_ERR);
	UT_EQ(t_psn(t_count() - 1), psn_add(psn0, 1));
	t_run();
	UT_EQ(r->p.a.qp->cnt[UR_CNT_RCVD_SEQ_ERR], 1);
}

/* A READ's responses: the third before the second.  The requester keeps
 * it, asks for nothing again, and the bytes land in order. */
OOO_TEST(test_ooo_read_reordered, IBV_WR_RDMA_READ)
{
	t_deliver(0);                 /* FIRST */
	t_deliver(1);                 /* the third: held */
	UT_EQ(r->p.a.qp->cnt[UR_CNT_HELD_OUT_OF_SEQ], 1);
	UT_EQ(t_count(), 6);          /* nothing asked again */
	t_deliver(0);                 /* the second: both placed */
	t_run();
	UT_EQ(r->p.a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR], 0);
	UT_EQ(r->p.b.qp->cnt[UR_CNT_DUPLICATE_REQUEST], 0);
	UT_CHECK(!ur_held_any(r->p.a.qp->held_resp));
}

/* A READ response lost: the requester waits while one or two are held,
 * asks again with the third, and the bytes are right. */
OOO_TEST(test_ooo_read_loss_retry_after_three, IBV_WR_RDMA_READ)
{
	t_deliver(0);                 /* FIRST */
	t_drop(0);                    /* the second, lost */
	t_deliver(0);
	t_deliver(0);
	UT_EQ(r->p.a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR], 0);
	t_deliver(0);                 /* the third held: a loss */
	UT_EQ(r->p.a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR], 1);
}
