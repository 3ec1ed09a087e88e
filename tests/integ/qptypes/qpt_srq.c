/* SRQ between two processes (the server owns the SRQs): many RC QPs on one
 * SRQ, each completion naming the QP the message came through (the way
 * SPDK finds its connection from wc->qp_num); ibv_create_srq and
 * ibv_create_srq_ex and their error paths; ibv_query_srq / ibv_modify_srq;
 * the SRQ limit event (not before the count drops below the limit, once,
 * disarmed after it fires, and again when re-armed); IBV_EVENT_QP_LAST_
 * WQE_REACHED when an SRQ QP enters ERROR while the others go on; an
 * exhausted SRQ answers with RNR NAKs (send_rnr_err / rcvd_rnr_err) and the
 * sender, with rnr_retry 7, completes once receives are posted; an SRQ in
 * use cannot be destroyed.
 *
 *   qpt_srq -d DEV -g GIDX -p PORT [-n QPS]            (server)
 *   qpt_srq -d DEV -g GIDX -p PORT [-n QPS] SERVER_IP  (client)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qpt.h"

#define MAXQ 256
#define PER_QP 3
#define MSG 64

struct side {
	struct qpt_dev d;
	struct ibv_cq *cq, *scq;
	struct ibv_srq *srq, *srq2;   /* srq2: from ibv_create_srq_ex */
	struct ibv_qp *qp[MAXQ + 1];  /* qp[nq]: the pair on srq2 */
	struct qpt_ep me[MAXQ + 1], peer[MAXQ + 1];
	struct qpt_buf buf;
	int nq, fd;
	bool same_ns;
};

static void connect_all(struct side *s, const struct qpt_opts *o, bool server)
{
	s->fd = qpt_oob(o);
	qpt_connect_each(&s->d, s->fd, s->qp, s->me, s->peer, s->nq + 1, 0);
	s->same_ns = s->me[0].netns == s->peer[0].netns;
	(void)server;
}

static int index_of(struct side *s, uint32_t qpn)
{
	for (int i = 0; i <= s->nq; i++)
		if (s->qp[i]->qp_num == qpn)
			return i;
	return -1;
}

