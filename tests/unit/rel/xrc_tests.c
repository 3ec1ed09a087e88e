/* XRC: an initiator QP (XRC_SEND) reaches a target QP (XRC_RECV), which
 * delivers each message into the XRC SRQ its XRCETH names; completions go
 * to that SRQ's CQ and carry the target QP's number. */

struct t_xrc {
	struct ur_context *actx, *bctx;
	struct ur_pd *apd, *bpd;
	struct ur_cq *acq, *bcq[2];
	struct ur_xrcd *xrcd;
	struct ur_srq *srq[2];
	struct ur_qp *ini, *tgt;
	struct t_mem sa, rb, tb;
};

/* An XRC SRQ of domain xrcd (max_wr receives of two pieces) completing on
 * cq, in ctx and pd. */
static struct ur_srq *t_xrc_srq(struct ur_context *ctx, struct ur_pd *pd, struct ur_xrcd *xrcd,
				struct ur_cq *cq, uint32_t max_wr)
{
	struct ibv_srq_init_attr_ex a = {
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
			     IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD,
		.srq_type = IBV_SRQT_XRC,
		.xrcd = &xrcd->ibxrcd,
		.cq = (struct ibv_cq *)&cq->ibcq,
		.pd = &pd->ibpd,
	};

	a.attr.max_wr = max_wr;
	a.attr.max_sge = 2;
	return ut_srq(ctx, pd, &a);
}

static int t_xrc_open(struct t_xrc *x)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = 64 };
	struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_OFLAGS, .oflags = O_CREAT };
	struct ibv_qp_init_attr_ex qa = { 0 };
	struct t_opts o = { .mtu = IBV_MTU_256 };
	struct t_side sa = { 0 }, sb = { 0 };
	int ret;

	memset(x, 0, sizeof(*x));
	t_net_reset();
	x->actx = ut_context_open(t_device());
	x->bctx = ut_context_open(t_device());
	x->apd = ut_pd(x->actx);
	x->bpd = ut_pd(x->bctx);
	x->acq = ut_cq(x->actx, &ca);
	x->bcq[0] = ut_cq(x->bctx, &ca);
	x->bcq[1] = ut_cq(x->bctx, &ca);
	x->xrcd = ut_xrcd(x->bctx, &xa);
	if (!x->xrcd)
		return -1;
	for (int i = 0; i < 2; i++) {
		x->srq[i] = t_xrc_srq(x->bctx, x->bpd, x->xrcd, x->bcq[i], 16);
		if (!x->srq[i])
			return -1;
	}
	UT_CHECK(x->srq[0]->srq_num != x->srq[1]->srq_num);
	qa.qp_type = IBV_QPT_XRC_SEND;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qa.pd = &x->apd->ibpd;
	qa.send_cq = (struct ibv_cq *)&x->acq->ibcq;
	qa.cap.max_send_wr = 16;
	qa.cap.max_send_sge = 2;
	x->ini = t_wr_ops(ut_qp(x->actx, &qa));
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_XRC_RECV;
	qa.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	qa.xrcd = &x->xrcd->ibxrcd;
	x->tgt = ut_qp(x->bctx, &qa);
	if (!x->ini || !x->tgt)
		return -1;
	ret = t_to_init(x->ini, T_ALL_ACCESS);
	if (!ret)
		ret = t_to_init(x->tgt, T_ALL_ACCESS);
	if (!ret)
		ret = t_connect(x->ini, ur_qp_num(x->tgt), 0, 0, &o);
	if (!ret)
		ret = t_connect(x->tgt, ur_qp_num(x->ini), 0, 0, &o);
	UT_EQ(ret, 0);
	sa.pd = x->apd;
	sb.pd = x->bpd;
	t_mem_reg(&x->sa, &sa, 2048, IBV_ACCESS_LOCAL_WRITE, 1);
	t_mem_reg(&x->rb, &sb, 2048, IBV_ACCESS_LOCAL_WRITE, 2);
	t_mem_reg(&x->tb, &sb, 2048, T_ALL_ACCESS, 3);
	return ret;
}

