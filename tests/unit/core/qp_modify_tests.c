/* ur_qp_modify() on real QPs: the table in action, value checks, path MTU
 * against the port, GID errors at RTR, and that a refused modify changes
 * nothing. */

struct q_env {
	struct ur_context *ctx;
	struct ur_pd *pd;
	struct ur_cq *cq;
	struct ur_xrcd *xrcd;
	struct ur_qp *qp;
};

static struct ur_device *q_dev;

static int q_open(struct q_env *q, enum ibv_qp_type t)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = 16 };
	struct ibv_qp_init_attr_ex a = { .qp_type = t };

	memset(q, 0, sizeof(*q));
	if (!q_dev)
		q_dev = ur_device_by_name("ut0");
	q->ctx = ut_context_open(q_dev);
	q->pd = ut_pd(q->ctx);
	q->cq = ut_cq(q->ctx, &ca);
	if (t == IBV_QPT_XRC_RECV) {
		struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_OFLAGS,
						 .oflags = O_CREAT };

		q->xrcd = ut_xrcd(q->ctx, &xa);
		a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
		a.xrcd = &q->xrcd->ibxrcd;
	} else {
		a.comp_mask = IBV_QP_INIT_ATTR_PD;
		a.pd = &q->pd->ibpd;
		a.send_cq = a.recv_cq = (struct ibv_cq *)&q->cq->ibcq;
		a.cap.max_send_wr = a.cap.max_recv_wr = 4;
		a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	}
	q->qp = ut_qp(q->ctx, &a);
	UT_CHECK(q->qp != NULL);
	return q->qp ? 0 : -1;
}

static void q_close(struct q_env *q)
{
	if (q->qp)
		UT_EQ(ur_qp_destroy(q->qp), 0);
	if (q->xrcd)
		UT_EQ(ur_xrcd_close(q->xrcd), 0);
	UT_EQ(ur_cq_destroy(q->cq), 0);
	UT_EQ(ur_pd_dealloc(q->pd), 0);
	ur_context_close(q->ctx);
}

/* Valid values for every attribute. */
static struct ibv_qp_attr q_attrs(enum ibv_qp_state next)
{
	struct ibv_qp_attr a = { .qp_state = next };
	struct in_addr lo = { htonl(INADDR_LOOPBACK) };

	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qkey = 0x1234;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 64;
	ur_gid_from_v4(&a.ah_attr.grh.dgid, lo);
	a.path_mtu = IBV_MTU_1024;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.rq_psn = 0x10;
	a.max_rd_atomic = 4;
	a.min_rnr_timer = 12;
	a.sq_psn = 0x20;
	a.max_dest_rd_atomic = 4;
	a.dest_qp_num = 0x4242;
	a.en_sqd_async_notify = 1;
	a.path_mig_state = IBV_MIG_MIGRATED;
	return a;
}

/* Drives a QP along RESET -> INIT -> RTR -> RTS (and the self loops),
 * checking at each step that a missing required bit and an extra bit are
 * refused without a change, then that exactly required (+ optional) goes
 * through. */
