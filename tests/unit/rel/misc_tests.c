/* The stack's receive dispatch (and what it refuses, a connected QP's
 * packet from another address than its peer's counted and told),
 * multicast fan-out to attached UD QPs, the SRQ limit event, and the
 * ibv_wr_* builder (qp_wr.c) producing the same packets as ibv_post_send. */

/* What the dispatch refuses never reaches a QP's protocol state. */
T_PAIR_TEST(test_dispatch_drops, 0, 64, IBV_ACCESS_LOCAL_WRITE, 0)
{
	uint64_t malformed = t_stack()->malformed, no_qp = t_stack()->no_qp;
	uint8_t junk[5] = { 0 }, pl[8] = { 0 };
	struct t_pkt *k;
	struct ur_rx_meta m;

	UT_EQ(t_post_recv_mem(&p->b, 1, 0, 64), 0);
	t_meta(&m);
	/* Too short to parse. */
	ur_recv_packet(t_stack(), junk, sizeof(junk), &m);
	UT_EQ(t_stack()->malformed, malformed + 1);
	/* A QPN nobody here has. */
	t_inject(t_build(UR_OP_RC_SEND_ONLY, 0x00ff00, 0, true, pl, 8));
	UT_EQ(t_stack()->no_qp, no_qp + 1);
	/* Another P_Key, another transport: dropped, counted, not answered,
	 * not executed.  Another peer: the same, counted as wrong_peer. */
	k = t_build(UR_OP_RC_SEND_ONLY, ur_qp_num(p->b.qp), 0, true, pl, 8);
	bth_set_pkey(k->buf, 0x7fff);
	t_inject(k);
	t_inject(t_build(UR_OP_UC_SEND_ONLY, ur_qp_num(p->b.qp), 0, false, pl, 8));
	k = t_build(UR_OP_RC_SEND_ONLY, ur_qp_num(p->b.qp), 0, true, pl, 8);
	m.sgid.raw[15] = 2;            /* 127.0.0.2: not the peer */
	ur_recv_packet(t_stack(), k->buf, k->len, &m);
	free(k);
	UT_EQ(p->b.qp->cnt[UR_CNT_DROPPED], 2);
	UT_EQ(p->b.qp->cnt[UR_CNT_WRONG_PEER], 1);
	UT_EQ(t_count(), 0);
	UT_EQ(p->b.qp->resp.psn, 0);
	UT_CHECK(t_cq_empty(p->b.rcq));
	UT_CHECK(t_mem_intact(&p->b.mem, 2));
	/* The real thing goes through. */
	t_inject(t_build(UR_OP_RC_SEND_ONLY, ur_qp_num(p->b.qp), 0, true, pl, 8));
	UT_EQ(p->b.qp->resp.psn, 1);
	UT_EQ(t_count(), 1);
}

/* A packet from another address than a connected QP's peer (rxe's
 * check_addr): counted as wrong_peer on the QP and the device, not
 * answered, not executed, and told in a warning naming both addresses, at
 * most 10 a second however many come; before RTR the QP has no peer and
 * such a packet is only dropped. */