static void t_xrc_close(struct t_xrc *x)
{
	t_mem_free(&x->sa);
	t_mem_free(&x->rb);
	t_mem_free(&x->tb);
	t_destroy(ur_qp_destroy, x->ini);
	t_destroy(ur_qp_destroy, x->tgt);
	for (int i = 0; i < 2; i++)
		t_destroy(ur_srq_destroy, x->srq[i]);
	t_destroy(ur_xrcd_close, x->xrcd);
	t_destroy(ur_cq_destroy, x->acq);
	for (int i = 0; i < 2; i++)
		t_destroy(ur_cq_destroy, x->bcq[i]);
	t_destroy(ur_pd_dealloc, x->apd);
	t_destroy(ur_pd_dealloc, x->bpd);
	if (x->actx)
		ur_context_close(x->actx);
	if (x->bctx)
		ur_context_close(x->bctx);
	t_net_reset();
}

/* T_XRC_TEST's opening: t_xrc_open, and t_xrc_close at once if it fails. */
static int t_xrc_fixture_open(struct t_xrc *x)
{
	int ret = t_xrc_open(x);

	if (ret)
		t_xrc_close(x);
	return ret;
}

/* A test on t_xrc_open's domain, QPs and buffers: x. */
#define T_XRC_TEST(name) \
	T_FIXTURE_TEST(name, struct t_xrc, x, t_xrc_fixture_open, t_xrc_close)

static int t_xrc_send(struct t_xrc *x, uint64_t wr_id, enum ibv_wr_opcode op, uint32_t off,
		      uint32_t len, uint32_t srqn)
{
	struct ibv_sge sge = { (uintptr_t)x->sa.buf + off, len, x->sa.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED };

	wr.qp_type.xrc.remote_srqn = srqn;
	wr.wr.rdma.remote_addr = (uintptr_t)x->tb.buf;
	wr.wr.rdma.rkey = x->tb.mr->rkey;
	return t_post(x->ini, &wr);
}

static int t_xrc_recv(struct t_xrc *x, int i, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)x->rb.buf + off, len, x->rb.mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ur_srq_post_recv(x->srq[i], &wr, &bad);
}

T_XRC_TEST(test_xrc_delivery)
{
	struct ibv_wc wc;

	UT_EQ(t_xrc_recv(x, 0, 10, 0, 512), 0);
	UT_EQ(t_xrc_recv(x, 1, 11, 512, 512), 0);
	UT_EQ(t_xrc_send(x, 1, IBV_WR_SEND, 0, 300, x->srq[1]->srq_num), 0);
	UT_EQ(t_xrc_send(x, 2, IBV_WR_SEND_WITH_IMM, 300, 100, x->srq[0]->srq_num), 0);
	UT_EQ(t_count(), 3);
	UT_EQ(t_op(0), UR_OP_XRC_SEND_FIRST);
	UT_EQ(xrceth_srqn(t_hdr(t_pkt(0), UR_HDR_XRCETH)), x->srq[1]->srq_num);
	UT_EQ(xrceth_srqn(t_hdr(t_pkt(1), UR_HDR_XRCETH)), x->srq[1]->srq_num);
	UT_EQ(t_op(2), UR_OP_XRC_SEND_ONLY_WITH_IMMEDIATE);
	UT_EQ(xrceth_srqn(t_hdr(t_pkt(2), UR_HDR_XRCETH)), x->srq[0]->srq_num);
	t_run();
	t_expect_wc(x->bcq[1], &wc, 11, IBV_WC_SUCCESS);
	UT_EQ(wc.byte_len, 300);
	UT_EQ(wc.qp_num, ur_qp_num(x->tgt));
	UT_EQ(wc.src_qp, ur_qp_num(x->ini));
	UT_MEMEQ(x->rb.buf + 512, x->sa.buf, 300);
	t_expect_wc(x->bcq[0], &wc, 10, IBV_WC_SUCCESS);
	UT_EQ(wc.byte_len, 100);
	UT_EQ(wc.wc_flags, IBV_WC_WITH_IMM);
	UT_EQ(wc.qp_num, ur_qp_num(x->tgt));
	UT_MEMEQ(x->rb.buf, x->sa.buf + 300, 100);
	t_expect_ok(x->acq, &wc, 1, 2);
	/* RDMA WRITE and READ through the target, in the SRQ's PD. */
	UT_EQ(t_xrc_send(x, 3, IBV_WR_RDMA_WRITE, 0, 600, x->srq[0]->srq_num), 0);
	t_run();
	t_expect_wc(x->acq, &wc, 3, IBV_WC_SUCCESS);
	UT_MEMEQ(x->tb.buf, x->sa.buf, 600);
	UT_EQ(t_xrc_send(x, 4, IBV_WR_RDMA_READ, 1024, 600, x->srq[1]->srq_num), 0);
	t_run();
	t_expect_wc(x->acq, &wc, 4, IBV_WC_SUCCESS);
	UT_MEMEQ(x->sa.buf + 1024, x->tb.buf, 600);
	UT_CHECK(t_cq_empty(x->bcq[0]));
	UT_CHECK(t_cq_empty(x->bcq[1]));
	UT_EQ(x->tgt->state, IBV_QPS_RTR);
}

