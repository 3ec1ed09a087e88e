/* The extended verbs: completions read through ibv_create_cq_ex and
 * ibv_start_poll / ibv_next_poll / ibv_end_poll (wr_id, status, opcode,
 * qp_num, src_qp, byte_len, imm_data, wc_flags), and work requests built
 * through ibv_wr_* on a QP from ibv_create_qp_ex, for every RC opcode
 * (SEND, SEND with immediate and with invalidate, RDMA WRITE with and
 * without immediate, RDMA READ, both atomics, LOCAL_INV, BIND_MW), every
 * way of naming data (ibv_wr_set_sge, _sge_list, _inline_data,
 * _inline_data_list), UD's ibv_wr_set_ud_addr, several WRs per batch, and
 * ibv_wr_abort (nothing goes out).  ATOMIC WRITE (ibv_wr_atomic_write):
 * the 8 bytes land whole; a misaligned address fails with
 * IBV_WC_REM_INV_REQ_ERR and a bad rkey with IBV_WC_REM_ACCESS_ERR,
 * changing nothing; on UD the batch is refused.  Memory windows: type 1 bound with
 * ibv_bind_mw and type 2 with IBV_WR_BIND_MW / ibv_wr_bind_mw; RDMA WRITE
 * through the window's rkey lands, outside the window or after an
 * invalidation it fails with IBV_WC_REM_ACCESS_ERR and changes nothing.
 *
 *   ex_api DEVICE GID_INDEX [CASE...]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt.h"

#define LW IBV_ACCESS_LOCAL_WRITE
#define ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
	     IBV_ACCESS_REMOTE_ATOMIC)
#define RC_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_SEND_WITH_INV | \
		IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |                \
		IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |                  \
		IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV |                \
		IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_ATOMIC_WRITE)

#define CQX_FLAGS (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM | \
		   IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |          \
		   IBV_WC_EX_WITH_DLID_PATH_BITS)

static struct ibv_cq_ex *cqx_create(struct vt_dev *d)
{
	struct ibv_cq_init_attr_ex a = { .cqe = 256, .wc_flags = CQX_FLAGS };
	struct ibv_cq_ex *cq = ibv_create_cq_ex(d->ctx, &a);

	if (!cq)
		vt_fail("ibv_create_cq_ex(wc_flags 0x%llx): %s", (unsigned long long)a.wc_flags,
			strerror(errno));
	return cq;
}

/* A completion as read through the ibv_wc_read_* accessors. */
struct xwc {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t qp_num, src_qp, byte_len, imm, flags;
};

static void xread(struct ibv_cq_ex *cq, struct xwc *w)
{
	w->wr_id = cq->wr_id;
	w->status = cq->status;
	w->opcode = ibv_wc_read_opcode(cq);
	w->qp_num = ibv_wc_read_qp_num(cq);
	w->src_qp = ibv_wc_read_src_qp(cq);
	w->byte_len = ibv_wc_read_byte_len(cq);
	w->flags = ibv_wc_read_wc_flags(cq);
	w->imm = (w->flags & IBV_WC_WITH_IMM) ? be32toh(ibv_wc_read_imm_data(cq)) : 0;
	(void)ibv_wc_read_slid(cq);
	(void)ibv_wc_read_sl(cq);
	(void)ibv_wc_read_dlid_path_bits(cq);
}

/* Up to n completions within seconds, through start/next/end_poll. */
static int xpoll(struct ibv_cq_ex *cq, struct xwc *w, int n, double seconds)
{
	struct ibv_poll_cq_attr pa = { 0 };
	double end = vt_now() + seconds;
	int got = 0, ret;

	while (got < n) {
		ret = ibv_start_poll(cq, &pa);
		if (ret == ENOENT) {
			if (vt_now() > end)
				break;
			continue;
		}
		if (ret) {
			vt_fail("ibv_start_poll: %s", strerror(ret));
			break;
		}
		xread(cq, &w[got++]);
		while (got < n && !(ret = ibv_next_poll(cq)))
			xread(cq, &w[got++]);
		if (ret && ret != ENOENT)
			vt_fail("ibv_next_poll: %s", strerror(ret));
		ibv_end_poll(cq);
	}
	return got;
}

/* UD through the extended CQs: src_qp and the GRH flag. */
static void cq_ex_ud(struct vt_dev *d, struct ibv_cq_ex *scq, struct ibv_cq_ex *rcq,
		     struct vt_buf *src, struct vt_buf *dst)
{
	struct vt_qp ua, ub;
	struct vt_qp_opts uo;
	struct ibv_sge s, r;
	struct ibv_send_wr wr;
	struct xwc w[8];
	struct ibv_ah *ah;