static void srq_errors(struct side *s)
{
	struct ibv_device_attr da;
	struct ibv_srq_init_attr ia;
	struct ibv_srq_attr sa;
	struct ibv_srq *x;
	struct ibv_sge sge[2];
	struct ibv_recv_wr wr, *bad;
	int ret, n;

	if (ibv_query_device(s->d.ctx, &da))
		DIE("query_device");
	CHECK(da.max_srq > 0 && da.max_srq_wr > 0 && da.max_srq_sge > 0,
	      "max_srq %d, max_srq_wr %d, max_srq_sge %d", da.max_srq, da.max_srq_wr, da.max_srq_sge);
	memset(&ia, 0, sizeof(ia));
	ia.attr.max_wr = (uint32_t)da.max_srq_wr + 1;
	ia.attr.max_sge = 1;
	errno = 0;
	x = ibv_create_srq(s->d.pd, &ia);
	CHECK(!x && errno == EINVAL, "ibv_create_srq with max_wr = max_srq_wr + 1: EINVAL (errno %d)", errno);
	ia.attr.max_wr = 16;
	ia.attr.max_sge = (uint32_t)da.max_srq_sge + 1;
	errno = 0;
	x = ibv_create_srq(s->d.pd, &ia);
	CHECK(!x && errno == EINVAL, "ibv_create_srq with max_sge = max_srq_sge + 1: EINVAL (errno %d)", errno);
	ia.attr.max_sge = 1;
	ia.attr.max_wr = 0;
	errno = 0;
	x = ibv_create_srq(s->d.pd, &ia);
	CHECK(!x && errno == EINVAL, "ibv_create_srq with max_wr 0: EINVAL (errno %d)", errno);

	/* A small SRQ: exactly max_wr receives fit. */
	ia.attr.max_wr = 4;
	ia.attr.max_sge = 2;
	x = ibv_create_srq(s->d.pd, &ia);
	CHECK(x != NULL, "ibv_create_srq max_wr 4, max_sge 2 (returned max_wr %u, max_sge %u)",
	      ia.attr.max_wr, ia.attr.max_sge);
	if (!x)
		return;
	ret = ibv_query_srq(x, &sa);
	CHECK(ret == 0 && sa.max_wr >= 4 && sa.max_sge >= 2 && sa.srq_limit == 0,
	      "ibv_query_srq: max_wr %u >= 4, max_sge %u >= 2, srq_limit %u", sa.max_wr, sa.max_sge,
	      sa.srq_limit);
	sge[0] = (struct ibv_sge){ (uintptr_t)s->buf.p, 16, s->buf.mr->lkey };
	sge[1] = sge[0];
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = sge;
	wr.num_sge = (int)sa.max_sge + 1;
	ret = ibv_post_srq_recv(x, &wr, &bad);
	CHECK(ret == EINVAL && bad == &wr, "ibv_post_srq_recv with num_sge > max_sge: EINVAL (ret %d)", ret);
	wr.num_sge = 1;
	for (n = 0; n < (int)sa.max_wr && !ibv_post_srq_recv(x, &wr, &bad); n++)
		;
	CHECK(n == (int)sa.max_wr, "max_wr = %u receives fit (%d did)", sa.max_wr, n);
	ret = ibv_post_srq_recv(x, &wr, &bad);
	CHECK(ret == ENOMEM, "one more: ENOMEM (ret %d)", ret);
	sa.srq_limit = sa.max_wr + 1;
	ret = ibv_modify_srq(x, &sa, IBV_SRQ_LIMIT);
	CHECK(ret == EINVAL, "ibv_modify_srq with srq_limit > max_wr: EINVAL (ret %d)", ret);
	sa.max_wr = 64;
	ret = ibv_modify_srq(x, &sa, IBV_SRQ_MAX_WR);
	CHECK(ret != 0 && !(da.device_cap_flags & IBV_DEVICE_SRQ_RESIZE),
	      "resizing (IBV_SRQ_MAX_WR) fails, and the device does not claim SRQ_RESIZE (ret %d)", ret);
	CHECK(ibv_destroy_srq(x) == 0, "ibv_destroy_srq (receives still posted)");
}

static struct ibv_srq *make_srq_ex(struct side *s)
{
	struct ibv_srq_init_attr_ex a;
	struct ibv_srq *x;

	memset(&a, 0, sizeof(a));
	a.attr.max_wr = 64;
	a.attr.max_sge = 1;
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	a.srq_type = IBV_SRQT_BASIC;
	a.pd = s->d.pd;
	x = ibv_create_srq_ex(s->d.ctx, &a);
	CHECK(x != NULL, "ibv_create_srq_ex (basic, max_wr 64) (errno %d)", x ? 0 : errno);
	if (!x)
		DIE("ibv_create_srq_ex");
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	a.srq_type = IBV_SRQT_TM;
	errno = 0;
	CHECK(ibv_create_srq_ex(s->d.ctx, &a) == NULL,
	      "ibv_create_srq_ex of a tag-matching SRQ fails: not offered (errno %d)", errno);
	return x;
}

static void post_srq(struct side *s, struct ibv_srq *srq, int from, int n)
{
	for (int i = from; i < from + n; i++)
		if (qpt_post_srq_recv1(srq, (uint64_t)i, s->buf.p + (size_t)i * MSG, MSG, s->buf.mr->lkey))
			DIE("post_srq_recv %d", i);
}

/* The SRQs (one from ibv_create_srq, one from ibv_create_srq_ex), the nq
 * QPs on the first and the pair on the second, receives for phase A. */
