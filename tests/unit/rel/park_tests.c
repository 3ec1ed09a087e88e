/* A transport that takes packets but keeps them (the UDP transport's full
 * unix socket to a local peer: the batch is parked until the socket
 * drains).  The QP waits for room; what it sent has not left, so its
 * retransmission deadline is no measure of the peer's silence: at the
 * deadline what was kept leaves first if there is room, and only silence
 * after the packets left counts against retry_cnt.  Seen: a DC initiator
 * under ThreadSanitizer, its batch parked while the peer read late, ended
 * in RETRY_EXC_ERR although nothing was ever lost. */

/* The scene of these tests: a pair (MTU 256, one retry, a 4 ms timeout)
 * and a SEND of four packets, all parked by the transport. */
static int park_open(struct t_pair *p)
{
	struct t_opts o = { .mtu = IBV_MTU_256, .retry_cnt = 1, .timeout = 10 };

	if (t_pair_open_mem(p, &o, 4096, 4096, IBV_ACCESS_LOCAL_WRITE))
		return -1;
	UT_EQ(t_post_recv_mem(&p->b, 9, 0, 4096), 0);
	net.park = true;
	UT_EQ(t_post_send_mem(&p->a, 1, IBV_WR_SEND, 0, 4 * 256, IBV_SEND_SIGNALED), 0);
	UT_EQ(t_count(), 0);              /* nothing left */
	UT_EQ(net.nkept, 4);
	UT_CHECK(p->a.qp->req.blocked);
	return 0;
}

static void park_expect_done(struct t_pair *p)
{
	struct ibv_wc wc;

	t_run();
	t_expect_wc(p->a.scq, &wc, 1, IBV_WC_SUCCESS);
	t_expect_wc(p->b.rcq, &wc, 9, IBV_WC_SUCCESS);
	UT_MEMEQ(p->b.mem.buf, p->a.mem.buf, 4 * 256);
	UT_EQ(p->b.qp->cnt[UR_CNT_DUPLICATE_REQUEST], 0);   /* nothing sent twice */
	UT_EQ(p->a.qp->state, IBV_QPS_RTS);
}

/* The transport has room again but its wake-up is lost: the deadline
 * sends what was kept and resumes the QP; no retry is counted and nothing
 * goes twice (before: a counted retry that went back and parked the
 * packets again behind their first copies). */
static void test_park_lost_wakeup(void)
{
	uint64_t qpt = ur_rel_timeout_ns(10);
	struct t_pair p;

	if (park_open(&p))
		return;
	net.park = false;                 /* room, and no writable call */
	t_advance(qpt);
	UT_CHECK(net.flush_kept_calls > 0);
	UT_EQ(t_count(), 4);              /* they left, once */
	UT_EQ(net.nkept, 0);
	UT_CHECK(!p.a.qp->req.blocked);
	UT_EQ(p.a.qp->comp.retry_left, 1);
	UT_EQ(p.a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR], 0);
	park_expect_done(&p);
	t_pair_close(&p);
}

/* The peer reads late: the packets stay kept for several QP timeouts.
 * None counts (retry_cnt 1 ended the QP at the second before), the QP
 * does not go back (nothing is kept twice), and once the transport takes
 * packets again the message completes. */
static void test_park_late_wakeup(void)
{
	uint64_t qpt = ur_rel_timeout_ns(10);
	struct t_pair p;

	if (park_open(&p))
		return;
	for (int i = 0; i < 5; i++) {
		t_advance(qpt);
		UT_EQ(p.a.qp->state, IBV_QPS_RTS);
		UT_EQ(p.a.qp->comp.retry_left, 1);
		UT_EQ(net.nkept, 4);
		UT_EQ(t_count(), 0);
	}
	UT_EQ(p.a.qp->cnt[UR_CNT_COMPLETER_RETRY_ERR], 0);
	net.park = false;
	UT_EQ(t_release_kept(), 0);       /* the late wake-up: the socket drains */
	ur_progress_resume(t_stack());
	UT_EQ(t_count(), 4);
	park_expect_done(&p);
	t_pair_close(&p);
}

/* Real silence still counts, timed from when the packets left: kept for
 * two timeouts, released by the deadline, then lost on the wire.  Three
 * quarters of a timeout later nothing has counted; a whole one after they
 * left, the retry counts, and the next ends the QP in RETRY_EXC_ERR. */
