/* Unit tests of work queues (wq.c) and completion queues (cq.c): rings
 * full, empty and across the wrap of their free-running indices, CQ
 * overrun, resize, channel events, solicited-only arming, moderation by
 * count and by period, the extended polling interface, purging.
 *
 * cq.c is compiled in against a virtual clock, and the stack's reactor has
 * no thread: a moderation period expires exactly when the test runs the
 * reactor's timers at a chosen time. */
#include <fcntl.h>
#include <poll.h>

#define UROCE_UTIL_CLOCK_H
#include <stdint.h>
static uint64_t t_clock_ns = 5000000000ull;

static inline uint64_t ur_now_ns(void)
{
	return t_clock_ns;
}

#include "ut.h"
#include "ut_env.h"
#include "ut_stack.h"

#include "core/cq.c"
#include "core/wq.c"
#include "core/device.h"

/* ---- work queues ---------------------------------------------------------- */

static void test_wq_ring(void)
{
	struct ur_wq q;

	UT_EQ(ur_wq_init(&q, 5, 24), 0);
	UT_EQ(q.size, 8);
	UT_EQ(q.max, 5);
	UT_CHECK(ur_wq_empty(&q));
	UT_CHECK(!ur_wq_full(&q));
	/* Start just below the 2^32 wrap of the indices. */
	q.head = q.tail = UINT32_MAX - 2;
	for (uint32_t round = 0; round < 50; round++) {
		for (int i = 0; i < 5; i++) {
			UT_CHECK(!ur_wq_full(&q));
			*(uint32_t *)ur_wq_slot(&q, q.tail) = round * 10 + (uint32_t)i;
			q.tail++;
		}
		UT_CHECK(ur_wq_full(&q));
		UT_EQ(ur_wq_used(&q), 5);
		/* Five distinct slots, each slot_size apart inside the buffer. */
		for (uint32_t i = 0; i < 5; i++) {
			uint8_t *s = ur_wq_slot(&q, q.head + i);

			UT_CHECK(s >= q.buf && s + 24 <= q.buf + 8 * 24);
			UT_EQ((s - q.buf) % 24, 0);
			UT_EQ(*(uint32_t *)s, round * 10 + i);
		}
		for (int i = 0; i < 5; i++)
			q.head++;
		UT_CHECK(ur_wq_empty(&q));
	}
	ur_wq_fini(&q);
	UT_EQ(q.buf, NULL);
	/* One entry: a ring of one slot. */
	UT_EQ(ur_wq_init(&q, 1, 8), 0);
	UT_EQ(q.size, 1);
	q.tail++;
	UT_CHECK(ur_wq_full(&q));
	UT_EQ(ur_wq_slot(&q, 0), ur_wq_slot(&q, 12345));
	ur_wq_fini(&q);
}

/* ---- completion queues ------------------------------------------------------ */

static struct ur_context *ctx;
static struct ur_comp_channel *chan;

static struct ur_cq *mk_cq(int cqe, bool with_channel)
{
	struct ibv_cq_init_attr_ex a = { .cqe = (uint32_t)cqe };
	struct ur_cq *cq;

	if (with_channel)
		a.channel = &chan->ibch;
	cq = ut_cq(ctx, &a);
	UT_CHECK(cq != NULL);
	return cq;
}

static void del_cq(struct ur_cq *cq)
{
	/* What ibv_ack_cq_events would have done. */
	cq->ibcq.comp_events_completed = cq->events_reported;
	UT_EQ(ur_cq_destroy(cq), 0);
}

static int push(struct ur_cq *cq, uint64_t id, enum ibv_wc_status st, bool solicited)
{
	struct ibv_wc wc = { .wr_id = id, .status = st, .qp_num = (uint32_t)(id >> 32),
			     .byte_len = (uint32_t)id };

	return ur_cq_push(cq, &wc, solicited);
}

/* Channel events waiting: each is a CQ pointer in the pipe. */
static int events(struct ur_cq *expect)
{
	int n = 0, fl = fcntl(chan->ibch.fd, F_GETFL);
	struct ur_cq *got;

	fcntl(chan->ibch.fd, F_SETFL, fl | O_NONBLOCK);
	while (ur_cq_get_event(chan, &got) == 0) {
		UT_EQ(got, expect);
		n++;
	}
	fcntl(chan->ibch.fd, F_SETFL, fl);
	return n;
}

