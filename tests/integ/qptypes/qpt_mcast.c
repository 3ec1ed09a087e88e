/* UD multicast: ibv_attach_mcast / ibv_detach_mcast.  One sender, several
 * member processes (each with several QPs attached to the group), on one
 * host and in other namespaces: a datagram to the group reaches every
 * attached QP once; after a QP detaches it gets no more, while the others
 * still do; after all detach, nobody does.  Error paths of attach/detach,
 * and the advertised limits (max_mcast_grp groups on one QP,
 * max_mcast_qp_attach QPs on one group, one more refused).
 *
 *   qpt_mcast -m sender -n MEMBERS -p PORT -d DEV -g GIDX
 *   qpt_mcast -m member -n QPS -p PORT -d DEV -g GIDX SENDER_IP
 *   qpt_mcast -m limits -d DEV -g GIDX
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qpt.h"

#define QKEY 0x0badcafeu
#define BURST 5
#define MAXQ 8
#define SLOT 256

struct hello {                   /* sender -> member */
	union ibv_gid mgid;
	uint32_t qkey, sender_qpn;
	union ibv_gid sender_gid;
};

static void make_mgid(union ibv_gid *g, const union ibv_gid *own)
{
	bool v4 = own->raw[10] == 0xff && own->raw[11] == 0xff;
	uint32_t r = (uint32_t)getpid() ^ (uint32_t)lrand48();

	memset(g, 0, sizeof(*g));
	if (v4) {
		/* ::ffff:239.84.x.y, as a RoCE v2 device maps IPv4 groups */
		g->raw[10] = g->raw[11] = 0xff;
		g->raw[12] = 239;
		g->raw[13] = 84;
		g->raw[14] = (uint8_t)(r >> 8);
		g->raw[15] = (uint8_t)(r | 1);
	} else {
		g->raw[0] = 0xff;
		g->raw[1] = 0x0e;     /* global scope */
		memcpy(&g->raw[12], &r, 4);
	}
}

/* ---- sender ------------------------------------------------------------- */