static void test_wrong_peer(void)
{
	struct t_opts o = { 0 };
	struct t_pair p;
	struct t_mem rb;
	uint8_t pl[8] = { 0 };
	uint64_t dev_before;
	struct ur_rx_meta m;
	char line[256];
	unsigned lines = 0, named = 0;
	int saved_level = ur_log_level, saved_err = dup(2);
	FILE *log = tmpfile();

	if (!log || saved_err < 0 || t_pair_open(&p, &o))
		return;
	t_mem_reg(&rb, &p.b, 64, IBV_ACCESS_LOCAL_WRITE, 2);
	UT_EQ(t_post_recv(&p.b, 1, rb.buf, 64, rb.mr->lkey), 0);
	dev_before = p.b.qp->ctx->dev->cnt[UR_CNT_WRONG_PEER];
	t_meta(&m);
	m.sgid.raw[15] = 9;              /* 127.0.0.9: not the peer */
	ur_log_level = UR_LOG_WARN;
	fflush(stderr);
	dup2(fileno(log), 2);
	for (int i = 0; i < 50; i++) {
		struct t_pkt *k = t_build(UR_OP_RC_SEND_ONLY, ur_qp_num(p.b.qp), 0, true, pl, 8);

		ur_recv_packet(t_stack(), k->buf, k->len, &m);
		free(k);
	}
	fflush(stderr);
	dup2(saved_err, 2);
	close(saved_err);
	ur_log_level = saved_level;
	UT_EQ(p.b.qp->cnt[UR_CNT_WRONG_PEER], 50);
	UT_EQ(p.b.qp->ctx->dev->cnt[UR_CNT_WRONG_PEER], dev_before + 50);
	UT_EQ(p.b.qp->cnt[UR_CNT_DROPPED], 0);
	UT_EQ(t_count(), 0);
	UT_EQ(p.b.qp->resp.psn, 0);
	UT_CHECK(t_cq_empty(p.b.rcq));
	UT_CHECK(t_mem_intact(&rb, 2));
	rewind(log);
	while (fgets(line, sizeof(line), log)) {
		lines++;
		named += strstr(line, "from ::ffff:127.0.0.9: its peer is ::ffff:127.0.0.1") != NULL;
	}
	fclose(log);
	/* One second's 10 (two if the second turned over mid-loop). */
	UT_CHECK(lines >= 1 && lines <= 20);
	UT_EQ(named, lines);
	/* The peer still goes through. */
	t_inject(t_build(UR_OP_RC_SEND_ONLY, ur_qp_num(p.b.qp), 0, true, pl, 8));
	UT_EQ(p.b.qp->resp.psn, 1);
	t_mem_free(&rb);
	t_pair_close(&p);
}

/* Datagrams to the multicast QPN reach every QP attached to the group
 * they were sent to, and only those. */
static void test_mcast_fanout(void)
{
	struct t_ud u, v;
	struct t_mem rb1, rb2, sa;
	union ibv_gid grp;
	struct in_addr g4 = { htonl(0xef010203) };   /* 239.1.2.3 */
	struct ur_rx_meta m;
	struct ibv_wc wc;
	struct ur_reg_owner own[4];
	uint8_t pl[16];

	memset(pl, 0x6d, sizeof(pl));
	ur_gid_from_v4(&grp, g4);
	if (t_ud_open(&u, false))
		return;
	if (t_ud_open(&v, false))
		goto out_u;
	t_mem_reg(&sa, &u.a, 64, IBV_ACCESS_LOCAL_WRITE, 1);
	t_mem_reg(&rb1, &u.b, 256, IBV_ACCESS_LOCAL_WRITE, 2);
	t_mem_reg(&rb2, &v.b, 256, IBV_ACCESS_LOCAL_WRITE, 3);
	UT_EQ(ur_mcast_attach(u.b.qp, &grp), 0);
	UT_EQ(ur_mcast_attach(u.b.qp, &grp), 0);      /* twice: harmless */
	UT_EQ(ur_mcast_attach(v.b.qp, &grp), 0);
	{
		union ibv_gid unicast;
		struct in_addr lo = { htonl(INADDR_LOOPBACK) };

		ur_gid_from_v4(&unicast, lo);
		UT_EQ(ur_mcast_attach(u.a.qp, &unicast), -EINVAL);   /* not a group */
	}
	UT_EQ(ur_registry_mcast_members(t_stack()->reg, &grp, own, 4), 1);  /* this process, once */
	for (int i = 0; i < 3; i++) {
		UT_EQ(t_post_recv(&u.b, 10 + i, rb1.buf, 256, rb1.mr->lkey), 0);
		UT_EQ(t_post_recv(&v.b, 20 + i, rb2.buf, 256, rb2.mr->lkey), 0);
	}
	t_meta(&m);
	m.dgid = grp;
	{
		struct t_pkt *k = t_build(UR_OP_UD_SEND_ONLY, UR_MCAST_QPN, 0, false, pl, 16);

		deth_set_qkey(t_hdr(k, UR_HDR_DETH), T_QKEY);
		deth_set_sqp(t_hdr(k, UR_HDR_DETH), ur_qp_num(u.a.qp));
		ur_recv_packet(t_stack(), k->buf, k->len, &m);
		t_expect_wc(u.b.rcq, &wc, 10, IBV_WC_SUCCESS);
		UT_EQ(wc.byte_len, 40 + 16);
		t_expect_wc(v.b.rcq, &wc, 20, IBV_WC_SUCCESS);
		UT_CHECK(t_cq_empty(u.a.rcq));
		/* Detached: only the other one. */
		UT_EQ(ur_mcast_detach(u.b.qp, &grp), 0);
		UT_EQ(ur_mcast_detach(u.b.qp, &grp), -EINVAL);
		ur_recv_packet(t_stack(), k->buf, k->len, &m);
		UT_CHECK(t_cq_empty(u.b.rcq));
		t_expect_wc(v.b.rcq, &wc, 21, IBV_WC_SUCCESS);
		/* Another group: nobody. */
		m.dgid.raw[15] ^= 1;
		ur_recv_packet(t_stack(), k->buf, k->len, &m);
		UT_CHECK(t_cq_empty(v.b.rcq));
		free(k);
	}
	t_mem_free(&sa);
	t_mem_free(&rb1);
	t_mem_free(&rb2);
	t_ud_close(&v);         /* destroying the last attached QP leaves the group */
	UT_EQ(ur_registry_mcast_members(t_stack()->reg, &grp, own, 4), 0);
out_u:
	t_ud_close(&u);
}