	uo = (struct vt_qp_opts){ .type = IBV_QPT_UD, .send_cq = ibv_cq_ex_to_cq(scq),
				  .recv_cq = ibv_cq_ex_to_cq(rcq) };
	vt_qp_create(&ua, d, &uo);
	vt_qp_create(&ub, d, &uo);
	vt_qp_connect(&ua, &ub);
	ah = vt_ah(d);
	r = vt_sge(dst, 0, 40 + 300);
	vt_post_recv(&ub, 0x30, &r, 1);
	s = vt_sge(src, 0, 300);
	wr = vt_wr(0x31, IBV_WR_SEND_WITH_IMM, &s);
	wr.imm_data = htobe32(77);
	vt_wr_ud(&wr, ah, ub.qp->qp_num, 0x11111111);
	vt_post_send(&ua, &wr);
	if (xpoll(rcq, w, 1, 10) == 1)
		vt_check(w[0].status == IBV_WC_SUCCESS && w[0].qp_num == ub.qp->qp_num &&
			 w[0].src_qp == ua.qp->qp_num && w[0].byte_len == 340 &&
			 (w[0].flags & IBV_WC_GRH) && (w[0].flags & IBV_WC_WITH_IMM) && w[0].imm == 77,
			 "UD receive: status %s qp_num 0x%x (want 0x%x) src_qp 0x%x (want 0x%x) byte_len %u "
			 "(want 340) wc_flags 0x%x imm %u", ibv_wc_status_str(w[0].status), w[0].qp_num,
			 ub.qp->qp_num, w[0].src_qp, ua.qp->qp_num, w[0].byte_len, w[0].flags, w[0].imm);
	else
		vt_fail("UD receive: no completion");
	xpoll(scq, w, 1, 10);
	ibv_destroy_ah(ah);
	vt_qp_destroy(&ua);
	vt_qp_destroy(&ub);
}

static void case_cq_ex(struct vt_dev *d)
{
	struct ibv_cq_ex *scq = cqx_create(d), *rcq = cqx_create(d);
	struct ibv_poll_cq_attr pa = { 0 };
	struct vt_qp a, b;
	struct vt_qp_opts o;
	struct vt_buf src, dst;
	struct ibv_sge s, r;
	struct ibv_send_wr wr;
	struct xwc w[8];
	int n;

	if (!scq || !rcq)
		return;
	vt_check(ibv_start_poll(rcq, &pa) == ENOENT, "ibv_start_poll on an empty CQ: ENOENT");
	pa.comp_mask = 1;
	vt_check(ibv_start_poll(rcq, &pa) == EINVAL, "ibv_start_poll with unknown comp_mask bits: EINVAL");
	pa.comp_mask = 0;
	o = (struct vt_qp_opts){ .send_cq = ibv_cq_ex_to_cq(scq), .recv_cq = ibv_cq_ex_to_cq(rcq) };
	vt_rc_pair(d, &a, &o, &b, &o);
	vt_buf_init(&src, d, 8192, ALL, 1);
	vt_buf_init(&dst, d, 8192, ALL, 2);
	r = vt_sge(&dst, 0, 4096);
	vt_post_recv(&b, 0x10, &r, 1);
	vt_post_recv(&b, 0x11, &r, 1);
	vt_post_recv(&b, 0x12, &r, 1);
	s = vt_sge(&src, 0, 1000);
	wr = vt_wr(0x20, IBV_WR_SEND_WITH_IMM, &s);
	wr.imm_data = htobe32(0xabcdef01);
	vt_post_send(&a, &wr);
	wr = vt_wr(0x21, IBV_WR_RDMA_WRITE_WITH_IMM, &s);
	wr.imm_data = htobe32(0x12345678);
	wr.wr.rdma.remote_addr = (uintptr_t)dst.p + 4096;
	wr.wr.rdma.rkey = dst.mr->rkey;
	vt_post_send(&a, &wr);
	wr = vt_wr(0x22, IBV_WR_SEND, &s);
	s.length = 7;
	vt_post_send(&a, &wr);

	n = xpoll(rcq, w, 3, 10);
	if (VT_EXPECT_EQ("receive completions through ibv_start_poll/ibv_next_poll", 3, n)) {
		vt_check(w[0].wr_id == 0x10 && w[0].status == IBV_WC_SUCCESS && w[0].opcode == IBV_WC_RECV &&
			 w[0].qp_num == b.qp->qp_num && w[0].byte_len == 1000 &&
			 (w[0].flags & IBV_WC_WITH_IMM) && w[0].imm == 0xabcdef01,
			 "SEND with immediate: wr_id 0x%llx status %s opcode %d qp_num 0x%x byte_len %u "
			 "wc_flags 0x%x imm 0x%x", (unsigned long long)w[0].wr_id,
			 ibv_wc_status_str(w[0].status), w[0].opcode, w[0].qp_num, w[0].byte_len,
			 w[0].flags, w[0].imm);
		vt_check(w[1].wr_id == 0x11 && w[1].status == IBV_WC_SUCCESS &&
			 w[1].opcode == IBV_WC_RECV_RDMA_WITH_IMM && w[1].qp_num == b.qp->qp_num &&
			 w[1].byte_len == 1000 && (w[1].flags & IBV_WC_WITH_IMM) && w[1].imm == 0x12345678,
			 "RDMA WRITE with immediate: wr_id 0x%llx status %s opcode %d qp_num 0x%x byte_len %u "
			 "wc_flags 0x%x imm 0x%x", (unsigned long long)w[1].wr_id,
			 ibv_wc_status_str(w[1].status), w[1].opcode, w[1].qp_num, w[1].byte_len,
			 w[1].flags, w[1].imm);
		vt_check(w[2].wr_id == 0x12 && w[2].status == IBV_WC_SUCCESS && w[2].opcode == IBV_WC_RECV &&
			 w[2].byte_len == 7 && !(w[2].flags & IBV_WC_WITH_IMM),
			 "SEND: wr_id 0x%llx status %s opcode %d byte_len %u wc_flags 0x%x (no IBV_WC_WITH_IMM)",
			 (unsigned long long)w[2].wr_id, ibv_wc_status_str(w[2].status), w[2].opcode,
			 w[2].byte_len, w[2].flags);
	}
	n = xpoll(scq, w, 3, 10);
	if (VT_EXPECT_EQ("send completions", 3, n))
		vt_check(w[0].wr_id == 0x20 && w[0].opcode == IBV_WC_SEND && w[1].wr_id == 0x21 &&
			 w[1].opcode == IBV_WC_RDMA_WRITE && w[2].wr_id == 0x22 && w[2].opcode == IBV_WC_SEND &&
			 w[0].qp_num == a.qp->qp_num && w[2].status == IBV_WC_SUCCESS,
			 "send completions: wr_ids 0x%llx 0x%llx 0x%llx, opcodes %d %d %d, qp_num 0x%x",
			 (unsigned long long)w[0].wr_id, (unsigned long long)w[1].wr_id,
			 (unsigned long long)w[2].wr_id, w[0].opcode, w[1].opcode, w[2].opcode, w[0].qp_num);

	cq_ex_ud(d, scq, rcq, &src, &dst);
	vt_qp_destroy(&a);
	vt_qp_destroy(&b);
	vt_buf_free(&src);
	vt_buf_free(&dst);
	ibv_destroy_cq(ibv_cq_ex_to_cq(scq));
	ibv_destroy_cq(ibv_cq_ex_to_cq(rcq));
}

