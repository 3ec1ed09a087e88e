/* UD between two processes: address handles (ibv_create_ah, and from a
 * received completion with ibv_create_ah_from_wc / ibv_init_ah_from_wc),
 * Q_Keys (a mismatch is dropped and counted in qkey_violations; a Q_Key
 * with the high bit set means the sending QP's own), the 40-byte GRH in
 * front of every received datagram, src_qp, IBV_WC_GRH, immediate data,
 * datagrams of a full path MTU and the EINVAL one byte beyond it, bad
 * address handles, a datagram to a QPN nobody owns, and a receive buffer
 * too small for the datagram.
 *
 *   qpt_ud -d DEV -g GIDX -p PORT [-a v6]            (server: receives)
 *   qpt_ud -d DEV -g GIDX -p PORT [-a v6] SERVER_IP  (client: sends)
 *
 * -a v6: use the first global IPv6 GID instead of -g (then the GRH is an
 * IPv6 header). */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "qpt.h"

#define QKEY_S 0x11117777u      /* the server QP's Q_Key */
#define QKEY_C 0x22228888u      /* the client's first QP */
#define SLOTS 32
#define IMM 0x5eed1234u

struct side {
	struct qpt_dev d;
	struct ibv_cq *cq, *scq;      /* receives, sends */
	struct ibv_qp *qp, *qp2;      /* qp2: the client's second QP (Q_Key = QKEY_S) */
	struct qpt_buf buf;
	struct qpt_ep me, peer;
	struct ibv_ah *ah;            /* to the peer */
	unsigned slot_len;            /* MTU + 40 */
	int fd;
	bool same_ns;
};

static uint8_t *slot(struct side *s, int i) { return s->buf.p + (size_t)i * s->slot_len; }

static bool is_v4(const union ibv_gid *g)
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(g->raw, pfx, 12);
}

/* The first global (not link-local, not v4-mapped) IPv6 GID's index. */
static int v6_gid_index(struct ibv_context *ctx)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(ctx, 1, &pa))
		return -1;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		union ibv_gid g;

		if (ibv_query_gid(ctx, 1, i, &g) || !memcmp(g.raw, (uint8_t[16]){ 0 }, 16))
			continue;
		if (!is_v4(&g) && !(g.raw[0] == 0xfe && (g.raw[1] & 0xc0) == 0x80))
			return i;
	}
	return -1;
}

static void setup(struct side *s, const struct qpt_opts *o)
{
	struct qpt_dev probe;
	int gidx = o->gidx;
	struct ibv_ah_attr aa;

	memset(s, 0, sizeof(*s));
	if (o->arg && !strcmp(o->arg, "v6")) {
		qpt_open(&probe, o->dev, 0);
		gidx = v6_gid_index(probe.ctx);
		qpt_close(&probe);
		if (gidx < 0)
			DIE("no global IPv6 GID on %s", o->dev);
	}
	qpt_open(&s->d, o->dev, gidx);
	s->slot_len = s->d.mtu + 40;
	s->cq = qpt_cq(&s->d, 256);
	s->scq = qpt_cq(&s->d, 256);
	s->qp = qpt_qp(&s->d, IBV_QPT_UD, s->scq, s->cq, NULL, 64);
	if (qpt_ud_ready(s->qp, qpt_is_server(o) ? QKEY_S : QKEY_C))
		DIE("UD QP to RTS");
	if (!qpt_is_server(o)) {
		s->qp2 = qpt_qp(&s->d, IBV_QPT_UD, s->scq, s->cq, NULL, 16);
		if (qpt_ud_ready(s->qp2, QKEY_S))
			DIE("second UD QP to RTS");
	}
	qpt_buf(&s->d, &s->buf, (size_t)s->slot_len * SLOTS + 65536, IBV_ACCESS_LOCAL_WRITE);
	qpt_ep_of(&s->d, s->qp, &s->me);
	s->me.v[0] = qpt_is_server(o) ? QKEY_S : QKEY_C;
	s->me.v[1] = (uint32_t)gidx;
	s->fd = qpt_oob(o);
	qpt_xchg_ep(s->fd, &s->me, &s->peer);
	s->same_ns = s->me.netns == s->peer.netns;
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.grh.dgid = s->peer.gid;
	aa.grh.sgid_index = (uint8_t)gidx;
	aa.grh.hop_limit = 64;
	aa.port_num = 1;
	s->ah = ibv_create_ah(s->d.pd, &aa);
	CHECK(s->ah != NULL, "ibv_create_ah to the peer's GID (errno %d)", s->ah ? 0 : errno);
	if (!s->ah)
		DIE("no address handle");
}

