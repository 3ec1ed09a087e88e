/* CQ details, in one process over a pair of RC QPs looped back on the
 * device: ibv_resize_cq keeps queued completions; an overrun is reported
 * (IBV_EVENT_CQ_ERR); ibv_modify_cq moderation (an event after N
 * completions, or after the period); ibv_req_notify_cq solicited-only
 * (only IBV_SEND_SOLICITED completions and errors raise an event);
 * ibv_query_device_ex (completion_timestamp_mask, hca_core_clock,
 * cq_mod_caps) and ibv_query_rt_values_ex; completion timestamps from an
 * ibv_cq_ex (in order, between the clock read before posting and after
 * polling) and wall-clock timestamps.
 *
 *   qpt_cq -d DEV -g GIDX
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "qpt.h"

struct pair {
	struct ibv_qp *a, *b;        /* a sends to b */
	struct ibv_cq *acq, *bcq;
};

static struct qpt_dev d;
static struct qpt_buf buf;

static void pair_make(struct pair *p, struct ibv_cq *acq, struct ibv_cq *bcq, int depth)
{
	struct qpt_ep ea, eb;

	p->acq = acq;
	p->bcq = bcq;
	p->a = qpt_qp(&d, IBV_QPT_RC, acq, acq, NULL, depth);
	p->b = qpt_qp(&d, IBV_QPT_RC, bcq, bcq, NULL, depth);
	qpt_ep_of(&d, p->a, &ea);
	qpt_ep_of(&d, p->b, &eb);
	if (qpt_connect(&d, p->a, &ea, &eb, 0, IBV_MTU_1024) ||
	    qpt_connect(&d, p->b, &eb, &ea, 0, IBV_MTU_1024))
		DIE("loopback pair");
}

static void pair_free(struct pair *p)
{
	ibv_destroy_qp(p->a);
	ibv_destroy_qp(p->b);
}

static void recvs(struct pair *p, int n)
{
	for (int i = 0; i < n; i++)
		if (qpt_post_recv1(p->b, 1000 + (uint64_t)i, buf.p + 4096 + i * 64, 64, buf.mr->lkey))
			DIE("post_recv");
}

static int send1(struct pair *p, uint64_t id, int flags)
{
	return qpt_post_send1(p->a, IBV_WR_SEND, id, buf.p, 16, buf.mr->lkey,
			      IBV_SEND_SIGNALED | flags);
}

/* Waits until cq holds n completions without taking them (polls a copy:
 * a CQ cannot be peeked, so this sleeps until the sender side saw them). */
static void settle(struct ibv_cq *sender_cq, int n)
{
	struct ibv_wc wc[64];

	if (qpt_poll(sender_cq, wc, n, 20000) != n)
		qpt_note("only some send completions arrived");
}

static bool event_within(struct ibv_comp_channel *ch, struct ibv_cq *want, int ms)
{
	struct ibv_cq *got = NULL;

	if (!qpt_cq_event(ch, &got, ms))
		return false;
	ibv_ack_cq_events(got, 1);
	if (got != want)
		qpt_note("an event for another CQ");
	return got == want;
}