static void test_park_then_silence_counts(void)
{
	uint64_t qpt = ur_rel_timeout_ns(10);
	struct t_pair p;
	struct ibv_wc wc;

	if (park_open(&p))
		return;
	t_advance(qpt);
	t_advance(qpt);
	UT_EQ(p.a.qp->comp.retry_left, 1);
	net.park = false;
	t_advance(qpt);                   /* the deadline lets them leave */
	UT_EQ(p.a.qp->comp.retry_left, 1);
	for (int i = 0; i < 3; i++) {     /* the peer's silence: early resends only */
		while (t_count())
			t_drop(0);
		t_advance(qpt / 4);
		UT_EQ(p.a.qp->comp.retry_left, 1);
	}
	for (int i = 0; i < 8 && p.a.qp->state == IBV_QPS_RTS; i++) {
		while (t_count())
			t_drop(0);
		t_advance(qpt / 4);
	}
	UT_EQ(p.a.qp->state, IBV_QPS_ERR);
	t_expect_wc(p.a.scq, &wc, 1, IBV_WC_RETRY_EXC_ERR);
	t_pair_close(&p);
}

/* behind_case: the packets left, but *behind says someone has not read
 * them yet: behind, not silent.  For grace QP timeouts its timeouts go
 * back as early retries and none counts; the message completes once the
 * reader catches up.  Behind for good, the QP still ends, after bound QP
 * timeouts. */
static void behind_case(bool *behind, unsigned grace, unsigned bound)
{
	struct t_opts o = { .mtu = IBV_MTU_256, .retry_cnt = 1, .timeout = 10 };
	uint64_t qpt = ur_rel_timeout_ns(10);
	struct t_pair p;
	struct ibv_wc wc;
	unsigned periods = 0;

	if (t_pair_open_mem(&p, &o, 4096, 4096, IBV_ACCESS_LOCAL_WRITE))
		return;
	UT_EQ(t_post_recv_mem(&p.b, 9, 0, 4096), 0);
	UT_EQ(t_post_send_mem(&p.a, 1, IBV_WR_SEND, 0, 4 * 256, IBV_SEND_SIGNALED), 0);
	UT_EQ(t_count(), 4);
	*behind = true;
	for (unsigned i = 0; i < grace; i++) {
		t_advance(qpt);
		UT_EQ(p.a.qp->state, IBV_QPS_RTS);
		UT_EQ(p.a.qp->comp.retry_left, 1);
	}
	UT_EQ(p.a.qp->cnt[UR_CNT_RETRY_EXCEEDED_ERR], 0);
	*behind = false;
	t_run();                          /* it reads: the first copies, then the resends */
	t_expect_wc(p.a.scq, &wc, 1, IBV_WC_SUCCESS);
	t_expect_wc(p.b.rcq, &wc, 9, IBV_WC_SUCCESS);
	UT_MEMEQ(p.b.mem.buf, p.a.mem.buf, 4 * 256);

	/* Behind for good: counted after the bound. */
	UT_EQ(t_post_send_mem(&p.a, 2, IBV_WR_SEND, 0, 256, IBV_SEND_SIGNALED), 0);
	*behind = true;
	while (p.a.qp->state == IBV_QPS_RTS && periods < 4 * bound) {
		while (t_count())
			t_drop(0);
		t_advance(qpt);
		periods++;
	}
	UT_EQ(p.a.qp->state, IBV_QPS_ERR);
	UT_CHECK(periods >= bound && periods <= bound + 3);
	t_expect_wc(p.a.scq, &wc, 2, IBV_WC_RETRY_EXC_ERR);
	*behind = false;
	t_pair_close(&p);
}

/* A local peer process has not read them (its socket's queue: a process
 * slow under load).  It may be frozen for good: UR_MAX_TURN_WAIT. */
static void test_park_peer_behind(void)
{
	behind_case(&net.behind, 4, UR_MAX_TURN_WAIT);
}

/* A local peer process has not read them, but runs (ran a sixteenth of
 * the time between two looks): it reads them, slowly, as this process
 * would (a 1000-QP storm under ASan beside another test loop kept both
 * processes behind for up to 19 s, and a QP counted its retries from the
 * 16th timeout on).  Its bound is this process's own. */
static void test_park_peer_behind_runs(void)
{
	t_peer_runs = true;
	behind_case(&net.behind, 2 * UR_MAX_TURN_WAIT, UR_MAX_SELF_WAIT);
	t_peer_runs = false;
}

/* While a local peer has not read what was sent, the timer sends
 * nothing for a QP timeout and then goes back after gaps that double:
 * over 12 QP timeouts behind, 2 to 4 go-backs (a loss meanwhile still
 * goes again), where every period and the measured round trip's timer
 * between went back before (1000 QPs to a process under ASan: 8 of every
 * 10 packets it read were resends).  Once it reads, all completes. */