/* One datagram: the payload starts with a 32-bit marker. */
static int ud_send(struct side *s, struct ibv_qp *qp, struct ibv_ah *ah, uint32_t qpn,
		   uint32_t qkey, uint32_t marker, uint32_t len, bool with_imm)
{
	uint8_t *b = s->buf.p + (size_t)s->slot_len * SLOTS;
	struct ibv_sge sge = { (uintptr_t)b, len, s->buf.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = marker,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = with_imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htobe32(IMM),
	}, *bad;

	for (uint32_t i = 0; i < len; i++)
		b[i] = (uint8_t)(marker + i);
	if (len >= 4)
		memcpy(b, &marker, 4);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	return ibv_post_send(qp, &wr, &bad);
}

/* Sends and waits for the send completion. */
static bool ud_send_ok(struct side *s, struct ibv_qp *qp, struct ibv_ah *ah, uint32_t qpn,
		       uint32_t qkey, uint32_t marker, uint32_t len, bool imm)
{
	struct ibv_wc wc;

	if (ud_send(s, qp, ah, qpn, qkey, marker, len, imm))
		return false;
	if (qpt_poll(s->scq, &wc, 1, 20000) != 1)
		return false;
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != marker || wc.opcode != IBV_WC_SEND)
		qpt_note("send completion: status %s wr_id %llu opcode %d",
			 ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id, wc.opcode);
	return wc.status == IBV_WC_SUCCESS && wc.wr_id == marker;
}

static void post_slots(struct side *s, int from, int n)
{
	for (int i = from; i < from + n; i++)
		if (qpt_post_recv1(s->qp, (uint64_t)i, slot(s, i), s->slot_len, s->buf.mr->lkey))
			DIE("post_recv slot %d", i);
}

static uint32_t marker_of(struct side *s, const struct ibv_wc *wc)
{
	uint32_t m = 0;

	memcpy(&m, slot(s, (int)wc->wr_id) + 40, 4);
	return m;
}

/* The GRH of a datagram received from the peer. */
static void check_grh(struct side *s, const uint8_t *grh, uint32_t paylen)
{
	if (is_v4(&s->me.gid)) {
		const uint8_t *ip = grh + 20;
		uint16_t tot = (uint16_t)(ip[2] << 8 | ip[3]);

		CHECK((ip[0] >> 4) == 4 && (ip[0] & 0xf) == 5 && ip[9] == 17,
		      "GRH: an IPv4 header (version 4, IHL 5, UDP) in bytes 20..39 (0x%02x, proto %u)",
		      ip[0], ip[9]);
		CHECK(!memcmp(ip + 12, &s->peer.gid.raw[12], 4) && !memcmp(ip + 16, &s->me.gid.raw[12], 4),
		      "GRH: IPv4 source is the sender's address, destination ours (%u.%u.%u.%u -> %u.%u.%u.%u)",
		      ip[12], ip[13], ip[14], ip[15], ip[16], ip[17], ip[18], ip[19]);
		/* IP + UDP + BTH + DETH + payload + ICRC */
		CHECK(tot == 20 + 8 + 12 + 8 + paylen + 4,
		      "GRH: IPv4 total length %u = 20 + 8 (UDP) + 12 (BTH) + 8 (DETH) + %u + 4 (ICRC)",
		      tot, paylen);
	} else {
		char a[64], b[64];
		uint16_t plen = (uint16_t)(grh[4] << 8 | grh[5]);

		CHECK((grh[0] >> 4) == 6 && grh[6] == 17,
		      "GRH: an IPv6 header (version 6, next header UDP) (0x%02x, nh %u)", grh[0], grh[6]);
		CHECK(!memcmp(grh + 8, s->peer.gid.raw, 16) && !memcmp(grh + 24, s->me.gid.raw, 16),
		      "GRH: SGID is the sender's GID, DGID ours (%s -> %s)",
		      qpt_gid_str((const union ibv_gid *)(grh + 8), a),
		      qpt_gid_str((const union ibv_gid *)(grh + 24), b));
		CHECK(plen == 8 + 12 + 8 + paylen + 4,
		      "GRH: IPv6 payload length %u = 8 (UDP) + 12 + 8 + %u + 4", plen, paylen);
	}
}

