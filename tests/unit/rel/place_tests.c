/* Requests the transport copies straight into or out of the responder's
 * memory (one copy, xport ops place and fetch): never ahead of an earlier
 * request the responder may not have executed yet. */

/* A READ of what a WRITE just before it writes: the WRITE goes in packets,
 * so the READ may not fetch the bytes itself until the WRITE is
 * acknowledged; it goes as an ordinary READ and returns the new bytes.
 * (Fetched at once, it returned the old ones: 2 clean runs of integ_storm
 * in 30 on one host.) */
T_PAIR_TEST(test_place_read_behind_write, 0, 0, 0, .access = T_ALL_ACCESS)
{
	struct t_mem sa, ra, tb;
	struct ibv_wc wc;

	t_mem_reg(&sa, &p->a, 64, IBV_ACCESS_LOCAL_WRITE, 0x11);
	t_mem_reg(&ra, &p->a, 64, IBV_ACCESS_LOCAL_WRITE, 0x22);
	t_mem_reg(&tb, &p->b, 64, T_ALL_ACCESS, 0x33);
	t_onecopy = (typeof(t_onecopy)){ .fetch = true };
	UT_EQ(t_post_rdma(&p->a, 1, IBV_WR_RDMA_WRITE, sa.buf, 64, sa.mr->lkey,
			  (uintptr_t)tb.buf, tb.mr->rkey), 0);
	UT_EQ(t_post_rdma(&p->a, 2, IBV_WR_RDMA_READ, ra.buf, 64, ra.mr->lkey,
			  (uintptr_t)tb.buf, tb.mr->rkey), 0);
	UT_EQ(t_onecopy.fetches, 0u);
	t_run();
	t_expect_ok(p->a.scq, &wc, 1, 2);
	UT_MEMEQ(ra.buf, sa.buf, 64);
	/* Nothing outstanding now: the next READ fetches the bytes itself,
	 * one request of headers answered by one response of headers. */
	memset(ra.buf, 0, 64);
	UT_EQ(t_post_rdma(&p->a, 3, IBV_WR_RDMA_READ, ra.buf, 64, ra.mr->lkey,
			  (uintptr_t)tb.buf, tb.mr->rkey), 0);
	UT_EQ(t_onecopy.fetches, 1u);
	UT_EQ(t_count(), 1);
	t_deliver(0);
	UT_EQ(t_count(), 1);
	UT_EQ(t_pkt(0)->placed, 64u);
	t_run();
	t_expect_wc(p->a.scq, &wc, 3, IBV_WC_SUCCESS);
	UT_MEMEQ(ra.buf, sa.buf, 64);
	t_onecopy = (typeof(t_onecopy)){ 0 };
	t_mem_free(&sa);
	t_mem_free(&ra);
	t_mem_free(&tb);
}

/* A WRITE copied straight in may not overtake a SEND that the responder
 * turned away (RNR NAK) and executes only when it comes again, nor the
 * WRITE after that SEND which it then dropped: the later WRITE to the same
 * bytes goes in packets and lands last. */
