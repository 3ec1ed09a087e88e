/* Fewer ACKs: a requester asks for none on a message another WR follows
 * at once, and a responder sends one ACK per QP per received batch
 * (rel/resp_batch.h). */

/* Four SENDs posted in one call: only the last asks for an ACK; the same
 * four posted one by one each ask (nothing follows any when it leaves). */
T_PAIR_TEST(test_ack_not_asked_when_followed, 0, 0, 0, 0)
{
	struct t_mem sa, rb;
	struct ibv_sge sge[4];
	struct ibv_send_wr wr[4], *bad = NULL;
	struct ibv_wc wc[8];

	t_mem_reg(&sa, &p->a, 4096, IBV_ACCESS_LOCAL_WRITE, 5);
	t_mem_reg(&rb, &p->b, 8192, IBV_ACCESS_LOCAL_WRITE, 6);
	for (int i = 0; i < 8; i++)
		UT_EQ(t_post_recv(&p->b, 100 + i, rb.buf + i * 1024, 1024, rb.mr->lkey), 0);
	for (int i = 0; i < 4; i++) {
		sge[i] = (struct ibv_sge){ (uintptr_t)sa.buf + i * 1024, 1024, sa.mr->lkey };
		wr[i] = (struct ibv_send_wr){ .wr_id = 200 + i, .sg_list = &sge[i], .num_sge = 1,
					      .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
					      .next = i < 3 ? &wr[i + 1] : NULL };
	}
	UT_EQ(ur_qp_post_send(p->a.qp, wr, &bad), 0);
	UT_EQ(t_count(), 4);
	for (unsigned i = 0; i < 4; i++)
		UT_EQ(t_ackreq(i), i == 3);
	UT_EQ(t_run(), 5u);   /* four SENDs, one ACK */
	UT_EQ(t_poll(p->a.scq, wc, 8), 4);
	for (int i = 0; i < 4; i++)
		UT_EQ(wc[i].wr_id, 200 + (uint64_t)i);

	for (int i = 0; i < 4; i++)
		UT_EQ(t_post_send(&p->a, 300 + i, IBV_WR_SEND, sa.buf + i * 1024, 1024, sa.mr->lkey,
				  IBV_SEND_SIGNALED), 0);
	UT_EQ(t_count(), 4);
	for (unsigned i = 0; i < 4; i++)
		UT_CHECK(t_ackreq(i));
	t_run();
	UT_EQ(t_poll(p->a.scq, wc, 8), 4);
	UT_EQ(t_poll(p->b.rcq, wc, 8), 8);
	UT_MEMEQ(rb.buf, sa.buf, 4096);
	UT_MEMEQ(rb.buf + 4096, sa.buf, 4096);
	t_mem_free(&sa);
	t_mem_free(&rb);
}

/* A pair, with n 1 KiB SENDs from a to b posted one by one (each asks
 * for an ACK) and their receives, from sa into rb. */
struct ack_sends {
	struct t_pair p;
	struct t_mem sa, rb;
};

/* 0, or -1 if the pair could not open. */
static int open_sends(struct ack_sends *s, int n)
{
	struct t_opts o = { 0 };
	struct t_pair *p = &s->p;
	struct t_mem *sa = &s->sa, *rb = &s->rb;

	if (t_pair_open(p, &o))
		return -1;
	t_mem_reg(sa, &p->a, (size_t)n * 1024, IBV_ACCESS_LOCAL_WRITE, 5);
	t_mem_reg(rb, &p->b, (size_t)n * 1024, IBV_ACCESS_LOCAL_WRITE, 6);
	for (int i = 0; i < n; i++) {
		UT_EQ(t_post_recv(&p->b, 100 + i, rb->buf + i * 1024, 1024, rb->mr->lkey), 0);
		UT_EQ(t_post_send(&p->a, 200 + i, IBV_WR_SEND, sa->buf + i * 1024, 1024,
				  sa->mr->lkey, IBV_SEND_SIGNALED), 0);
	}
	UT_EQ(t_count(), (unsigned)n);
	return 0;
}

static void close_sends(struct ack_sends *s)
{
	t_mem_free(&s->sa);
	t_mem_free(&s->rb);
	t_pair_close(&s->p);
}

/* A test on open_sends' pair with n SENDs posted: s. */
#define ACK_SENDS_TEST(name, n) \
	T_FIXTURE_TEST(name, struct ack_sends, s, open_sends, close_sends, (n))

/* Four SENDs that each ask, received in one batch: no ACK until the batch
 * ends, then one, for the newest PSN, and it completes all four. */