/* 2: answer through AHs made from the first datagram's completion. */
static void server_reply_through_wc_ahs(struct side *s, struct ibv_wc *first)
{
	struct ibv_ah_attr attr;
	struct ibv_ah *ah_wc, *ah_init;
	char g1[64];
	int ret;

	ah_wc = ibv_create_ah_from_wc(s->d.pd, first, (struct ibv_grh *)slot(s, (int)first->wr_id), 1);
	CHECK(ah_wc != NULL, "ibv_create_ah_from_wc (errno %d)", ah_wc ? 0 : errno);
	if (ah_wc)
		CHECK(ud_send_ok(s, s->qp, ah_wc, first->src_qp, s->peer.v[0], 2, 64, false),
		      "reply 1 sent through the AH from the completion");
	memset(&attr, 0, sizeof(attr));
	ret = ibv_init_ah_from_wc(s->d.ctx, 1, first, (struct ibv_grh *)slot(s, (int)first->wr_id),
				  &attr);
	CHECK(ret == 0, "ibv_init_ah_from_wc (ret %d)", ret);
	CHECK(attr.is_global == 1 && !memcmp(&attr.grh.dgid, &s->peer.gid, 16) &&
	      attr.grh.sgid_index == s->d.gidx && attr.port_num == 1,
	      "ibv_init_ah_from_wc: global, dgid = the sender's GID (%s), sgid_index = ours (%u), port 1 (%u)",
	      qpt_gid_str(&attr.grh.dgid, g1), attr.grh.sgid_index, attr.port_num);
	ah_init = ret ? NULL : ibv_create_ah(s->d.pd, &attr);
	CHECK(ah_init != NULL, "ibv_create_ah from those attributes");
	if (ah_init)
		CHECK(ud_send_ok(s, s->qp, ah_init, first->src_qp, s->peer.v[0], 3, 64, false),
		      "reply 2 sent through the AH from ibv_init_ah_from_wc");
	{
		struct ibv_wc nogrh = *first;

		nogrh.wc_flags &= ~(unsigned)IBV_WC_GRH;
		errno = 0;
		ret = ibv_init_ah_from_wc(s->d.ctx, 1, &nogrh, NULL, &attr);
		CHECK(ret != 0, "ibv_init_ah_from_wc without a GRH fails on a RoCE port (errno %d)", errno);
	}
	qpt_sync(s->fd, "replied");
	qpt_sync(s->fd, "replies-received");
	if (ah_wc)
		CHECK(ibv_destroy_ah(ah_wc) == 0, "ibv_destroy_ah (from wc)");
	if (ah_init)
		CHECK(ibv_destroy_ah(ah_init) == 0, "ibv_destroy_ah (init)");
}