static int async_events(enum ibv_event_type type, struct ur_cq *cq)
{
	struct ibv_async_event ev;
	int n = 0, fl = fcntl(ctx->async.rfd, F_GETFL);

	fcntl(ctx->async.rfd, F_SETFL, fl | O_NONBLOCK);
	while (ur_async_get(&ctx->async, &ev) == 0)
		if (ev.event_type == type && ev.element.cq == (struct ibv_cq *)&cq->ibcq)
			n++;
	fcntl(ctx->async.rfd, F_SETFL, fl);
	return n;
}

static void test_cq_full_empty_wrap(void)
{
	struct ur_cq *cq = mk_cq(3, false);
	struct ibv_wc wc[8];

	UT_EQ(cq->ibcq.cqe, 3);
	UT_EQ(ur_cq_poll(cq, 8, wc), 0);
	cq->head = cq->tail = UINT32_MAX - 5;
	for (uint64_t round = 0; round < 100; round++) {
		for (uint64_t i = 0; i < 3; i++)
			UT_EQ(push(cq, round * 3 + i, IBV_WC_SUCCESS, false), 0);
		UT_EQ(ur_cq_poll(cq, 2, wc), 2);
		UT_EQ(wc[0].wr_id, round * 3);
		UT_EQ(wc[1].wr_id, round * 3 + 1);
		UT_EQ(ur_cq_poll(cq, 8, wc), 1);
		UT_EQ(wc[0].wr_id, round * 3 + 2);
		UT_EQ(ur_cq_poll(cq, 8, wc), 0);
	}
	UT_CHECK(!cq->overrun);
	del_cq(cq);
	/* Out of range at creation. */
	{
		struct ibv_cq_init_attr_ex a = { .cqe = 0 };

		errno = 0;
		UT_EQ(ut_cq(ctx, &a), NULL);
		UT_EQ(errno, EINVAL);
		a.cqe = UR_MAX_CQE + 1;
		UT_EQ(ut_cq(ctx, &a), NULL);
		a.cqe = 1;
		a.wc_flags = IBV_WC_EX_WITH_FLOW_TAG;   /* no flow steering */
		errno = 0;
		UT_EQ(ut_cq(ctx, &a), NULL);
		UT_EQ(errno, EOPNOTSUPP);
	}
}

/* Overrun: the completion is lost, -ENOSPC, and one CQ_ERR event however
 * many are lost; the CQ stays in error (nothing more is written to it, even
 * after polling made room). */
static void test_cq_overrun(void)
{
	struct ur_cq *cq = mk_cq(2, false);
	struct ibv_wc wc[4];

	async_events(IBV_EVENT_CQ_ERR, cq);
	UT_EQ(push(cq, 1, IBV_WC_SUCCESS, false), 0);
	UT_EQ(push(cq, 2, IBV_WC_SUCCESS, false), 0);
	UT_EQ(push(cq, 3, IBV_WC_SUCCESS, false), -ENOSPC);
	UT_EQ(push(cq, 4, IBV_WC_GENERAL_ERR, false), -ENOSPC);
	UT_EQ(async_events(IBV_EVENT_CQ_ERR, cq), 1);
	UT_EQ(ur_cq_poll(cq, 4, wc), 2);
	UT_EQ(wc[0].wr_id, 1);
	UT_EQ(wc[1].wr_id, 2);
	UT_EQ(push(cq, 5, IBV_WC_SUCCESS, false), -ENOSPC);
	UT_EQ(ur_cq_poll(cq, 4, wc), 0);
	UT_EQ(async_events(IBV_EVENT_CQ_ERR, cq), 0);
	del_cq(cq);
}