static void server_make_srqs_and_qps(struct side *s, const struct qpt_opts *o)
{
	struct ibv_srq_init_attr ia;

	memset(s, 0, sizeof(*s));
	s->nq = o->count > 0 ? o->count : 32;
	if (s->nq > MAXQ)
		DIE("at most %d QPs", MAXQ);
	qpt_open(&s->d, o->dev, o->gidx);
	qpt_buf(&s->d, &s->buf, (size_t)(MAXQ * 8 + 1024) * MSG, IBV_ACCESS_LOCAL_WRITE);
	srq_errors(s);
	s->cq = qpt_cq(&s->d, 4096);
	s->scq = qpt_cq(&s->d, 1024);
	memset(&ia, 0, sizeof(ia));
	ia.attr.max_wr = (uint32_t)(s->nq * PER_QP + 64);
	ia.attr.max_sge = 1;
	s->srq = ibv_create_srq(s->d.pd, &ia);
	CHECK(s->srq != NULL, "ibv_create_srq max_wr %u", ia.attr.max_wr);
	if (!s->srq)
		DIE("SRQ");
	s->srq2 = make_srq_ex(s);
	for (int i = 0; i < s->nq; i++)
		s->qp[i] = qpt_qp(&s->d, IBV_QPT_RC, s->scq, s->cq, s->srq, 4);
	{
		/* The SRQ_ex pair, created through ibv_create_qp_ex. */
		struct ibv_qp_init_attr_ex a = {
			.send_cq = s->scq, .recv_cq = s->cq, .srq = s->srq2,
			.cap = { .max_send_wr = 4, .max_send_sge = 1 },
			.qp_type = IBV_QPT_RC, .comp_mask = IBV_QP_INIT_ATTR_PD, .pd = s->d.pd,
		};

		s->qp[s->nq] = ibv_create_qp_ex(s->d.ctx, &a);
		if (!s->qp[s->nq])
			DIE("ibv_create_qp_ex on the SRQ_ex");
	}
	CHECK(ibv_post_recv(s->qp[0], &(struct ibv_recv_wr){ .num_sge = 0 }, &(struct ibv_recv_wr *){ 0 }) != 0,
	      "ibv_post_recv on a QP with an SRQ fails (it has no receive queue)");
	post_srq(s, s->srq, 0, s->nq * PER_QP);
}

/* A: PER_QP messages on every QP, all into the one SRQ. */
static void server_check_many_qps_one_srq(struct side *s)
{
	struct ibv_wc *wc;
	int total, n, last_seq[MAXQ], bad_qp = 0, bad_order = 0, bad_len = 0;
	uint8_t *seen;

	qpt_sync(s->fd, "A-ready");
	qpt_sync(s->fd, "A-sent");
	total = s->nq * PER_QP;
	wc = calloc((size_t)total, sizeof(*wc));
	seen = calloc((size_t)total, 1);
	n = qpt_poll(s->cq, wc, total, 60000);
	CHECK(n == total, "%d QPs x %d messages: %d receive completions from the one SRQ (got %d)",
	      s->nq, PER_QP, total, n);
	for (int i = 0; i < s->nq; i++)
		last_seq[i] = -1;
	for (int i = 0; i < n; i++) {
		int qi = index_of(s, wc[i].qp_num);
		uint32_t hdr[2];

		memcpy(hdr, s->buf.p + wc[i].wr_id * MSG, sizeof(hdr));
		if (wc[i].status != IBV_WC_SUCCESS || wc[i].byte_len != MSG)
			bad_len++;
		if (qi < 0 || (uint32_t)qi != hdr[0]) {
			if (!bad_qp++)
				qpt_note("completion %d: qp_num 0x%06x (QP index %d) but the message came through QP %u",
					 i, wc[i].qp_num, qi, hdr[0]);
		} else if ((int)hdr[1] <= last_seq[qi]) {
			bad_order++;
		} else {
			last_seq[qi] = (int)hdr[1];
		}
		if (wc[i].wr_id < (uint64_t)total)
			seen[wc[i].wr_id]++;
	}
	CHECK(!bad_len, "every completion: success, %d bytes (%d bad)", MSG, bad_len);
	CHECK(!bad_qp, "every completion's qp_num is the QP the message came through (%d wrong)", bad_qp);
	CHECK(!bad_order, "messages of one QP complete in their order (%d out of order)", bad_order);
	n = 0;
	for (int i = 0; i < total; i++)
		n += seen[i] == 1;
	CHECK(n == total, "each SRQ receive was used exactly once (%d of %d)", n, total);
	CHECK(qpt_poll_none(s->cq, 200, wc), "no other completion");
	free(seen);
	free(wc);
}