static void walk(enum ibv_qp_type t)
{
	static const enum ibv_qp_state path[][2] = {
		{ IBV_QPS_RESET, IBV_QPS_INIT }, { IBV_QPS_INIT, IBV_QPS_INIT },
		{ IBV_QPS_INIT, IBV_QPS_RTR },   { IBV_QPS_RTR, IBV_QPS_RTS },
		{ IBV_QPS_RTS, IBV_QPS_RTS },
	};
	struct q_env q;

	if (q_open(&q, t))
		return;
	for (unsigned i = 0; i < UR_ARRAY_SIZE(path); i++) {
		enum ibv_qp_state cur = path[i][0], next = path[i][1];
		struct expect e = expected(cur, next, t);
		struct ibv_qp_attr a = q_attrs(next);
		int usable = e.opt & ~(ALT | MIG);       /* APM is not offered */
		int before = ut_failures;

		a.cur_qp_state = cur;
		UT_EQ(q.qp->state, cur);
		for (unsigned b = 0; b < UR_ARRAY_SIZE(all_bits); b++) {
			int bit = all_bits[b];

			if (e.req & bit) {
				UT_EQ(ur_qp_modify(q.qp, &a, S | (e.req & ~bit)), -EINVAL);
				UT_EQ(q.qp->state, cur);
			} else if (!(e.opt & bit)) {
				UT_EQ(ur_qp_modify(q.qp, &a, S | e.req | bit), -EINVAL);
				UT_EQ(q.qp->state, cur);
			}
		}
		/* A state that is not the QP's. */
		if (e.opt & CUR) {
			a.cur_qp_state = IBV_QPS_SQD;
			UT_EQ(ur_qp_modify(q.qp, &a, S | e.req | CUR), -EINVAL);
			a.cur_qp_state = cur;
		}
		UT_EQ(ur_qp_modify(q.qp, &a, S | e.req | usable), 0);
		UT_EQ(q.qp->state, next);
		UT_EQ(q.qp->qpx.qp_base.state, next);
		if (ut_failures != before)
			fprintf(stderr, "  (%s %s -> %s)\n", type_name[t], ur_qp_state_name[cur],
				ur_qp_state_name[next]);
	}
	/* What was set is what ibv_query_qp reports. */
	{
		struct ibv_qp_attr got;
		struct ibv_qp_init_attr init;

		UT_EQ(ur_qp_query(q.qp, &got, 0, &init), 0);
		UT_EQ(got.qp_state, IBV_QPS_RTS);
		UT_EQ(got.port_num, 1);
		UT_EQ(got.sq_psn, 0x20);
		UT_EQ(init.qp_type, t);
		if (t != IBV_QPT_UD) {
			UT_EQ(got.dest_qp_num, 0x4242);
			UT_EQ(got.rq_psn, 0x10);
			UT_EQ(got.path_mtu, IBV_MTU_1024);
			UT_EQ(got.qp_access_flags, IBV_ACCESS_REMOTE_WRITE);
			UT_EQ(q.qp->mtu, 1024);
		} else {
			UT_EQ(got.qkey, 0x1234);
		}
	}
	/* Not offered: the drain state and alternate paths. */
	{
		struct ibv_qp_attr a = q_attrs(IBV_QPS_SQD);

		UT_EQ(ur_qp_modify(q.qp, &a, S), -EOPNOTSUPP);
		UT_EQ(q.qp->state, IBV_QPS_RTS);
		if (t != IBV_QPT_UD) {
			a = q_attrs(IBV_QPS_RTS);
			UT_EQ(ur_qp_modify(q.qp, &a, S | ALT), -EOPNOTSUPP);
			UT_EQ(ur_qp_modify(q.qp, &a, S | MIG), -EOPNOTSUPP);
		}
	}
	/* RTS -> ERR -> ERR -> RESET -> INIT again. */
	{
		struct ibv_qp_attr a = q_attrs(IBV_QPS_ERR);

		UT_EQ(ur_qp_modify(q.qp, &a, S), 0);
		UT_EQ(q.qp->state, IBV_QPS_ERR);
		UT_EQ(ur_qp_modify(q.qp, &a, S), 0);
		a = q_attrs(IBV_QPS_RTS);
		UT_EQ(ur_qp_modify(q.qp, &a, S | expected(IBV_QPS_RTR, IBV_QPS_RTS, t).req), -EINVAL);
		a = q_attrs(IBV_QPS_RESET);
		UT_EQ(ur_qp_modify(q.qp, &a, S), 0);
		UT_EQ(q.qp->state, IBV_QPS_RESET);
		a = q_attrs(IBV_QPS_ERR);
		UT_EQ(ur_qp_modify(q.qp, &a, S), -EINVAL);      /* RESET -> ERR does not exist */
		a = q_attrs(IBV_QPS_INIT);
		UT_EQ(ur_qp_modify(q.qp, &a, S | expected(IBV_QPS_RESET, IBV_QPS_INIT, t).req), 0);
	}
	q_close(&q);
}

static void test_modify_walk(void)
{
	for (unsigned ti = 0; ti < UR_ARRAY_SIZE(qp_types); ti++)
		walk(qp_types[ti]);
}

/* Moves an RC QP to INIT. */
static void to_init(struct q_env *q)
{
	struct ibv_qp_attr a = q_attrs(IBV_QPS_INIT);

	UT_EQ(ur_qp_modify(q->qp, &a, S | PKEY | PORT | ACC), 0);
}

#define RTR_MASK (S | AV | MTU | DQPN | RQPSN | DRD | RNRT)
#define RTS_MASK (S | TMO | RETRY | RNRR | SQPSN | IRD)

