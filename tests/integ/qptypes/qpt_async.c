/* Asynchronous events on the context's async_fd (ibv_get_async_event /
 * ibv_ack_async_event).
 *
 *   qpt_async -m local -d DEV -g GIDX
 *       in one process, over QPs looped back on the device: COMM_EST (the
 *       first packet on a QP in RTR, once), SRQ_LIMIT_REACHED,
 *       QP_LAST_WQE_REACHED, and a CQ overrun: CQ_ERR for the CQ and
 *       QP_FATAL for the QP whose completion it lost (the QP in ERROR).
 *   qpt_async -m port -d DEV -a IPV4
 *       waits for what the test script does to the interface, announcing
 *       each event it got: PORT_ERR (link down), PORT_ACTIVE (up),
 *       GID_CHANGE (IPV4 added: the GID ::ffff:IPV4 appears), DEVICE_FATAL
 *       (the interface deleted); the port state matches each.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "qpt.h"

static struct qpt_dev d;
static struct qpt_buf buf;

static void connect_pair(struct ibv_qp *a, struct ibv_qp *b, bool b_rtr_only)
{
	struct qpt_ep ea, eb;

	qpt_ep_of(&d, a, &ea);
	qpt_ep_of(&d, b, &eb);
	if (qpt_connect(&d, a, &ea, &eb, 0, IBV_MTU_1024))
		DIE("QP a");
	if (b_rtr_only ? qpt_connect_rtr(&d, b, &ea, 0, IBV_MTU_1024)
		       : qpt_connect(&d, b, &eb, &ea, 0, IBV_MTU_1024))
		DIE("QP b");
}

static void comm_est(void)
{
	struct ibv_cq *cq = qpt_cq(&d, 32);
	struct ibv_qp *a = qpt_qp(&d, IBV_QPT_RC, cq, cq, NULL, 8);
	struct ibv_qp *b = qpt_qp(&d, IBV_QPT_RC, cq, cq, NULL, 8);
	struct ibv_wc wc[4];
	struct qpt_ep eb;
	int n;

	connect_pair(a, b, true);
	for (int i = 0; i < 2; i++)
		qpt_post_recv1(b, 10 + (uint64_t)i, buf.p + 1024 * i, 1024, buf.mr->lkey);
	CHECK(qpt_async_none(d.ctx, IBV_EVENT_COMM_EST, b, 300), "no COMM_EST before any packet");
	qpt_post_send1(a, IBV_WR_SEND, 1, buf.p + 8192, 64, buf.mr->lkey, 0);
	CHECK(qpt_async_wait(d.ctx, IBV_EVENT_COMM_EST, b, 10000),
	      "IBV_EVENT_COMM_EST for the QP in RTR when its first packet arrives");
	n = qpt_poll(cq, wc, 1, 10000);
	CHECK(n == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].qp_num == b->qp_num,
	      "and the QP in RTR receives the message (n %d)", n);
	qpt_post_send1(a, IBV_WR_SEND, 2, buf.p + 8192, 64, buf.mr->lkey, 0);
	n = qpt_poll(cq, wc, 1, 10000);
	CHECK(qpt_async_none(d.ctx, IBV_EVENT_COMM_EST, b, 500) &&
	      qpt_async_seen(IBV_EVENT_COMM_EST, b) == 1, "COMM_EST is raised once, not per packet");
	qpt_ep_of(&d, b, &eb);
	CHECK(qpt_modify_rts(b, &eb) == 0, "the QP then goes to RTS");
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_cq(cq);
}

static void srq_events(void)
{
	struct ibv_cq *cq = qpt_cq(&d, 64);
	struct ibv_srq_init_attr ia = { .attr = { .max_wr = 16, .max_sge = 1, .srq_limit = 0 } };
	struct ibv_srq *srq = ibv_create_srq(d.pd, &ia);
	struct ibv_srq_attr sa = { .srq_limit = 3 };
	struct ibv_qp *a, *b;
	struct ibv_wc wc[8];

	if (!srq)
		DIE("SRQ");
	a = qpt_qp(&d, IBV_QPT_RC, cq, cq, NULL, 8);
	b = qpt_qp(&d, IBV_QPT_RC, cq, cq, srq, 8);
	connect_pair(a, b, false);
	for (int i = 0; i < 5; i++)
		qpt_post_srq_recv1(srq, 20 + (uint64_t)i, buf.p + 1024 * i, 1024, buf.mr->lkey);
	CHECK(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT) == 0, "SRQ with 5 receives, limit 3");
	for (int i = 0; i < 3; i++)
		qpt_post_send1(a, IBV_WR_SEND, 30 + (uint64_t)i, buf.p + 8192, 64, buf.mr->lkey, 0);
	qpt_poll(cq, wc, 3, 10000);
	CHECK(qpt_async_wait(d.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, srq, 10000),
	      "IBV_EVENT_SRQ_LIMIT_REACHED when 2 receives remain");
	CHECK(qpt_to_state(b, IBV_QPS_ERR) == 0, "the SRQ's QP moved to ERROR");
	CHECK(qpt_async_wait(d.ctx, IBV_EVENT_QP_LAST_WQE_REACHED, b, 10000),
	      "IBV_EVENT_QP_LAST_WQE_REACHED for it");
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_srq(srq);
	ibv_destroy_cq(cq);
}

static void overrun(void)
{
	struct ibv_cq *scq = qpt_cq(&d, 4), *rcq = qpt_cq(&d, 64);
	struct ibv_qp *a = qpt_qp(&d, IBV_QPT_RC, scq, scq, NULL, 16);
	struct ibv_qp *b = qpt_qp(&d, IBV_QPT_RC, rcq, rcq, NULL, 16);
	int cap = scq->cqe;

	connect_pair(a, b, false);
	for (int i = 0; i < cap + 3; i++) {
		qpt_post_recv1(b, 40 + (uint64_t)i, buf.p + 1024 * i, 1024, buf.mr->lkey);
		qpt_post_send1(a, IBV_WR_SEND, 50 + (uint64_t)i, buf.p + 16384, 64, buf.mr->lkey,
			       IBV_SEND_SIGNALED);
	}
	CHECK(qpt_async_wait(d.ctx, IBV_EVENT_CQ_ERR, scq, 10000),
	      "%d signaled sends into a send CQ of %d: IBV_EVENT_CQ_ERR", cap + 3, cap);
	CHECK(qpt_async_wait(d.ctx, IBV_EVENT_QP_FATAL, a, 5000),
	      "IBV_EVENT_QP_FATAL for the QP whose completion could not be written (a local work queue catastrophic error)");
	CHECK(qpt_qp_state(a) == IBV_QPS_ERR, "that QP is in ERROR (state %d)", qpt_qp_state(a));
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_cq(scq);
	ibv_destroy_cq(rcq);
}

static void local(const struct qpt_opts *o)
{
	qpt_open(&d, o->dev, o->gidx);
	qpt_buf(&d, &buf, 1 << 16, IBV_ACCESS_LOCAL_WRITE);
	CHECK(d.ctx->async_fd >= 0, "the context has an async_fd (%d)", d.ctx->async_fd);
	comm_est();
	srq_events();
	overrun();
	CHECK(qpt_async_seen(IBV_EVENT_QP_FATAL, NULL) <= 1, "no stray QP_FATAL events");
	qpt_buf_free(&buf);
	qpt_close(&d);
}

/* ---- port events ---------------------------------------------------------- */

