/* XRC between two processes: ibv_open_xrcd (by a file descriptor, shared
 * by two opens, anonymous with O_CREAT, and its errors), XRC SRQs
 * (ibv_create_srq_ex, ibv_get_srq_num), XRC target QPs and initiator QPs
 * (ibv_create_qp_ex); sends naming remote SRQ numbers complete on each
 * SRQ's own CQ with the target QP's number; RDMA WRITE and READ through
 * XRC; an SRQ number the target's domain does not have (unknown, or of
 * another domain) is refused with a NAK and consumes nothing.
 *
 *   qpt_xrc -d DEV -g GIDX -p PORT            (server: domain, SRQs, targets)
 *   qpt_xrc -d DEV -g GIDX -p PORT SERVER_IP  (client: initiators)
 *
 * With -m shared the server side is two processes on one host (-a owner:FILE
 * has the SRQ, -a target:FILE the target QP, listening on PORT and PORT+1;
 * both open the domain through FILE), as ibv_xsrq_pingpong
 * uses XRC: a message through one process's target QP lands in the other
 * process's SRQ.  -a owner-gone:FILE is an owner that dies (without clean-up)
 * once the client knows its SRQ number; the client, with -a gone, then
 * expects its message through the target to fail with a remote invalid
 * request error, and the target process to carry on.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qpt.h"

#define NT 3          /* target/initiator pairs */
#define MSG 128

static struct ibv_srq *xrc_srq(struct qpt_dev *d, struct ibv_xrcd *x, struct ibv_cq *cq, int wr)
{
	struct ibv_srq_init_attr_ex a = {
		.attr = { .max_wr = (uint32_t)wr, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ |
			     IBV_SRQ_INIT_ATTR_PD,
		.srq_type = IBV_SRQT_XRC, .xrcd = x, .cq = cq, .pd = d->pd,
	};
	struct ibv_srq *s = ibv_create_srq_ex(d->ctx, &a);

	if (!s)
		DIE("XRC SRQ");
	return s;
}

static struct ibv_qp *xrc_target(struct qpt_dev *d, struct ibv_xrcd *x)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_XRC_RECV, .comp_mask = IBV_QP_INIT_ATTR_XRCD, .xrcd = x,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(d->ctx, &a);

	if (!qp)
		DIE("XRC target QP");
	return qp;
}

