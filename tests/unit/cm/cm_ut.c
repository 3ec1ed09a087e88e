/* Unit tests of the connection manager: the MAD codec against the IBA's
 * byte positions (fields where the kernel's ib_cm reads them), its round
 * trip, the host's delivery key, rdma_cm's private-data header; and the
 * state machine driven through a connection's life, its repeats, retries
 * and timeouts, with two ends wired back to back. */
#include <errno.h>
#include <string.h>

#include "cm/cm.h"
#include "ut.h"
#include "wire/mad.h"

static void test_req_layout(void)
{
	struct ur_cm_msg m, p;
	uint8_t mad[UR_MAD_BYTES];
	const uint8_t *d = mad + UR_MAD_HDR_BYTES;

	memset(&m, 0, sizeof(m));
	m.attr = UR_CM_REQ;
	m.tid = 0x1122334455667788ull;
	m.local_comm_id = 0xa1b2c3d4;
	m.service_id = ur_cma_service_id(UR_CMA_PS_TCP, 7174);
	m.qpn = 0x123456;
	m.resp_res = 4;
	m.init_depth = 3;
	m.psn = 0xabcdef;
	m.remote_cm_timeout = 18;
	m.local_cm_timeout = 17;
	m.retry_count = 7;
	m.rnr_retry = 6;
	m.max_cm_retries = 15;
	m.mtu = 5;
	m.pkey = 0xffff;
	m.ack_timeout = 14;
	m.local_gid[15] = 1;
	m.remote_gid[15] = 2;
	m.priv_len = 3;
	m.priv[0] = 0x00;
	m.priv[1] = 0x40;
	m.priv[2] = 0x1c;
	UT_EQ(ur_cm_pack(&m, mad), 0);
	/* The MAD header: base version 1, class CM, version 2, Send. */
	UT_EQ(mad[0], 1);
	UT_EQ(mad[1], 0x07);
	UT_EQ(mad[2], 2);
	UT_EQ(mad[3], 0x03);
	UT_EQ(mad[16], 0x00);
	UT_EQ(mad[17], 0x10);
	UT_EQ(mad[8], 0x11);
	/* Where ib_cm reads them (IBA table 106). */
	UT_EQ(d[0], 0xa1);
	UT_EQ(d[15], 7174 & 0xff);
	UT_EQ(d[13], 0x06);
	UT_EQ(d[12], 0x01);
	UT_EQ(d[32], 0x12);
	UT_EQ(d[34], 0x56);
	UT_EQ(d[35], 4);
	UT_EQ(d[39], 3);
	UT_EQ(d[43] >> 3, 18);
	UT_EQ(d[44], 0xab);
	UT_EQ(d[46], 0xef);
	UT_EQ(d[47], 17 << 3 | 7);
	UT_EQ(d[50], 5 << 4 | 6);
	UT_EQ(d[51] >> 4, 15);
	UT_EQ(d[71], 1);
	UT_EQ(d[87], 2);
	UT_EQ(d[95] >> 3, 14);
	UT_EQ(d[140], 0x00);
	UT_EQ(d[141], 0x40);
	UT_EQ(d[142], 0x1c);
	UT_EQ(ur_cm_parse(mad, sizeof(mad), &p), 0);
	UT_EQ(p.qpn, 0x123456u);
	UT_EQ(p.psn, 0xabcdefu);
	UT_EQ(p.service_id, m.service_id);
	UT_EQ(p.retry_count, 7);
	UT_EQ(p.rnr_retry, 6);
	UT_EQ(p.mtu, 5);
	UT_EQ(p.priv_len, UR_CM_REQ_PRIV);
	UT_EQ(p.priv[2], 0x1c);
}