static void sender(const struct qpt_opts *o)
{
	int nm = o->count > 0 ? o->count : 1, lfd, fd[16];
	struct qpt_dev d;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	struct ibv_ah_attr aa;
	struct qpt_buf b;
	struct hello h;
	char gs[64];
	uint32_t marker = 1;

	if (nm > 16)
		DIE("at most 16 members");
	qpt_open(&d, o->dev, o->gidx);
	cq = qpt_cq(&d, 64);
	qp = qpt_qp(&d, IBV_QPT_UD, cq, cq, NULL, 32);
	if (qpt_ud_ready(qp, QKEY))
		DIE("UD QP");
	qpt_buf(&d, &b, 4096, IBV_ACCESS_LOCAL_WRITE);
	memset(&h, 0, sizeof(h));
	make_mgid(&h.mgid, &d.gid);
	h.qkey = QKEY;
	h.sender_qpn = qp->qp_num;
	h.sender_gid = d.gid;
	qpt_note("group %s", qpt_gid_str(&h.mgid, gs));

	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.grh.dgid = h.mgid;
	aa.grh.sgid_index = (uint8_t)d.gidx;
	aa.grh.hop_limit = 1;
	aa.port_num = 1;
	ah = ibv_create_ah(d.pd, &aa);
	CHECK(ah != NULL, "ibv_create_ah to the multicast group %s (errno %d)", gs, ah ? 0 : errno);
	if (!ah)
		DIE("no multicast AH");

	lfd = qpt_listen(o->port);
	for (int i = 0; i < nm; i++) {
		fd[i] = qpt_accept(lfd);
		qpt_send(fd[i], &h, sizeof(h));
	}
	close(lfd);
	for (int round = 0; round < 3; round++) {
		static const char *const phase[] = { "attached", "detached-one", "detached-all" };

		for (int i = 0; i < nm; i++)
			qpt_sync(fd[i], phase[round]);
		for (int k = 0; k < BURST; k++, marker++) {
			struct ibv_sge sge = { (uintptr_t)b.p, 64, b.mr->lkey };
			struct ibv_send_wr wr = { .wr_id = marker, .sg_list = &sge, .num_sge = 1,
						  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
					   *bad;
			struct ibv_wc wc;

			memcpy(b.p, &marker, 4);
			wr.wr.ud.ah = ah;
			wr.wr.ud.remote_qpn = 0xffffff;
			wr.wr.ud.remote_qkey = QKEY;
			CHECK(ibv_post_send(qp, &wr, &bad) == 0 && qpt_poll(cq, &wc, 1, 20000) == 1 &&
			      wc.status == IBV_WC_SUCCESS,
			      "round %d: datagram %u sent to the group", round + 1, marker);
		}
		for (int i = 0; i < nm; i++)
			qpt_sync(fd[i], "sent");
	}
	for (int i = 0; i < nm; i++) {
		qpt_sync(fd[i], "done");
		close(fd[i]);
	}
	qpt_teardown(-1, &(struct qpt_made){ .d = &d, .buf = &b, .ah = ah, .qp = &qp, .nqp = 1,
					     .cq = { cq } });
}

/* ---- member ------------------------------------------------------------- */

struct member_qp {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
};

static int drain(struct qpt_dev *d, struct member_qp *m, struct qpt_buf *b, int qi,
		 const struct hello *h, int want, int wait_ms, uint32_t first_marker)
{
	struct ibv_wc wc[BURST + 4];
	int n = qpt_poll(m->cq, wc, want ? want : 1, want ? wait_ms : wait_ms);

	if (want && n == want) {
		/* then make sure nothing more comes */
		struct ibv_wc extra;

		if (!qpt_poll_none(m->cq, 300, &extra))
			wc[n++] = extra;
	}
	for (int i = 0; i < n; i++) {
		uint8_t *grh = b->p + (size_t)wc[i].wr_id * SLOT;
		uint32_t marker;
		bool v4 = h->mgid.raw[10] == 0xff;

		memcpy(&marker, grh + 40, 4);
		CHECK(wc[i].status == IBV_WC_SUCCESS && wc[i].src_qp == h->sender_qpn &&
		      wc[i].qp_num == m->qp->qp_num && (wc[i].wc_flags & IBV_WC_GRH) &&
		      wc[i].byte_len == 40 + 64 && marker == first_marker + (uint32_t)i,
		      "QP %d: datagram %u from the sender's QP 0x%06x, in order (status %s, src_qp 0x%06x, len %u)",
		      qi, marker, h->sender_qpn, ibv_wc_status_str(wc[i].status), wc[i].src_qp,
		      wc[i].byte_len);
		if (v4)
			CHECK(!memcmp(grh + 20 + 16, &h->mgid.raw[12], 4) &&
			      !memcmp(grh + 20 + 12, &h->sender_gid.raw[12], 4),
			      "QP %d: GRH destination is the group, source the sender (%u.%u.%u.%u -> %u.%u.%u.%u)",
			      qi, grh[32], grh[33], grh[34], grh[35], grh[36], grh[37], grh[38], grh[39]);
		else
			CHECK(!memcmp(grh + 24, h->mgid.raw, 16), "QP %d: GRH DGID is the group", qi);
		/* repost the slot */
		if (qpt_post_recv1(m->qp, wc[i].wr_id, grh, SLOT, b->mr->lkey))
			DIE("repost");
	}
	(void)d;
	return n;
}

static void member(const struct qpt_opts *o)
{
	int nq = o->count > 0 ? o->count : 2, fd, n;
	struct member_qp m[MAXQ];
	struct qpt_dev d;
	struct qpt_buf b;
	struct hello h;
	union ibv_gid notmc;
	struct ibv_cq *rccq;
	struct ibv_qp *rc;
	int ret;

	if (nq > MAXQ)
		DIE("at most %d QPs", MAXQ);
	qpt_open(&d, o->dev, o->gidx);
	qpt_buf(&d, &b, (size_t)MAXQ * 16 * SLOT, IBV_ACCESS_LOCAL_WRITE);
	for (int q = 0; q < nq; q++) {
		m[q].cq = qpt_cq(&d, 64);
		m[q].qp = qpt_qp(&d, IBV_QPT_UD, m[q].cq, m[q].cq, NULL, 32);
		if (qpt_ud_ready(m[q].qp, QKEY))
			DIE("UD QP");
		for (int i = 0; i < 16; i++)
			if (qpt_post_recv1(m[q].qp, (uint64_t)(q * 16 + i), b.p + (size_t)(q * 16 + i) * SLOT,
					   SLOT, b.mr->lkey))
				DIE("post_recv");
	}
	fd = qpt_connect_to(o->host, o->port);
	qpt_recv(fd, &h, sizeof(h));

	/* Error paths first. */
	notmc = d.gid;              /* a unicast GID is not a group */
	ret = ibv_attach_mcast(m[0].qp, &notmc, 0);
	CHECK(ret == EINVAL, "ibv_attach_mcast of a unicast GID: EINVAL (ret %d)", ret);
	rccq = qpt_cq(&d, 4);
	rc = qpt_qp(&d, IBV_QPT_RC, rccq, rccq, NULL, 4);
	ret = ibv_attach_mcast(rc, &h.mgid, 0);
	CHECK(ret == EINVAL, "ibv_attach_mcast on an RC QP: EINVAL (ret %d)", ret);
	ibv_destroy_qp(rc);
	ibv_destroy_cq(rccq);
	ret = ibv_detach_mcast(m[0].qp, &h.mgid, 0);
	CHECK(ret != 0, "ibv_detach_mcast of a group never attached fails (ret %d)", ret);

	for (int q = 0; q < nq; q++) {
		ret = ibv_attach_mcast(m[q].qp, &h.mgid, 0);
		CHECK(ret == 0, "QP %d (0x%06x) attached to the group (ret %d)", q, m[q].qp->qp_num, ret);
	}
	ret = ibv_attach_mcast(m[0].qp, &h.mgid, 0);
	CHECK(ret == 0, "attaching QP 0 again is harmless (ret %d)", ret);

	/* Round 1: every QP gets the burst once. */
	qpt_sync(fd, "attached");
	qpt_sync(fd, "sent");
	for (int q = 0; q < nq; q++) {
		n = drain(&d, &m[q], &b, q, &h, BURST, 20000, 1);
		CHECK(n == BURST, "round 1: QP %d received the %d datagrams exactly once (got %d)", q,
		      BURST, n);
	}

	/* Round 2: QP 0 detached, the others still attached. */
	ret = ibv_detach_mcast(m[0].qp, &h.mgid, 0);
	CHECK(ret == 0, "QP 0 detached (ret %d)", ret);
	ret = ibv_detach_mcast(m[0].qp, &h.mgid, 0);
	CHECK(ret != 0, "detaching QP 0 a second time fails (ret %d)", ret);
	qpt_sync(fd, "detached-one");
	qpt_sync(fd, "sent");
	for (int q = 1; q < nq; q++) {
		n = drain(&d, &m[q], &b, q, &h, BURST, 20000, 1 + BURST);
		CHECK(n == BURST, "round 2: QP %d, still attached, received %d (got %d)", q, BURST, n);
	}
	n = drain(&d, &m[0], &b, 0, &h, 0, 1000, 0);
	CHECK(n == 0, "round 2: QP 0, detached, received nothing (got %d)", n);

	/* Round 3: all detached. */
	for (int q = 1; q < nq; q++) {
		ret = ibv_detach_mcast(m[q].qp, &h.mgid, 0);
		CHECK(ret == 0, "QP %d detached (ret %d)", q, ret);
	}
	qpt_sync(fd, "detached-all");
	qpt_sync(fd, "sent");
	for (int q = 0; q < nq; q++) {
		n = drain(&d, &m[q], &b, q, &h, 0, q ? 200 : 1500, 0);
		CHECK(n == 0, "round 3: QP %d, detached, received nothing (got %d)", q, n);
	}
	qpt_sync(fd, "done");
	close(fd);
	for (int q = 0; q < nq; q++) {
		ibv_destroy_qp(m[q].qp);
		ibv_destroy_cq(m[q].cq);
	}
	qpt_buf_free(&b);
	qpt_close(&d);
}

/* ---- the advertised limits ------------------------------------------------ */

/* The last group of the many works: a datagram to it from another QP
 * (sender) arrives at a second QP attached to it in place of owner. */
static void check_last_group_works(struct qpt_dev *d, struct ibv_cq *cq, struct ibv_qp *owner,
				   struct ibv_qp *sender, union ibv_gid g, int ngrp)
{
	struct qpt_buf b;
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	struct ibv_ah *ah;
	struct ibv_wc wc;
	struct ibv_cq *rcq = qpt_cq(d, 4);
	struct ibv_qp *rq = qpt_qp(d, IBV_QPT_UD, cq, rcq, NULL, 4);
	int ret;

	if (qpt_ud_ready(rq, QKEY))
		DIE("UD QP");
	qpt_buf(d, &b, 4096, IBV_ACCESS_LOCAL_WRITE);
	g.raw[14] = (uint8_t)((ngrp - 1) >> 8);
	g.raw[15] = (uint8_t)(ngrp - 1);
	ibv_detach_mcast(owner, &g, 0);
	ret = ibv_attach_mcast(rq, &g, 0);
	CHECK(ret == 0, "a second QP attaches to group number %d (ret %d)", ngrp, ret);
	qpt_post_recv1(rq, 1, b.p, 1024, b.mr->lkey);
	aa.grh.dgid = g;
	aa.grh.sgid_index = (uint8_t)d->gidx;
	aa.grh.hop_limit = 1;
	ah = ibv_create_ah(d->pd, &aa);
	if (ah) {
		struct ibv_sge sge = { (uintptr_t)b.p + 2048, 16, b.mr->lkey };
		struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND },
				   *bad;

		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = 0xffffff;
		wr.wr.ud.remote_qkey = QKEY;
		ibv_post_send(sender, &wr, &bad);
	}
	CHECK(ah && qpt_poll(rcq, &wc, 1, 10000) == 1 && wc.status == IBV_WC_SUCCESS,
	      "a datagram to group number %d (joined after %d others) is received", ngrp,
	      ngrp - 1);
	ibv_detach_mcast(rq, &g, 0);
	if (ah)
		ibv_destroy_ah(ah);
	ibv_destroy_qp(rq);
	ibv_destroy_cq(rcq);
	qpt_buf_free(&b);
}