static struct ibv_qp *xrc_initiator(struct qpt_dev *d, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_XRC_SEND, .comp_mask = IBV_QP_INIT_ATTR_PD, .pd = d->pd,
		.send_cq = cq, .cap = { .max_send_wr = 16, .max_send_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp_ex(d->ctx, &a);

	if (!qp)
		DIE("XRC initiator QP");
	return qp;
}

static char dom_path[64];

static int domain_file(void)
{
	int fd;

	snprintf(dom_path, sizeof(dom_path), "/tmp/qpt_xrc.XXXXXX");
	fd = mkstemp(dom_path);
	if (fd < 0)
		DIE("mkstemp");
	return fd;
}

static void xrcd_errors(struct qpt_dev *d)
{
	struct ibv_xrcd_init_attr a;
	struct ibv_xrcd *x, *y;
	int fd = domain_file();

	memset(&a, 0, sizeof(a));
	errno = 0;
	x = ibv_open_xrcd(d->ctx, &a);
	CHECK(!x && errno, "ibv_open_xrcd without fd or O_CREAT fails (errno %d)", errno);
	a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	a.fd = fd;
	a.oflags = 0;
	errno = 0;
	x = ibv_open_xrcd(d->ctx, &a);
	CHECK(!x && errno, "ibv_open_xrcd of a file with no domain yet, without O_CREAT, fails (errno %d)", errno);
	a.fd = 9999;
	a.oflags = O_CREAT;
	errno = 0;
	x = ibv_open_xrcd(d->ctx, &a);
	CHECK(!x && errno == EBADF, "ibv_open_xrcd of a bad fd: EBADF (errno %d)", errno);
	a.fd = fd;
	x = ibv_open_xrcd(d->ctx, &a);
	CHECK(x != NULL, "ibv_open_xrcd by fd with O_CREAT");
	a.oflags = O_CREAT | O_EXCL;
	errno = 0;
	y = ibv_open_xrcd(d->ctx, &a);
	CHECK(!y && errno, "O_CREAT|O_EXCL on a file that has a domain fails (errno %d)", errno);
	a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	a.fd = -1;
	a.oflags = O_CREAT;
	y = ibv_open_xrcd(d->ctx, &a);
	CHECK(y != NULL, "ibv_open_xrcd with fd -1 and O_CREAT: an anonymous domain");
	if (y)
		CHECK(ibv_close_xrcd(y) == 0, "ibv_close_xrcd (anonymous)");
	if (x)
		CHECK(ibv_close_xrcd(x) == 0, "ibv_close_xrcd (by fd)");
	close(fd);
	unlink(dom_path);
}

/* An XRC target QP has neither a receive queue nor a send queue. */
static void check_target_has_no_queues(struct ibv_qp *t0)
{
	struct ibv_recv_wr rw = { 0 }, *bad;
	struct ibv_send_wr sw = { 0 }, *sbad;

	CHECK(ibv_post_recv(t0, &rw, &bad) != 0, "ibv_post_recv on an XRC target fails (no RQ)");
	CHECK(ibv_post_send(t0, &sw, &sbad) != 0, "ibv_post_send on an XRC target fails (no SQ)");
}

/* SRQ A gets messages 1 and 3, SRQ B message 2, all through target 0,
 * and the RDMA WRITE lands in the target's region. */
static void server_check_valid_traffic(struct ibv_cq *cqa, struct ibv_cq *cqb, struct ibv_cq *cqc,
				       struct ibv_qp *t0, const struct qpt_buf *buf,
				       const struct qpt_buf *wbuf)
{
	struct ibv_wc wc[8];
	bool ok = true;
	int n;

	n = qpt_poll(cqa, wc, 2, 20000);
	CHECK(n == 2, "SRQ A's CQ: 2 completions (got %d)", n);
	for (int i = 0; i < n; i++)
		CHECK(wc[i].status == IBV_WC_SUCCESS && wc[i].qp_num == t0->qp_num &&
		      wc[i].wr_id < 8 && wc[i].byte_len == MSG &&
		      buf->p[wc[i].wr_id * MSG] == (uint8_t)(i ? 3 : 1),
		      "SRQ A completion %d: message %d, qp_num = the target QP 0x%06x (0x%06x), a receive of SRQ A",
		      i, i ? 3 : 1, t0->qp_num, wc[i].qp_num);
	n = qpt_poll(cqb, wc, 1, 20000);
	CHECK(n == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].qp_num == t0->qp_num &&
	      wc[0].wr_id >= 16 && wc[0].wr_id < 24 && buf->p[wc[0].wr_id * MSG] == 2,
	      "SRQ B (created through the second open of the domain): message 2 on its own CQ (n %d)", n);
	if (n == 1 && (wc[0].wc_flags & IBV_WC_WITH_IMM))
		CHECK(be32toh(wc[0].imm_data) == 0x77, "with its immediate");
	CHECK(qpt_poll_none(cqa, 200, wc) && qpt_poll_none(cqb, 200, wc) && qpt_poll_none(cqc, 200, wc),
	      "nothing else on any SRQ's CQ");
	for (int i = 0; i < 4096; i++)
		ok &= wbuf->p[i] == (uint8_t)(i * 3);
	CHECK(ok, "RDMA WRITE through XRC wrote 4 KiB into the target's region");
}

/* The refused messages completed on no SRQ's CQ (any completion is noted). */
static void check_no_completion_of_refused(struct ibv_cq *cqa, struct ibv_cq *cqb,
					   struct ibv_cq *cqc)
{
	struct ibv_cq *cqs[3] = { cqa, cqb, cqc };
	struct ibv_wc wc[8];
	int got = 0;

	for (int i = 0; i < 3; i++)
		while (qpt_poll(cqs[i], wc, 1, i ? 200 : 500) == 1) {
			got++;
			qpt_note("SRQ %c's CQ: completion wr_id %llu, %s, qp_num 0x%06x, opcode %d",
				 'A' + i, (unsigned long long)wc[0].wr_id,
				 ibv_wc_status_str(wc[0].status), wc[0].qp_num, wc[0].opcode);
		}
	CHECK(!got, "the refused messages completed on no SRQ, not even the other domain's (%d completions)", got);
}