/* An armed SRQ limit raises SRQ_LIMIT_REACHED once, when the level drops
 * below it, and disarms. */
T_PAIR_TEST(test_srq_limit, 64, 256, IBV_ACCESS_LOCAL_WRITE, .srq_b = true)
{
	struct ibv_srq_attr sa_attr = { .srq_limit = 2 };
	struct ibv_async_event ev;
	int n = 0;

	for (int i = 0; i < 3; i++)
		UT_EQ(t_post_recv_mem(&p->b, i, 64 * i, 64), 0);
	UT_EQ(ur_srq_modify(p->b.srq, &sa_attr, IBV_SRQ_LIMIT), 0);
	sa_attr.srq_limit = 100;
	UT_EQ(ur_srq_modify(p->b.srq, &sa_attr, IBV_SRQ_LIMIT), -EINVAL);
	UT_EQ(ur_srq_modify(p->b.srq, &sa_attr, IBV_SRQ_MAX_WR), -EOPNOTSUPP);
	t_async_count(p->b.ctx, IBV_EVENT_COMM_EST, NULL);
	for (int i = 0; i < 3; i++) {
		UT_EQ(t_post_send_mem(&p->a, 10 + i, IBV_WR_SEND, 0, 8, 0), 0);
		t_run();
		while (t_async(p->b.ctx, &ev))
			if (ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED) {
				UT_EQ(ev.element.srq, &p->b.srq->ibsrq);
				UT_EQ(i, 1);        /* 3 -> 2 is not below 2; 2 -> 1 is */
				n++;
			}
	}
	UT_EQ(n, 1);
	UT_EQ(p->b.srq->limit, 0);
}

/* The builder: the same packets as ibv_post_send, a failed batch posts
 * nothing, an aborted one neither. */