static void test_rep_rej_layout(void)
{
	struct ur_cm_msg m, p;
	uint8_t mad[UR_MAD_BYTES];
	const uint8_t *d = mad + UR_MAD_HDR_BYTES;

	memset(&m, 0, sizeof(m));
	m.attr = UR_CM_REP;
	m.local_comm_id = 1;
	m.remote_comm_id = 0x01020304;
	m.qpn = 0x00beef;
	m.psn = 0x123456;
	m.resp_res = 2;
	m.init_depth = 1;
	m.rnr_retry = 7;
	m.priv_len = 1;
	m.priv[0] = 0x5a;
	UT_EQ(ur_cm_pack(&m, mad), 0);
	UT_EQ(d[7], 0x04);
	UT_EQ(d[13], 0xbe);
	UT_EQ(d[20], 0x12);
	UT_EQ(d[24], 2);
	UT_EQ(d[25], 1);
	UT_EQ(d[27] >> 5, 7);
	UT_EQ(d[36], 0x5a);
	UT_EQ(ur_cm_parse(mad, sizeof(mad), &p), 0);
	UT_EQ(p.qpn, 0x00beefu);
	UT_EQ(p.psn, 0x123456u);

	memset(&m, 0, sizeof(m));
	m.attr = UR_CM_REJ;
	m.remote_comm_id = 9;
	m.reason = UR_REJ_INVALID_SERVICE_ID;
	m.msg_ref = UR_CM_REF_REQ;
	UT_EQ(ur_cm_pack(&m, mad), 0);
	UT_EQ(d[8] >> 6, UR_CM_REF_REQ);
	UT_EQ(d[11], 8);
	UT_EQ(ur_cm_parse(mad, sizeof(mad), &p), 0);
	UT_EQ(p.reason, 8);

	/* Too much private data, unknown attributes, short MADs: refused. */
	m.priv_len = UR_CM_REJ_PRIV + 1;
	UT_EQ(ur_cm_pack(&m, mad), -EINVAL);
	m.priv_len = 0;
	m.attr = 0x0019;   /* LAP: not spoken here */
	UT_EQ(ur_cm_pack(&m, mad), -EINVAL);
	m.attr = UR_CM_RTU;
	UT_EQ(ur_cm_pack(&m, mad), 0);
	UT_EQ(ur_cm_parse(mad, UR_MAD_BYTES - 1, &p), -EINVAL);
	mad[1] = 0x01;     /* subnet management, not CM */
	UT_EQ(ur_cm_parse(mad, UR_MAD_BYTES, &p), -EINVAL);
}

static void test_dest_and_cma_hdr(void)
{
	struct ur_cm_msg m;
	struct ur_cm_dest dst;
	struct ur_cma_hdr h = { .ip_version = 4, .src_port = 40000 }, g;
	uint8_t mad[UR_MAD_BYTES], raw[UR_CMA_HDR_BYTES];

	memset(&m, 0, sizeof(m));
	m.attr = UR_CM_REQ;
	m.service_id = 0x0000000001064e20ull;
	UT_EQ(ur_cm_pack(&m, mad), 0);
	UT_EQ(ur_cm_dest_of(mad, sizeof(mad), &dst), 0);
	UT_CHECK(dst.by_service);
	UT_EQ(dst.service_id, m.service_id);
	m.attr = UR_CM_DREQ;
	m.remote_comm_id = 0x77000102;
	UT_EQ(ur_cm_pack(&m, mad), 0);
	UT_EQ(ur_cm_dest_of(mad, sizeof(mad), &dst), 0);
	UT_CHECK(!dst.by_service);
	UT_EQ(dst.comm_id, 0x77000102u);
	UT_EQ(ur_cma_service_id(UR_CMA_PS_TCP, 20000), 0x0000000001064e20ull);

	h.src[15] = 1;
	h.dst[15] = 2;
	ur_cma_hdr_pack(&h, raw);
	UT_EQ(raw[0], 0);
	UT_EQ(raw[1], 0x40);
	UT_EQ(raw[2], 40000 >> 8);
	UT_EQ(raw[19], 1);
	UT_EQ(raw[35], 2);
	UT_EQ(ur_cma_hdr_parse(raw, sizeof(raw), &g), 0);
	UT_EQ(g.src_port, 40000);
	raw[1] = 0x50;
	UT_EQ(ur_cma_hdr_parse(raw, sizeof(raw), &g), -EINVAL);
}