/* ---- ibv_wr_* ------------------------------------------------------------ */

struct wrx {
	struct vt_qp a, b;
	struct vt_buf src, dst;
};

static void wrx_setup(struct vt_dev *d, struct wrx *x)
{
	struct vt_qp_opts ao = { .send_ops_flags = RC_OPS, .max_inline = 128, .mtu = IBV_MTU_1024 };
	struct vt_qp_opts bo = { .send_ops_flags = RC_OPS, .mtu = IBV_MTU_1024 };

	vt_rc_pair(d, &x->a, &ao, &x->b, &bo);
	vt_buf_init(&x->src, d, 16384, ALL, 1);
	vt_buf_init(&x->dst, d, 16384, ALL | IBV_ACCESS_MW_BIND, 2);
}

static void wrx_free(struct wrx *x)
{
	vt_qp_destroy(&x->a);
	vt_qp_destroy(&x->b);
	vt_buf_free(&x->src);
	vt_buf_free(&x->dst);
}

static bool wc_ok(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_opcode op, const char *what)
{
	struct ibv_wc wc;

	if (!vt_poll_one(cq, &wc, 10, what))
		return false;
	return vt_check(wc.status == IBV_WC_SUCCESS && wc.wr_id == wr_id && wc.opcode == op,
			"%s: status %s, wr_id 0x%llx (want 0x%llx), opcode %d (want %d)", what,
			ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id,
			(unsigned long long)wr_id, wc.opcode, op);
}

/* Starts a batch of ibv_wr_* on q whose next work request is wr_id,
 * signaled. */
static void wr_begin(struct ibv_qp_ex *q, uint64_t wr_id)
{
	ibv_wr_start(q);
	q->wr_id = wr_id;
	q->wr_flags = IBV_SEND_SIGNALED;
}

/* IBV_WR_BIND_MW of mw (new key rkey) over bi, signaled, posted on q: 0
 * or an errno value. */
static int post_bind(struct vt_qp *q, struct ibv_mw *mw, uint32_t rkey,
		     const struct ibv_mw_bind_info *bi, uint64_t wr_id)
{
	struct ibv_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = *bi;
	return vt_post_send(q, &wr);
}

