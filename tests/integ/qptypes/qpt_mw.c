/* Memory windows between two processes: the server binds windows on its
 * memory (type 1 with ibv_bind_mw, type 2 with IBV_WR_BIND_MW), the client
 * reaches it through them.  Remote WRITE and READ work inside a window and
 * fail outside it or beyond its rights (IBV_WC_REM_ACCESS_ERR, the memory
 * untouched); a type 2 window is reachable only through the QP it was bound
 * on; IBV_WR_LOCAL_INV and IBV_WR_SEND_WITH_INV (the receiver sees
 * IBV_WC_WITH_INV and invalidated_rkey) end access; bind errors complete
 * with IBV_WC_MW_BIND_ERR; ibv_dereg_mr of a region with a bound window
 * fails with EBUSY until the window is gone.
 *
 *   qpt_mw -d DEV -g GIDX -p PORT            (server: the memory)
 *   qpt_mw -d DEV -g GIDX -p PORT SERVER_IP  (client: the remote accessor)
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qpt.h"

#define NP 5              /* QP pairs: one per case that ends its pair */
#define MEM (64 << 10)
#define W1 4096           /* type 1, read/write */
#define W1R 8192          /* type 1, read only */
#define W2A 12288         /* type 2 on pair 2 */
#define W2B 16384         /* type 2 on pair 3 */
#define WLEN 4096
#define FILL 0xee

struct win {
	uint64_t addr;
	uint32_t rkey, len;
};

struct keys {             /* server -> client */
	struct win w1, w1r, w2a, w2b;
};

static uint8_t pat(size_t i) { return (uint8_t)(i * 13 + 5); }

/* ---- server-side helpers ----------------------------------------------- */

static struct ibv_mw_bind_info bind_info(struct ibv_mr *mr, uint64_t addr, uint64_t len, int acc)
{
	struct ibv_mw_bind_info b = { .mr = mr, .addr = addr, .length = len,
				      .mw_access_flags = (unsigned)acc };
	return b;
}

/* Binds a type 1 window with ibv_bind_mw; returns the completion status. */
static enum ibv_wc_status bind1(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mw *mw,
				struct ibv_mw_bind_info bi, int *post_ret)
{
	struct ibv_mw_bind b = { .wr_id = 0xb1, .send_flags = IBV_SEND_SIGNALED, .bind_info = bi };
	struct ibv_wc wc;

	*post_ret = ibv_bind_mw(qp, mw, &b);
	if (*post_ret)
		return (enum ibv_wc_status)-1;
	if (qpt_poll(cq, &wc, 1, 20000) != 1)
		return (enum ibv_wc_status)-2;
	if (wc.status == IBV_WC_SUCCESS && wc.opcode != IBV_WC_BIND_MW)
		qpt_note("bind completion opcode %d", wc.opcode);
	return wc.status;
}

/* Binds a type 2 window with IBV_WR_BIND_MW and rkey. */
static enum ibv_wc_status bind2(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mw *mw,
				uint32_t rkey, struct ibv_mw_bind_info bi)
{
	struct ibv_send_wr wr = { .wr_id = 0xb2, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = bi;
	if (ibv_post_send(qp, &wr, &bad))
		return (enum ibv_wc_status)-1;
	if (qpt_poll(cq, &wc, 1, 20000) != 1)
		return (enum ibv_wc_status)-2;
	if (wc.status == IBV_WC_SUCCESS)
		CHECK(wc.opcode == IBV_WC_BIND_MW, "a bind completes with opcode IBV_WC_BIND_MW (%d)", wc.opcode);
	return wc.status;
}

static enum ibv_wc_status local_inv(struct ibv_qp *qp, struct ibv_cq *cq, uint32_t rkey)
{
	struct ibv_send_wr wr = { .wr_id = 0x11, .opcode = IBV_WR_LOCAL_INV,
				  .send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = rkey }, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(qp, &wr, &bad))
		return (enum ibv_wc_status)-1;
	if (qpt_poll(cq, &wc, 1, 20000) != 1)
		return (enum ibv_wc_status)-2;
	if (wc.status == IBV_WC_SUCCESS)
		CHECK(wc.opcode == IBV_WC_LOCAL_INV, "LOCAL_INV completes with opcode IBV_WC_LOCAL_INV (%d)",
		      wc.opcode);
	return wc.status;
}