/* SIDR_REQ and SIDR_REP where the kernel's ib_cm reads them (IBA 12.11,
 * struct ib_sidr_req_msg / ib_sidr_rep_msg), and where the host delivers
 * them: a SIDR_REQ by its service ID, a SIDR_REP by the request ID. */
static void test_sidr_layout(void)
{
	struct ur_cm_msg m, p;
	struct ur_cm_dest dst;
	uint8_t mad[UR_MAD_BYTES];
	const uint8_t *d = mad + UR_MAD_HDR_BYTES;

	memset(&m, 0, sizeof(m));
	m.attr = UR_CM_SIDR_REQ;
	m.tid = 0x0102030405060708ull;
	m.local_comm_id = 0xa1b2c3d4;
	m.pkey = 0xffff;
	m.service_id = ur_cma_service_id(UR_CMA_PS_UDP, 7174);
	m.priv[0] = 0x5a;
	m.priv[215] = 0xa5;
	m.priv_len = UR_CM_SIDR_REQ_PRIV;
	UT_EQ(ur_cm_pack(&m, mad), 0);
	UT_EQ(ur_get_be16(mad + 16), 0x0017);
	UT_EQ(ur_get_be32(d), 0xa1b2c3d4u);
	UT_EQ(ur_get_be16(d + 4), 0xffff);
	UT_EQ(ur_get_be64(d + 8), 0x0000000001111c06ull);
	UT_EQ(d[16], 0x5a);
	UT_EQ(d[16 + 215], 0xa5);
	UT_EQ(ur_cm_parse(mad, sizeof(mad), &p), 0);
	UT_EQ(p.local_comm_id, 0xa1b2c3d4u);
	UT_EQ(p.remote_comm_id, 0u);
	UT_EQ(p.service_id, m.service_id);
	UT_EQ(p.pkey, 0xffff);
	UT_EQ(p.priv_len, UR_CM_SIDR_REQ_PRIV);
	UT_EQ(p.priv[215], 0xa5);
	UT_EQ(ur_cm_dest_of(mad, sizeof(mad), &dst), 0);
	UT_CHECK(dst.by_service);
	UT_EQ(dst.service_id, m.service_id);
	m.priv_len = UR_CM_SIDR_REQ_PRIV + 1;
	UT_EQ(ur_cm_pack(&m, mad), -EINVAL);

	memset(&m, 0, sizeof(m));
	m.attr = UR_CM_SIDR_REP;
	m.remote_comm_id = 0xa1b2c3d4;
	m.sidr_status = UR_SIDR_OK;
	m.qpn = 0x123456;
	m.service_id = 0x0000000001111c06ull;
	m.qkey = 0x01234567;
	m.priv[135] = 0x77;
	m.priv_len = UR_CM_SIDR_REP_PRIV;
	UT_EQ(ur_cm_pack(&m, mad), 0);
	UT_EQ(ur_get_be16(mad + 16), 0x0018);
	UT_EQ(ur_get_be32(d), 0xa1b2c3d4u);
	UT_EQ(d[4], 0);
	UT_EQ(d[8], 0x12);
	UT_EQ(d[10], 0x56);
	UT_EQ(ur_get_be64(d + 12), 0x0000000001111c06ull);
	UT_EQ(ur_get_be32(d + 20), 0x01234567u);
	UT_EQ(d[96 + 135], 0x77);
	UT_EQ(ur_cm_parse(mad, sizeof(mad), &p), 0);
	UT_EQ(p.remote_comm_id, 0xa1b2c3d4u);
	UT_EQ(p.qpn, 0x123456u);
	UT_EQ(p.qkey, 0x01234567u);
	UT_EQ(p.priv_len, UR_CM_SIDR_REP_PRIV);
	UT_EQ(ur_cm_dest_of(mad, sizeof(mad), &dst), 0);
	UT_CHECK(!dst.by_service);
	UT_EQ(dst.comm_id, 0xa1b2c3d4u);
}