ACK_SENDS_TEST(test_ack_one_per_batch, 4)
{
	struct ibv_wc wc[8];

	ur_resp_batch_begin();
	for (int i = 0; i < 4; i++)
		t_deliver(0);
	UT_EQ(t_count(), 0);                        /* held */
	UT_EQ(t_poll(s->p.b.rcq, wc, 8), 4);           /* the receives completed at once */
	ur_resp_batch_end();
	UT_EQ(t_count(), 1);
	UT_EQ(t_op(0), UR_OP_RC_ACKNOWLEDGE);
	UT_EQ(t_syn(0), UR_AETH_ACK_UNLIMITED);
	UT_EQ(t_psn(0), 3u);
	UT_EQ(aeth_msn(t_pkt(0)->buf + UR_BTH_BYTES), 4u);
	UT_CHECK(!s->p.b.qp->resp.ack_held);
	t_deliver(0);
	UT_EQ(t_poll(s->p.a.scq, wc, 8), 4);
	for (int i = 0; i < 4; i++)
		UT_EQ(wc[i].wr_id, 200 + (uint64_t)i);
	UT_MEMEQ(s->rb.buf, s->sa.buf, 4096);
	UT_EQ(s->p.a.qp->sq.head, s->p.a.qp->sq.tail);
}

/* A loss inside a batch: the ACK held for the packet before the gap
 * leaves ahead of the answer to the gap, which takes its place. */
ACK_SENDS_TEST(test_ack_held_goes_before_nak, 3)
{
	struct ibv_wc wc[8];

	ur_resp_batch_begin();
	t_deliver(0);            /* PSN 0: its ACK held */
	UT_EQ(t_count(), 2);
	t_drop(0);               /* PSN 1 lost */
	t_deliver(0);            /* PSN 2: a gap */
	UT_EQ(t_count(), 2);
	UT_EQ(t_op(0), UR_OP_RC_ACKNOWLEDGE);
	UT_EQ(t_syn(0), UR_AETH_ACK_UNLIMITED);
	UT_EQ(t_psn(0), 0u);
	UT_EQ(t_op(1), UR_OP_RC_ACKNOWLEDGE);
	UT_CHECK(t_syn(1) != UR_AETH_ACK_UNLIMITED);   /* the gap's answer */
	ur_resp_batch_end();
	UT_EQ(t_count(), 2);     /* nothing more was held */
	t_deliver(0);
	UT_EQ(t_poll(s->p.a.scq, wc, 8), 1);   /* the ACK alone completes the first */
	UT_EQ(wc[0].wr_id, 200u);
	t_run();
	UT_EQ(t_poll(s->p.a.scq, wc, 8), 2);
	UT_EQ(t_poll(s->p.b.rcq, wc, 8), 3);
	UT_MEMEQ(s->rb.buf, s->sa.buf, 3072);
}

/* The receiver's application answers inside the batch that received the
 * message (perftest's send_lat: a SEND back at the receive completion):
 * the held ACK leaves ahead of the answer, so the first side completes its
 * SEND before it receives the answer.  With the answer first, ib_send_lat
 * -e took the answer's event as its send's, left the send's completion
 * unpolled, and overran its one-entry send CQ at the next SEND. */
ACK_SENDS_TEST(test_ack_held_goes_before_reply, 1)
{
	struct ibv_wc wc[8];

	UT_EQ(t_post_recv(&s->p.a, 400, s->sa.buf + 512, 512, s->sa.mr->lkey), 0);
	ur_resp_batch_begin();
	t_deliver(0);
	UT_EQ(t_count(), 0);                        /* the ACK held */
	UT_EQ(t_poll(s->p.b.rcq, wc, 8), 1);
	UT_EQ(t_post_send(&s->p.b, 500, IBV_WR_SEND, s->rb.buf, 64, s->rb.mr->lkey, IBV_SEND_SIGNALED), 0);
	UT_EQ(t_count(), 2);
	UT_EQ(t_op(0), UR_OP_RC_ACKNOWLEDGE);       /* the ACK, then the reply */
	UT_EQ(t_psn(0), 0u);
	UT_EQ(t_op(1), UR_OP_RC_SEND_ONLY);
	ur_resp_batch_end();
	UT_EQ(t_count(), 2);                        /* no second ACK */
	t_deliver(0);
	UT_EQ(t_poll(s->p.a.scq, wc, 8), 1);           /* A's SEND completes first */
	UT_EQ(wc[0].wr_id, 200u);
	UT_EQ(t_poll(s->p.a.rcq, wc, 8), 0);
	t_deliver(0);
	UT_EQ(t_poll(s->p.a.rcq, wc, 8), 1);
	UT_EQ(wc[0].wr_id, 400u);
	t_run();
	UT_EQ(t_poll(s->p.b.scq, wc, 8), 1);
	UT_EQ(wc[0].wr_id, 500u);
}