static void test_cq_resize(void)
{
	struct ur_cq *cq = mk_cq(4, false);
	struct ibv_wc wc[300];

	cq->head = cq->tail = UINT32_MAX - 1;     /* queued entries straddle the wrap */
	for (int i = 0; i < 4; i++)
		UT_EQ(push(cq, 10 + i, IBV_WC_SUCCESS, false), 0);
	UT_EQ(ur_cq_resize(cq, 3), -EINVAL);     /* would drop a queued completion */
	UT_EQ(ur_cq_resize(cq, 0), -EINVAL);
	UT_EQ(ur_cq_resize(cq, UR_MAX_CQE + 1), -EINVAL);
	UT_EQ(cq->ibcq.cqe, 4);
	UT_EQ(ur_cq_resize(cq, 200), 0);
	UT_EQ(cq->ibcq.cqe, 200);
	for (int i = 4; i < 200; i++)
		UT_EQ(push(cq, 10 + i, IBV_WC_SUCCESS, false), 0);
	UT_EQ(cq->tail - cq->head, 200u);         /* full, not overrun */
	UT_EQ(ur_cq_poll(cq, 300, wc), 200);
	for (int i = 0; i < 200; i++)
		UT_EQ(wc[i].wr_id, 10 + i);
	/* Shrinking with room for what is queued. */
	UT_EQ(push(cq, 1, IBV_WC_SUCCESS, false), 0);
	UT_EQ(push(cq, 2, IBV_WC_SUCCESS, false), 0);
	UT_EQ(ur_cq_resize(cq, 2), 0);
	UT_EQ(push(cq, 3, IBV_WC_SUCCESS, false), -ENOSPC);
	UT_EQ(ur_cq_poll(cq, 300, wc), 2);
	UT_EQ(wc[0].wr_id, 1);
	UT_EQ(wc[1].wr_id, 2);
	async_events(IBV_EVENT_CQ_ERR, cq);
	del_cq(cq);
}

/* A poll that finds the CQ empty takes no lock (a spinning program's
 * polls are mostly empty): it answers while another thread holds the
 * lock, as an ibv_start_poll session does; one that finds entries waits
 * its turn.  The old poll spun here for ever. */
static void test_cq_empty_poll_unlocked(void)
{
	struct ur_cq *cq = mk_cq(4, false);
	struct ibv_wc wc[4];

	pthread_spin_lock(&cq->lock);
	UT_CHECK(ur_cq_looks_empty(cq));
	UT_EQ(ur_cq_poll(cq, 4, wc), 0);
	UT_EQ(ur_cq_start_poll(cq), -ENOENT);
	pthread_spin_unlock(&cq->lock);
	UT_EQ(push(cq, 7, IBV_WC_SUCCESS, false), 0);
	UT_CHECK(!ur_cq_looks_empty(cq));
	UT_EQ(ur_cq_poll(cq, 4, wc), 1);
	UT_EQ(wc[0].wr_id, 7);
	UT_CHECK(ur_cq_looks_empty(cq));
	del_cq(cq);
}

static void test_cq_channel(void)
{
	struct ur_cq *cq = mk_cq(64, true);
	struct ibv_wc wc[64];

	UT_EQ(chan->ibch.refcnt, 1);
	UT_EQ(ur_channel_destroy(chan), -EBUSY);
	/* Not armed: no event. */
	UT_EQ(push(cq, 1, IBV_WC_SUCCESS, false), 0);
	UT_EQ(events(cq), 0);
	/* Armed: one event at the next completion, then disarmed. */
	UT_EQ(ur_cq_req_notify(cq, 0), 0);
	UT_EQ(events(cq), 0);
	UT_EQ(push(cq, 2, IBV_WC_SUCCESS, false), 0);
	UT_EQ(push(cq, 3, IBV_WC_SUCCESS, false), 0);
	UT_EQ(events(cq), 1);
	UT_EQ(cq->events_reported, 1);
	/* Solicited only: unsolicited successes do not wake... */
	UT_EQ(ur_cq_req_notify(cq, 1), 0);
	UT_EQ(push(cq, 4, IBV_WC_SUCCESS, false), 0);
	UT_EQ(events(cq), 0);
	/* ...a solicited one does... */
	UT_EQ(push(cq, 5, IBV_WC_SUCCESS, true), 0);
	UT_EQ(events(cq), 1);
	/* ...and so does an error, solicited or not. */
	UT_EQ(ur_cq_req_notify(cq, 1), 0);
	UT_EQ(push(cq, 6, IBV_WC_REM_ACCESS_ERR, false), 0);
	UT_EQ(events(cq), 1);
	/* Arming twice still gives one event. */
	UT_EQ(ur_cq_req_notify(cq, 0), 0);
	UT_EQ(ur_cq_req_notify(cq, 0), 0);
	UT_EQ(push(cq, 7, IBV_WC_SUCCESS, false), 0);
	UT_EQ(push(cq, 8, IBV_WC_SUCCESS, false), 0);
	UT_EQ(events(cq), 1);
	/* Arming with completions already queued does not report them: the
	 * next one does. */
	UT_EQ(ur_cq_req_notify(cq, 0), 0);
	UT_EQ(events(cq), 0);
	UT_EQ(ur_cq_poll(cq, 64, wc), 8);
	UT_EQ(cq->events_reported, 4);
	del_cq(cq);
	UT_EQ(chan->ibch.refcnt, 0);
}