/* ---- the state machine, two ends back to back ----------------------------- */

struct end {
	struct ur_cm_conn c;
	struct ur_cm_msg last;       /* what it sent last */
	int sent;
};

static void record(struct ur_cm_conn *c, const struct ur_cm_msg *m)
{
	struct end *e = (struct end *)c;
	uint8_t mad[UR_MAD_BYTES];

	/* Everything sent must encode. */
	UT_EQ(ur_cm_pack(m, mad), 0);
	UT_EQ(ur_cm_parse(mad, sizeof(mad), &e->last), 0);
	e->sent++;
}

static const struct ur_cm_ops ops = { .send = record };

static void connect_pair(struct end *a, struct end *b)
{
	struct ur_cm_msg req = { .qpn = 0x10, .psn = 0x111 }, rep = { .qpn = 0x20, .psn = 0x222 };

	ur_cm_init(&a->c, &ops, 0x01000100, 1000, 2);
	ur_cm_init(&b->c, &ops, 0x02000200, 1000, 2);
	UT_EQ(ur_cm_send_req(&a->c, &req, 0), 0);
	UT_EQ(a->c.state, UR_CM_REQ_SENT);
	UT_EQ(a->last.attr, UR_CM_REQ);
	UT_EQ(a->last.local_comm_id, 0x01000100u);
	ur_cm_req_rcvd(&b->c, &a->last);
	UT_EQ(ur_cm_send_rep(&b->c, &rep, 10), 0);
	UT_EQ(b->last.remote_comm_id, 0x01000100u);
	UT_EQ(b->last.tid, a->last.tid);
	UT_EQ(ur_cm_rx(&a->c, &b->last, 20), UR_CM_UP_REP);
	UT_EQ(a->c.remote_qpn, 0x20u);
	UT_EQ(ur_cm_send_rtu(&a->c, NULL, 0), 0);
	UT_EQ(a->c.state, UR_CM_ESTABLISHED);
	UT_EQ(ur_cm_rx(&b->c, &a->last, 30), UR_CM_UP_RTU);
	UT_EQ(b->c.state, UR_CM_ESTABLISHED);
}

static void test_connect_disconnect(void)
{
	struct end a = { 0 }, b = { 0 };
	struct ur_cm_msg rep_again, req_again;

	connect_pair(&a, &b);
	/* A repeated REP (our RTU lost) is answered with the RTU again. */
	rep_again = b.c.out;
	a.sent = 0;
	UT_EQ(ur_cm_rx(&a.c, &rep_again, 40), UR_CM_UP_NONE);
	UT_EQ(a.sent, 1);
	UT_EQ(a.last.attr, UR_CM_RTU);
	/* A REQ repeated after establishment changes nothing. */
	req_again = a.c.out;
	UT_EQ(ur_cm_rx(&b.c, &req_again, 40), UR_CM_UP_NONE);

	UT_EQ(ur_cm_send_dreq(&a.c, NULL, 0, 50), 0);
	UT_EQ(a.last.attr, UR_CM_DREQ);
	UT_EQ(a.last.qpn, 0x20u);
	UT_EQ(ur_cm_rx(&b.c, &a.last, 60), UR_CM_UP_DREQ);
	UT_EQ(b.last.attr, UR_CM_DREP);
	UT_EQ(b.c.state, UR_CM_TIMEWAIT);
	/* A repeated DREQ: the DREP again, no second report. */
	b.sent = 0;
	UT_EQ(ur_cm_rx(&b.c, &a.last, 61), UR_CM_UP_NONE);
	UT_EQ(b.sent, 1);
	UT_EQ(ur_cm_rx(&a.c, &b.last, 70), UR_CM_UP_DREP);
	UT_EQ(a.c.state, UR_CM_TIMEWAIT);
	UT_EQ(ur_cm_send_dreq(&a.c, NULL, 0, 80), -EINVAL);
}