T_PAIR_TEST(test_place_write_behind_rnr, 0, 0, 0, .access = T_ALL_ACCESS, .min_rnr_timer = 1)
{
	struct t_mem sa, s1, s2, tb, rb;
	struct ibv_wc wc;

	t_mem_reg(&sa, &p->a, 64, IBV_ACCESS_LOCAL_WRITE, 0x11);
	t_mem_reg(&s1, &p->a, 64, IBV_ACCESS_LOCAL_WRITE, 0x44);
	t_mem_reg(&s2, &p->a, 64, IBV_ACCESS_LOCAL_WRITE, 0x55);
	t_mem_reg(&tb, &p->b, 64, T_ALL_ACCESS, 0x33);
	t_mem_reg(&rb, &p->b, 64, IBV_ACCESS_LOCAL_WRITE, 0x66);
	UT_EQ(t_post_send(&p->a, 1, IBV_WR_SEND, sa.buf, 64, sa.mr->lkey, IBV_SEND_SIGNALED), 0);
	UT_EQ(t_post_rdma(&p->a, 2, IBV_WR_RDMA_WRITE, s1.buf, 64, s1.mr->lkey,
			  (uintptr_t)tb.buf, tb.mr->rkey), 0);
	t_onecopy = (typeof(t_onecopy)){ .place = true };
	UT_EQ(t_post_rdma(&p->a, 3, IBV_WR_RDMA_WRITE, s2.buf, 64, s2.mr->lkey,
			  (uintptr_t)tb.buf, tb.mr->rkey), 0);
	UT_EQ(t_onecopy.places, 0u);
	t_deliver(0);                 /* the SEND: no receive, RNR NAK */
	t_deliver(0);                 /* the first WRITE: out of sequence */
	UT_EQ(t_post_recv(&p->b, 9, rb.buf, 64, rb.mr->lkey), 0);
	t_run();
	t_advance(T_TIMEOUT_NS);
	t_run();
	t_expect_ok(p->a.scq, &wc, 1, 3);
	UT_MEMEQ(tb.buf, s2.buf, 64);     /* the later WRITE's bytes */
	UT_MEMEQ(rb.buf, sa.buf, 64);
	t_onecopy = (typeof(t_onecopy)){ 0 };
	t_mem_free(&sa);
	t_mem_free(&s1);
	t_mem_free(&s2);
	t_mem_free(&tb);
	t_mem_free(&rb);
}

/* A large WRITE that could be copied straight in waits for an earlier
 * WRITE that went in packets (its region was not published for a moment:
 * moving into a memfd) to be acknowledged, and is then placed, rather
 * than going in packets behind it; the earlier one's last packet asks for
 * that ACK.  Without the wait, each packet WRITE kept the next from being
 * placed and a stream never left the packets.  The bytes land in order. */
T_PAIR_TEST(test_place_large_waits_for_packets, 0, 0, 0, .access = T_ALL_ACCESS)
{
	const uint32_t len = 64u << 10;
	struct t_mem s1, s2, s3, tb;
	struct ibv_wc wc;
	unsigned sent;

	t_mem_reg(&s1, &p->a, len, IBV_ACCESS_LOCAL_WRITE, 0x11);
	t_mem_reg(&s2, &p->a, len, IBV_ACCESS_LOCAL_WRITE, 0x22);
	t_mem_reg(&s3, &p->a, len, IBV_ACCESS_LOCAL_WRITE, 0x33);
	t_mem_reg(&tb, &p->b, len, T_ALL_ACCESS, 0x44);
	t_onecopy = (typeof(t_onecopy)){ .place = true };
	UT_EQ(t_post_rdma(&p->a, 1, IBV_WR_RDMA_WRITE, s1.buf, len, s1.mr->lkey,
			  (uintptr_t)tb.buf, tb.mr->rkey), 0);
	UT_EQ(t_onecopy.places, 1u);
	t_run();
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_SUCCESS);
	/* The region is taken from the peers for a moment: in packets. */
	t_onecopy.refuse = ENOENT;
	UT_EQ(t_post_rdma(&p->a, 2, IBV_WR_RDMA_WRITE, s2.buf, len, s2.mr->lkey,
			  (uintptr_t)tb.buf, tb.mr->rkey), 0);
	UT_CHECK(t_count() > 1);
	UT_CHECK(t_ackreq(t_count() - 1));
	t_onecopy.refuse = 0;
	sent = t_count();
	UT_EQ(t_post_rdma(&p->a, 3, IBV_WR_RDMA_WRITE, s3.buf, len, s3.mr->lkey,
			  (uintptr_t)tb.buf, tb.mr->rkey), 0);
	UT_EQ(t_count(), sent);               /* waits: nothing sent */
	UT_EQ(t_onecopy.places, 1u);
	t_run();
	UT_EQ(t_onecopy.places, 2u);          /* then copied straight in */
	t_expect_ok(p->a.scq, &wc, 2, 2);
	UT_MEMEQ(tb.buf, s3.buf, len);
	t_onecopy = (typeof(t_onecopy)){ 0 };
	t_mem_free(&s1);
	t_mem_free(&s2);
	t_mem_free(&s3);
	t_mem_free(&tb);
}