static void caps(void)
{
	struct ibv_device_attr_ex dx;
	struct ibv_values_ex v1 = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK }, v2 = v1;
	uint64_t t1, t2;
	int ret;

	memset(&dx, 0, sizeof(dx));
	ret = ibv_query_device_ex(d.ctx, NULL, &dx);
	CHECK(ret == 0, "ibv_query_device_ex (ret %d)", ret);
	CHECK(dx.completion_timestamp_mask != 0 && dx.hca_core_clock != 0,
	      "completion_timestamp_mask 0x%llx, hca_core_clock %llu kHz",
	      (unsigned long long)dx.completion_timestamp_mask,
	      (unsigned long long)dx.hca_core_clock);
	CHECK(dx.cq_mod_caps.max_cq_count > 0 && dx.cq_mod_caps.max_cq_period > 0,
	      "cq_mod_caps: max_cq_count %u, max_cq_period %u us", dx.cq_mod_caps.max_cq_count,
	      dx.cq_mod_caps.max_cq_period);
	ret = ibv_query_rt_values_ex(d.ctx, &v1);
	CHECK(ret == 0 && (v1.comp_mask & IBV_VALUES_MASK_RAW_CLOCK),
	      "ibv_query_rt_values_ex gives the raw clock (ret %d, mask 0x%x)", ret, v1.comp_mask);
	qpt_sleep_ms(100);
	ibv_query_rt_values_ex(d.ctx, &v2);
	t1 = (uint64_t)v1.raw_clock.tv_sec * 1000000000ull + (uint64_t)v1.raw_clock.tv_nsec;
	t2 = (uint64_t)v2.raw_clock.tv_sec * 1000000000ull + (uint64_t)v2.raw_clock.tv_nsec;
	if (dx.hca_core_clock) {
		/* ticks in 100 ms of sleep: at least 100 ms worth, and not absurd */
		uint64_t lo = dx.hca_core_clock * 100, hi = dx.hca_core_clock * 100000;

		CHECK(t2 - t1 >= lo && t2 - t1 < hi,
		      "the raw clock advances by %llu ticks over a 100 ms sleep (%llu kHz: at least %llu)",
		      (unsigned long long)(t2 - t1), (unsigned long long)dx.hca_core_clock,
		      (unsigned long long)lo);
	}
}

static uint64_t raw_now(void)
{
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };

	ibv_query_rt_values_ex(d.ctx, &v);
	return (uint64_t)v.raw_clock.tv_sec * 1000000000ull + (uint64_t)v.raw_clock.tv_nsec;
}

static uint64_t wall_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void timestamps(void)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 64,
		.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
			    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK | IBV_WC_EX_WITH_QP_NUM |
			    IBV_WC_EX_WITH_BYTE_LEN,
	};
	struct ibv_cq_ex *cqx = ibv_create_cq_ex(d.ctx, &ca), *bad;
	struct ibv_poll_cq_attr pa = { 0 };
	struct ibv_cq *plain = qpt_cq(&d, 64);
	struct pair p;
	uint64_t before, after, wall0, wall1, prev = 0, ts[8], wts[8];
	int n = 0, ret, inorder = 1, inside = 1, winside = 1;

	CHECK(cqx != NULL, "ibv_create_cq_ex with completion timestamps (errno %d)", cqx ? 0 : errno);
	if (!cqx)
		return;
	ca.wc_flags = IBV_WC_EX_WITH_FLOW_TAG;
	errno = 0;
	bad = ibv_create_cq_ex(d.ctx, &ca);
	CHECK(!bad && errno == EOPNOTSUPP, "a CQ asking for flow tags (not offered): EOPNOTSUPP (errno %d)", errno);
	pair_make(&p, ibv_cq_ex_to_cq(cqx), plain, 16);
	recvs(&p, 8);
	before = raw_now();
	wall0 = wall_ns();
	for (int i = 0; i < 8; i++) {
		send1(&p, (uint64_t)i, 0);
		if (i % 3 == 2)
			qpt_sleep_ms(20);
	}
	for (uint64_t end = qpt_now_ms() + 20000; n < 8 && qpt_now_ms() < end;) {
		ret = ibv_start_poll(cqx, &pa);
		if (ret == ENOENT)
			continue;
		if (ret)
			break;
		do {
			if (cqx->status == IBV_WC_SUCCESS && n < 8) {
				ts[n] = ibv_wc_read_completion_ts(cqx);
				wts[n] = ibv_wc_read_completion_wallclock_ns(cqx);
				n++;
			}
		} while (n < 8 && ibv_next_poll(cqx) == 0);
		ibv_end_poll(cqx);
	}
	after = raw_now();
	wall1 = wall_ns();
	CHECK(n == 8, "8 completions read through ibv_start_poll/ibv_next_poll (got %d)", n);
	for (int i = 0; i < n; i++) {
		inorder &= ts[i] >= prev;
		prev = ts[i];
		inside &= ts[i] >= before && ts[i] <= after;
		winside &= wts[i] >= wall0 && wts[i] <= wall1;
	}
	CHECK(n && inorder, "completion timestamps never go backwards (%llu .. %llu)",
	      (unsigned long long)(n ? ts[0] : 0), (unsigned long long)(n ? ts[n - 1] : 0));
	CHECK(n && inside, "each lies between the raw clock read before posting and after polling (%llu .. %llu)",
	      (unsigned long long)before, (unsigned long long)after);
	CHECK(n && winside, "wall-clock timestamps lie between CLOCK_REALTIME before and after");
	CHECK(n == 8 && ts[3] > ts[2], "a 20 ms pause between sends shows between their timestamps (%llu ns)",
	      (unsigned long long)(n == 8 ? ts[3] - ts[2] : 0));
	pair_free(&p);
	ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));
	ibv_destroy_cq(plain);
}