static void test_retries_and_timeouts(void)
{
	struct end a = { 0 }, b = { 0 };
	struct ur_cm_msg req = { .qpn = 1 }, mra = { .attr = UR_CM_MRA, .service_timeout = 20 };

	ur_cm_init(&a.c, &ops, 0x01000001, 1000, 2);
	UT_EQ(ur_cm_send_req(&a.c, &req, 0), 0);
	UT_EQ(a.sent, 1);
	UT_EQ(ur_cm_tick(&a.c, 999), UR_CM_UP_NONE);
	UT_EQ(a.sent, 1);
	UT_EQ(ur_cm_tick(&a.c, 1000), UR_CM_UP_NONE);   /* retry 1 */
	UT_EQ(a.sent, 2);
	UT_EQ(a.last.attr, UR_CM_REQ);
	/* An MRA: the peer needs 4.096 us * 2^20, about 4.3 s, first. */
	UT_EQ(ur_cm_rx(&a.c, &mra, 1500), UR_CM_UP_NONE);
	UT_EQ(ur_cm_tick(&a.c, 2000), UR_CM_UP_NONE);
	UT_EQ(a.sent, 2);
	UT_EQ(ur_cm_tick(&a.c, 1500 + (4096ull << 20)), UR_CM_UP_NONE);   /* retry 2 */
	UT_EQ(a.sent, 3);
	UT_EQ(ur_cm_tick(&a.c, 1500 + (4096ull << 20) + 1000), UR_CM_UP_TIMEOUT);
	UT_EQ(a.c.state, UR_CM_TIMEWAIT);
	UT_EQ(ur_cm_tick(&a.c, 1ull << 50), UR_CM_UP_NONE);

	/* A DREQ nobody answers: disconnected anyway after the retries. */
	connect_pair(&a, &b);
	UT_EQ(ur_cm_send_dreq(&b.c, NULL, 0, 100), 0);
	UT_EQ(ur_cm_tick(&b.c, 1100), UR_CM_UP_NONE);
	UT_EQ(ur_cm_tick(&b.c, 2100), UR_CM_UP_NONE);
	UT_EQ(ur_cm_tick(&b.c, 3100), UR_CM_UP_DREQ_TIMEOUT);
}

static void test_reject(void)
{
	struct end a = { 0 }, b = { 0 };
	struct ur_cm_msg req = { .qpn = 1 }, rej;
	uint8_t why[3] = { 1, 2, 3 };

	ur_cm_init(&a.c, &ops, 0x01000001, 1000, 2);
	ur_cm_init(&b.c, &ops, 0x02000002, 1000, 2);
	UT_EQ(ur_cm_send_req(&a.c, &req, 0), 0);
	ur_cm_req_rcvd(&b.c, &a.last);
	UT_EQ(ur_cm_send_rej(&b.c, UR_REJ_CONSUMER, why, 3), 0);
	UT_EQ(b.last.attr, UR_CM_REJ);
	UT_EQ(b.last.reason, UR_REJ_CONSUMER);
	UT_EQ(b.last.msg_ref, UR_CM_REF_REQ);
	UT_EQ(b.last.priv[2], 3);
	UT_EQ(ur_cm_rx(&a.c, &b.last, 5), UR_CM_UP_REJ);
	UT_EQ(a.c.deadline_ns, 0u);
	/* Nobody listening: a REJ made from the REQ alone. */
	ur_cm_rej_for(&a.c.out, UR_REJ_INVALID_SERVICE_ID, &rej);
	UT_EQ(rej.remote_comm_id, a.c.local_id);
	UT_EQ(rej.tid, a.c.out.tid);
	UT_EQ(rej.msg_ref, UR_CM_REF_REQ);
	/* No REJ once established. */
	connect_pair(&a, &b);
	UT_EQ(ur_cm_send_rej(&a.c, UR_REJ_CONSUMER, NULL, 0), -EINVAL);
}

/* A REJ "invalid service ID" soon after the REQ: asked again until the
 * grace ends (a listener still starting), then reported. */