/* 4: Q_Keys: a wrong one dropped and counted, the high bit both ways. */
static void server_check_qkeys(struct side *s, uint32_t client_qpn, uint32_t client_qpn2)
{
	struct ibv_wc wc[4];
	int64_t qv0, qv1;
	int n, ret;

	post_slots(s, 3, 2);
	qv0 = qpt_counter_settle(s->d.ctx, "qkey_violations", 600);
	CHECK(qv0 >= 0, "qkey_violations readable (%lld)", (long long)qv0);
	qpt_sync(s->fd, "ready-qkey");
	qpt_sync(s->fd, "sent-qkey");
	n = qpt_poll(s->cq, wc, 2, 20000);
	CHECK(n == 2, "2 of the 4 datagrams were received (got %d)", n);
	if (n >= 1)
		CHECK(marker_of(s, &wc[0]) == 11 && wc[0].src_qp == client_qpn,
		      "the datagram with a wrong Q_Key was dropped; the next (right Q_Key) arrived (marker %u)",
		      marker_of(s, &wc[0]));
	if (n >= 2)
		CHECK(marker_of(s, &wc[1]) == 12 && wc[1].src_qp == client_qpn2,
		      "Q_Key 0x80000000 from a QP whose own Q_Key matches: accepted (marker %u, src_qp 0x%06x)",
		      marker_of(s, &wc[1]), wc[1].src_qp);
	CHECK(qpt_poll_none(s->cq, 300, wc), "nothing else arrived (the 0x80000000|Q_Key datagram from a QP with another Q_Key was dropped)");
	qv1 = qpt_counter_wait(s->d.ctx, "qkey_violations", qv0 + 2, 5000);
	qv1 = qpt_counter_settle(s->d.ctx, "qkey_violations", 800);
	CHECK(qv1 - qv0 == 2, "qkey_violations grew by exactly 2 (by %lld)", (long long)(qv1 - qv0));
	{
		/* The port attribute counts the same (16 bits, saturating), as
		 * rxe's ibv_query_port does. */
		struct ibv_port_attr pa;

		memset(&pa, 0, sizeof(pa));
		ret = ibv_query_port(s->d.ctx, 1, &pa);
		CHECK(ret == 0 && pa.qkey_viol_cntr == (qv1 > 0xffff ? 0xffff : qv1),
		      "ibv_query_port: qkey_viol_cntr %u matches the counter (%lld)", pa.qkey_viol_cntr,
		      (long long)qv1);
	}
}

/* 5: datagrams of the full path MTU. */
static void server_check_mtu_datagram(struct side *s)
{
	struct ibv_wc wc[4];
	int n;

	post_slots(s, 5, 1);
	qpt_sync(s->fd, "ready-mtu");
	n = qpt_poll(s->cq, wc, 1, 20000);
	CHECK(n == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].byte_len == 40 + s->d.mtu &&
	      marker_of(s, &wc[0]) == 20,
	      "a datagram of the path MTU (%u bytes) fills a %u-byte receive (n %d, len %u)",
	      s->d.mtu, s->slot_len, n, n ? wc[0].byte_len : 0);
	if (n == 1) {
		uint8_t *p = slot(s, (int)wc[0].wr_id) + 40;
		bool ok = true;

		for (uint32_t i = 4; i < s->d.mtu; i++)
			ok &= p[i] == (uint8_t)(20 + i);
		CHECK(ok, "its payload is intact");
	}
	qpt_sync(s->fd, "mtu-done");
}