static void resize(void)
{
	struct ibv_cq *cq = qpt_cq(&d, 16), *rcq = qpt_cq(&d, 16);
	struct ibv_wc wc[64];
	struct pair p;
	int n, ret, ok = 1;

	pair_make(&p, cq, rcq, 32);
	recvs(&p, 12);
	for (int i = 0; i < 12; i++)
		send1(&p, (uint64_t)i, 0);
	settle(rcq, 12);              /* the receives done: the sends are too */
	qpt_sleep_ms(100);
	ret = ibv_resize_cq(cq, 4);
	CHECK(ret != 0, "ibv_resize_cq below the 12 queued completions fails (ret %d)", ret);
	ret = ibv_resize_cq(cq, 64);
	CHECK(ret == 0 && cq->cqe >= 64, "ibv_resize_cq from 16 to 64 with 12 completions queued (cqe %d)",
	      cq->cqe);
	n = qpt_poll(cq, wc, 12, 5000);
	for (int i = 0; i < n; i++)
		ok &= wc[i].wr_id == (uint64_t)i && wc[i].status == IBV_WC_SUCCESS;
	CHECK(n == 12 && ok, "all 12 queued completions survive the resize, in order (%d)", n);
	recvs(&p, 30);
	for (int i = 0; i < 30; i++)
		send1(&p, 100 + (uint64_t)i, 0);
	n = qpt_poll(cq, wc, 30, 20000);
	CHECK(n == 30, "the resized CQ holds 30 completions, more than its first size (%d)", n);
	CHECK(ibv_resize_cq(cq, 0) != 0, "ibv_resize_cq to 0 fails");
	pair_free(&p);
	ibv_destroy_cq(cq);
	ibv_destroy_cq(rcq);
}

static void overrun(void)
{
	struct ibv_cq *cq = qpt_cq(&d, 4), *rcq = qpt_cq(&d, 64);
	struct ibv_wc wc[64];
	struct pair p;
	int cap = cq->cqe, n;

	pair_make(&p, cq, rcq, 32);
	recvs(&p, cap + 3);
	for (int i = 0; i < cap + 3; i++)
		send1(&p, (uint64_t)i, 0);
	CHECK(qpt_async_wait(d.ctx, IBV_EVENT_CQ_ERR, cq, 20000),
	      "%d completions into a CQ of %d: IBV_EVENT_CQ_ERR for it", cap + 3, cap);
	n = qpt_poll(cq, wc, 64, 500);
	CHECK(n <= cap, "the CQ never held more than its %d entries (%d)", cap, n);
	qpt_note("after the overrun the sending QP is in state %d", qpt_qp_state(p.a));
	pair_free(&p);
	ibv_destroy_cq(cq);
	ibv_destroy_cq(rcq);
}