/* A fresh RC QP in RTS, looped back to a second QP of this process: the
 * binds it executes need no peer, and an error ends only this QP. */
static struct ibv_qp *loop_qp(struct qpt_dev *d, struct ibv_cq *cq, struct ibv_qp **other)
{
	struct ibv_qp *a = qpt_qp(d, IBV_QPT_RC, cq, cq, NULL, 4);
	struct ibv_qp *b = qpt_qp(d, IBV_QPT_RC, cq, cq, NULL, 4);
	struct qpt_ep ea, eb;

	qpt_ep_of(d, a, &ea);
	qpt_ep_of(d, b, &eb);
	if (qpt_connect(d, a, &ea, &eb, IBV_ACCESS_REMOTE_WRITE, IBV_MTU_1024) ||
	    qpt_connect(d, b, &eb, &ea, IBV_ACCESS_REMOTE_WRITE, IBV_MTU_1024))
		DIE("loopback QPs");
	*other = b;
	return a;
}

/* True if p[i] is still pat(i) for every i in [from, to). */
static bool patterned(const uint8_t *p, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		if (p[i] != pat(i))
			return false;
	return true;
}

static bool untouched(const uint8_t *p, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

static void bind_errors(struct qpt_dev *d, struct ibv_mr *mr, struct ibv_mr *nobind_mr)
{
	struct ibv_cq *cq = qpt_cq(d, 16);
	struct ibv_qp *qp, *peer;
	struct ibv_mw *m1 = ibv_alloc_mw(d->pd, IBV_MW_TYPE_1);
	struct ibv_mw *m2 = ibv_alloc_mw(d->pd, IBV_MW_TYPE_2);
	enum ibv_wc_status st;
	int ret;

	if (!m1 || !m2)
		DIE("ibv_alloc_mw");
	qp = loop_qp(d, cq, &peer);
	st = bind1(qp, cq, m1, bind_info(mr, (uintptr_t)mr->addr + MEM - 2048, 4096,
					 IBV_ACCESS_REMOTE_READ), &ret);
	CHECK(st == IBV_WC_MW_BIND_ERR, "binding a window that runs past its region: IBV_WC_MW_BIND_ERR (%d: %s)",
	      st, ibv_wc_status_str(st));
	CHECK(qpt_qp_state(qp) == IBV_QPS_ERR, "and the QP is in ERROR");
	ibv_destroy_qp(qp);
	ibv_destroy_qp(peer);

	qp = loop_qp(d, cq, &peer);
	st = bind1(qp, cq, m1, bind_info(nobind_mr, (uintptr_t)nobind_mr->addr, 4096,
					 IBV_ACCESS_REMOTE_READ), &ret);
	CHECK(st == IBV_WC_MW_BIND_ERR,
	      "binding to a region registered without IBV_ACCESS_MW_BIND: IBV_WC_MW_BIND_ERR (%s)",
	      ibv_wc_status_str(st));
	ibv_destroy_qp(qp);
	ibv_destroy_qp(peer);

	qp = loop_qp(d, cq, &peer);
	st = bind2(qp, cq, m2, m2->rkey + 0x100, bind_info(mr, (uintptr_t)mr->addr, 4096,
							   IBV_ACCESS_REMOTE_READ));
	CHECK(st == IBV_WC_MW_BIND_ERR,
	      "a type 2 bind with an rkey of another index (rkey + 0x100): IBV_WC_MW_BIND_ERR (%s)",
	      ibv_wc_status_str(st));
	ibv_destroy_qp(qp);
	ibv_destroy_qp(peer);

	qp = loop_qp(d, cq, &peer);
	st = bind2(qp, cq, m2, ibv_inc_rkey(m2->rkey), bind_info(mr, (uintptr_t)mr->addr, 4096,
								IBV_ACCESS_REMOTE_READ));
	CHECK(st == IBV_WC_SUCCESS, "a type 2 bind (%s)", ibv_wc_status_str(st));
	st = bind2(qp, cq, m2, ibv_inc_rkey(ibv_inc_rkey(m2->rkey)),
		   bind_info(mr, (uintptr_t)mr->addr, 4096, IBV_ACCESS_REMOTE_READ));
	CHECK(st == IBV_WC_MW_BIND_ERR,
	      "binding a type 2 window again before invalidating it: IBV_WC_MW_BIND_ERR (%s)",
	      ibv_wc_status_str(st));
	ibv_destroy_qp(qp);
	ibv_destroy_qp(peer);

	qp = loop_qp(d, cq, &peer);
	st = local_inv(qp, cq, mr->rkey);
	CHECK(st != IBV_WC_SUCCESS, "LOCAL_INV of an MR's rkey fails (%s)", ibv_wc_status_str(st));
	ibv_destroy_qp(qp);
	ibv_destroy_qp(peer);

	{
		struct ibv_mw_bind b = { .send_flags = IBV_SEND_SIGNALED,
					 .bind_info = bind_info(mr, (uintptr_t)mr->addr, 64, 0) };

		qp = loop_qp(d, cq, &peer);
		ret = ibv_bind_mw(qp, m2, &b);
		CHECK(ret == EINVAL, "ibv_bind_mw on a type 2 window: EINVAL (ret %d)", ret);
		ibv_destroy_qp(qp);
		ibv_destroy_qp(peer);
	}
	CHECK(ibv_dealloc_mw(m1) == 0 && ibv_dealloc_mw(m2) == 0, "ibv_dealloc_mw");
	ibv_destroy_cq(cq);
}

static void dereg_busy(struct qpt_dev *d)
{
	struct ibv_cq *cq = qpt_cq(d, 16);
	struct ibv_qp *qp, *peer;
	struct qpt_buf b;
	struct ibv_mw *m1 = ibv_alloc_mw(d->pd, IBV_MW_TYPE_1);
	struct ibv_mw *m2 = ibv_alloc_mw(d->pd, IBV_MW_TYPE_2);
	uint32_t k2;
	int ret;

	qpt_buf(d, &b, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND);
	qp = loop_qp(d, cq, &peer);
	CHECK(bind1(qp, cq, m1, bind_info(b.mr, (uintptr_t)b.p, 4096, IBV_ACCESS_REMOTE_READ), &ret) ==
		      IBV_WC_SUCCESS, "type 1 window bound on a fresh region");
	ret = ibv_dereg_mr(b.mr);
	CHECK(ret == EBUSY, "ibv_dereg_mr of a region with a bound window: EBUSY (ret %d)", ret);
	CHECK(bind1(qp, cq, m1, bind_info(b.mr, (uintptr_t)b.p, 0, 0), &ret) == IBV_WC_SUCCESS,
	      "the type 1 window unbound (a zero-length bind)");
	k2 = ibv_inc_rkey(m2->rkey);
	CHECK(bind2(qp, cq, m2, k2, bind_info(b.mr, (uintptr_t)b.p + 4096, 4096,
					      IBV_ACCESS_REMOTE_READ)) == IBV_WC_SUCCESS,
	      "type 2 window bound on it");
	ret = ibv_dereg_mr(b.mr);
	CHECK(ret == EBUSY, "ibv_dereg_mr with the type 2 window bound: EBUSY (ret %d)", ret);
	CHECK(local_inv(qp, cq, k2) == IBV_WC_SUCCESS, "the type 2 window invalidated");
	ret = ibv_dereg_mr(b.mr);
	CHECK(ret == 0, "then ibv_dereg_mr succeeds (ret %d)", ret);
	b.mr = NULL;
	qpt_buf_free(&b);
	ibv_dealloc_mw(m1);
	ibv_dealloc_mw(m2);
	ibv_destroy_qp(qp);
	ibv_destroy_qp(peer);
	ibv_destroy_cq(cq);
}

/* The device says it has memory windows, type 2B included. */
static void check_mw_advertised(struct qpt_dev *d)
{
	struct ibv_device_attr da;

	if (ibv_query_device(d->ctx, &da))
		DIE("query_device");
	CHECK(da.max_mw > 0 && (da.device_cap_flags & IBV_DEVICE_MEM_WINDOW) &&
	      (da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B),
	      "the device advertises memory windows: max_mw %d, MEM_WINDOW, MEM_WINDOW_TYPE_2B",
	      da.max_mw);
}

/* What the client's accesses through the windows did to the region, and
 * the invalidations: LOCAL_INV here, SEND_WITH_INV from the client. */
static void server_check_window_writes(int fd, struct qpt_buf *mem, struct ibv_qp **qp,
				       struct ibv_cq *scq, struct ibv_cq *rcq, const struct keys *k)
{
	struct ibv_wc wc;
	enum ibv_wc_status st;
	int n;

	/* Type 1. */
	qpt_sync(fd, "t1-done");
	CHECK(untouched(mem->p + W1, 1024, 0xa1), "WRITE inside the type 1 window landed");
	CHECK(patterned(mem->p + W1, 1024, WLEN - 8) && untouched(mem->p + W1 - 64, 64, FILL),
	      "the rest of the window and the bytes before it are untouched");
	CHECK(patterned(mem->p + W1, WLEN - 8, WLEN) && mem->p[W1R] == pat(0),
	      "the WRITE across the window's end changed nothing, inside or past it");
	qpt_sync(fd, "t1r-done");
	CHECK(patterned(mem->p + W1R, 0, WLEN), "the WRITE through the read-only window changed nothing");

	/* Type 2, then LOCAL_INV on its QP. */
	qpt_sync(fd, "t2-done");
	CHECK(untouched(mem->p + W2A, 512, 0xa2), "WRITE through the type 2 window on its QP landed");
	st = local_inv(qp[2], scq, k->w2a.rkey);
	CHECK(st == IBV_WC_SUCCESS, "IBV_WR_LOCAL_INV of the type 2 window (%s)", ibv_wc_status_str(st));
	qpt_sync(fd, "invalidated");
	qpt_sync(fd, "t2-after-inv");
	CHECK(untouched(mem->p + W2A, 512, 0xa2) && mem->p[W2A + 512] == pat(512),
	      "the WRITE after LOCAL_INV changed nothing");

	/* Type 2 from another QP; SEND_WITH_INV. */
	qpt_sync(fd, "t2-other-qp");
	CHECK(patterned(mem->p + W2B, 0, WLEN),
	      "the WRITE to the type 2 window through another QP changed nothing");
	n = qpt_poll(rcq, &wc, 1, 20000);
	CHECK(n == 1 && wc.status == IBV_WC_SUCCESS && (wc.wc_flags & IBV_WC_WITH_INV) &&
	      wc.invalidated_rkey == k->w2b.rkey && wc.qp_num == qp[3]->qp_num,
	      "SEND_WITH_INV received: IBV_WC_WITH_INV, invalidated_rkey 0x%x (flags 0x%x, rkey 0x%x)",
	      k->w2b.rkey, n ? wc.wc_flags : 0, n ? wc.invalidated_rkey : 0);
	qpt_sync(fd, "send-inv-seen");
	qpt_sync(fd, "t2b-after-inv");
	CHECK(patterned(mem->p + W2B, 0, WLEN), "the WRITE after the remote invalidation changed nothing");
}

static void server(const struct qpt_opts *o)
{
	struct qpt_dev d;
	struct qpt_buf mem, nobind, rbuf;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp[NP];
	struct qpt_ep me[NP], peer[NP];
	struct ibv_mw *w1, *w1r, *w2a, *w2b;
	struct keys k;
	enum ibv_wc_status st;
	int fd, ret;
	const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_MW_BIND;

	qpt_open(&d, o->dev, o->gidx);
	check_mw_advertised(&d);
	qpt_buf(&d, &mem, MEM, acc);
	qpt_buf(&d, &nobind, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	qpt_buf(&d, &rbuf, 4096, IBV_ACCESS_LOCAL_WRITE);
	memset(mem.p, FILL, MEM);
	for (size_t i = 0; i < WLEN; i++)
		mem.p[W1 + i] = mem.p[W1R + i] = mem.p[W2A + i] = mem.p[W2B + i] = pat(i);
	bind_errors(&d, mem.mr, nobind.mr);
	dereg_busy(&d);

	scq = qpt_cq(&d, 64);
	rcq = qpt_cq(&d, 64);
	for (int i = 0; i < NP; i++)
		qp[i] = qpt_qp(&d, IBV_QPT_RC, scq, rcq, NULL, 8);
	fd = qpt_oob(o);
	qpt_connect_each(&d, fd, qp, me, peer, NP, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (qpt_post_recv1(qp[3], 0x5e, rbuf.p, 4096, rbuf.mr->lkey))
		DIE("post_recv");
	w1 = ibv_alloc_mw(d.pd, IBV_MW_TYPE_1);
	w1r = ibv_alloc_mw(d.pd, IBV_MW_TYPE_1);
	w2a = ibv_alloc_mw(d.pd, IBV_MW_TYPE_2);
	w2b = ibv_alloc_mw(d.pd, IBV_MW_TYPE_2);
	CHECK(w1 && w1r && w2a && w2b && w1->type == IBV_MW_TYPE_1 && w2a->type == IBV_MW_TYPE_2,
	      "ibv_alloc_mw: two type 1 and two type 2 windows");
	if (!w1 || !w1r || !w2a || !w2b)
		DIE("ibv_alloc_mw");
	st = bind1(qp[0], scq, w1, bind_info(mem.mr, (uintptr_t)mem.p + W1, WLEN,
					     IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ), &ret);
	CHECK(st == IBV_WC_SUCCESS, "ibv_bind_mw: type 1 window, read/write, on [%d, %d) (%s)", W1,
	      W1 + WLEN, ibv_wc_status_str(st));
	st = bind1(qp[1], scq, w1r, bind_info(mem.mr, (uintptr_t)mem.p + W1R, WLEN,
					      IBV_ACCESS_REMOTE_READ), &ret);
	CHECK(st == IBV_WC_SUCCESS, "ibv_bind_mw: type 1 window, read only (%s)", ibv_wc_status_str(st));
	k.w2a.rkey = ibv_inc_rkey(w2a->rkey);
	st = bind2(qp[2], scq, w2a, k.w2a.rkey,
		   bind_info(mem.mr, (uintptr_t)mem.p + W2A, WLEN,
			     IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ));
	CHECK(st == IBV_WC_SUCCESS, "IBV_WR_BIND_MW: type 2 window on QP 2 (%s)", ibv_wc_status_str(st));
	k.w2b.rkey = ibv_inc_rkey(w2b->rkey);
	st = bind2(qp[3], scq, w2b, k.w2b.rkey,
		   bind_info(mem.mr, (uintptr_t)mem.p + W2B, WLEN,
			     IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ));
	CHECK(st == IBV_WC_SUCCESS, "IBV_WR_BIND_MW: type 2 window on QP 3 (%s)", ibv_wc_status_str(st));
	k.w1 = (struct win){ (uintptr_t)mem.p + W1, w1->rkey, WLEN };
	k.w1r = (struct win){ (uintptr_t)mem.p + W1R, w1r->rkey, WLEN };
	k.w2a.addr = (uintptr_t)mem.p + W2A;
	k.w2a.len = WLEN;
	k.w2b.addr = (uintptr_t)mem.p + W2B;
	k.w2b.len = WLEN;
	CHECK(w1->rkey != mem.mr->rkey && w1->rkey != w1r->rkey,
	      "each window has an rkey of its own (0x%x, 0x%x; region 0x%x)", w1->rkey, w1r->rkey,
	      mem.mr->rkey);
	qpt_send(fd, &k, sizeof(k));

	server_check_window_writes(fd, &mem, qp, scq, rcq, &k);
	qpt_teardown(fd, &(struct qpt_made){ .qp = qp, .nqp = NP });
	CHECK(ibv_dealloc_mw(w1) == 0 && ibv_dealloc_mw(w1r) == 0 && ibv_dealloc_mw(w2a) == 0 &&
	      ibv_dealloc_mw(w2b) == 0, "ibv_dealloc_mw of the four windows");
	qpt_buf_free(&nobind);
	qpt_buf_free(&rbuf);
	qpt_teardown(-1, &(struct qpt_made){ .d = &d, .buf = &mem, .cq = { scq, rcq } });
}

/* ---- client -------------------------------------------------------------- */

static enum ibv_wc_status rdma(struct ibv_qp *qp, struct ibv_cq *cq, enum ibv_wr_opcode op,
			       struct qpt_buf *b, uint32_t off, uint32_t len, uint64_t raddr,
			       uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)b->p + off, len, b->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = op, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(qp, &wr, &bad))
		return (enum ibv_wc_status)-1;
	if (qpt_poll(cq, &wc, 1, 30000) != 1)
		return (enum ibv_wc_status)-2;
	return wc.status;
}

static void client(const struct qpt_opts *o)
{
	struct qpt_dev d;
	struct qpt_buf b;
	struct ibv_cq *cq;
	struct ibv_qp *qp[NP];
	struct qpt_ep me[NP], peer[NP];
	struct keys k;
	enum ibv_wc_status st;
	int fd;

	qpt_open(&d, o->dev, o->gidx);
	qpt_buf(&d, &b, 65536, IBV_ACCESS_LOCAL_WRITE);
	cq = qpt_cq(&d, 64);
	for (int i = 0; i < NP; i++)
		qp[i] = qpt_qp(&d, IBV_QPT_RC, cq, cq, NULL, 8);
	fd = qpt_oob(o);
	qpt_connect_each(&d, fd, qp, me, peer, NP, 0);
	qpt_recv(fd, &k, sizeof(k));

	/* Type 1: inside, read, then across the end. */
	memset(b.p, 0xa1, 1024);
	st = rdma(qp[0], cq, IBV_WR_RDMA_WRITE, &b, 0, 1024, k.w1.addr, k.w1.rkey);
	CHECK(st == IBV_WC_SUCCESS, "WRITE 1 KiB inside the type 1 window (%s)", ibv_wc_status_str(st));
	st = rdma(qp[0], cq, IBV_WR_RDMA_READ, &b, 8192, 2048, k.w1.addr + 2048, k.w1.rkey);
	{
		bool ok = st == IBV_WC_SUCCESS;

		for (size_t i = 0; ok && i < 2048; i++)
			ok = b.p[8192 + i] == pat(2048 + i);
		CHECK(ok, "READ 2 KiB inside the type 1 window returns the server's bytes (%s)",
		      ibv_wc_status_str(st));
	}
	st = rdma(qp[0], cq, IBV_WR_RDMA_WRITE, &b, 0, 16, k.w1.addr + WLEN - 8, k.w1.rkey);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "WRITE across the window's end: IBV_WC_REM_ACCESS_ERR (%s)",
	      ibv_wc_status_str(st));
	qpt_sync(fd, "t1-done");
	st = rdma(qp[1], cq, IBV_WR_RDMA_READ, &b, 8192, 64, k.w1r.addr, k.w1r.rkey);
	CHECK(st == IBV_WC_SUCCESS, "READ through the read-only window (%s)", ibv_wc_status_str(st));
	st = rdma(qp[1], cq, IBV_WR_RDMA_WRITE, &b, 0, 64, k.w1r.addr, k.w1r.rkey);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "WRITE through the read-only window: IBV_WC_REM_ACCESS_ERR (%s)",
	      ibv_wc_status_str(st));
	qpt_sync(fd, "t1r-done");

	/* Type 2 on its QP, then after LOCAL_INV. */
	memset(b.p, 0xa2, 512);
	st = rdma(qp[2], cq, IBV_WR_RDMA_WRITE, &b, 0, 512, k.w2a.addr, k.w2a.rkey);
	CHECK(st == IBV_WC_SUCCESS, "WRITE through the type 2 window on the QP it was bound on (%s)",
	      ibv_wc_status_str(st));
	st = rdma(qp[2], cq, IBV_WR_RDMA_READ, &b, 8192, 512, k.w2a.addr + 1024, k.w2a.rkey);
	CHECK(st == IBV_WC_SUCCESS && b.p[8192] == pat(1024), "READ through it (%s)", ibv_wc_status_str(st));
	qpt_sync(fd, "t2-done");
	qpt_sync(fd, "invalidated");
	memset(b.p, 0xdd, 1024);
	st = rdma(qp[2], cq, IBV_WR_RDMA_WRITE, &b, 0, 1024, k.w2a.addr, k.w2a.rkey);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "WRITE after LOCAL_INV: IBV_WC_REM_ACCESS_ERR (%s)",
	      ibv_wc_status_str(st));
	qpt_sync(fd, "t2-after-inv");

	/* Type 2 from another QP; SEND_WITH_INV on its own. */
	st = rdma(qp[4], cq, IBV_WR_RDMA_WRITE, &b, 0, 64, k.w2b.addr, k.w2b.rkey);
	CHECK(st == IBV_WC_REM_ACCESS_ERR,
	      "WRITE to a type 2 window through a QP it is not bound on: IBV_WC_REM_ACCESS_ERR (%s)",
	      ibv_wc_status_str(st));
	{
		struct ibv_sge sge = { (uintptr_t)b.p, 32, b.mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND_WITH_INV, .send_flags = IBV_SEND_SIGNALED,
					  .invalidate_rkey = k.w2b.rkey }, *bad;
		struct ibv_wc wc;

		CHECK(ibv_post_send(qp[3], &wr, &bad) == 0 && qpt_poll(cq, &wc, 1, 30000) == 1 &&
		      wc.status == IBV_WC_SUCCESS,
		      "SEND_WITH_INV of the type 2 window's rkey on its QP");
	}
	qpt_sync(fd, "t2-other-qp");
	qpt_sync(fd, "send-inv-seen");
	st = rdma(qp[3], cq, IBV_WR_RDMA_WRITE, &b, 0, 64, k.w2b.addr, k.w2b.rkey);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "WRITE after SEND_WITH_INV: IBV_WC_REM_ACCESS_ERR (%s)",
	      ibv_wc_status_str(st));
	qpt_sync(fd, "t2b-after-inv");
	qpt_teardown(fd, &(struct qpt_made){ .d = &d, .buf = &b, .qp = qp, .nqp = NP, .cq = { cq } });
}

const struct qpt_role qpt_roles[] = {
	{ NULL, QPT_SERVER, server },
	{ NULL, QPT_CLIENT, client },
	{ NULL, QPT_EITHER, NULL },
};