static void server(const struct qpt_opts *o)
{
	struct qpt_dev d;
	struct ibv_xrcd_init_attr xa;
	struct ibv_xrcd *x1, *x1b, *x2;
	struct ibv_cq *cqa, *cqb, *cqc;
	struct ibv_srq *sa, *sb, *sc;
	struct ibv_qp *t[NT];
	struct qpt_ep me[NT], peer[NT];
	struct qpt_buf buf, wbuf;
	struct ibv_wc wc[8];
	uint32_t na, nb, nc;
	int fd, ofd, n, ret;

	qpt_open(&d, o->dev, o->gidx);
	xrcd_errors(&d);
	qpt_buf(&d, &buf, 64 * MSG, IBV_ACCESS_LOCAL_WRITE);
	qpt_buf(&d, &wbuf, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_READ);

	/* One domain opened twice through one file, and a second domain. */
	ofd = domain_file();
	memset(&xa, 0, sizeof(xa));
	xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	xa.fd = ofd;
	xa.oflags = O_CREAT;
	x1 = ibv_open_xrcd(d.ctx, &xa);
	xa.oflags = 0;
	x1b = ibv_open_xrcd(d.ctx, &xa);
	CHECK(x1 && x1b, "the domain opened by fd, then opened again through the same file");
	xa.fd = -1;
	xa.oflags = O_CREAT;
	x2 = ibv_open_xrcd(d.ctx, &xa);
	if (!x1 || !x1b || !x2)
		DIE("XRC domains");
	cqa = qpt_cq(&d, 64);
	cqb = qpt_cq(&d, 64);
	cqc = qpt_cq(&d, 64);
	sa = xrc_srq(&d, x1, cqa, 32);
	sb = xrc_srq(&d, x1b, cqb, 32);     /* through the second open: same domain */
	sc = xrc_srq(&d, x2, cqc, 32);
	ret = ibv_get_srq_num(sa, &na) | ibv_get_srq_num(sb, &nb) | ibv_get_srq_num(sc, &nc);
	CHECK(!ret && na != nb && nb != nc && na != nc,
	      "ibv_get_srq_num: three distinct XRC SRQ numbers (0x%06x, 0x%06x, 0x%06x)", na, nb, nc);
	for (int i = 0; i < 8; i++) {
		qpt_post_srq_recv1(sa, (uint64_t)i, buf.p + i * MSG, MSG, buf.mr->lkey);
		qpt_post_srq_recv1(sb, (uint64_t)(16 + i), buf.p + (16 + i) * MSG, MSG, buf.mr->lkey);
		qpt_post_srq_recv1(sc, (uint64_t)(32 + i), buf.p + (32 + i) * MSG, MSG, buf.mr->lkey);
	}
	for (int i = 0; i < NT; i++)
		t[i] = xrc_target(&d, x1);
	check_target_has_no_queues(t[0]);
	/* What the client's READ fetches: in place before the client learns
	 * the address (it reads as soon as its QPs are connected). */
	memset(wbuf.p + 4096, 0x5c, 4096);
	fd = qpt_oob(o);
	for (int i = 0; i < NT; i++) {
		qpt_ep_of(&d, t[i], &me[i]);
		me[i].srqn = na;
		me[i].v[0] = nb;
		me[i].v[1] = nc;
		me[i].addr = (uintptr_t)wbuf.p;
		me[i].rkey = wbuf.mr->rkey;
		qpt_xchg_ep(fd, &me[i], &peer[i]);
		ret = qpt_connect(&d, t[i], &me[i], &peer[i],
				  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, IBV_MTU_1024);
		CHECK(ret == 0, "XRC target %d to RTS (ret %d)", i, ret);
	}

	/* Valid traffic through target 0. */
	qpt_sync(fd, "sent-valid");
	server_check_valid_traffic(cqa, cqb, cqc, t[0], &buf, &wbuf);
	qpt_sync(fd, "checked-valid");

	/* Refusals: an unknown SRQ number, an SRQ of another domain. */
	qpt_sync(fd, "sent-bad");
	n = qpt_poll(cqa, wc, 1, 20000);
	CHECK(n == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].qp_num == t[1]->qp_num,
	      "SRQ A: the valid SEND through target 1 (qp_num 0x%06x)", n ? wc[0].qp_num : 0);
	check_no_completion_of_refused(cqa, cqb, cqc);
	qpt_note("target 1 state %d, target 2 state %d after the refusals", qpt_qp_state(t[1]),
		 qpt_qp_state(t[2]));

	/* Teardown errors. */
	CHECK(ibv_close_xrcd(x1b) == 0, "closing the second open of the domain");
	ret = ibv_close_xrcd(x1);
	CHECK(ret == EBUSY, "closing the last open while its SRQs and QPs exist: EBUSY (ret %d)", ret);
	qpt_teardown(fd, &(struct qpt_made){ .qp = t, .nqp = NT });
	ibv_destroy_srq(sa);
	ibv_destroy_srq(sb);
	ibv_destroy_srq(sc);
	CHECK(ibv_close_xrcd(x1) == 0, "the domain closes once empty");
	ibv_close_xrcd(x2);
	close(ofd);
	unlink(dom_path);
	qpt_buf_free(&wbuf);
	qpt_teardown(-1, &(struct qpt_made){ .d = &d, .buf = &buf, .cq = { cqa, cqb, cqc } });
}