/* SEND with one SGE, SEND with immediate from a list of SGEs. */
static void wr_api_sends(struct wrx *x)
{
	struct ibv_qp_ex *q = x->a.qpx;
	struct ibv_sge sl[3];
	struct ibv_wc wc;
	int ret;

	wr_begin(q, 1);
	ibv_wr_send(q);
	ibv_wr_set_sge(q, x->src.mr->lkey, (uintptr_t)x->src.p, 3000);
	q->wr_id = 2;
	ibv_wr_send_imm(q, htobe32(0x600d));
	sl[0] = vt_sge(&x->src, 100, 10);
	sl[1] = vt_sge(&x->src, 5000, 2000);
	sl[2] = vt_sge(&x->src, 9000, 90);
	ibv_wr_set_sge_list(q, 3, sl);
	ret = ibv_wr_complete(q);
	vt_check(!ret, "ibv_wr_complete of SEND + SEND with immediate: %s", strerror(ret));
	wc_ok(x->a.scq, 1, IBV_WC_SEND, "ibv_wr_send + ibv_wr_set_sge");
	wc_ok(x->a.scq, 2, IBV_WC_SEND, "ibv_wr_send_imm + ibv_wr_set_sge_list");
	if (vt_poll_one(x->b.rcq, &wc, 10, "receive of the ibv_wr_send"))
		vt_check(wc.status == IBV_WC_SUCCESS && wc.byte_len == 3000 && !memcmp(x->dst.p, x->src.p, 3000),
			 "ibv_wr_send: 3000 bytes arrived intact (status %s, byte_len %u)",
			 ibv_wc_status_str(wc.status), wc.byte_len);
	if (vt_poll_one(x->b.rcq, &wc, 10, "receive of the ibv_wr_send_imm"))
		vt_check(wc.status == IBV_WC_SUCCESS && wc.byte_len == 2100 && be32toh(wc.imm_data) == 0x600d &&
			 !memcmp(x->dst.p + 3000, x->src.p + 100, 10) &&
			 !memcmp(x->dst.p + 3010, x->src.p + 5000, 2000) &&
			 !memcmp(x->dst.p + 5010, x->src.p + 9000, 90),
			 "ibv_wr_send_imm: 3 SGEs gathered, immediate 0x%x (status %s, byte_len %u)",
			 be32toh(wc.imm_data), ibv_wc_status_str(wc.status), wc.byte_len);
}

/* Inline data: one buffer and a list, changed right after complete. */
static void wr_api_inline(struct wrx *x)
{
	struct ibv_qp_ex *q = x->a.qpx;
	struct ibv_data_buf db[2];
	struct ibv_wc wc;
	uint8_t inl[100];
	int ret;

	for (int i = 0; i < 100; i++)
		inl[i] = (uint8_t)(200 - i);
	ibv_wr_start(q);
	q->wr_id = 3;
	q->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	ibv_wr_send(q);
	ibv_wr_set_inline_data(q, inl, 100);
	q->wr_id = 4;
	ibv_wr_rdma_write(q, x->dst.mr->rkey, (uintptr_t)x->dst.p + 12000);
	db[0] = (struct ibv_data_buf){ inl, 30 };
	db[1] = (struct ibv_data_buf){ inl + 60, 40 };
	ibv_wr_set_inline_data_list(q, 2, db);
	ret = ibv_wr_complete(q);
	vt_check(!ret, "ibv_wr_complete of inline SEND + inline RDMA WRITE: %s", strerror(ret));
	{
		uint8_t keep[100];

		memcpy(keep, inl, 100);
		memset(inl, 0, 100);
		wc_ok(x->a.scq, 3, IBV_WC_SEND, "ibv_wr_set_inline_data");
		wc_ok(x->a.scq, 4, IBV_WC_RDMA_WRITE, "ibv_wr_rdma_write + ibv_wr_set_inline_data_list");
		if (vt_poll_one(x->b.rcq, &wc, 10, "receive of the inline SEND"))
			vt_check(wc.byte_len == 100 && !memcmp(x->dst.p, keep, 100),
				 "ibv_wr_set_inline_data: 100 bytes as they were at ibv_wr_complete");
		vt_check(!memcmp(x->dst.p + 12000, keep, 30) && !memcmp(x->dst.p + 12030, keep + 60, 40),
			 "ibv_wr_set_inline_data_list: the 2 pieces land one after the other");
	}
}