T_PAIR_TEST(test_wr_builder, 0, 0, 0, .max_inline = 32, .max_wr = 4)
{
	struct t_mem la, tb;
	struct ibv_qp_ex *x;
	struct ibv_wc wc;
	uint64_t *counter;

	x = &p->a.qp->qpx;
	t_mem_reg(&la, &p->a, 1024, IBV_ACCESS_LOCAL_WRITE, 1);
	t_mem_reg(&tb, &p->b, 1024, T_ALL_ACCESS, 2);
	counter = (uint64_t *)(tb.buf + 512);
	*counter = 3;
	UT_EQ(t_post_recv(&p->b, 9, tb.buf + 768, 64, tb.mr->lkey), 0);

	x->wr_start(x);
	x->wr_id = 1;
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_rdma_write(x, tb.mr->rkey, (uintptr_t)tb.buf);
	x->wr_set_sge(x, la.mr->lkey, (uintptr_t)la.buf, 100);
	x->wr_id = 2;
	x->wr_atomic_fetch_add(x, tb.mr->rkey, (uintptr_t)counter, 4);
	x->wr_set_sge(x, la.mr->lkey, (uintptr_t)la.buf + 512, 8);
	x->wr_id = 3;
	x->wr_send_imm(x, htonl(77));
	x->wr_set_inline_data(x, "hello", 5);
	UT_EQ(t_count(), 0);          /* nothing before wr_complete */
	UT_EQ(x->wr_complete(x), 0);
	UT_EQ(t_count(), 3);
	UT_EQ(t_op(0), UR_OP_RC_RDMA_WRITE_ONLY);
	UT_EQ(t_op(1), UR_OP_RC_FETCH_ADD);
	UT_EQ(t_op(2), UR_OP_RC_SEND_ONLY_WITH_IMMEDIATE);
	t_run();
	t_expect_ok(p->a.scq, &wc, 1, 3);
	t_expect_wc(p->b.rcq, &wc, 9, IBV_WC_SUCCESS);
	UT_EQ(wc.imm_data, htonl(77));
	UT_MEMEQ(tb.buf + 768, "hello", 5);
	UT_MEMEQ(tb.buf, la.buf, 100);
	UT_EQ(*counter, 7);

	/* An error anywhere: the whole batch is dropped, the error returned. */
	x->wr_start(x);
	x->wr_id = 4;
	x->wr_send(x);
	x->wr_set_sge(x, la.mr->lkey, (uintptr_t)la.buf, 8);
	x->wr_id = 5;
	x->wr_send(x);
	/* The QP may hold more inline bytes than asked (its SGE list's room:
	 * 4 * 16 here), never fewer. */
	UT_EQ(p->a.qp->cap.max_inline_data, 64);
	x->wr_set_inline_data(x, la.buf, p->a.qp->cap.max_inline_data + 1);
	UT_EQ(x->wr_complete(x), EINVAL);
	UT_EQ(t_count(), 0);
	UT_EQ(p->a.qp->sq.tail, p->a.qp->sq.head);
	/* More than the queue holds. */
	x->wr_start(x);
	for (int i = 0; i < 5; i++) {
		x->wr_send(x);
		x->wr_set_sge(x, la.mr->lkey, (uintptr_t)la.buf, 8);
	}
	UT_EQ(x->wr_complete(x), ENOMEM);
	UT_EQ(t_count(), 0);
	/* Aborted: nothing. */
	x->wr_start(x);
	x->wr_send(x);
	x->wr_abort(x);
	UT_EQ(t_count(), 0);
	UT_EQ(p->a.qp->sq.tail, p->a.qp->sq.head);
	t_mem_free(&la);
	t_mem_free(&tb);
}

/* An XRC initiator does atomics and SEND with invalidate through the
 * builder as it does through ibv_post_send (XRC has those opcodes). */
T_XRC_TEST(test_wr_builder_xrc)
{
	struct ibv_qp_ex *q;
	struct ibv_wc wc;
	uint64_t *counter;

	q = &x->ini->qpx;
	counter = (uint64_t *)x->tb.buf;
	*counter = 1;
	q->wr_start(q);
	q->wr_id = 1;
	q->wr_flags = IBV_SEND_SIGNALED;
	q->wr_atomic_fetch_add(q, x->tb.mr->rkey, (uintptr_t)counter, 1);
	q->wr_set_sge(q, x->sa.mr->lkey, (uintptr_t)x->sa.buf, 8);
	q->wr_set_xrc_srqn(q, x->srq[0]->srq_num);
	UT_EQ(q->wr_complete(q), 0);
	t_run();
	t_expect_wc(x->acq, &wc, 1, IBV_WC_SUCCESS);
	UT_EQ(*counter, 2);
}