static int xsend(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t id, struct qpt_buf *b,
		 uint32_t off, uint32_t len, uint32_t srqn, const struct qpt_ep *peer, uint64_t raddr)
{
	struct ibv_sge sge = { (uintptr_t)b->p + off, len, b->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED, .imm_data = htobe32(0x77) }, *bad;

	wr.qp_type.xrc.remote_srqn = srqn;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = peer->rkey;
	return ibv_post_send(qp, &wr, &bad);
}

static void client(const struct qpt_opts *o)
{
	struct qpt_dev d;
	struct ibv_cq *cq;
	struct ibv_qp *ini[NT];
	struct qpt_ep me[NT], peer[NT];
	struct qpt_buf b;
	struct ibv_wc wc[8];
	int fd, n, ret;

	qpt_open(&d, o->dev, o->gidx);
	qpt_buf(&d, &b, 65536, IBV_ACCESS_LOCAL_WRITE);
	cq = qpt_cq(&d, 64);
	for (int i = 0; i < NT; i++)
		ini[i] = xrc_initiator(&d, cq);
	{
		struct ibv_recv_wr rw = { 0 }, *bad;

		CHECK(ibv_post_recv(ini[0], &rw, &bad) != 0, "ibv_post_recv on an XRC initiator fails (no RQ)");
	}
	fd = qpt_oob(o);
	for (int i = 0; i < NT; i++) {
		qpt_ep_of(&d, ini[i], &me[i]);
		qpt_xchg_ep(fd, &me[i], &peer[i]);
		ret = qpt_connect(&d, ini[i], &me[i], &peer[i], 0, IBV_MTU_1024);
		CHECK(ret == 0, "XRC initiator %d to RTS (ret %d)", i, ret);
	}
	for (int i = 0; i < 3; i++)
		memset(b.p + i * MSG, i + 1, MSG);
	for (int i = 0; i < 4096; i++)
		b.p[8192 + i] = (uint8_t)(i * 3);
	CHECK(xsend(ini[0], IBV_WR_SEND, 1, &b, 0, MSG, peer[0].srqn, &peer[0], 0) == 0 &&
	      xsend(ini[0], IBV_WR_SEND_WITH_IMM, 2, &b, MSG, MSG, peer[0].v[0], &peer[0], 0) == 0 &&
	      xsend(ini[0], IBV_WR_SEND, 3, &b, 2 * MSG, MSG, peer[0].srqn, &peer[0], 0) == 0 &&
	      xsend(ini[0], IBV_WR_RDMA_WRITE, 4, &b, 8192, 4096, peer[0].srqn, &peer[0], peer[0].addr) == 0 &&
	      xsend(ini[0], IBV_WR_RDMA_READ, 5, &b, 16384, 4096, peer[0].srqn, &peer[0], peer[0].addr + 4096) == 0,
	      "posted: SEND to SRQ A, SEND_WITH_IMM to SRQ B, SEND to SRQ A, RDMA WRITE, RDMA READ");
	n = qpt_poll(cq, wc, 5, 20000);
	CHECK(n == 5, "5 completions at the initiator (got %d)", n);
	for (int i = 0; i < n; i++)
		CHECK(wc[i].status == IBV_WC_SUCCESS && wc[i].wr_id == (uint64_t)i + 1,
		      "initiator completion %d: %s", i + 1, ibv_wc_status_str(wc[i].status));
	{
		bool ok = true;

		for (int i = 0; i < 4096; i++)
			ok &= b.p[16384 + i] == 0x5c;
		CHECK(ok, "RDMA READ through XRC brought the target's 4 KiB");
	}
	qpt_sync(fd, "sent-valid");
	qpt_sync(fd, "checked-valid");

	/* Initiator 1 to target 1: valid, then an SRQ number nobody has. */
	CHECK(xsend(ini[1], IBV_WR_SEND, 10, &b, 0, MSG, peer[1].srqn, &peer[1], 0) == 0 &&
	      qpt_poll(cq, wc, 1, 20000) == 1 && wc[0].status == IBV_WC_SUCCESS,
	      "initiator 1: a SEND to SRQ A through target 1");
	CHECK(xsend(ini[1], IBV_WR_SEND, 11, &b, 0, MSG, 0xfffffe, &peer[1], 0) == 0, "posted a SEND to SRQ 0xfffffe");
	n = qpt_poll(cq, wc, 1, 30000);
	CHECK(n == 1 && wc[0].wr_id == 11 && wc[0].status == IBV_WC_REM_INV_REQ_ERR,
	      "a SEND to an SRQ number that does not exist: IBV_WC_REM_INV_REQ_ERR (n %d, %s)", n,
	      n ? ibv_wc_status_str(wc[0].status) : "-");
	/* Initiator 2 to target 2: an SRQ of another domain, first thing. */
	CHECK(xsend(ini[2], IBV_WR_SEND, 20, &b, 0, MSG, peer[2].v[1], &peer[2], 0) == 0,
	      "posted a SEND to SRQ C (another domain) through target 2");
	n = qpt_poll(cq, wc, 1, 30000);
	CHECK(n == 1 && wc[0].wr_id == 20 && wc[0].status == IBV_WC_REM_INV_REQ_ERR,
	      "an SRQ of another domain: IBV_WC_REM_INV_REQ_ERR (n %d, %s)", n,
	      n ? ibv_wc_status_str(wc[0].status) : "-");
	qpt_sync(fd, "sent-bad");
	qpt_teardown(fd, &(struct qpt_made){ .d = &d, .buf = &b, .qp = ini, .nqp = NT, .cq = { cq } });
}