static void test_park_behind_holds_back(void)
{
	struct t_opts o = { .mtu = IBV_MTU_256, .retry_cnt = 1, .timeout = 10 };
	uint64_t qpt = ur_rel_timeout_ns(10);
	struct t_pair p;
	struct ibv_wc wc;
	uint64_t resends;

	if (t_pair_open_mem(&p, &o, 4096, 4096, IBV_ACCESS_LOCAL_WRITE))
		return;
	UT_EQ(t_post_recv_mem(&p.b, 9, 0, 4096), 0);
	UT_EQ(t_post_send_mem(&p.a, 1, IBV_WR_SEND, 0, 4 * 256, IBV_SEND_SIGNALED), 0);
	UT_EQ(t_count(), 4);
	net.behind = true;
	for (int i = 0; i < 48; i++) {
		while (t_count())
			t_drop(0);
		t_advance(qpt / 4);
	}
	resends = p.a.qp->cnt[UR_CNT_TIMER_RESENDS];
	UT_CHECK(resends >= 2 && resends <= 4);
	UT_EQ(p.a.qp->comp.retry_left, 1);
	UT_EQ(p.a.qp->state, IBV_QPS_RTS);
	net.behind = false;
	t_advance(qpt);
	t_run();
	t_expect_wc(p.a.scq, &wc, 1, IBV_WC_SUCCESS);
	t_expect_wc(p.b.rcq, &wc, 9, IBV_WC_SUCCESS);
	UT_MEMEQ(p.b.mem.buf, p.a.mem.buf, 4 * 256);
	t_pair_close(&p);
}

/* This process itself has not (its own socket's queue unread: 1024 DC
 * initiators and their DCT in one process, under ThreadSanitizer).  It is
 * running, so the wait is its own backlog: twice the peer's bound passes
 * without a count; only a flood that never lets the queue empty ends the
 * QP, after UR_MAX_SELF_WAIT. */
static void test_park_self_behind(void)
{
	behind_case(&net.behind_self, 2 * UR_MAX_TURN_WAIT, UR_MAX_SELF_WAIT);
}

/* While a reader of this host is behind, the starved-peer check is still
 * asked every period: it judges by two looks a QP timeout apart, and a
 * period skipped while behind left its last look stale, so the first
 * period after could not tell a peer kept off the CPU (ThreadSanitizer
 * under load: behind, then starved, and the retries counted between). */
static void test_park_behind_asks_starved(void)
{
	struct t_opts o = { .mtu = IBV_MTU_256, .retry_cnt = 1, .timeout = 10 };
	uint64_t qpt = ur_rel_timeout_ns(10);
	struct t_pair p;
	struct ibv_wc wc;
	unsigned asks;

	if (t_pair_open_mem(&p, &o, 4096, 4096, IBV_ACCESS_LOCAL_WRITE))
		return;
	UT_EQ(t_post_recv_mem(&p.b, 9, 0, 4096), 0);
	UT_EQ(t_post_send_mem(&p.a, 1, IBV_WR_SEND, 0, 256, IBV_SEND_SIGNALED), 0);
	/* Three periods behind, then three behind no more but starved:
	 * asked each time, and no retry counts. */
	asks = t_starved_asks;
	for (int i = 0; i < 6; i++) {
		net.behind = i < 3;
		t_starved_says = i >= 3;
		while (t_count())
			t_drop(0);
		t_advance(qpt);
		UT_EQ(p.a.qp->comp.retry_left, 1);
		if (i == 2)
			UT_CHECK(t_starved_asks - asks >= 3);
	}
	net.behind = t_starved_says = false;
	t_run();
	t_expect_wc(p.a.scq, &wc, 1, IBV_WC_SUCCESS);
	t_pair_close(&p);
}

/* A QP that fails while it waits for room (here moved to ERR; in the
 * field a DC initiator's retries ran out) and then gets its turn: nothing
 * to time.  Before, the turn armed its retransmission deadline again, the
 * timer found the QP not in RTS and left the deadline in the past, and the
 * engine fired it for ever: the process hung with its engine thread at
 * 100 % (integ.dc under ThreadSanitizer, 1024 initiators at once). */
static void test_park_error_then_turn(void)
{
	uint64_t qpt = ur_rel_timeout_ns(10);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct t_pair p;
	struct ibv_wc wc;

	if (park_open(&p))
		return;
	UT_EQ(ur_qp_modify(p.a.qp, &a, IBV_QP_STATE), 0);
	t_expect_wc(p.a.scq, &wc, 1, IBV_WC_WR_FLUSH_ERR);
	UT_EQ(p.a.qp->comp.retrans_deadline, 0);
	net.park = false;
	UT_EQ(t_release_kept(), 0);
	ur_progress_resume(t_stack());    /* its turn, in ERR */
	UT_EQ(p.a.qp->comp.retrans_deadline, 0);
	/* The deadline from before may still be armed (a deadline that goes
	 * leaves the timer, rel/timers.c): it fires once, finds nothing,
	 * and is not armed again. */
	for (int i = 0; i < 3; i++)
		t_advance(qpt);
	UT_EQ(p.a.qp->timer.deadline, 0);
	UT_EQ(p.a.qp->state, IBV_QPS_ERR);
	t_pair_close(&p);
}