static void server(const struct qpt_opts *o)
{
	struct side s;
	struct ibv_wc wc[4], first;
	int64_t noqp0, noqp1;
	uint32_t client_qpn, client_qpn2;
	int n;

	setup(&s, o);
	/* Exactly the receives each step needs: a leftover one would take
	 * the datagram of a later step. */
	post_slots(&s, 0, 1);
	qpt_sync(s.fd, "ready1");
	client_qpn = s.peer.qpn;
	client_qpn2 = (uint32_t)qpt_xchg64(s.fd, 0);

	/* 1: a datagram from ibv_create_ah. */
	n = qpt_poll(s.cq, wc, 1, 20000);
	CHECK(n == 1, "datagram 1 received");
	if (n == 1) {
		first = wc[0];
		CHECK(wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_RECV &&
		      wc[0].byte_len == 40 + 100,
		      "RECV, byte_len %u = 40 (GRH) + 100 (status %s)", wc[0].byte_len,
		      ibv_wc_status_str(wc[0].status));
		CHECK(wc[0].wc_flags & IBV_WC_GRH, "wc_flags has IBV_WC_GRH (0x%x)", wc[0].wc_flags);
		CHECK(!(wc[0].wc_flags & IBV_WC_WITH_IMM), "no IBV_WC_WITH_IMM on a plain SEND");
		CHECK(wc[0].src_qp == client_qpn, "src_qp is the sender's QPN (0x%06x, want 0x%06x)",
		      wc[0].src_qp, client_qpn);
		CHECK(wc[0].qp_num == s.qp->qp_num, "qp_num is the receiving QP (0x%06x)", wc[0].qp_num);
		CHECK(marker_of(&s, &wc[0]) == 1, "payload after the 40-byte GRH (marker %u)",
		      marker_of(&s, &wc[0]));
		check_grh(&s, slot(&s, (int)wc[0].wr_id), 100);

		server_reply_through_wc_ahs(&s, &first);
	} else {
		qpt_sync(s.fd, "replied");
		qpt_sync(s.fd, "replies-received");
	}

	/* 3: immediate data. */
	post_slots(&s, 2, 1);
	qpt_sync(s.fd, "ready-imm");
	n = qpt_poll(s.cq, wc, 1, 20000);
	CHECK(n == 1 && wc[0].status == IBV_WC_SUCCESS && (wc[0].wc_flags & IBV_WC_WITH_IMM) &&
	      be32toh(wc[0].imm_data) == IMM && (wc[0].wc_flags & IBV_WC_GRH) &&
	      wc[0].byte_len == 40 + 32,
	      "SEND_WITH_IMM: IBV_WC_WITH_IMM, immediate 0x%x, GRH, 72 bytes (n %d, imm 0x%x, flags 0x%x)",
	      IMM, n, n ? be32toh(wc[0].imm_data) : 0, n ? wc[0].wc_flags : 0);

	server_check_qkeys(&s, client_qpn, client_qpn2);

	server_check_mtu_datagram(&s);

	/* 6: to a QPN that does not exist here. */
	noqp0 = qpt_counter_settle(s.d.ctx, "no_qp", 600);
	qpt_sync(s.fd, "ready-noqp");
	qpt_sync(s.fd, "sent-noqp");
	noqp1 = qpt_counter_wait(s.d.ctx, "no_qp", noqp0 + 1, 5000);
	CHECK(noqp1 >= noqp0 + 1, "a datagram to an unknown QPN is counted in no_qp (%lld -> %lld)",
	      (long long)noqp0, (long long)noqp1);
	CHECK(qpt_poll_none(s.cq, 200, wc), "and delivered to nobody");

	/* 7: a receive buffer smaller than the datagram. */
	if (qpt_post_recv1(s.qp, 31, slot(&s, 31), 40 + 50, s.buf.mr->lkey))
		DIE("post_recv");
	qpt_sync(s.fd, "ready-small");
	n = qpt_poll(s.cq, wc, 1, 20000);
	CHECK(n == 1 && wc[0].status == IBV_WC_LOC_LEN_ERR && wc[0].wr_id == 31,
	      "a 100-byte datagram into a 90-byte receive: IBV_WC_LOC_LEN_ERR (n %d, status %s)", n,
	      n ? ibv_wc_status_str(wc[0].status) : "-");
	qpt_note("the UD QP is in state %d after the length error", qpt_qp_state(s.qp));
	qpt_teardown(s.fd, &(struct qpt_made){ .d = &s.d, .buf = &s.buf, .ah = s.ah, .qp = &s.qp,
					       .nqp = 1, .cq = { s.cq, s.scq } });
}