static void test_reject_before_listen(void)
{
	struct end a = { 0 }, b = { 0 };
	struct ur_cm_msg req = { .qpn = 1 }, rej, rep = { .qpn = 2 };
	uint64_t t = 1000000, tid0;

	ur_cm_init(&a.c, &ops, 0x01000001, 500ull * 1000 * 1000, 2);
	UT_EQ(ur_cm_send_req(&a.c, &req, t), 0);
	tid0 = a.last.tid;
	ur_cm_rej_for(&a.last, UR_REJ_INVALID_SERVICE_ID, &rej);
	UT_EQ(ur_cm_rx(&a.c, &rej, t + 10), UR_CM_UP_NONE);
	UT_EQ(a.c.state, UR_CM_REQ_SENT);
	UT_EQ(a.sent, 1);
	UT_EQ(ur_cm_tick(&a.c, t + 10 + UR_CM_LISTEN_RETRY_NS - 1), UR_CM_UP_NONE);
	UT_EQ(a.sent, 1);
	UT_EQ(ur_cm_tick(&a.c, t + 10 + UR_CM_LISTEN_RETRY_NS), UR_CM_UP_NONE);
	UT_EQ(a.sent, 2);
	UT_EQ(a.last.attr, UR_CM_REQ);
	UT_EQ(a.last.local_comm_id, 0x01000001u);
	UT_CHECK(a.last.tid != tid0);
	/* Now somebody listens: the connection goes on as usual. */
	ur_cm_init(&b.c, &ops, 0x02000002, 1000, 2);
	ur_cm_req_rcvd(&b.c, &a.last);
	UT_EQ(ur_cm_send_rep(&b.c, &rep, t + 2), 0);
	UT_EQ(ur_cm_rx(&a.c, &b.last, t + 3), UR_CM_UP_REP);

	/* Nobody for the whole grace: reported, with no further REQ. */
	memset(&a, 0, sizeof(a));
	ur_cm_init(&a.c, &ops, 0x01000003, 500ull * 1000 * 1000, 2);
	UT_EQ(ur_cm_send_req(&a.c, &req, t), 0);
	for (uint64_t now = t; ; now += UR_CM_LISTEN_RETRY_NS) {
		enum ur_cm_up up;

		ur_cm_rej_for(&a.last, UR_REJ_INVALID_SERVICE_ID, &rej);
		up = ur_cm_rx(&a.c, &rej, now + 1);
		if (up == UR_CM_UP_REJ) {
			UT_CHECK(now + 1 - t >= UR_CM_LISTEN_GRACE_NS);
			break;
		}
		UT_EQ(up, UR_CM_UP_NONE);
		UT_CHECK(now - t < UR_CM_LISTEN_GRACE_NS);
		UT_EQ(ur_cm_tick(&a.c, now + UR_CM_LISTEN_RETRY_NS), UR_CM_UP_NONE);
	}
	UT_EQ(a.c.state, UR_CM_TIMEWAIT);
	UT_EQ(a.c.deadline_ns, 0u);

	/* Any other reason is the answer at once. */
	memset(&a, 0, sizeof(a));
	ur_cm_init(&a.c, &ops, 0x01000004, 500ull * 1000 * 1000, 2);
	UT_EQ(ur_cm_send_req(&a.c, &req, t), 0);
	ur_cm_rej_for(&a.last, UR_REJ_CONSUMER, &rej);
	UT_EQ(ur_cm_rx(&a.c, &rej, t + 1), UR_CM_UP_REJ);
}