static void moderation(void)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(d.ctx);
	struct ibv_cq *rcq = ibv_create_cq(d.ctx, 64, NULL, ch, 0), *scq = qpt_cq(&d, 64);
	struct ibv_modify_cq_attr m = { .attr_mask = IBV_CQ_ATTR_MODERATE };
	struct ibv_wc wc[16];
	struct pair p;
	uint64_t t0, t1;
	int ret;

	if (!ch || !rcq)
		DIE("channel/CQ");
	pair_make(&p, scq, rcq, 32);
	recvs(&p, 16);

	m.moderate.cq_count = 4;
	m.moderate.cq_period = 0;
	ret = ibv_modify_cq(rcq, &m);
	CHECK(ret == 0, "ibv_modify_cq: an event per 4 completions (ret %d)", ret);
	ibv_req_notify_cq(rcq, 0);
	for (int i = 0; i < 3; i++)
		send1(&p, (uint64_t)i, 0);
	settle(scq, 3);
	CHECK(!event_within(ch, rcq, 700), "3 completions: no event yet");
	send1(&p, 3, 0);
	CHECK(event_within(ch, rcq, 10000), "the 4th completion brings the event");
	CHECK(qpt_poll(rcq, wc, 4, 2000) == 4, "and the 4 completions are there");
	settle(scq, 1);

	m.moderate.cq_count = 1000;
	m.moderate.cq_period = 60000;    /* us: the field is 16 bits */
	ret = ibv_modify_cq(rcq, &m);
	CHECK(ret == 0, "ibv_modify_cq: 1000 completions or %u us (ret %d)", m.moderate.cq_period, ret);
	ibv_req_notify_cq(rcq, 0);
	t0 = qpt_now_ms();
	send1(&p, 10, 0);
	CHECK(event_within(ch, rcq, 10000), "one completion: the event comes when the period ends");
	t1 = qpt_now_ms();
	CHECK(t1 - t0 + 1 >= m.moderate.cq_period / 1000,
	      "not before the period: %llu ms after posting (period %u ms)",
	      (unsigned long long)(t1 - t0), m.moderate.cq_period / 1000);
	qpt_poll(rcq, wc, 1, 2000);
	settle(scq, 1);
	m.attr_mask = 0x80;
	CHECK(ibv_modify_cq(rcq, &m) != 0, "ibv_modify_cq with an unknown attr_mask bit fails");
	pair_free(&p);
	ibv_destroy_cq(rcq);
	ibv_destroy_cq(scq);
	ibv_destroy_comp_channel(ch);
}

static void solicited(void)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(d.ctx);
	struct ibv_cq *rcq = ibv_create_cq(d.ctx, 64, NULL, ch, 0), *scq = qpt_cq(&d, 64);
	struct ibv_wc wc[16];
	struct pair p;
	int n;

	if (!ch || !rcq)
		DIE("channel/CQ");
	pair_make(&p, scq, rcq, 32);
	recvs(&p, 8);
	CHECK(ibv_req_notify_cq(rcq, 1) == 0, "ibv_req_notify_cq(solicited_only = 1)");
	send1(&p, 1, 0);
	settle(scq, 1);
	CHECK(!event_within(ch, rcq, 700), "an unsolicited SEND's completion raises no event");
	send1(&p, 2, IBV_SEND_SOLICITED);
	CHECK(event_within(ch, rcq, 10000), "a SEND with IBV_SEND_SOLICITED raises the event");
	n = qpt_poll(rcq, wc, 2, 2000);
	CHECK(n == 2 && wc[0].wr_id == 1000 && wc[1].wr_id == 1001, "both completions are on the CQ (%d)", n);
	settle(scq, 1);
	CHECK(ibv_req_notify_cq(rcq, 1) == 0, "armed solicited-only again");
	CHECK(qpt_to_state(p.b, IBV_QPS_ERR) == 0, "the receiving QP moved to ERROR (6 receives posted)");
	CHECK(event_within(ch, rcq, 10000), "its flushed receives (errors) raise the event");
	n = qpt_poll(rcq, wc, 6, 2000);
	CHECK(n == 6 && wc[0].status == IBV_WC_WR_FLUSH_ERR, "6 receives flushed with IBV_WC_WR_FLUSH_ERR (%d)", n);
	CHECK(ibv_req_notify_cq(rcq, 0) == 0, "armed for any completion");
	recvs(&p, 1);
	CHECK(event_within(ch, rcq, 10000), "a receive posted to the QP in ERROR flushes: event");
	pair_free(&p);
	ibv_destroy_cq(rcq);
	ibv_destroy_cq(scq);
	ibv_destroy_comp_channel(ch);
}

static void all(const struct qpt_opts *o)
{
	qpt_open(&d, o->dev, o->gidx);
	qpt_buf(&d, &buf, 1 << 16, IBV_ACCESS_LOCAL_WRITE);
	caps();
	timestamps();
	resize();
	moderation();
	solicited();
	overrun();
	qpt_buf_free(&buf);
	qpt_close(&d);
}

const struct qpt_role qpt_roles[] = {
	{ NULL, QPT_EITHER, all },
	{ NULL, QPT_EITHER, NULL },
};