/* One step of B: the client sends n messages between go and sent; returns
 * how many of them were received. */
static int srq_limit_step(struct side *s, struct ibv_wc *wc, const char *go, const char *sent,
			  int n)
{
	qpt_sync(s->fd, go);
	qpt_sync(s->fd, sent);
	return qpt_poll(s->cq, wc, n, 20000);
}

/* B: the limit event on the SRQ_ex (20 receives, limit 10). */
static void server_check_srq_limit(struct side *s, struct ibv_wc *wc)
{
	struct ibv_srq_attr sa;
	int n;

	post_srq(s, s->srq2, 1000, 20);
	sa.srq_limit = 10;
	CHECK(ibv_modify_srq(s->srq2, &sa, IBV_SRQ_LIMIT) == 0, "ibv_modify_srq: srq_limit 10");
	memset(&sa, 0, sizeof(sa));
	n = ibv_query_srq(s->srq2, &sa);
	CHECK(n == 0 && sa.srq_limit == 10, "ibv_query_srq: srq_limit %u", sa.srq_limit);
	n = srq_limit_step(s, wc, "B-ready", "B-sent-10", 10);
	CHECK(n == 10 && wc[0].qp_num == s->qp[s->nq]->qp_num, "10 messages received (10 receives left)");
	CHECK(qpt_async_none(s->d.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, s->srq2, 800),
	      "no SRQ_LIMIT_REACHED while 10 receives remain (not below the limit)");
	n = srq_limit_step(s, wc, "B-more", "B-sent-11", 1);
	CHECK(n == 1, "message 11 received (9 left)");
	CHECK(qpt_async_wait(s->d.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, s->srq2, 10000),
	      "IBV_EVENT_SRQ_LIMIT_REACHED on the SRQ once fewer than 10 receives remain");
	n = ibv_query_srq(s->srq2, &sa);
	CHECK(n == 0 && sa.srq_limit == 0,
	      "the limit is disarmed after the event (srq_limit %u)", sa.srq_limit);
	n = srq_limit_step(s, wc, "B-five", "B-sent-16", 5);
	CHECK(n == 5, "5 more received (4 left) (got %d)", n);
	CHECK(qpt_async_none(s->d.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, s->srq2, 800),
	      "no second event while disarmed");
	sa.srq_limit = 3;
	CHECK(ibv_modify_srq(s->srq2, &sa, IBV_SRQ_LIMIT) == 0, "re-armed with srq_limit 3");
	n = srq_limit_step(s, wc, "B-rearmed", "B-sent-18", 2);
	CHECK(n == 2, "2 more received (2 left) (got %d)", n);
	CHECK(qpt_async_wait(s->d.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, s->srq2, 10000),
	      "the re-armed limit fires again below 3");
	CHECK(qpt_async_seen(IBV_EVENT_SRQ_LIMIT_REACHED, s->srq2) == 2, "two limit events in all");
}