static bool has_gid(struct ibv_context *ctx, const union ibv_gid *want)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(ctx, 1, &pa))
		return false;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		union ibv_gid g;

		if (!ibv_query_gid(ctx, 1, i, &g) && !memcmp(&g, want, sizeof(g)))
			return true;
	}
	return false;
}

static void port(const struct qpt_opts *o)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_port_attr pa;
	union ibv_gid want = { .raw = { [10] = 0xff, [11] = 0xff } };
	int n;

	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), o->dev))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		DIE("device %s", o->dev);
	if (!o->arg || inet_pton(AF_INET, o->arg, &want.raw[12]) != 1)
		DIE("-a IPV4: the address the script will add");
	CHECK(!ibv_query_port(ctx, 1, &pa) && pa.state == IBV_PORT_ACTIVE, "the port is ACTIVE to begin with");
	CHECK(!has_gid(ctx, &want), "no GID for %s yet", o->arg);
	printf("ready\n");
	CHECK(qpt_async_wait(ctx, IBV_EVENT_PORT_ERR, NULL, 30000), "got IBV_EVENT_PORT_ERR (link down)");
	CHECK(!ibv_query_port(ctx, 1, &pa) && pa.state != IBV_PORT_ACTIVE,
	      "ibv_query_port: the port is not ACTIVE (state %d)", pa.state);
	CHECK(qpt_async_wait(ctx, IBV_EVENT_PORT_ACTIVE, NULL, 30000), "got IBV_EVENT_PORT_ACTIVE (link up)");
	CHECK(!ibv_query_port(ctx, 1, &pa) && pa.state == IBV_PORT_ACTIVE, "the port is ACTIVE again");
	printf("add the address\n");
	{
		/* The link going down and up changes GIDs too (IPv6 addresses):
		 * take GID_CHANGE events until the one for the new address. */
		uint64_t end = qpt_now_ms() + 30000;
		bool got = false;

		while (!got && qpt_now_ms() < end &&
		       qpt_async_wait(ctx, IBV_EVENT_GID_CHANGE, NULL, (int)(end - qpt_now_ms())))
			got = has_gid(ctx, &want);
		CHECK(got, "got IBV_EVENT_GID_CHANGE (address added), and the GID table now holds ::ffff:%s",
		      o->arg);
	}
	CHECK(qpt_async_wait(ctx, IBV_EVENT_DEVICE_FATAL, NULL, 30000),
	      "got IBV_EVENT_DEVICE_FATAL (interface deleted)");
	ibv_close_device(ctx);
	ibv_free_device_list(list);
}

const struct qpt_role qpt_roles[] = {
	{ "port", QPT_EITHER, port },
	{ NULL, QPT_EITHER, local },
	{ NULL, QPT_EITHER, NULL },
};
