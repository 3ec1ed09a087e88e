/* XRC domains (shared by the file they were opened with), SRQs (limits,
 * queue depth, destroy while in use) and the use counts that make
 * destroying a PD, CQ or SRQ in use fail with EBUSY. */

static void test_xrcd_open_close(void)
{
	struct q_env q;
	char path[] = "/tmp/ut-xrcd-XXXXXX";
	int fd = mkstemp(path);
	struct ibv_xrcd_init_attr a = { .comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS };
	struct ur_xrcd *x1, *x2;

	UT_CHECK(fd >= 0);
	if (q_open(&q, IBV_QPT_RC))
		goto out;
	/* No such domain yet and no O_CREAT: ENOENT. */
	a.fd = fd;
	a.oflags = 0;
	errno = 0;
	UT_EQ(ut_xrcd(q.ctx, &a), NULL);
	UT_EQ(errno, ENOENT);
	a.oflags = O_CREAT;
	x1 = ut_xrcd(q.ctx, &a);
	UT_CHECK(x1 != NULL);
	/* The same file: the same domain. */
	x2 = ut_xrcd(q.ctx, &a);
	UT_EQ(x2, x1);
	a.oflags = O_CREAT | O_EXCL;
	errno = 0;
	UT_EQ(ut_xrcd(q.ctx, &a), NULL);
	UT_EQ(errno, EEXIST);
	/* Anonymous: only with O_CREAT; each one new. */
	a.comp_mask = IBV_XRCD_INIT_ATTR_OFLAGS;
	a.oflags = 0;
	errno = 0;
	UT_EQ(ut_xrcd(q.ctx, &a), NULL);
	UT_EQ(errno, EINVAL);
	a.comp_mask = 1u << 7;
	UT_EQ(ut_xrcd(q.ctx, &a), NULL);
	/* In use by an SRQ: the last close fails until it goes. */
	{
		struct ibv_srq_init_attr_ex s = {
			.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
			.srq_type = IBV_SRQT_XRC, .xrcd = &x1->ibxrcd,
			.cq = (struct ibv_cq *)&q.cq->ibcq,
		};
		struct ur_srq *srq;

		s.attr.max_wr = 4;
		srq = ut_srq(q.ctx, q.pd, &s);
		UT_CHECK(srq != NULL);
		UT_EQ(ur_xrcd_find_srq(x1, srq->srq_num), srq);
		UT_EQ(ur_xrcd_close(x1), 0);          /* two opens: one goes */
		UT_EQ(ur_xrcd_close(x1), -EBUSY);     /* the last: in use */
		UT_EQ(ur_cq_destroy(q.cq), -EBUSY);   /* the SRQ's CQ too */
		{
			uint32_t num = srq->srq_num;

			UT_EQ(ur_srq_destroy(srq), 0);
			UT_EQ(ur_xrcd_find_srq(x1, num), NULL);
		}
		UT_EQ(ur_xrcd_close(x1), 0);
	}
	/* Gone: the file opens no domain any more. */
	a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	a.oflags = 0;
	UT_EQ(ut_xrcd(q.ctx, &a), NULL);
	q_close(&q);
out:
	close(fd);
	unlink(path);
}

static void test_srq_limits(void)
{
	struct q_env q;
	struct ibv_srq_init_attr_ex s = { 0 };
	struct ur_srq *srq;
	struct ibv_sge sge[UR_MAX_SRQ_SGE + 1] = { 0 };
	struct ibv_recv_wr wr = { .sg_list = sge, .num_sge = 1 }, *bad;
	struct ibv_srq_attr at;

	if (q_open(&q, IBV_QPT_RC))
		return;
	s.attr.max_wr = 0;
	errno = 0;
	UT_EQ(ut_srq(q.ctx, q.pd, &s), NULL);
	UT_EQ(errno, EINVAL);
	s.attr.max_wr = UR_MAX_SRQ_WR + 1;
	UT_EQ(ut_srq(q.ctx, q.pd, &s), NULL);
	s.attr.max_wr = 4;
	s.attr.max_sge = UR_MAX_SRQ_SGE + 1;
	UT_EQ(ut_srq(q.ctx, q.pd, &s), NULL);
	s.attr.max_sge = 2;
	s.attr.srq_limit = 5;                 /* above max_wr */
	UT_EQ(ut_srq(q.ctx, q.pd, &s), NULL);
	s.attr.srq_limit = 0;
	s.comp_mask = IBV_SRQ_INIT_ATTR_TYPE;
	s.srq_type = IBV_SRQT_TM;             /* tag matching without its tags and CQ */
	UT_EQ(ur_srq_tm_create(q.ctx, q.pd, &s, &srq), -EINVAL);
	s.srq_type = IBV_SRQT_XRC;           /* XRC without a domain */
	errno = 0;
	UT_EQ(ut_srq(q.ctx, q.pd, &s), NULL);
	UT_EQ(errno, EINVAL);
	s.comp_mask = 0;
	srq = ut_srq(q.ctx, q.pd, &s);
	UT_CHECK(srq != NULL);
	UT_EQ(ur_srq_query(srq, &at), 0);
	UT_EQ(at.max_wr, 4);
	UT_EQ(at.max_sge, 2);
	/* Depth and SGE count. */
	wr.num_sge = 3;
	UT_EQ(ur_srq_post_recv(srq, &wr, &bad), -EINVAL);
	wr.num_sge = 1;
	for (int i = 0; i < 4; i++)
		UT_EQ(ur_srq_post_recv(srq, &wr, &bad), 0);
	UT_EQ(ur_srq_post_recv(srq, &wr, &bad), -ENOMEM);
	UT_EQ(bad, &wr);
	/* A QP on it: the SRQ and the PD cannot go while it exists; the QP
	 * has no receive queue of its own. */
	{
		struct ibv_qp_init_attr_ex qa = { .qp_type = IBV_QPT_RC,
						  .comp_mask = IBV_QP_INIT_ATTR_PD };
		struct ur_qp *qp;

		qa.pd = &q.pd->ibpd;
		qa.send_cq = (struct ibv_cq *)&q.cq->ibcq;
		qa.srq = &srq->ibsrq;
		qa.cap.max_send_wr = 1;
		qa.cap.max_recv_wr = 10;
		qp = ut_qp(q.ctx, &qa);
		UT_CHECK(qp != NULL);
		UT_EQ(qa.cap.max_recv_wr, 0);
		UT_EQ(ur_qp_post_recv(qp, &wr, &bad), -EINVAL);
		UT_EQ(ur_srq_destroy(srq), -EBUSY);
		UT_EQ(ur_pd_dealloc(q.pd), -EBUSY);
		UT_EQ(ur_qp_destroy(qp), 0);
	}
	UT_EQ(ur_srq_destroy(srq), 0);
	q_close(&q);
}