/* ibv_post_send / ibv_post_recv contracts: a bad WR stops the list there
 * (*bad points at it, the ones before it are posted), queues refuse
 * beyond their depth, opcodes the QP type lacks are refused. */
T_PAIR_TEST(test_post_validation, 256, 256, T_ALL_ACCESS, .max_wr = 2, .max_sge = 2)
{
	struct ibv_sge sge[3];
	struct ibv_send_wr w[3], *bad = NULL;
	struct ibv_recv_wr r[3], *rbad = NULL;
	struct ibv_wc wc;

	for (int i = 0; i < 3; i++)
		sge[i] = (struct ibv_sge){ (uintptr_t)p->a.mem.buf, 8, p->a.mem.mr->lkey };
	memset(w, 0, sizeof(w));
	for (int i = 0; i < 3; i++) {
		w[i].wr_id = (uint64_t)i;
		w[i].sg_list = sge;
		w[i].num_sge = 1;
		w[i].opcode = IBV_WR_RDMA_WRITE;
		w[i].send_flags = IBV_SEND_SIGNALED;
		w[i].wr.rdma.remote_addr = (uintptr_t)p->b.mem.buf;
		w[i].wr.rdma.rkey = p->b.mem.mr->rkey;
		w[i].next = i < 2 ? &w[i + 1] : NULL;
	}
	w[1].num_sge = 3;                         /* more than max_send_sge */
	UT_EQ(ur_qp_post_send(p->a.qp, w, &bad), -EINVAL);
	UT_EQ(bad, &w[1]);
	UT_EQ(p->a.qp->sq.tail - p->a.qp->sq.head, 1);
	t_run();
	t_expect_wc(p->a.scq, &wc, 0, IBV_WC_SUCCESS);
	UT_CHECK(t_cq_empty(p->a.scq));
	w[1].num_sge = 1;
	/* Depth: two fit, the third is refused with ENOMEM. */
	UT_EQ(ur_qp_post_send(p->a.qp, w, &bad), -ENOMEM);
	UT_EQ(bad, &w[2]);
	while (t_count())
		t_drop(0);
	/* Opcodes: an atomic needs one SGE of 8 bytes. */
	{
		struct ibv_send_wr a = { .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD, .sg_list = sge,
					 .num_sge = 1 };

		sge[0].length = 4;
		UT_EQ(t_post(p->b.qp, &a), -EINVAL);
		sge[0].length = 8;
		a.opcode = (enum ibv_wr_opcode)77;
		UT_EQ(t_post(p->b.qp, &a), -EINVAL);
		a.opcode = IBV_WR_TSO;
		UT_EQ(t_post(p->b.qp, &a), -EINVAL);
	}
	/* Receives: SGE count, depth. */
	memset(r, 0, sizeof(r));
	for (int i = 0; i < 3; i++) {
		r[i].wr_id = (uint64_t)i;
		r[i].sg_list = sge;
		r[i].num_sge = 1;
		r[i].next = i < 2 ? &r[i + 1] : NULL;
	}
	r[0].num_sge = 3;
	UT_EQ(ur_qp_post_recv(p->b.qp, r, &rbad), -EINVAL);
	UT_EQ(rbad, &r[0]);
	r[0].num_sge = 1;
	UT_EQ(ur_qp_post_recv(p->b.qp, r, &rbad), -ENOMEM);
	UT_EQ(rbad, &r[2]);
	UT_EQ(p->b.qp->rq.tail - p->b.qp->rq.head, 2);
}
