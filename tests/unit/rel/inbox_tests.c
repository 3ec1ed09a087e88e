/* ACKs that arrive while another thread holds the QP (rel/inbox.h): put
 * in its inbox, not waited for, and taken by the holder's run step before
 * it lets the QP go.  Here the one thread both holds the QP (between
 * wr_start and wr_complete) and delivers: a delivery that waited for the
 * lock would never return. */

/* Two 64 B SENDs from a to b (sa into rb), each delivered to b, whose
 * ACKs wait in the network. */
struct inbox_pair {
	struct t_pair p;
	struct t_mem sa, rb;
};

/* 0, or -1 if the pair could not open. */
static int inbox_open(struct inbox_pair *s)
{
	struct t_opts o = { 0 };
	struct t_pair *p = &s->p;
	struct t_mem *sa = &s->sa, *rb = &s->rb;

	if (t_pair_open(p, &o))
		return -1;
	t_mem_reg(sa, &p->a, 256, IBV_ACCESS_LOCAL_WRITE, 7);
	t_mem_reg(rb, &p->b, 256, IBV_ACCESS_LOCAL_WRITE, 0);
	for (int i = 0; i < 3; i++)
		UT_EQ(t_post_recv(&p->b, 50 + i, rb->buf + i * 64, 64, rb->mr->lkey), 0);
	for (int i = 0; i < 2; i++)
		UT_EQ(t_post_send(&p->a, 1 + i, IBV_WR_SEND, sa->buf, 64, sa->mr->lkey,
				  IBV_SEND_SIGNALED), 0);
	t_deliver(0);                                /* to b; their ACKs queued */
	t_deliver(0);
	UT_EQ(t_count(), 2);
	UT_EQ(t_op(0), UR_OP_RC_ACKNOWLEDGE);
	UT_EQ(t_op(1), UR_OP_RC_ACKNOWLEDGE);
	return 0;
}

static void inbox_close(struct inbox_pair *s)
{
	t_mem_free(&s->sa);
	t_mem_free(&s->rb);
	t_pair_close(&s->p);
}

/* A test on inbox_open's pair with its ACKs waiting: s. */
#define INBOX_TEST(name) T_FIXTURE_TEST(name, struct inbox_pair, s, inbox_open, inbox_close)

/* An ACK arriving while the QP is held waits in the inbox; wr_complete's
 * run step takes it (the SEND it acknowledges completes then, not
 * before), and a newer plain ACK takes the older one's slot. */
INBOX_TEST(test_inbox_ack_while_held)
{
	struct ibv_qp_ex *x;
	struct ibv_wc wc;
	uint64_t rcvd;

	x = &s->p.a.qp->qpx;
	rcvd = s->p.a.qp->cnt[UR_CNT_RCVD_PKTS];
	x->wr_start(x);
	t_deliver(0);
	UT_EQ(s->p.a.qp->inbox.n, 1);
	t_deliver(0);
	UT_EQ(s->p.a.qp->inbox.n, 1);                  /* cumulative: one slot */
	UT_EQ(t_poll(s->p.a.scq, &wc, 1), 0);          /* not taken yet */
	x->wr_id = 3;
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_send(x);
	x->wr_set_sge(x, s->sa.mr->lkey, (uintptr_t)s->sa.buf, 64);
	UT_EQ(x->wr_complete(x), 0);
	UT_EQ(s->p.a.qp->inbox.n, 0);
	UT_EQ(s->p.a.qp->cnt[UR_CNT_ACKS_INBOX], 2);   /* both counted, as received */
	UT_EQ(s->p.a.qp->cnt[UR_CNT_RCVD_PKTS], rcvd + 2);
	t_expect_ok(s->p.a.scq, &wc, 1, 2);
	UT_EQ(t_count(), 1);                        /* the third SEND */
	t_run();
	t_expect_wc(s->p.a.scq, &wc, 3, IBV_WC_SUCCESS);
	t_expect_wc(s->p.b.rcq, &wc, 50, IBV_WC_SUCCESS);
}

/* An ACK from another address than the QP's peer, left in the inbox, is
 * counted as a wrong peer's when taken and acknowledges nothing; the
 * peer's own, behind it, keeps its slot (another sender's never covers
 * it).  wr_abort takes them too. */
INBOX_TEST(test_inbox_wrong_peer)
{
	struct ibv_qp_ex *x;
	struct ibv_wc wc;
	struct ur_rx_meta m;
	struct t_pkt *k;
	uint64_t wrong;

	x = &s->p.a.qp->qpx;
	wrong = s->p.a.qp->cnt[UR_CNT_WRONG_PEER];
	x->wr_start(x);
	k = t_copy(1);                              /* the newer ACK, from elsewhere */
	t_meta(&m);
	m.sgid.raw[15] ^= 1;
	ur_recv_packet(t_stack(), k->buf, k->len, &m);
	free(k);
	t_deliver(0);
	t_drop(0);
	UT_EQ(s->p.a.qp->inbox.n, 2);
	x->wr_abort(x);
	UT_EQ(s->p.a.qp->inbox.n, 0);
	UT_EQ(s->p.a.qp->cnt[UR_CNT_WRONG_PEER], wrong + 1);
	UT_EQ(s->p.a.qp->cnt[UR_CNT_ACKS_INBOX], 1);
	t_expect_wc(s->p.a.scq, &wc, 1, IBV_WC_SUCCESS);
	UT_EQ(t_poll(s->p.a.scq, &wc, 1), 0);          /* the second: not acknowledged */
}