/* RDMA WRITE with immediate, READ, atomics in one batch. */
static void wr_api_rdma_and_atomics(struct wrx *x)
{
	struct ibv_qp_ex *q = x->a.qpx;
	struct ibv_wc wc;
	uint64_t before;
	int ret;

	memcpy(&before, x->dst.p + 16376, 8);
	wr_begin(q, 5);
	ibv_wr_rdma_write_imm(q, x->dst.mr->rkey, (uintptr_t)x->dst.p + 4096, htobe32(0x1111));
	ibv_wr_set_sge(q, x->src.mr->lkey, (uintptr_t)x->src.p + 4096, 4096);
	q->wr_id = 6;
	ibv_wr_rdma_read(q, x->dst.mr->rkey, (uintptr_t)x->dst.p + 8192);
	ibv_wr_set_sge(q, x->src.mr->lkey, (uintptr_t)x->src.p + 8192, 4096);
	q->wr_id = 7;
	ibv_wr_atomic_fetch_add(q, x->dst.mr->rkey, (uintptr_t)x->dst.p + 16376, 5);
	ibv_wr_set_sge(q, x->src.mr->lkey, (uintptr_t)x->src.p, 8);
	q->wr_id = 8;
	ibv_wr_atomic_cmp_swp(q, x->dst.mr->rkey, (uintptr_t)x->dst.p + 16376, before + 5, 42);
	ibv_wr_set_sge(q, x->src.mr->lkey, (uintptr_t)x->src.p + 8, 8);
	ret = ibv_wr_complete(q);
	vt_check(!ret, "ibv_wr_complete of WRITE with immediate + READ + 2 atomics: %s", strerror(ret));
	wc_ok(x->a.scq, 5, IBV_WC_RDMA_WRITE, "ibv_wr_rdma_write_imm");
	wc_ok(x->a.scq, 6, IBV_WC_RDMA_READ, "ibv_wr_rdma_read");
	wc_ok(x->a.scq, 7, IBV_WC_FETCH_ADD, "ibv_wr_atomic_fetch_add");
	wc_ok(x->a.scq, 8, IBV_WC_COMP_SWAP, "ibv_wr_atomic_cmp_swp");
	if (vt_poll_one(x->b.rcq, &wc, 10, "receive of the WRITE with immediate"))
		vt_check(wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM && be32toh(wc.imm_data) == 0x1111 &&
			 !memcmp(x->dst.p + 4096, x->src.p + 4096, 4096),
			 "ibv_wr_rdma_write_imm: data placed, immediate 0x%x", be32toh(wc.imm_data));
	vt_check(!memcmp(x->src.p + 8192, x->dst.p + 8192, 4096), "ibv_wr_rdma_read: 4096 bytes read");
	{
		uint64_t fa, cs, now;

		memcpy(&fa, x->src.p, 8);
		memcpy(&cs, x->src.p + 8, 8);
		memcpy(&now, x->dst.p + 16376, 8);
		vt_check(fa == before && cs == before + 5 && now == 42,
			 "atomics: fetch_add returned the original, cmp_swp saw it plus 5 and swapped in 42 "
			 "(0x%llx 0x%llx -> 0x%llx)", (unsigned long long)fa, (unsigned long long)cs,
			 (unsigned long long)now);
	}
}

/* ibv_wr_abort: nothing of the batch goes out, and the QP goes on. */
static void wr_api_abort(struct wrx *x)
{
	struct ibv_qp_ex *q = x->a.qpx;
	struct ibv_wc wc;
	int ret;

	wr_begin(q, 9);
	ibv_wr_send(q);
	ibv_wr_set_sge(q, x->src.mr->lkey, (uintptr_t)x->src.p, 64);
	ibv_wr_abort(q);
	vt_poll_none(x->a.scq, 0.1, "ibv_wr_abort: the sender");
	vt_poll_none(x->b.rcq, 0.01, "ibv_wr_abort: the receiver");
	/* ... and the QP goes on. */
	ibv_wr_start(q);
	q->wr_id = 10;
	ibv_wr_send(q);
	ibv_wr_set_sge(q, x->src.mr->lkey, (uintptr_t)x->src.p, 64);
	ret = ibv_wr_complete(q);
	vt_check(!ret, "ibv_wr_complete after an abort: %s", strerror(ret));
	wc_ok(x->a.scq, 10, IBV_WC_SEND, "a SEND after ibv_wr_abort");
	if (vt_poll_one(x->b.rcq, &wc, 10, "the receive after ibv_wr_abort"))
		VT_EXPECT_EQ("the receive after ibv_wr_abort: byte_len (of the second SEND)", 64, wc.byte_len);
}

static void case_wr_api(struct vt_dev *d)
{
	struct wrx x;
	struct ibv_sge r;

	wrx_setup(d, &x);
	r = vt_sge(&x.dst, 0, 3000);
	vt_post_recv(&x.b, 0x100, &r, 1);
	r = vt_sge(&x.dst, 3000, 2100);
	vt_post_recv(&x.b, 0x101, &r, 1);
	r = vt_sge(&x.dst, 0, 8192);
	for (int i = 2; i < 6; i++)
		vt_post_recv(&x.b, 0x100 + (uint64_t)i, &r, 1);

	wr_api_sends(&x);
	wr_api_inline(&x);
	wr_api_rdma_and_atomics(&x);
	wr_api_abort(&x);
	wrx_free(&x);
}

/* One ATOMIC WRITE of v to dst + off with rkey; its completion status. */
static enum ibv_wc_status atomic_write(struct wrx *x, size_t off, uint32_t rkey, uint64_t v)
{
	struct ibv_wc wc;
	int ret;

	wr_begin(x->a.qpx, 0xa7);
	ibv_wr_atomic_write(x->a.qpx, rkey, (uintptr_t)x->dst.p + off, &v);
	ret = ibv_wr_complete(x->a.qpx);
	if (!vt_check(!ret, "ibv_wr_complete of an ATOMIC WRITE: %s", strerror(ret)))
		return -1;
	if (!vt_poll_one(x->a.scq, &wc, 10, "the ATOMIC WRITE's completion"))
		return -1;
	if (wc.status == IBV_WC_SUCCESS)
		VT_EXPECT_EQ("its opcode (IBV_WC_ATOMIC_WRITE)", IBV_WC_ATOMIC_WRITE, wc.opcode);
	return wc.status;
}