static void test_sidr(void)
{
	struct end a = { 0 }, b = { 0 };
	struct ur_cm_msg req = { .service_id = 0x0000000001111c06ull }, again;
	uint8_t priv[4] = { 1, 2, 3, 4 };

	ur_cm_init(&a.c, &ops, 0x01000100, 1000, 2);
	ur_cm_init(&b.c, &ops, 0x02000200, 1000, 2);
	UT_EQ(ur_cm_send_sidr_req(&a.c, &req, 0), 0);
	UT_EQ(a.c.state, UR_CM_SIDR_REQ_SENT);
	UT_EQ(a.last.attr, UR_CM_SIDR_REQ);
	UT_EQ(a.last.local_comm_id, 0x01000100u);
	ur_cm_sidr_req_rcvd(&b.c, &a.last);
	UT_EQ(b.c.state, UR_CM_SIDR_REQ_RCVD);
	UT_EQ(ur_cm_send_sidr_rep(&b.c, UR_SIDR_OK, 0x20, 0x01234567, priv, 4), 0);
	UT_EQ(b.last.attr, UR_CM_SIDR_REP);
	UT_EQ(b.last.remote_comm_id, 0x01000100u);
	UT_EQ(b.last.tid, a.last.tid);
	UT_EQ(b.last.priv[3], 4);
	UT_EQ(ur_cm_send_sidr_rep(&b.c, UR_SIDR_OK, 0x20, 0, NULL, 0), -EINVAL);
	/* The request again (our answer lost): the same answer, once more. */
	b.sent = 0;
	again = a.last;
	UT_EQ(ur_cm_rx(&b.c, &again, 5), UR_CM_UP_NONE);
	UT_EQ(b.sent, 1);
	UT_EQ(b.last.qpn, 0x20u);
	UT_EQ(ur_cm_rx(&a.c, &b.last, 10), UR_CM_UP_SIDR_REP);
	UT_EQ(a.c.state, UR_CM_TIMEWAIT);
	UT_EQ(ur_cm_rx(&a.c, &b.last, 11), UR_CM_UP_NONE);   /* reported once */

	/* No answer: sent again max_retries times, then a timeout. */
	memset(&a, 0, sizeof(a));
	ur_cm_init(&a.c, &ops, 0x01000101, 1000, 2);
	UT_EQ(ur_cm_send_sidr_req(&a.c, &req, 0), 0);
	UT_EQ(ur_cm_tick(&a.c, 1000), UR_CM_UP_NONE);
	UT_EQ(ur_cm_tick(&a.c, 2000), UR_CM_UP_NONE);
	UT_EQ(a.sent, 3);
	UT_EQ(ur_cm_tick(&a.c, 3000), UR_CM_UP_TIMEOUT);

	/* "Nobody serves it" soon after the request: asked again, then, past
	 * the grace, reported. */
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	ur_cm_init(&a.c, &ops, 0x01000102, UR_CM_LISTEN_GRACE_NS * 4, 2);
	ur_cm_init(&b.c, &ops, 0x02000202, 1000, 2);
	UT_EQ(ur_cm_send_sidr_req(&a.c, &req, 0), 0);
	ur_cm_sidr_req_rcvd(&b.c, &a.last);
	UT_EQ(ur_cm_send_sidr_rep(&b.c, UR_SIDR_UNSUPPORTED, 0, 0, NULL, 0), 0);
	UT_EQ(b.last.qpn, 0u);
	UT_EQ(ur_cm_rx(&a.c, &b.last, 10), UR_CM_UP_NONE);
	a.sent = 0;
	UT_EQ(ur_cm_tick(&a.c, 10 + UR_CM_LISTEN_RETRY_NS), UR_CM_UP_NONE);
	UT_EQ(a.sent, 1);
	UT_EQ(a.last.attr, UR_CM_SIDR_REQ);
	UT_EQ(ur_cm_rx(&a.c, &b.last, UR_CM_LISTEN_GRACE_NS + 1), UR_CM_UP_SIDR_REP);
}

int main(void)
{
	UT_RUN(test_req_layout);
	UT_RUN(test_rep_rej_layout);
	UT_RUN(test_dest_and_cma_hdr);
	UT_RUN(test_sidr_layout);
	UT_RUN(test_sidr);
	UT_RUN(test_connect_disconnect);
	UT_RUN(test_retries_and_timeouts);
	UT_RUN(test_reject);
	UT_RUN(test_reject_before_listen);
	UT_DONE();
}