/* An SRQ number the domain does not have: refused with NAK invalid
 * request; nothing is delivered anywhere. */
static void test_xrc_unknown_srq(void)
{
	struct t_xrc x;
	struct ibv_wc wc;
	uint32_t bogus;

	if (t_xrc_open(&x))
		goto out;
	bogus = (x.srq[0]->srq_num ^ x.srq[1]->srq_num) | 0x800000;
	UT_EQ(t_xrc_recv(&x, 0, 10, 0, 512), 0);
	UT_EQ(t_xrc_send(&x, 1, IBV_WR_SEND, 0, 10, bogus), 0);
	t_deliver(0);
	UT_EQ(t_count(), 1);
	UT_EQ(t_op(0), UR_OP_XRC_ACKNOWLEDGE);
	UT_EQ(t_syn(0), UR_NAK_INVALID_REQ);
	t_run();
	t_expect_wc(x.acq, &wc, 1, IBV_WC_REM_INV_REQ_ERR);
	UT_EQ(x.ini->state, IBV_QPS_ERR);
	UT_CHECK(t_cq_empty(x.bcq[0]));
	UT_CHECK(t_cq_empty(x.bcq[1]));
	UT_EQ(x.srq[0]->rq.tail - x.srq[0]->rq.head, 1);
	t_xrc_close(&x);

	/* The same after a good message: now the target fails too. */
	if (t_xrc_open(&x))
		goto out;
	UT_EQ(t_xrc_recv(&x, 0, 10, 0, 512), 0);
	UT_EQ(t_xrc_send(&x, 1, IBV_WR_SEND, 0, 10, x.srq[0]->srq_num), 0);
	UT_EQ(t_xrc_send(&x, 2, IBV_WR_SEND, 0, 10, bogus), 0);
	t_run();
	t_expect_wc(x.bcq[0], &wc, 10, IBV_WC_SUCCESS);
	t_expect_wc(x.acq, &wc, 1, IBV_WC_SUCCESS);
	t_expect_wc(x.acq, &wc, 2, IBV_WC_REM_INV_REQ_ERR);
out:
	t_xrc_close(&x);
}

/* An XRC SRQ of another domain is as unknown as a missing one. */
static void test_xrc_other_domain(void)
{
	struct t_xrc x;
	struct ibv_wc wc;
	struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_OFLAGS, .oflags = O_CREAT };
	struct ur_xrcd *other;
	struct ur_srq *srq;
	struct ibv_srq_init_attr_ex s = {
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC,
	};

	if (t_xrc_open(&x))
		goto out;
	other = ut_xrcd(x.bctx, &xa);
	UT_CHECK(other && other != x.xrcd);
	s.xrcd = &other->ibxrcd;
	s.cq = (struct ibv_cq *)&x.bcq[0]->ibcq;
	s.attr.max_wr = 4;
	srq = ut_srq(x.bctx, x.bpd, &s);
	UT_CHECK(srq != NULL);
	UT_EQ(t_xrc_send(&x, 1, IBV_WR_SEND, 0, 10, srq->srq_num), 0);
	t_run();
	t_expect_wc(x.acq, &wc, 1, IBV_WC_REM_INV_REQ_ERR);
	UT_CHECK(t_cq_empty(x.bcq[0]));
	UT_EQ(ur_srq_destroy(srq), 0);
	UT_EQ(ur_xrcd_close(other), 0);
out:
	t_xrc_close(&x);
}