/* D and D2: an empty SRQ answers with RNR NAKs until receives are posted. */
static void server_check_rnr_on_empty_srq(struct side *s, struct ibv_wc *wc)
{
	int64_t rnr0, rnr1;
	int n;

	/* D: exhaust the SRQ_ex, then RNR until a receive is posted. */
	qpt_sync(s->fd, "D-drain");
	n = qpt_poll(s->cq, wc, 2, 20000);
	CHECK(n == 2, "the last 2 receives used: the SRQ is empty (got %d)", n);
	rnr0 = qpt_counter_settle(s->d.ctx, "send_rnr_err", 500);
	qpt_sync(s->fd, "D-empty");
	rnr1 = qpt_counter_wait(s->d.ctx, "send_rnr_err", rnr0 + 1, 10000);
	CHECK(rnr1 > rnr0, "a SEND into the empty SRQ is answered with RNR NAKs (send_rnr_err %lld -> %lld)",
	      (long long)rnr0, (long long)rnr1);
	CHECK(qpt_poll_none(s->cq, 300, wc), "and nothing is received");
	qpt_sync(s->fd, "D-rnr-seen");
	post_srq(s, s->srq2, 1100, 1);
	n = qpt_poll(s->cq, wc, 1, 20000);
	CHECK(n == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 1100 &&
	      wc[0].qp_num == s->qp[s->nq]->qp_num,
	      "once a receive is posted the message arrives in it (n %d)", n);
	qpt_sync(s->fd, "D-done");

	/* D2: the same with two SENDs in flight: the second arrives while
	 * the first is being refused with RNR NAKs. */
	rnr0 = qpt_counter_settle(s->d.ctx, "send_rnr_err", 300);
	qpt_sync(s->fd, "D2-empty");
	rnr1 = qpt_counter_wait(s->d.ctx, "send_rnr_err", rnr0 + 1, 10000);
	CHECK(rnr1 > rnr0, "two pipelined SENDs into the empty SRQ: RNR NAKs (send_rnr_err %lld -> %lld)",
	      (long long)rnr0, (long long)rnr1);
	qpt_sleep_ms(2000);        /* several RNR rounds */
	post_srq(s, s->srq2, 1101, 2);
	n = qpt_poll(s->cq, wc, 2, 30000);
	CHECK(n == 2 && wc[0].status == IBV_WC_SUCCESS && wc[1].status == IBV_WC_SUCCESS,
	      "once two receives are posted both messages arrive (n %d)", n);
	qpt_sync(s->fd, "D2-done");
}

static void server(const struct qpt_opts *o)
{
	struct side s;
	struct ibv_wc *wc;
	int n;

	server_make_srqs_and_qps(&s, o);
	connect_all(&s, o, true);
	server_check_many_qps_one_srq(&s);

	qpt_note("send_rnr_err after A: %lld", (long long)qpt_counter_settle(s.d.ctx, "send_rnr_err", 300));
	wc = calloc(64, sizeof(*wc));
	server_check_srq_limit(&s, wc);

	qpt_note("send_rnr_err after B: %lld", (long long)qpt_counter_settle(s.d.ctx, "send_rnr_err", 300));
	server_check_rnr_on_empty_srq(&s, wc);

	/* C: one SRQ QP to ERROR: last WQE reached; the others go on. */
	post_srq(&s, s.srq, 0, 4);
	CHECK(qpt_to_state(s.qp[0], IBV_QPS_ERR) == 0, "QP 0 of the SRQ moved to ERROR");
	CHECK(qpt_async_wait(s.d.ctx, IBV_EVENT_QP_LAST_WQE_REACHED, s.qp[0], 10000),
	      "IBV_EVENT_QP_LAST_WQE_REACHED for that QP");
	CHECK(qpt_poll_none(s.cq, 300, wc), "the SRQ's receives are not flushed with it");
	qpt_sync(s.fd, "C-ready");
	n = qpt_poll(s.cq, wc, 1, 20000);
	CHECK(n == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].qp_num == s.qp[1]->qp_num,
	      "QP 1 still receives through the SRQ (n %d)", n);

	/* E: an SRQ in use cannot be destroyed. */
	errno = 0;
	CHECK(ibv_destroy_srq(s.srq) == EBUSY, "ibv_destroy_srq while QPs use it: EBUSY");
	qpt_sync(s.fd, "done");
	for (int i = 0; i <= s.nq; i++)
		ibv_destroy_qp(s.qp[i]);
	CHECK(ibv_destroy_srq(s.srq) == 0, "ibv_destroy_srq once its QPs are gone");
	CHECK(ibv_destroy_srq(s.srq2) == 0, "ibv_destroy_srq (the SRQ_ex)");
	free(wc);
	qpt_teardown(-1, &(struct qpt_made){ .d = &s.d, .buf = &s.buf, .cq = { s.cq, s.scq } });
}