/* Moderation by count: an armed CQ reports after cq_count completions;
 * an error reports at once. */
static void test_cq_moderation_count(void)
{
	struct ur_cq *cq = mk_cq(64, true);
	struct ibv_modify_cq_attr m = { .attr_mask = IBV_CQ_ATTR_MODERATE,
					.moderate = { .cq_count = 3, .cq_period = 0 } };

	UT_EQ(ur_cq_modify(cq, &m), 0);
	UT_EQ(ur_cq_req_notify(cq, 0), 0);
	UT_EQ(push(cq, 1, IBV_WC_SUCCESS, false), 0);
	UT_EQ(push(cq, 2, IBV_WC_SUCCESS, false), 0);
	UT_EQ(events(cq), 0);
	UT_EQ(push(cq, 3, IBV_WC_SUCCESS, false), 0);
	UT_EQ(events(cq), 1);
	/* Counting starts again at the next arming. */
	UT_EQ(ur_cq_req_notify(cq, 0), 0);
	UT_EQ(push(cq, 4, IBV_WC_SUCCESS, false), 0);
	UT_EQ(events(cq), 0);
	UT_EQ(push(cq, 5, IBV_WC_LOC_LEN_ERR, false), 0);
	UT_EQ(events(cq), 1);
	UT_EQ(ur_cq_req_notify(cq, 0), 0);
	UT_EQ(push(cq, 6, IBV_WC_SUCCESS, false), 0);
	UT_EQ(push(cq, 7, IBV_WC_SUCCESS, false), 0);
	UT_EQ(events(cq), 0);
	UT_EQ(push(cq, 8, IBV_WC_SUCCESS, false), 0);
	UT_EQ(events(cq), 1);
	/* count 1 (or 0 without a period): every completion. */
	m.moderate.cq_count = 1;
	UT_EQ(ur_cq_modify(cq, &m), 0);
	UT_EQ(ur_cq_req_notify(cq, 0), 0);
	UT_EQ(push(cq, 9, IBV_WC_SUCCESS, false), 0);
	UT_EQ(events(cq), 1);
	/* Unknown attribute bits. */
	m.attr_mask = 1u << 7;
	UT_EQ(ur_cq_modify(cq, &m), -EINVAL);
	del_cq(cq);
}

/* Moderation by period: the first completion of an armed CQ starts the
 * period; the event comes when the engine's timer fires, not before. */
static void test_cq_moderation_period(void)
{
	struct ur_engine *e = ut_stack()->engine;
	struct ur_cq *cq = mk_cq(64, true);
	struct ibv_modify_cq_attr m = { .attr_mask = IBV_CQ_ATTR_MODERATE,
					.moderate = { .cq_count = 0, .cq_period = 100 } };
	uint64_t t0;

	UT_EQ(ur_cq_modify(cq, &m), 0);
	UT_EQ(ur_cq_req_notify(cq, 0), 0);
	t0 = t_clock_ns;
	UT_EQ(push(cq, 1, IBV_WC_SUCCESS, false), 0);
	UT_EQ(cq->mod_timer.deadline, t0 + 100000);
	t_clock_ns += 50000;
	UT_EQ(push(cq, 2, IBV_WC_SUCCESS, false), 0);
	UT_EQ(cq->mod_timer.deadline, t0 + 100000);     /* not pushed back */
	ur_engine_run_timers(e, t0 + 99999);
	UT_EQ(events(cq), 0);
	ur_engine_run_timers(e, t0 + 100000);
	UT_EQ(events(cq), 1);
	UT_EQ(cq->mod_timer.deadline, 0);
	/* Expiring again without completions: nothing. */
	ur_engine_run_timers(e, t0 + 10000000);
	UT_EQ(events(cq), 0);
	/* Count and period together: whichever comes first; the count wins
	 * here and the timer is cancelled. */
	m.moderate.cq_count = 2;
	m.moderate.cq_period = 1000;
	UT_EQ(ur_cq_modify(cq, &m), 0);
	UT_EQ(ur_cq_req_notify(cq, 0), 0);
	UT_EQ(push(cq, 4, IBV_WC_SUCCESS, false), 0);
	UT_CHECK(cq->mod_timer.deadline != 0);
	UT_EQ(push(cq, 5, IBV_WC_SUCCESS, false), 0);
	UT_EQ(events(cq), 1);
	UT_EQ(cq->mod_timer.deadline, 0);
	UT_EQ(cq->mod_timer.heap_pos, 0);
	ur_engine_run_timers(e, t_clock_ns + 10000000);
	UT_EQ(events(cq), 0);
	/* An error does not wait for the period. */
	UT_EQ(ur_cq_req_notify(cq, 0), 0);
	UT_EQ(push(cq, 6, IBV_WC_SUCCESS, false), 0);
	UT_EQ(push(cq, 7, IBV_WC_WR_FLUSH_ERR, false), 0);
	UT_EQ(events(cq), 1);
	UT_EQ(cq->mod_timer.deadline, 0);
	/* Destroying a CQ with a timer armed cancels it. */
	UT_EQ(ur_cq_req_notify(cq, 0), 0);
	UT_EQ(push(cq, 8, IBV_WC_SUCCESS, false), 0);
	UT_CHECK(cq->mod_timer.heap_pos != 0);
	del_cq(cq);
	UT_EQ(ur_engine_timers_armed(e), 0);
	ur_engine_run_timers(e, UINT64_MAX);
}