/* ---- -m shared: the SRQ in one process, the target QP in another ---------- */

/* -a owner:PATH or -a target:PATH: the role and the domain's file. */
static const char *shared_path(const struct qpt_opts *o)
{
	const char *c = o->arg ? strchr(o->arg, ':') : NULL;

	return c ? c + 1 : "/tmp/qpt_xrc_shared";
}

static void shared_owner(const struct qpt_opts *o)
{
	struct qpt_dev d;
	struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
					 .oflags = O_CREAT };
	struct ibv_xrcd *x;
	struct ibv_cq *cq;
	struct ibv_srq *s;
	struct qpt_buf b;
	struct ibv_wc wc;
	uint32_t num;
	int fd, lfd, n;

	qpt_open(&d, o->dev, o->gidx);
	xa.fd = open(shared_path(o), O_RDONLY | O_CREAT, 0600);
	x = ibv_open_xrcd(d.ctx, &xa);
	if (!x)
		DIE("open_xrcd");
	cq = qpt_cq(&d, 16);
	s = xrc_srq(&d, x, cq, 16);
	qpt_buf(&d, &b, 4096, IBV_ACCESS_LOCAL_WRITE);
	qpt_post_srq_recv1(s, 1, b.p, 256, b.mr->lkey);
	ibv_get_srq_num(s, &num);
	lfd = qpt_listen(o->port);
	fd = qpt_accept(lfd);           /* the client */
	qpt_xchg64(fd, num);
	if (o->arg && !strncmp(o->arg, "owner-gone", 10)) {
		/* Dies with its SRQ alive, as a crash would: no clean-up. */
		qpt_sync(fd, "dying");
		fflush(NULL);
		_exit(0);
	}
	qpt_sync(fd, "sent");
	n = qpt_poll(cq, &wc, 1, 20000);
	CHECK(n == 1 && wc.status == IBV_WC_SUCCESS && b.p[0] == 0xab,
	      "the SRQ's owner receives the message sent through the other process's target QP of the shared domain (n %d)",
	      n);
	qpt_sync(fd, "done");
	close(fd);
	close(lfd);
	ibv_destroy_srq(s);
	ibv_close_xrcd(x);
	ibv_destroy_cq(cq);
	qpt_buf_free(&b);
	qpt_close(&d);
}