/* Attribute values: each bad one refused, the QP unchanged. */
static void test_modify_values(void)
{
	static const char *const bad[] = { "port 2", "pkey index 1", "unknown access bit" };
	struct q_env q;
	struct ibv_qp_attr a;

	if (q_open(&q, IBV_QPT_RC))
		return;
	for (unsigned i = 0; i < UR_ARRAY_SIZE(bad); i++) {
		a = q_attrs(IBV_QPS_INIT);
		if (i == 0)
			a.port_num = 2;
		else if (i == 1)
			a.pkey_index = 1;
		else
			a.qp_access_flags = 1u << 20;
		UT_EQ(ur_qp_modify(q.qp, &a, S | PKEY | PORT | ACC), -EINVAL);
		UT_EQ(q.qp->state, IBV_QPS_RESET);
		if (q.qp->state != IBV_QPS_RESET)
			fprintf(stderr, "  (%s)\n", bad[i]);
	}
	/* Port 0 is not port 1 either. */
	a = q_attrs(IBV_QPS_INIT);
	a.port_num = 0;
	UT_EQ(ur_qp_modify(q.qp, &a, S | PKEY | PORT | ACC), -EINVAL);
	to_init(&q);

	/* INIT -> RTR: MTU enum, rd_atomic limit. */
	a = q_attrs(IBV_QPS_RTR);
	a.path_mtu = 0;
	UT_EQ(ur_qp_modify(q.qp, &a, RTR_MASK), -EINVAL);
	a.path_mtu = IBV_MTU_4096 + 1;
	UT_EQ(ur_qp_modify(q.qp, &a, RTR_MASK), -EINVAL);
	a = q_attrs(IBV_QPS_RTR);
	a.max_dest_rd_atomic = 129;
	UT_EQ(ur_qp_modify(q.qp, &a, RTR_MASK), -EINVAL);
	a = q_attrs(IBV_QPS_RTR);
	a.min_rnr_timer = 32;
	UT_EQ(ur_qp_modify(q.qp, &a, RTR_MASK), -EINVAL);
	UT_EQ(q.qp->state, IBV_QPS_INIT);
	UT_EQ(q.qp->attr.dest_qp_num, 0);        /* nothing applied */
	UT_EQ(q.qp->resp.nres, 0);
	a = q_attrs(IBV_QPS_RTR);
	a.max_dest_rd_atomic = 0;                /* allowed: one slot anyway */
	UT_EQ(ur_qp_modify(q.qp, &a, RTR_MASK), 0);
	UT_EQ(q.qp->resp.nres, 1);

	/* RTR -> RTS: timeout, retry counts, rd_atomic limit. */
	for (int i = 0; i < 4; i++) {
		a = q_attrs(IBV_QPS_RTS);
		if (i == 0)
			a.timeout = 32;
		else if (i == 1)
			a.retry_cnt = 8;
		else if (i == 2)
			a.rnr_retry = 8;
		else
			a.max_rd_atomic = 129;
		UT_EQ(ur_qp_modify(q.qp, &a, RTS_MASK), -EINVAL);
		UT_EQ(q.qp->state, IBV_QPS_RTR);
	}
	a = q_attrs(IBV_QPS_RTS);
	a.timeout = 31;
	a.max_rd_atomic = 128;
	UT_EQ(ur_qp_modify(q.qp, &a, RTS_MASK), 0);
	UT_EQ(q.qp->attr.max_rd_atomic, 128);
	q_close(&q);
}

/* Path MTU against the port: on lo at MTU 1500 the active MTU is 1024. */
static void test_modify_path_mtu(void)
{
	struct q_env q;
	struct ibv_qp_attr a;
	struct ibv_port_attr port;

	UT_EQ(ut_if_mtu("lo", 1500), 0);
	if (q_open(&q, IBV_QPT_RC))
		goto out;
	q_dev->refreshed_ns = 0;                 /* re-read the interface now */
	ur_port_attr(q_dev, &port);
	UT_EQ(port.active_mtu, IBV_MTU_1024);
	to_init(&q);
	a = q_attrs(IBV_QPS_RTR);
	a.path_mtu = IBV_MTU_2048;
	UT_EQ(ur_qp_modify(q.qp, &a, RTR_MASK), -EINVAL);
	UT_EQ(q.qp->state, IBV_QPS_INIT);
	a.path_mtu = IBV_MTU_1024;
	UT_EQ(ur_qp_modify(q.qp, &a, RTR_MASK), 0);
	UT_EQ(q.qp->mtu, 1024);
	q_close(&q);
out:
	UT_EQ(ut_if_mtu("lo", 65536), 0);
	q_dev->refreshed_ns = 0;
	ur_port_attr(q_dev, &port);
	UT_EQ(port.active_mtu, IBV_MTU_4096);
}