/* The ibv_cq_ex interface: start / next / end over queued completions. */
static void test_cq_ex_poll(void)
{
	struct ibv_cq_init_attr_ex a = {
		.cqe = 8, .wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM |
				      IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
	};
	struct ur_cq *cq = ut_cq(ctx, &a);
	struct ibv_cq_ex *ex = &cq->ibcq;
	int n = 0, ret;

	/* start and next are the verbs' (src/verbs/cq.c wraps them with the
	 * errno convention and the inline progress); their core halves here. */
	UT_EQ(ur_cq_start_poll(cq), -ENOENT);
	for (uint64_t i = 0; i < 3; i++)
		UT_EQ(push(cq, (0x100ull + i) << 32 | (i + 7), IBV_WC_SUCCESS, false), 0);
	for (ret = ur_cq_start_poll(cq); ret == 0; ret = ur_cq_next_poll(cq)) {
		UT_EQ(ex->wr_id, (0x100ull + (unsigned)n) << 32 | ((unsigned)n + 7));
		UT_EQ(ex->status, IBV_WC_SUCCESS);
		UT_EQ(ex->read_byte_len(ex), (unsigned)n + 7);
		UT_EQ(ex->read_qp_num(ex), 0x100 + n);
		UT_EQ(ex->read_completion_ts(ex), t_clock_ns);
		n++;
	}
	UT_EQ(ret, -ENOENT);
	ex->end_poll(ex);
	UT_EQ(n, 3);
	del_cq(cq);
}

/* Purging one QP's completions keeps the others, in order. */
static void test_cq_purge(void)
{
	struct ur_cq *cq = mk_cq(8, false);
	struct ibv_wc wc[8];

	cq->head = cq->tail = UINT32_MAX - 2;
	for (uint64_t i = 0; i < 8; i++)
		UT_EQ(push(cq, ((i & 1 ? 0x22ull : 0x11ull) << 32) | i, IBV_WC_SUCCESS, false), 0);
	ur_cq_purge_qp(cq, 0x22);
	UT_EQ(ur_cq_poll(cq, 8, wc), 4);
	for (int i = 0; i < 4; i++)
		UT_EQ(wc[i].wr_id, (0x11ull << 32) | (uint64_t)(2 * i));
	ur_cq_purge_qp(cq, 0x11);
	UT_EQ(ur_cq_poll(cq, 8, wc), 0);
	del_cq(cq);
}

int main(void)
{
	ut_env_init("ut0:lo");
	UT_RUN(test_wq_ring);
	ctx = ut_context_open(ur_device_by_name("ut0"));
	chan = ut_channel(ctx);
	if (!ctx || !chan)
		return 1;
	UT_RUN(test_cq_full_empty_wrap);
	UT_RUN(test_cq_overrun);
	UT_RUN(test_cq_resize);
	UT_RUN(test_cq_empty_poll_unlocked);
	UT_RUN(test_cq_channel);
	UT_RUN(test_cq_moderation_count);
	UT_RUN(test_cq_moderation_period);
	UT_RUN(test_cq_ex_poll);
	UT_RUN(test_cq_purge);
	UT_EQ(ur_channel_destroy(chan), 0);
	ur_context_close(ctx);
	return UT_DONE();
}