static void send_n(struct side *s, int qi, int n, uint32_t seq0)
{
	struct ibv_wc wc[16];

	for (int k = 0; k < n; k++) {
		uint32_t hdr[2] = { (uint32_t)qi, seq0 + (uint32_t)k };
		uint8_t *b = s->buf.p + (size_t)(qi * 8 + (k % 8)) * MSG;

		memcpy(b, hdr, sizeof(hdr));
		if (qpt_post_send1(s->qp[qi], IBV_WR_SEND, (uint64_t)k, b, MSG, s->buf.mr->lkey,
				   IBV_SEND_SIGNALED))
			DIE("post_send QP %d", qi);
		if (qpt_poll(s->scq, wc, 1, 60000) != 1 || wc[0].status != IBV_WC_SUCCESS)
			CHECK(false, "send on QP %d completes (status %s)", qi,
			      ibv_wc_status_str(wc[0].status));
	}
}

/* A: round robin over the QPs, PER_QP each, all posted at once. */
static void client_send_round_robin(struct side *s)
{
	int posted = 0, done = 0, n;
	struct ibv_wc w[64];

	for (int k = 0; k < PER_QP; k++)
		for (int i = 0; i < s->nq; i++) {
			uint32_t hdr[2] = { (uint32_t)i, (uint32_t)k };
			uint8_t *b = s->buf.p + (size_t)(i * 8 + k) * MSG;

			memcpy(b, hdr, sizeof(hdr));
			if (qpt_post_send1(s->qp[i], IBV_WR_SEND, (uint64_t)i, b, MSG,
					   s->buf.mr->lkey, IBV_SEND_SIGNALED))
				DIE("post_send");
			posted++;
		}
	while (done < posted && (n = qpt_poll(s->scq, w, 64 < posted - done ? 64 : posted - done, 60000)) > 0)
		for (int i = 0; i < n; i++, done++)
			if (w[i].status != IBV_WC_SUCCESS)
				CHECK(false, "send on QP %llu: %s", (unsigned long long)w[i].wr_id,
				      ibv_wc_status_str(w[i].status));
	CHECK(done == posted, "%d sends over %d QPs completed (%d)", posted, s->nq, done);
}