/* At RTR a connected QP must be able to reach its peer. */
static void test_modify_rtr_gid_errors(void)
{
	enum { EMPTY_INDEX, NO_GRH, ZERO_DGID, FAMILY, AV_PORT, NO_ROUTE, NCASE };

	for (int c = 0; c < NCASE; c++) {
		struct q_env q;
		struct ibv_qp_attr a;
		struct in_addr far = { htonl(0x0a636363) };   /* 10.99.99.99: no route */

		if (q_open(&q, IBV_QPT_RC))
			return;
		to_init(&q);
		a = q_attrs(IBV_QPS_RTR);
		switch (c) {
		case EMPTY_INDEX:
			a.ah_attr.grh.sgid_index = UR_MAX_GID - 1;
			break;
		case NO_GRH:
			a.ah_attr.is_global = 0;
			break;
		case ZERO_DGID:
			memset(&a.ah_attr.grh.dgid, 0, sizeof(a.ah_attr.grh.dgid));
			break;
		case FAMILY:
			memset(&a.ah_attr.grh.dgid, 0, sizeof(a.ah_attr.grh.dgid));
			a.ah_attr.grh.dgid.raw[15] = 1;  /* ::1 from an IPv4 GID */
			break;
		case AV_PORT:
			a.ah_attr.port_num = 2;
			break;
		case NO_ROUTE:
			ur_gid_from_v4(&a.ah_attr.grh.dgid, far);
			break;
		}
		/* No route: ENETUNREACH, the kernel's route lookup error. */
		UT_EQ(ur_qp_modify(q.qp, &a, RTR_MASK), c == NO_ROUTE ? -ENETUNREACH : -EINVAL);
		UT_EQ(q.qp->state, IBV_QPS_INIT);
		if (q.qp->state != IBV_QPS_INIT)
			fprintf(stderr, "  (case %d)\n", c);
		q_close(&q);
	}
}

/* RTS -> RTS may change the access flags and the RNR timer; a UD QP's
 * Q_Key. */
static void test_modify_rts_rts(void)
{
	struct q_env q;
	struct ibv_qp_attr a;

	if (q_open(&q, IBV_QPT_RC))
		return;
	to_init(&q);
	a = q_attrs(IBV_QPS_RTR);
	UT_EQ(ur_qp_modify(q.qp, &a, RTR_MASK), 0);
	a = q_attrs(IBV_QPS_RTS);
	UT_EQ(ur_qp_modify(q.qp, &a, RTS_MASK), 0);
	a.qp_access_flags = IBV_ACCESS_REMOTE_READ;
	a.min_rnr_timer = 3;
	UT_EQ(ur_qp_modify(q.qp, &a, S | ACC | RNRT), 0);
	UT_EQ(q.qp->attr.qp_access_flags, IBV_ACCESS_REMOTE_READ);
	UT_EQ(q.qp->attr.min_rnr_timer, 3);
	/* ...without a state bit too. */
	a.qp_access_flags = 0;
	UT_EQ(ur_qp_modify(q.qp, &a, ACC), 0);
	UT_EQ(q.qp->attr.qp_access_flags, 0);
	UT_EQ(ur_qp_modify(q.qp, &a, SQPSN), -EINVAL);
	q_close(&q);
}

/* Creation refuses what the device cannot do. */
static void test_qp_create_limits(void)
{
	struct q_env q;
	struct ibv_qp_init_attr_ex a = { .qp_type = IBV_QPT_RC, .comp_mask = IBV_QP_INIT_ATTR_PD };

	if (q_open(&q, IBV_QPT_RC))
		return;
	a.pd = &q.pd->ibpd;
	a.send_cq = a.recv_cq = (struct ibv_cq *)&q.cq->ibcq;
	a.cap.max_send_wr = UR_MAX_QP_WR + 1;
	errno = 0;
	UT_CHECK(ut_qp(q.ctx, &a) == NULL);
	UT_EQ(errno, EINVAL);
	a.cap.max_send_wr = 1;
	a.cap.max_recv_sge = UR_MAX_SGE + 1;
	UT_CHECK(ut_qp(q.ctx, &a) == NULL);
	a.cap.max_recv_sge = 1;
	a.cap.max_inline_data = UR_MAX_INLINE + 1;
	UT_CHECK(ut_qp(q.ctx, &a) == NULL);
	a.cap.max_inline_data = 0;
	a.qp_type = IBV_QPT_RAW_PACKET;
	errno = 0;
	UT_CHECK(ut_qp(q.ctx, &a) == NULL);
	UT_EQ(errno, EOPNOTSUPP);
	a.qp_type = IBV_QPT_RC;
	a.send_cq = NULL;
	UT_CHECK(ut_qp(q.ctx, &a) == NULL);
	q_close(&q);
}
