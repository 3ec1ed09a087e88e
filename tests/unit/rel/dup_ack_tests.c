/* Duplicates of a SEND or WRITE are acknowledged only when they ask for it
 * (AckReq), as new packets are.
 *
 * The case from Linux rxe (6.1), whose retransmission timer can fire right
 * after it sent a message's LAST: it goes back to the message's FIRST and
 * resends.  Had the responder answered the resent FIRST with an ACK, that
 * ACK would repeat the one for the LAST (same PSN, same MSN) and rxe's
 * completer would complete the WQE its requester is still resending; the
 * requester then stalls for good (docs/interop.md).  Here the resent
 * FIRST and MIDDLEs get nothing, the resent LAST gets the one ACK that
 * completes the message, nothing executes twice, and a duplicate that does
 * ask (AckReq set by hand on a FIRST) is answered. */

/* The 4 packets (MTU 256) of one 1024-byte SEND or WRITE from A, delivered
 * to B and then resent as rxe would, all of them, only the LAST asking. */
static void dup_ack_case(enum ibv_wr_opcode op)
{
	struct t_opts o = { .mtu = IBV_MTU_256, .a_psn = 0xfffffe };
	struct t_pair p;
	struct t_pkt *resend[4], *ack;
	struct ibv_wc wc;
	uint64_t dups;
	uint32_t msn;

	if (t_pair_open_mem(&p, &o, 1024, 1024, T_ALL_ACCESS))
		return;
	if (op == IBV_WR_SEND) {
		UT_EQ(t_post_recv_mem(&p.b, 1, 0, 1024), 0);
		UT_EQ(t_post_send_mem(&p.a, 2, op, 0, 1024, IBV_SEND_SIGNALED), 0);
	} else {
		UT_EQ(t_post_rdma_mem(&p, 2, op, 0, 1024, 0), 0);
	}
	UT_EQ(t_count(), 4);
	for (unsigned i = 0; i < 4; i++) {
		UT_EQ(t_ackreq(i), i == 3);           /* only the LAST asks */
		resend[i] = t_copy(i);
	}
	for (unsigned i = 0; i < 4; i++)
		t_deliver(0);
	UT_MEMEQ(p.b.mem.buf, p.a.mem.buf, 1024);
	if (op == IBV_WR_SEND)
		t_expect_wc(p.b.rcq, &wc, 1, IBV_WC_SUCCESS);
	UT_EQ(t_count(), 1);                          /* the LAST's ACK */
	UT_EQ(t_op(0), UR_OP_RC_ACKNOWLEDGE);
	UT_EQ(t_psn(0), 0x000001);
	ack = t_take(0);
	msn = aeth_msn(t_hdr(ack, UR_HDR_AETH));

	/* The application overwrites its buffer: a second execution would
	 * show. */
	memset(p.b.mem.buf, 0xee, 1024);
	dups = p.b.qp->cnt[UR_CNT_DUPLICATE_REQUEST];
	for (unsigned i = 0; i < 3; i++) {
		t_inject(resend[i]);
		UT_EQ(t_count(), 0);                  /* a resent FIRST/MIDDLE: no ACK */
	}
	t_inject(resend[3]);
	UT_EQ(p.b.qp->cnt[UR_CNT_DUPLICATE_REQUEST], dups + 4);
	UT_EQ(t_count(), 1);                          /* the resent LAST: one ACK */
	UT_EQ(t_op(0), UR_OP_RC_ACKNOWLEDGE);
	UT_EQ(t_syn(0) & UR_AETH_TYPE_MASK, UR_AETH_ACK);
	UT_EQ(t_psn(0), 0x000001);
	UT_EQ(aeth_msn(t_hdr(t_pkt(0), UR_HDR_AETH)), msn);
	for (unsigned i = 0; i < 1024; i++)
		if (p.b.mem.buf[i] != 0xee) {
			UT_EQ(p.b.mem.buf[i], 0xee);
			break;
		}
	UT_CHECK(t_cq_empty(p.b.rcq));

	/* A duplicate FIRST that asks is answered, with the same ACK. */
	{
		struct t_pkt *k = t_build(op == IBV_WR_SEND ? UR_OP_RC_SEND_FIRST :
					  UR_OP_RC_RDMA_WRITE_FIRST, ur_qp_num(p.b.qp), 0xfffffe, true,
					  p.a.mem.buf, 256);

		if (op != IBV_WR_SEND) {
			uint8_t *r = t_hdr(k, UR_HDR_RETH);

			reth_set_va(r, (uintptr_t)p.b.mem.buf);
			reth_set_rkey(r, p.b.mem.mr->rkey);
			reth_set_len(r, 1024);
		}
		t_inject(k);
	}
	UT_EQ(t_count(), 2);
	UT_EQ(t_op(1), UR_OP_RC_ACKNOWLEDGE);
	UT_EQ(t_psn(1), 0x000001);

	/* A takes the three ACKs and completes the message once. */
	t_inject(ack);
	t_run();
	t_expect_wc(p.a.scq, &wc, 2, IBV_WC_SUCCESS);
	UT_CHECK(t_cq_empty(p.a.scq));
	UT_EQ(p.a.qp->state, IBV_QPS_RTS);
	UT_EQ(p.a.qp->comp.psn, 0x000002);
	t_pair_close(&p);
}

static void test_dup_ack_send(void)
{
	dup_ack_case(IBV_WR_SEND);
}

static void test_dup_ack_write(void)
{
	dup_ack_case(IBV_WR_RDMA_WRITE);
}