static void shared_target(const struct qpt_opts *o)
{
	struct qpt_dev d;
	struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
					 .oflags = O_CREAT };
	struct ibv_xrcd *x;
	struct ibv_qp *t;
	struct qpt_ep me, peer;
	int fd, lfd;

	qpt_open(&d, o->dev, o->gidx);
	xa.fd = open(shared_path(o), O_RDONLY | O_CREAT, 0600);
	x = ibv_open_xrcd(d.ctx, &xa);
	if (!x)
		DIE("open_xrcd");
	t = xrc_target(&d, x);
	lfd = qpt_listen(o->port + 1);
	fd = qpt_accept(lfd);
	qpt_ep_of(&d, t, &me);
	qpt_xchg_ep(fd, &me, &peer);
	CHECK(qpt_connect(&d, t, &me, &peer, 0, IBV_MTU_1024) == 0, "target QP to RTS");
	/* Only then may the client send: a message refused in RTR (the
	 * owner gone) moves the QP to ERR before it could reach RTS. */
	qpt_sync(fd, "ready");
	qpt_sync(fd, "done");
	close(fd);
	close(lfd);
	ibv_destroy_qp(t);
	ibv_close_xrcd(x);
	qpt_close(&d);
}

static void shared_client(const struct qpt_opts *o)
{
	struct qpt_dev d;
	struct ibv_cq *cq;
	struct ibv_qp *ini;
	struct qpt_ep me, peer;
	struct qpt_buf b;
	struct ibv_wc wc;
	int fo, ft, n;
	uint32_t num;

	qpt_open(&d, o->dev, o->gidx);
	cq = qpt_cq(&d, 16);
	ini = xrc_initiator(&d, cq);
	qpt_buf(&d, &b, 4096, IBV_ACCESS_LOCAL_WRITE);
	memset(b.p, 0xab, 256);
	fo = qpt_connect_to(o->host, o->port);
	ft = qpt_connect_to(o->host, o->port + 1);
	num = (uint32_t)qpt_xchg64(fo, 0);
	qpt_ep_of(&d, ini, &me);
	qpt_xchg_ep(ft, &me, &peer);
	CHECK(qpt_connect(&d, ini, &me, &peer, 0, IBV_MTU_1024) == 0, "initiator to RTS");
	qpt_sync(ft, "ready");
	if (o->arg && !strcmp(o->arg, "gone")) {
		char c;

		/* The owner dies with its SRQ alive: the target refuses the
		 * message (NAK invalid request) instead of waiting for it. */
		qpt_sync(fo, "dying");
		CHECK(read(fo, &c, 1) == 0, "the owner process exited");
		CHECK(xsend(ini, IBV_WR_SEND, 1, &b, 0, 256, num, &peer, 0) == 0,
		      "SEND to the dead owner's SRQ 0x%06x through the target process", num);
		n = qpt_poll(cq, &wc, 1, 30000);
		CHECK(n == 1 && wc.status == IBV_WC_REM_INV_REQ_ERR,
		      "it fails with IBV_WC_REM_INV_REQ_ERR, not a retry timeout (n %d, %s)", n,
		      n ? ibv_wc_status_str(wc.status) : "-");
		qpt_teardown(ft, &(struct qpt_made){ .d = &d, .buf = &b, .qp = &ini, .nqp = 1,
						     .cq = { cq } });
		return;
	}
	CHECK(xsend(ini, IBV_WR_SEND, 1, &b, 0, 256, num, &peer, 0) == 0, "SEND to the owner's SRQ 0x%06x through the target process", num);
	n = qpt_poll(cq, &wc, 1, 30000);
	CHECK(n == 1 && wc.status == IBV_WC_SUCCESS,
	      "it completes successfully (n %d, %s)", n, n ? ibv_wc_status_str(wc.status) : "-");
	qpt_sync(fo, "sent");
	qpt_sync(fo, "done");
	qpt_teardown(ft, &(struct qpt_made){ .d = &d, .buf = &b, .qp = &ini, .nqp = 1, .cq = { cq } });
}

/* -m shared without a host: -a target:PATH is the target, else the owner. */
static void shared_server(const struct qpt_opts *o)
{
	if (o->arg && !strncmp(o->arg, "target", 6))
		shared_target(o);
	else
		shared_owner(o);
}

const struct qpt_role qpt_roles[] = {
	{ "shared", QPT_CLIENT, shared_client },
	{ "shared", QPT_SERVER, shared_server },
	{ NULL, QPT_SERVER, server },
	{ NULL, QPT_CLIENT, client },
	{ NULL, QPT_EITHER, NULL },
};