/* D and D2: SENDs into the peer's empty SRQ complete once it posts. */
static void client_send_into_empty_srq(struct side *s)
{
	struct ibv_wc wc[4];
	int64_t rrnr0, rrnr1;

	/* D */
	qpt_sync(s->fd, "D-drain");
	send_n(s, s->nq, 2, 18);
	qpt_sync(s->fd, "D-empty");
	rrnr0 = qpt_counter_settle(s->d.ctx, "rcvd_rnr_err", 300);
	{
		uint8_t *b = s->buf.p;
		uint32_t hdr[2] = { (uint32_t)s->nq, 99 };

		memcpy(b, hdr, sizeof(hdr));
		if (qpt_post_send1(s->qp[s->nq], IBV_WR_SEND, 99, b, MSG, s->buf.mr->lkey, IBV_SEND_SIGNALED))
			DIE("post_send");
	}
	qpt_sync(s->fd, "D-rnr-seen");
	rrnr1 = qpt_counter_wait(s->d.ctx, "rcvd_rnr_err", rrnr0 + 1, 5000);
	CHECK(rrnr1 > rrnr0, "the sender counted RNR NAKs (rcvd_rnr_err %lld -> %lld)",
	      (long long)rrnr0, (long long)rrnr1);
	CHECK(qpt_poll(s->scq, wc, 1, 30000) == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 99,
	      "with rnr_retry 7 the SEND completes successfully once a receive is posted (%s)",
	      ibv_wc_status_str(wc[0].status));
	CHECK(qpt_qp_state(s->qp[s->nq]) == IBV_QPS_RTS, "the sender's QP is still in RTS");
	qpt_sync(s->fd, "D-done");

	/* D2 */
	qpt_sync(s->fd, "D2-empty");
	for (int k = 0; k < 2; k++) {
		uint8_t *b = s->buf.p + 64 * k;
		uint32_t hdr[2] = { (uint32_t)s->nq, 100 + (uint32_t)k };

		memcpy(b, hdr, sizeof(hdr));
		if (qpt_post_send1(s->qp[s->nq], IBV_WR_SEND, 100 + (uint64_t)k, b, MSG, s->buf.mr->lkey,
				   IBV_SEND_SIGNALED))
			DIE("post_send");
	}
	{
		int n = qpt_poll(s->scq, wc, 2, 60000);

		CHECK(n == 2 && wc[0].status == IBV_WC_SUCCESS && wc[1].status == IBV_WC_SUCCESS,
		      "with rnr_retry 7 both pipelined SENDs complete successfully once receives are posted (n %d: %s, %s)",
		      n, n > 0 ? ibv_wc_status_str(wc[0].status) : "-",
		      n > 1 ? ibv_wc_status_str(wc[1].status) : "-");
	}
	CHECK(qpt_qp_state(s->qp[s->nq]) == IBV_QPS_RTS, "the sender's QP is still in RTS");
	qpt_sync(s->fd, "D2-done");
}

static void client(const struct qpt_opts *o)
{
	static const struct { const char *go, *sent; int n; uint32_t seq0; } b_steps[] = {
		{ "B-ready", "B-sent-10", 10, 0 },
		{ "B-more", "B-sent-11", 1, 10 },
		{ "B-five", "B-sent-16", 5, 11 },
		{ "B-rearmed", "B-sent-18", 2, 16 },
	};
	struct side s;

	memset(&s, 0, sizeof(s));
	s.nq = o->count > 0 ? o->count : 32;
	qpt_open(&s.d, o->dev, o->gidx);
	qpt_buf(&s.d, &s.buf, (size_t)(MAXQ * 8 + 64) * MSG, IBV_ACCESS_LOCAL_WRITE);
	s.cq = qpt_cq(&s.d, 64);
	s.scq = qpt_cq(&s.d, 1024);
	for (int i = 0; i <= s.nq; i++)
		s.qp[i] = qpt_qp(&s.d, IBV_QPT_RC, s.scq, s.cq, NULL, 8);
	connect_all(&s, o, false);

	qpt_sync(s.fd, "A-ready");
	client_send_round_robin(&s);
	qpt_sync(s.fd, "A-sent");

	/* B: the server checks its SRQ limit between the steps. */
	for (size_t i = 0; i < sizeof(b_steps) / sizeof(b_steps[0]); i++) {
		qpt_sync(s.fd, b_steps[i].go);
		send_n(&s, s.nq, b_steps[i].n, b_steps[i].seq0);
		qpt_sync(s.fd, b_steps[i].sent);
	}

	client_send_into_empty_srq(&s);

	/* C */
	qpt_sync(s.fd, "C-ready");
	send_n(&s, 1, 1, 50);
	qpt_teardown(s.fd, &(struct qpt_made){ .d = &s.d, .buf = &s.buf, .qp = s.qp, .nqp = s.nq + 1,
					       .cq = { s.cq, s.scq } });
}

const struct qpt_role qpt_roles[] = {
	{ NULL, QPT_SERVER, server },
	{ NULL, QPT_CLIENT, client },
	{ NULL, QPT_EITHER, NULL },
};