static void case_atomic_write(struct vt_dev *d)
{
	uint64_t v = 0x0123456789abcdefull, seen;
	struct wrx x;
	struct vt_qp u;
	struct vt_qp_opts uo = { .type = IBV_QPT_UD, .send_ops_flags = IBV_QP_EX_WITH_SEND };
	int ret;

	wrx_setup(d, &x);
	VT_EXPECT_STATUS("ATOMIC WRITE to an aligned address", IBV_WC_SUCCESS,
			 atomic_write(&x, 64, x.dst.mr->rkey, v));
	memcpy(&seen, x.dst.p + 64, 8);
	VT_EXPECT_EQ("the 8 bytes landed", (long long)v, (long long)seen);
	vt_check(x.dst.p[63] == vt_pattern(2, VT_GUARD + 63) && x.dst.p[72] == vt_pattern(2, VT_GUARD + 72),
		 "and nothing beside them changed");
	vt_qp_destroy(&x.a);
	vt_qp_destroy(&x.b);
	{
		struct vt_qp_opts ao = { .send_ops_flags = RC_OPS, .mtu = IBV_MTU_1024 };

		vt_rc_pair(d, &x.a, &ao, &x.b, &ao);
	}
	vt_buf_fill(&x.dst, 2);
	VT_EXPECT_STATUS("ATOMIC WRITE to a misaligned address", IBV_WC_REM_INV_REQ_ERR,
			 atomic_write(&x, 68, x.dst.mr->rkey, v));
	vt_buf_unchanged(&x.dst, "the target after the misaligned ATOMIC WRITE");
	vt_qp_destroy(&x.a);
	vt_qp_destroy(&x.b);
	{
		struct vt_qp_opts ao = { .send_ops_flags = RC_OPS, .mtu = IBV_MTU_1024 };

		vt_rc_pair(d, &x.a, &ao, &x.b, &ao);
	}
	VT_EXPECT_STATUS("ATOMIC WRITE with a bad rkey", IBV_WC_REM_ACCESS_ERR,
			 atomic_write(&x, 64, x.dst.mr->rkey ^ 0x10000, v));
	vt_buf_unchanged(&x.dst, "the target after the bad-rkey ATOMIC WRITE");

	vt_qp_create(&u, d, &uo);
	ibv_wr_start(u.qpx);
	ibv_wr_atomic_write(u.qpx, x.dst.mr->rkey, (uintptr_t)x.dst.p, &v);
	ret = ibv_wr_complete(u.qpx);
	vt_check(ret == EINVAL, "ATOMIC WRITE on a UD QP: the batch fails with EINVAL (%s)",
		 strerror(ret));
	vt_qp_destroy(&u);
	wrx_free(&x);
}

static void case_wr_ud(struct vt_dev *d)
{
	struct vt_qp_opts o = { .type = IBV_QPT_UD, .send_ops_flags = IBV_QP_EX_WITH_SEND |
				IBV_QP_EX_WITH_SEND_WITH_IMM };
	struct vt_qp a, b;
	struct vt_buf src, dst;
	struct ibv_sge r;
	struct ibv_wc wc;
	struct ibv_ah *ah;
	int ret;

	vt_qp_create(&a, d, &o);
	vt_qp_create(&b, d, &o);
	vt_qp_connect(&a, &b);
	ah = vt_ah(d);
	vt_buf_init(&src, d, 4096, LW, 1);
	vt_buf_init(&dst, d, 4096, LW, 2);
	r = vt_sge(&dst, 0, 40 + 256);
	vt_post_recv(&b, 0x40, &r, 1);
	wr_begin(a.qpx, 0x41);
	ibv_wr_send_imm(a.qpx, htobe32(9));
	ibv_wr_set_ud_addr(a.qpx, ah, b.qp->qp_num, 0x11111111);
	ibv_wr_set_sge(a.qpx, src.mr->lkey, (uintptr_t)src.p, 256);
	ret = ibv_wr_complete(a.qpx);
	vt_check(!ret, "UD ibv_wr_complete: %s", strerror(ret));
	wc_ok(a.scq, 0x41, IBV_WC_SEND, "UD ibv_wr_send_imm + ibv_wr_set_ud_addr");
	if (vt_poll_one(b.rcq, &wc, 10, "UD receive"))
		vt_check(wc.status == IBV_WC_SUCCESS && wc.byte_len == 296 && wc.src_qp == a.qp->qp_num &&
			 be32toh(wc.imm_data) == 9 && !memcmp(dst.p + 40, src.p, 256),
			 "UD receive: status %s byte_len %u src_qp 0x%x imm %u, payload intact",
			 ibv_wc_status_str(wc.status), wc.byte_len, wc.src_qp, be32toh(wc.imm_data));
	ibv_destroy_ah(ah);
	vt_qp_destroy(&a);
	vt_qp_destroy(&b);
	vt_buf_free(&src);
	vt_buf_free(&dst);
}

/* ---- memory windows --------------------------------------------------------- */