static void limits(const struct qpt_opts *o)
{
	struct ibv_device_attr da;
	struct qpt_dev d;
	struct ibv_cq *cq;
	struct ibv_qp **qps;
	union ibv_gid g;
	int ngrp, nper, ok = 0, first_err = 0, first_errno = 0, ret;

	qpt_open(&d, o->dev, o->gidx);
	if (ibv_query_device(d.ctx, &da))
		DIE("ibv_query_device");
	ngrp = da.max_mcast_grp;
	nper = da.max_mcast_qp_attach;
	CHECK(ngrp > 0 && nper > 0 && da.max_total_mcast_qp_attach >= nper,
	      "max_mcast_grp %d, max_mcast_qp_attach %d, max_total_mcast_qp_attach %d", ngrp, nper,
	      da.max_total_mcast_qp_attach);
	cq = qpt_cq(&d, 16);
	qps = calloc((size_t)nper + 1, sizeof(*qps));
	for (int i = 0; i <= nper; i++) {
		qps[i] = qpt_qp(&d, IBV_QPT_UD, cq, cq, NULL, 1);
		if (qpt_ud_ready(qps[i], QKEY))
			DIE("UD QP");
	}

	/* One QP in max_mcast_grp different groups. */
	make_mgid(&g, &d.gid);
	for (int i = 0; i < ngrp; i++) {
		g.raw[14] = (uint8_t)(i >> 8);
		g.raw[15] = (uint8_t)i;
		ret = ibv_attach_mcast(qps[0], &g, 0);
		if (!ret) {
			ok++;
		} else if (!first_err) {
			first_err = i + 1;
			first_errno = ret;
		}
	}
	CHECK(ok == ngrp, "one QP attaches to all max_mcast_grp = %d groups (%d did; the first refused was number %d: %s)",
	      ngrp, ok, first_err, first_err ? strerror(first_errno) : "-");
	check_last_group_works(&d, cq, qps[0], qps[1], g, ngrp);
	for (int i = 0; i < ngrp - 1; i++) {
		g.raw[14] = (uint8_t)(i >> 8);
		g.raw[15] = (uint8_t)i;
		ibv_detach_mcast(qps[0], &g, 0);
	}

	/* max_mcast_qp_attach QPs on one group, and one more. */
	make_mgid(&g, &d.gid);
	ok = 0;
	for (int i = 0; i < nper; i++)
		ok += ibv_attach_mcast(qps[i], &g, 0) == 0;
	CHECK(ok == nper, "max_mcast_qp_attach = %d QPs attach to one group (%d did)", nper, ok);
	ret = ibv_attach_mcast(qps[nper], &g, 0);
	CHECK(ret != 0, "QP number %d on the same group is refused (ret %d: %s)", nper + 1, ret,
	      ret ? strerror(ret) : "accepted");
	for (int i = 0; i <= nper; i++) {
		ibv_detach_mcast(qps[i], &g, 0);
		ibv_destroy_qp(qps[i]);
	}
	free(qps);
	ibv_destroy_cq(cq);
	qpt_close(&d);
}

const struct qpt_role qpt_roles[] = {
	{ "sender", QPT_EITHER, sender },
	{ "member", QPT_EITHER, member },
	{ "limits", QPT_EITHER, limits },
	{ NULL, QPT_EITHER, NULL },
};