/* 6: address handles ibv_create_ah refuses. */
static void client_bad_ahs(struct side *s)
{
	struct ibv_ah_attr aa;
	struct ibv_ah *bad;

	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.grh.dgid = s->peer.gid;
	aa.grh.sgid_index = 200;
	aa.port_num = 1;
	errno = 0;
	bad = ibv_create_ah(s->d.pd, &aa);
	CHECK(!bad && errno == EINVAL, "ibv_create_ah with sgid_index 200 (beyond the table): NULL, EINVAL (errno %d)", errno);
	aa.grh.sgid_index = (uint8_t)s->d.gidx;
	aa.is_global = 0;
	errno = 0;
	bad = ibv_create_ah(s->d.pd, &aa);
	CHECK(!bad && errno == EINVAL, "ibv_create_ah without a GRH on a RoCE port: NULL, EINVAL (errno %d)", errno);
	aa.is_global = 1;
	aa.port_num = 2;
	errno = 0;
	bad = ibv_create_ah(s->d.pd, &aa);
	CHECK(!bad && errno == EINVAL, "ibv_create_ah on port 2 (there is one port): NULL, EINVAL (errno %d)", errno);
	aa.port_num = 1;
	if (is_v4(&s->me.gid)) {
		aa.grh.dgid.raw[12] = 203, aa.grh.dgid.raw[13] = 0, aa.grh.dgid.raw[14] = 113,
		aa.grh.dgid.raw[15] = 7;
	} else {
		memcpy(aa.grh.dgid.raw, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x07", 16);
	}
	errno = 0;
	bad = ibv_create_ah(s->d.pd, &aa);
	CHECK(!bad && errno != 0, "ibv_create_ah to an address with no route: NULL (errno %d: %s)",
	      errno, strerror(errno));
	if (bad)
		ibv_destroy_ah(bad);
}

/* 6: a UD send with no AH is refused at post. */
static void client_send_without_ah(struct side *s, uint32_t server_qkey)
{
	struct ibv_sge sge = { (uintptr_t)s->buf.p, 8, s->buf.mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *badwr;
	int ret;

	wr.wr.ud.ah = NULL;
	wr.wr.ud.remote_qpn = s->peer.qpn;
	wr.wr.ud.remote_qkey = server_qkey;
	ret = ibv_post_send(s->qp, &wr, &badwr);
	CHECK(ret == EINVAL, "ibv_post_send on UD without an AH: EINVAL (ret %d)", ret);
}

static void client(const struct qpt_opts *o)
{
	struct side s;
	struct ibv_wc wc[4];
	uint32_t server_qkey;
	int n, ret;

	setup(&s, o);
	server_qkey = s.peer.v[0];
	post_slots(&s, 0, 4);
	qpt_sync(s.fd, "ready1");
	qpt_xchg64(s.fd, s.qp2->qp_num);

	/* 1 */
	CHECK(ud_send_ok(&s, s.qp, s.ah, s.peer.qpn, server_qkey, 1, 100, false),
	      "datagram 1 (100 bytes) sent through ibv_create_ah's AH");
	qpt_sync(s.fd, "replied");
	/* 2: the replies through AHs the server built from our datagram. */
	n = qpt_poll(s.cq, wc, 2, 20000);
	CHECK(n == 2, "both replies arrived: the AH built from a completion reaches the sender (got %d)", n);
	for (int i = 0; i < n; i++)
		CHECK(wc[i].status == IBV_WC_SUCCESS && wc[i].src_qp == s.peer.qpn &&
		      (wc[i].wc_flags & IBV_WC_GRH) && wc[i].byte_len == 40 + 64 &&
		      marker_of(&s, &wc[i]) == (uint32_t)i + 2,
		      "reply %d: from the server's QP, 104 bytes, marker %u", i + 1,
		      marker_of(&s, &wc[i]));
	if (n >= 1)
		check_grh(&s, slot(&s, (int)wc[0].wr_id), 64);
	qpt_sync(s.fd, "replies-received");

	/* 3 */
	qpt_sync(s.fd, "ready-imm");
	CHECK(ud_send_ok(&s, s.qp, s.ah, s.peer.qpn, server_qkey, 5, 32, true), "SEND_WITH_IMM sent");

	/* 4: a wrong Q_Key, a right one, and the high bit both ways. */
	qpt_sync(s.fd, "ready-qkey");
	CHECK(ud_send_ok(&s, s.qp, s.ah, s.peer.qpn, server_qkey ^ 1, 10, 64, false),
	      "a datagram with a wrong Q_Key completes at the sender (UD: no feedback)");
	CHECK(ud_send_ok(&s, s.qp, s.ah, s.peer.qpn, server_qkey, 11, 64, false),
	      "a datagram with the right Q_Key");
	CHECK(ud_send_ok(&s, s.qp2, s.ah, s.peer.qpn, 0x80000000u, 12, 64, false),
	      "Q_Key 0x80000000 from the QP whose own Q_Key is the server's");
	CHECK(ud_send_ok(&s, s.qp, s.ah, s.peer.qpn, 0x80000000u | server_qkey, 13, 64, false),
	      "Q_Key 0x80000000|server's from the QP with another Q_Key (its own is used)");
	qpt_sync(s.fd, "sent-qkey");

	/* 5: the path MTU exactly, then one byte more. */
	qpt_sync(s.fd, "ready-mtu");
	CHECK(ud_send_ok(&s, s.qp, s.ah, s.peer.qpn, server_qkey, 20, s.d.mtu, false),
	      "a datagram of exactly the path MTU (%u bytes) is sent", s.d.mtu);
	ret = ud_send(&s, s.qp, s.ah, s.peer.qpn, server_qkey, 21, s.d.mtu + 1, false);
	CHECK(ret == EINVAL, "a datagram of MTU + 1 (%u) bytes is refused at post with EINVAL (ret %d)",
	      s.d.mtu + 1, ret);
	CHECK(qpt_poll_none(s.scq, 300, wc), "and leaves no completion");
	CHECK(qpt_qp_state(s.qp) == IBV_QPS_RTS, "the QP stays in RTS");
	qpt_sync(s.fd, "mtu-done");

	/* 6: bad address handles, and a QPN nobody has. */
	client_bad_ahs(&s);
	client_send_without_ah(&s, server_qkey);
	qpt_sync(s.fd, "ready-noqp");
	CHECK(ud_send_ok(&s, s.qp, s.ah, s.peer.qpn ^ 0x5a5a00, server_qkey, 30, 64, false),
	      "a datagram to a QPN nobody owns completes at the sender");
	qpt_sync(s.fd, "sent-noqp");

	/* 7 */
	qpt_sync(s.fd, "ready-small");
	CHECK(ud_send_ok(&s, s.qp, s.ah, s.peer.qpn, server_qkey, 40, 100, false),
	      "a 100-byte datagram for a 90-byte receive is sent");
	qpt_teardown(s.fd, &(struct qpt_made){ .d = &s.d, .buf = &s.buf, .ah = s.ah,
					       .qp = (struct ibv_qp *[]){ s.qp2, s.qp }, .nqp = 2,
					       .cq = { s.cq, s.scq } });
}

const struct qpt_role qpt_roles[] = {
	{ NULL, QPT_SERVER, server },
	{ NULL, QPT_CLIENT, client },
	{ NULL, QPT_EITHER, NULL },
};