/* An RDMA WRITE of 64 bytes at off through rkey: returns the status. */
static enum ibv_wc_status write_through(struct wrx *x, uint32_t rkey, size_t off, uint64_t wr_id)
{
	struct ibv_sge s = vt_sge(&x->src, 0, 64);
	struct ibv_send_wr wr = vt_wr(wr_id, IBV_WR_RDMA_WRITE, &s);
	struct ibv_wc wc;

	wr.wr.rdma.remote_addr = (uintptr_t)x->dst.p + off;
	wr.wr.rdma.rkey = rkey;
	if (vt_post_send(&x->a, &wr))
		return (enum ibv_wc_status)-1;
	if (vt_poll(x->a.scq, &wc, 1, 10) != 1)
		return (enum ibv_wc_status)-1;
	return wc.status;
}

static void mw_checks(struct vt_dev *d, struct wrx *x, uint32_t rkey, const char *what)
{
	enum ibv_wc_status s;

	s = write_through(x, rkey, 4096, 0x70);
	vt_check(s == IBV_WC_SUCCESS && !memcmp(x->dst.p + 4096, x->src.p, 64),
		 "%s: RDMA WRITE inside the window: %s, data placed", what,
		 (int)s == -1 ? "no completion" : ibv_wc_status_str(s));
	vt_buf_fill(&x->dst, 9);
	s = write_through(x, rkey, 8192 - 32, 0x71);
	vt_check(s == IBV_WC_REM_ACCESS_ERR, "%s: RDMA WRITE straddling the window's end: %s (want %s)",
		 what, (int)s == -1 ? "no completion" : ibv_wc_status_str(s),
		 ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
	vt_sleep(0.05);
	vt_buf_unchanged(&x->dst, "the region under the window");
}

/* Binds a type 2 window over [4096, 8192) of the responder's region,
 * posted on the responder's QP (a type 2 window belongs to the QP that
 * bound it: remote access comes in on that QP). */
static bool bind_type2(struct wrx *x, struct ibv_mw *mw, uint32_t rkey, bool wr_api, uint64_t wr_id)
{
	struct ibv_mw_bind_info bi = { .mr = x->dst.mr, .addr = (uintptr_t)x->dst.p + 4096,
				       .length = 4096, .mw_access_flags = IBV_ACCESS_REMOTE_WRITE };
	int ret;

	if (wr_api) {
		wr_begin(x->b.qpx, wr_id);
		ibv_wr_bind_mw(x->b.qpx, mw, rkey, &bi);
		ret = ibv_wr_complete(x->b.qpx);
	} else {
		ret = post_bind(&x->b, mw, rkey, &bi, wr_id);
	}
	if (!vt_check(!ret, "%s: %s", wr_api ? "ibv_wr_bind_mw" : "IBV_WR_BIND_MW posted", strerror(ret)))
		return false;
	return wc_ok(x->b.scq, wr_id, IBV_WC_BIND_MW, wr_api ? "type 2 bind through ibv_wr_bind_mw" :
		     "type 2 bind through IBV_WR_BIND_MW");
}

static void case_mw(struct vt_dev *d)
{
	struct wrx x;
	struct ibv_mw *mw;
	struct ibv_mw_bind bind;
	uint32_t rkey;
	int ret;

	vt_check(d->attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW,
		 "the device advertises memory windows (IBV_DEVICE_MEM_WINDOW)");

	/* Type 1: ibv_bind_mw, window [4096, 8192) of the region. */
	wrx_setup(d, &x);
	mw = ibv_alloc_mw(d->pd, IBV_MW_TYPE_1);
	if (vt_check(mw != NULL, "ibv_alloc_mw(type 1): %s", mw ? "ok" : strerror(errno))) {
		bind = (struct ibv_mw_bind){ .wr_id = 0x60, .send_flags = IBV_SEND_SIGNALED };
		bind.bind_info.mr = x.dst.mr;
		bind.bind_info.addr = (uintptr_t)x.dst.p + 4096;
		bind.bind_info.length = 4096;
		bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
		ret = ibv_bind_mw(x.b.qp, mw, &bind);
		if (vt_check(!ret, "ibv_bind_mw: %s", strerror(ret)) &&
		    wc_ok(x.b.scq, 0x60, IBV_WC_BIND_MW, "type 1 bind"))
			mw_checks(d, &x, mw->rkey, "type 1 window");
		ret = ibv_dealloc_mw(mw);
		vt_check(!ret, "ibv_dealloc_mw(type 1): %s", strerror(ret));
	}
	wrx_free(&x);

	/* Type 2 through IBV_WR_BIND_MW. */
	wrx_setup(d, &x);
	mw = ibv_alloc_mw(d->pd, IBV_MW_TYPE_2);
	if (vt_check(mw != NULL, "ibv_alloc_mw(type 2): %s", mw ? "ok" : strerror(errno))) {
		rkey = ibv_inc_rkey(mw->rkey);
		if (bind_type2(&x, mw, rkey, false, 0x61))
			mw_checks(d, &x, rkey, "type 2 window");
		ret = ibv_dealloc_mw(mw);
		vt_check(!ret, "ibv_dealloc_mw(type 2): %s", strerror(ret));
	}
	wrx_free(&x);

	/* Type 2 through ibv_wr_bind_mw, then LOCAL_INV. */
	wrx_setup(d, &x);
	mw = ibv_alloc_mw(d->pd, IBV_MW_TYPE_2);
	if (vt_check(mw != NULL, "ibv_alloc_mw(type 2): %s", mw ? "ok" : strerror(errno))) {
		rkey = ibv_inc_rkey(mw->rkey);
		if (bind_type2(&x, mw, rkey, true, 0x62)) {
			vt_check(write_through(&x, rkey, 4096, 0x63) == IBV_WC_SUCCESS,
				 "RDMA WRITE through the window bound by ibv_wr_bind_mw");
			wr_begin(x.b.qpx, 0x64);
			ibv_wr_local_inv(x.b.qpx, rkey);
			ret = ibv_wr_complete(x.b.qpx);
			vt_check(!ret, "ibv_wr_local_inv: %s", strerror(ret));
			wc_ok(x.b.scq, 0x64, IBV_WC_LOCAL_INV, "LOCAL_INV of the window");
			vt_buf_fill(&x.dst, 11);
			vt_check(write_through(&x, rkey, 4096, 0x65) == IBV_WC_REM_ACCESS_ERR,
				 "RDMA WRITE through an invalidated window: remote access error");
			vt_sleep(0.05);
			vt_buf_unchanged(&x.dst, "the region under the invalidated window");
		}
		ret = ibv_dealloc_mw(mw);
		vt_check(!ret, "ibv_dealloc_mw(type 2): %s", strerror(ret));
	}
	wrx_free(&x);
}

/* SEND with invalidate: the receiver's window dies, the completion says so. */
static void case_send_inv(struct vt_dev *d)
{
	struct wrx x;
	struct ibv_mw *mw;
	struct ibv_mw_bind_info bi;
	struct ibv_sge r;
	struct ibv_wc wc;
	uint32_t rkey;
	int ret;

	wrx_setup(d, &x);
	bi = (struct ibv_mw_bind_info){ .mr = x.dst.mr, .addr = (uintptr_t)x.dst.p, .length = 4096,
					.mw_access_flags = IBV_ACCESS_REMOTE_WRITE };
	mw = ibv_alloc_mw(d->pd, IBV_MW_TYPE_2);
	if (!vt_check(mw != NULL, "ibv_alloc_mw(type 2): %s", mw ? "ok" : strerror(errno))) {
		wrx_free(&x);
		return;
	}
	/* The receiver (b) binds a window on its region; a invalidates it. */
	rkey = ibv_inc_rkey(mw->rkey);
	post_bind(&x.b, mw, rkey, &bi, 0x80);
	wc_ok(x.b.scq, 0x80, IBV_WC_BIND_MW, "the receiver binds a type 2 window");
	r = vt_sge(&x.dst, 8192, 4096);
	vt_post_recv(&x.b, 0x81, &r, 1);
	wr_begin(x.a.qpx, 0x82);
	ibv_wr_send_inv(x.a.qpx, rkey);
	ibv_wr_set_sge(x.a.qpx, x.src.mr->lkey, (uintptr_t)x.src.p, 32);
	ret = ibv_wr_complete(x.a.qpx);
	vt_check(!ret, "ibv_wr_send_inv: %s", strerror(ret));
	wc_ok(x.a.scq, 0x82, IBV_WC_SEND, "SEND with invalidate");
	if (vt_poll_one(x.b.rcq, &wc, 10, "receive of the SEND with invalidate"))
		vt_check(wc.status == IBV_WC_SUCCESS && (wc.wc_flags & IBV_WC_WITH_INV) &&
			 wc.invalidated_rkey == rkey,
			 "receive of the SEND with invalidate: status %s, IBV_WC_WITH_INV %s, "
			 "invalidated_rkey 0x%x (want 0x%x)", ibv_wc_status_str(wc.status),
			 wc.wc_flags & IBV_WC_WITH_INV ? "set" : "missing", wc.invalidated_rkey, rkey);
	vt_buf_fill(&x.dst, 12);
	vt_check(write_through(&x, rkey, 0, 0x83) == IBV_WC_REM_ACCESS_ERR,
		 "RDMA WRITE through the remotely invalidated window: remote access error");
	vt_sleep(0.05);
	vt_buf_unchanged(&x.dst, "the region under the remotely invalidated window");
	ret = ibv_dealloc_mw(mw);
		vt_check(!ret, "ibv_dealloc_mw: %s", strerror(ret));
	wrx_free(&x);
}

static const struct vt_case cases[] = {
	{ "cq_ex", case_cq_ex },
	{ "wr_api", case_wr_api },
	{ "wr_ud", case_wr_ud },
	{ "mw", case_mw },
	{ "send_inv", case_send_inv },
	{ "atomic_write", case_atomic_write },
	{ NULL, NULL },
};

VT_MAIN(cases)
