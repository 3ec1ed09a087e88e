/* The data path through ibv_post_send / ibv_post_recv / ibv_poll_cq:
 *  - inline data: SEND and RDMA WRITE from unregistered memory (lkey 0),
 *    the source overwritten right after posting; inline larger than the
 *    QP's max_inline_data is refused at post time;
 *  - several SGEs: gathers of 3 pieces from 2 regions scattered into 4
 *    receive SGEs of other sizes, over 1 KiB packets; RDMA WRITE gathering
 *    and READ scattering; nothing written outside the SGEs;
 *  - unsignaled WRs: with sq_sig_all 0 only the signaled ones complete;
 *    with sq_sig_all 1 every one does;
 *  - completion fields: opcode, byte_len, wc_flags, imm_data (SEND and
 *    WRITE with immediate), qp_num, for every opcode; zero-length SEND,
 *    WRITE with immediate and READ; a 1 MiB SEND in 1 KiB packets;
 *  - an SRQ shared by two QPs: each completion names the QP it came in on;
 *  - UD: a GRH before the payload, src_qp and IBV_WC_GRH, byte_len = 40 +
 *    payload, the L3 type in sl (2 IPv4, 1 IPv6, as mlx5 reports it).
 *
 *   datapath DEVICE GID_INDEX [CASE...]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt.h"

#define LW IBV_ACCESS_LOCAL_WRITE
#define ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
	     IBV_ACCESS_REMOTE_ATOMIC)

/* Bytes of b outside [p+off, p+off+len) ranges that changed. */
static size_t changed_outside(const struct vt_buf *b, const size_t *off, const size_t *len, int n)
{
	size_t c = 0;

	for (size_t i = 0; i < b->len + 2 * VT_GUARD; i++) {
		bool in = false;

		for (int k = 0; k < n; k++)
			in |= i >= VT_GUARD + off[k] && i < VT_GUARD + off[k] + len[k];
		if (!in)
			c += b->base[i] != vt_pattern(b->seed, i);
	}
	return c;
}

static void case_inline(struct vt_dev *d)
{
	struct vt_qp a, b;
	struct vt_qp_opts o = { .max_inline = 256 };
	struct vt_buf dst;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	uint8_t *src = malloc(4096), expect[256];
	struct ibv_sge s, r;
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_wc wc;
	int ret;

	vt_rc_pair(d, &a, &o, &b, NULL);
	ibv_query_qp(a.qp, &qa, IBV_QP_CAP, &qia);
	vt_check(qia.cap.max_inline_data >= 256, "max_inline_data granted: %u (asked 256)",
		 qia.cap.max_inline_data);
	vt_buf_init(&dst, d, 4096, ALL, 3);
	for (int i = 0; i < 256; i++)
		src[i] = expect[i] = (uint8_t)(i * 3 + 1);

	/* SEND: unregistered source, lkey 0, overwritten after posting. */
	r = vt_sge(&dst, 0, 1024);
	vt_post_recv(&b, 1, &r, 1);
	s = (struct ibv_sge){ .addr = (uintptr_t)src, .length = 200, .lkey = 0 };
	wr = vt_wr(2, IBV_WR_SEND, &s);
	wr.send_flags |= IBV_SEND_INLINE;
	ret = vt_post_send(&a, &wr);
	memset(src, 0xee, 256);
	vt_check(!ret, "inline SEND of 200 bytes from unregistered memory: posted (%s)", strerror(ret));
	if (vt_poll_one(a.scq, &wc, 10, "inline SEND"))
		VT_EXPECT_STATUS("inline SEND, sender", IBV_WC_SUCCESS, wc.status);
	if (vt_poll_one(b.rcq, &wc, 10, "inline SEND, receiver")) {
		VT_EXPECT_STATUS("inline SEND, receiver", IBV_WC_SUCCESS, wc.status);
		VT_EXPECT_EQ("inline SEND, byte_len", 200, wc.byte_len);
	}
	vt_check(!memcmp(dst.p, expect, 200),
		 "inline SEND: the receiver got the bytes as they were at posting time");

	/* RDMA WRITE inline. */
	for (int i = 0; i < 256; i++)
		src[i] = expect[i] = (uint8_t)(i * 5 + 7);
	s = (struct ibv_sge){ .addr = (uintptr_t)src, .length = 256, .lkey = 0 };
	wr = vt_wr(3, IBV_WR_RDMA_WRITE, &s);
	wr.send_flags |= IBV_SEND_INLINE;
	wr.wr.rdma.remote_addr = (uintptr_t)dst.p + 2048;
	wr.wr.rdma.rkey = dst.mr->rkey;
	ret = vt_post_send(&a, &wr);
	memset(src, 0xdd, 256);
	vt_check(!ret, "inline RDMA WRITE of 256 bytes: posted (%s)", strerror(ret));
	if (vt_poll_one(a.scq, &wc, 10, "inline RDMA WRITE"))
		VT_EXPECT_STATUS("inline RDMA WRITE", IBV_WC_SUCCESS, wc.status);
	vt_check(!memcmp(dst.p + 2048, expect, 256), "inline RDMA WRITE: the target holds the bytes");

	/* An empty SGE with address 0 among the inline ones (UCX posts its
	 * header and an empty payload so): nothing read from it. */
	{
		struct ibv_sge two[2] = {
			{ .addr = (uintptr_t)src, .length = 64, .lkey = 0 },
			{ .addr = 0, .length = 0, .lkey = 0 },
		};

		for (int i = 0; i < 64; i++)
			src[i] = expect[i] = (uint8_t)(i * 11 + 5);
		r = vt_sge(&dst, 0, 1024);
		vt_post_recv(&b, 5, &r, 1);
		wr = vt_wr(6, IBV_WR_SEND, &two[0]);
		wr.num_sge = 2;
		wr.send_flags |= IBV_SEND_INLINE;
		ret = vt_post_send(&a, &wr);
		vt_check(!ret, "inline SEND of 64 bytes + an empty SGE at address 0: posted (%s)",
			 strerror(ret));
		if (vt_poll_one(a.scq, &wc, 10, "inline SEND with an empty SGE"))
			VT_EXPECT_STATUS("inline SEND with an empty SGE", IBV_WC_SUCCESS, wc.status);
		if (vt_poll_one(b.rcq, &wc, 10, "inline SEND with an empty SGE, receiver"))
			VT_EXPECT_EQ("inline SEND with an empty SGE, byte_len", 64, wc.byte_len);
		vt_check(!memcmp(dst.p, expect, 64), "inline SEND with an empty SGE: the bytes arrived");
	}

	/* Too long for the QP's inline room: refused at post time. */
	s = (struct ibv_sge){ .addr = (uintptr_t)src, .length = qia.cap.max_inline_data + 1, .lkey = 0 };
	wr = vt_wr(4, IBV_WR_SEND, &s);
	wr.send_flags |= IBV_SEND_INLINE;
	ret = ibv_post_send(a.qp, &wr, &bad);
	vt_check(ret != 0 && bad == &wr, "inline SEND of max_inline_data + 1 (%u) bytes: refused "
		 "(returned %d %s, bad_wr %s)", qia.cap.max_inline_data + 1, ret, strerror(ret),
		 bad == &wr ? "is the WR" : "not set");
	vt_poll_none(a.scq, 0.05, "the refused inline SEND");
	vt_qp_destroy(&a);
	vt_qp_destroy(&b);
	vt_buf_free(&dst);
	free(src);
}

static void case_sges(struct vt_dev *d)
{
	struct vt_qp a, b;
	struct vt_qp_opts o = { .mtu = IBV_MTU_1024, .max_sge = 4 };
	struct vt_buf s1, s2, dst, rd;
	struct ibv_sge ss[3], rs[4];
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	uint8_t *want = malloc(8100);
	size_t roff[4] = { 0, 5000, 6000, 9000 }, rlen[4] = { 4000, 1, 2000, 4096 }, got = 0;
	size_t woff[3] = { 100, 7000, 11000 }, wlen[3] = { 100, 3000, 5000 };

	vt_rc_pair(d, &a, &o, &b, &o);
	vt_buf_init(&s1, d, 8192, LW, 1);
	vt_buf_init(&s2, d, 8192, LW, 2);
	vt_buf_init(&dst, d, 16384, ALL, 3);
	/* 100 bytes of s1 at 10, 3000 of s2 at 50, 5000 of s1 at 3000. */
	ss[0] = vt_sge(&s1, 10, 100);
	ss[1] = vt_sge(&s2, 50, 3000);
	ss[2] = vt_sge(&s1, 3000, 5000);
	memcpy(want, s1.p + 10, 100);
	memcpy(want + 100, s2.p + 50, 3000);
	memcpy(want + 3100, s1.p + 3000, 5000);
	for (int i = 0; i < 4; i++)
		rs[i] = vt_sge(&dst, roff[i], (uint32_t)rlen[i]);
	vt_post_recv(&b, 0x10, rs, 4);
	wr = vt_wr(0x11, IBV_WR_SEND, ss);
	wr.num_sge = 3;
	vt_post_send(&a, &wr);
	if (vt_poll_one(a.scq, &wc, 10, "3-SGE SEND"))
		VT_EXPECT_STATUS("3-SGE SEND", IBV_WC_SUCCESS, wc.status);
	if (vt_poll_one(b.rcq, &wc, 10, "4-SGE receive")) {
		VT_EXPECT_STATUS("4-SGE receive", IBV_WC_SUCCESS, wc.status);
		VT_EXPECT_EQ("4-SGE receive: byte_len", 8100, wc.byte_len);
	}
	for (int i = 0; i < 4 && got < 8100; i++) {
		size_t n = rlen[i] < 8100 - got ? rlen[i] : 8100 - got;

		if (memcmp(dst.p + roff[i], want + got, n))
			vt_fail("4-SGE receive: SGE %d (%zu bytes at %zu) holds the wrong bytes", i, n, roff[i]);
		got += n;
	}
	vt_check(got == 8100, "4-SGE receive: the 8100 bytes gathered from 3 SGEs are in place");
	{
		size_t used[4] = { 4000, 1, 2000, 8100 - 6001 };

		VT_EXPECT_EQ("4-SGE receive: bytes changed outside the used parts of the SGEs", 0,
			     changed_outside(&dst, roff, used, 4));
	}

	/* RDMA WRITE gathering the same 3 SGEs to one place. */
	vt_buf_fill(&dst, 4);
	wr = vt_wr(0x12, IBV_WR_RDMA_WRITE, ss);
	wr.num_sge = 3;
	wr.wr.rdma.remote_addr = (uintptr_t)dst.p + 1000;
	wr.wr.rdma.rkey = dst.mr->rkey;
	vt_post_send(&a, &wr);
	if (vt_poll_one(a.scq, &wc, 10, "3-SGE RDMA WRITE"))
		VT_EXPECT_STATUS("3-SGE RDMA WRITE", IBV_WC_SUCCESS, wc.status);
	vt_check(!memcmp(dst.p + 1000, want, 8100), "3-SGE RDMA WRITE: the target holds the gathered bytes");
	{
		size_t o1 = 1000, l1 = 8100;

		VT_EXPECT_EQ("3-SGE RDMA WRITE: bytes changed outside the target range", 0,
			     changed_outside(&dst, &o1, &l1, 1));
	}

	/* RDMA READ scattering 8100 bytes into 3 SGEs of rd. */
	vt_buf_init(&rd, d, 16384, LW, 5);
	for (int i = 0; i < 3; i++)
		ss[i] = vt_sge(&rd, woff[i], (uint32_t)wlen[i]);
	wr = vt_wr(0x13, IBV_WR_RDMA_READ, ss);
	wr.num_sge = 3;
	wr.wr.rdma.remote_addr = (uintptr_t)dst.p + 1000;
	wr.wr.rdma.rkey = dst.mr->rkey;
	vt_post_send(&a, &wr);
	if (vt_poll_one(a.scq, &wc, 10, "3-SGE RDMA READ"))
		VT_EXPECT_STATUS("3-SGE RDMA READ", IBV_WC_SUCCESS, wc.status);
	vt_check(!memcmp(rd.p + 100, want, 100) && !memcmp(rd.p + 7000, want + 100, 3000) &&
		 !memcmp(rd.p + 11000, want + 3100, 5000),
		 "3-SGE RDMA READ: each SGE holds its part of the source");
	VT_EXPECT_EQ("3-SGE RDMA READ: bytes changed outside the SGEs", 0,
		     changed_outside(&rd, woff, wlen, 3));
	vt_qp_destroy(&a);
	vt_qp_destroy(&b);
	vt_buf_free(&s1);
	vt_buf_free(&s2);
	vt_buf_free(&dst);
	vt_buf_free(&rd);
	free(want);
}

static void unsignaled(struct vt_dev *d, int sig_all)
{
	struct vt_qp a, b;
	struct vt_qp_opts o = { .sq_sig_all = sig_all };
	struct vt_buf buf;
	struct ibv_sge s, r;
	struct ibv_send_wr wr;
	struct ibv_wc wc[32];
	int n;

	vt_rc_pair(d, &a, &o, &b, NULL);
	vt_buf_init(&buf, d, 4096, LW, 1);
	/* Received into [0, 64), sent from [1024, 1088): sending from where
	 * a receive lands would race with it. */
	r = vt_sge(&buf, 0, 64);
	s = vt_sge(&buf, 1024, 64);
	for (int i = 0; i < 20; i++)
		vt_post_recv(&b, 100 + (uint64_t)i, &r, 1);
	for (int i = 1; i <= 20; i++) {
		wr = vt_wr((uint64_t)i, IBV_WR_SEND, &s);
		wr.send_flags = (i % 10 == 0) ? IBV_SEND_SIGNALED : 0;
		vt_post_send(&a, &wr);
	}
	n = vt_poll(b.rcq, wc, 20, 10);
	VT_EXPECT_EQ("receives completed", 20, n);
	if (sig_all) {
		n = vt_poll(a.scq, wc, 20, 10);
		VT_EXPECT_EQ("sq_sig_all 1: send completions for 20 sends, 2 flagged signaled", 20, n);
		for (int i = 0; i < n; i++)
			if (wc[i].wr_id != (uint64_t)i + 1 || wc[i].status != IBV_WC_SUCCESS)
				vt_fail("sq_sig_all 1: completion %d: wr_id %llu status %s", i,
					(unsigned long long)wc[i].wr_id, ibv_wc_status_str(wc[i].status));
	} else {
		n = vt_poll(a.scq, wc, 2, 10);
		VT_EXPECT_EQ("sq_sig_all 0: send completions for 20 sends, 2 signaled", 2, n);
		if (n == 2)
			vt_check(wc[0].wr_id == 10 && wc[1].wr_id == 20,
				 "sq_sig_all 0: the completions are the signaled WRs (wr_id %llu, %llu)",
				 (unsigned long long)wc[0].wr_id, (unsigned long long)wc[1].wr_id);
		vt_poll_none(a.scq, 0.1, "sq_sig_all 0: after the signaled ones");
	}
	vt_qp_destroy(&a);
	vt_qp_destroy(&b);
	vt_buf_free(&buf);
}

static void case_unsignaled(struct vt_dev *d)
{
	unsignaled(d, 0);
	unsignaled(d, 1);
}

/* One operation of each opcode, with the fields of both completions. */
static void case_completions(struct vt_dev *d)
{
	struct vt_qp a, b;
	struct vt_qp_opts o = { .mtu = IBV_MTU_1024 };
	struct vt_buf src, dst;
	struct ibv_sge s, r;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	struct {
		const char *what;
		enum ibv_wr_opcode op;
		uint32_t len;
		enum ibv_wc_opcode sop;
		int rop;                  /* receive opcode, -1 if none */
	} t[] = {
		{ "SEND", IBV_WR_SEND, 3000, IBV_WC_SEND, IBV_WC_RECV },
		{ "SEND with immediate", IBV_WR_SEND_WITH_IMM, 100, IBV_WC_SEND, IBV_WC_RECV },
		{ "zero-length SEND", IBV_WR_SEND, 0, IBV_WC_SEND, IBV_WC_RECV },
		{ "zero-length SEND with immediate", IBV_WR_SEND_WITH_IMM, 0, IBV_WC_SEND, IBV_WC_RECV },
		{ "RDMA WRITE", IBV_WR_RDMA_WRITE, 5000, IBV_WC_RDMA_WRITE, -1 },
		{ "RDMA WRITE with immediate", IBV_WR_RDMA_WRITE_WITH_IMM, 5000, IBV_WC_RDMA_WRITE,
		  IBV_WC_RECV_RDMA_WITH_IMM },
		{ "zero-length RDMA WRITE with immediate", IBV_WR_RDMA_WRITE_WITH_IMM, 0,
		  IBV_WC_RDMA_WRITE, IBV_WC_RECV_RDMA_WITH_IMM },
		{ "RDMA READ", IBV_WR_RDMA_READ, 5000, IBV_WC_RDMA_READ, -1 },
		{ "zero-length RDMA READ", IBV_WR_RDMA_READ, 0, IBV_WC_RDMA_READ, -1 },
		{ "CMP_AND_SWP", IBV_WR_ATOMIC_CMP_AND_SWP, 8, IBV_WC_COMP_SWAP, -1 },
		{ "FETCH_AND_ADD", IBV_WR_ATOMIC_FETCH_AND_ADD, 8, IBV_WC_FETCH_ADD, -1 },
		{ "SEND of 1 MiB in 1 KiB packets", IBV_WR_SEND, 1 << 20, IBV_WC_SEND, IBV_WC_RECV },
	};
	char w[160];

	vt_rc_pair(d, &a, &o, &b, &o);
	vt_buf_init(&src, d, 1 << 20, ALL, 1);
	vt_buf_init(&dst, d, 1 << 20, ALL, 2);
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		bool atomic = t[i].op == IBV_WR_ATOMIC_CMP_AND_SWP || t[i].op == IBV_WR_ATOMIC_FETCH_AND_ADD;
		uint32_t imm = 0xc0de0000u + i;

		vt_buf_fill(&src, (uint8_t)(10 + i));
		vt_buf_fill(&dst, (uint8_t)(50 + i));
		r = vt_sge(&dst, 0, t[i].len ? t[i].len : 16);
		if (t[i].rop >= 0)
			vt_post_recv(&b, 0x500 + i, &r, t[i].op == IBV_WR_RDMA_WRITE_WITH_IMM ? 0 : 1);
		s = vt_sge(&src, 0, t[i].len);
		wr = vt_wr(0x400 + i, t[i].op, t[i].len || atomic ? &s : NULL);
		wr.imm_data = htobe32(imm);
		if (atomic) {
			wr.wr.atomic.remote_addr = (uintptr_t)dst.p;
			wr.wr.atomic.rkey = dst.mr->rkey;
			memcpy(&wr.wr.atomic.compare_add, dst.p, 8);
			wr.wr.atomic.swap = 7;
		} else {
			wr.wr.rdma.remote_addr = (uintptr_t)dst.p;
			wr.wr.rdma.rkey = dst.mr->rkey;
		}
		vt_post_send(&a, &wr);
		snprintf(w, sizeof(w), "%s: sender's completion", t[i].what);
		if (vt_poll_one(a.scq, &wc, 20, w)) {
			vt_check(wc.status == IBV_WC_SUCCESS && wc.wr_id == 0x400 + i && wc.opcode == t[i].sop &&
				 wc.qp_num == a.qp->qp_num,
				 "%s: status %s (want success), wr_id 0x%llx (want 0x%x), opcode %d (want %d), "
				 "qp_num 0x%x (want 0x%x)", w, ibv_wc_status_str(wc.status),
				 (unsigned long long)wc.wr_id, 0x400 + i, wc.opcode, t[i].sop, wc.qp_num,
				 a.qp->qp_num);
		}
		if (t[i].rop >= 0) {
			bool imm_expected = t[i].op != IBV_WR_SEND;

			snprintf(w, sizeof(w), "%s: receiver's completion", t[i].what);
			if (vt_poll_one(b.rcq, &wc, 20, w))
				vt_check(wc.status == IBV_WC_SUCCESS && wc.wr_id == 0x500 + i &&
					 (int)wc.opcode == t[i].rop && wc.byte_len == t[i].len &&
					 wc.qp_num == b.qp->qp_num &&
					 !!(wc.wc_flags & IBV_WC_WITH_IMM) == imm_expected &&
					 (!imm_expected || be32toh(wc.imm_data) == imm),
					 "%s: status %s, wr_id 0x%llx (want 0x%x), opcode %d (want %d), byte_len %u "
					 "(want %u), qp_num 0x%x (want 0x%x), wc_flags 0x%x (IBV_WC_WITH_IMM %s), "
					 "imm 0x%x (want 0x%x)", w, ibv_wc_status_str(wc.status),
					 (unsigned long long)wc.wr_id, 0x500 + i, wc.opcode, t[i].rop, wc.byte_len,
					 t[i].len, wc.qp_num, b.qp->qp_num, wc.wc_flags,
					 imm_expected ? "wanted" : "not wanted", be32toh(wc.imm_data),
					 imm_expected ? imm : 0);
		} else {
			snprintf(w, sizeof(w), "%s: receiver (no receive consumed)", t[i].what);
			vt_poll_none(b.rcq, 0.01, w);
		}
		if (t[i].len && !atomic) {
			const uint8_t *from = t[i].op == IBV_WR_RDMA_READ ? dst.p : src.p;
			const uint8_t *to = t[i].op == IBV_WR_RDMA_READ ? src.p : dst.p;

			vt_check(!memcmp(from, to, t[i].len), "%s: the %u bytes arrived intact", t[i].what,
				 t[i].len);
		}
	}
	vt_qp_destroy(&a);
	vt_qp_destroy(&b);
	vt_buf_free(&src);
	vt_buf_free(&dst);
}

static void case_srq(struct vt_dev *d)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(d->pd, &sa);
	struct ibv_cq *rcq = ibv_create_cq(d->ctx, 64, NULL, NULL, 0);
	struct vt_qp a1, b1, a2, b2;
	struct vt_qp_opts bo = { .srq = srq, .recv_cq = rcq };
	struct vt_buf buf;
	struct ibv_sge s;
	struct ibv_send_wr wr;
	struct ibv_wc wc[4];
	int n, from1 = 0, from2 = 0;

	if (!vt_check(srq && rcq, "ibv_create_srq / ibv_create_cq: %s", srq && rcq ? "ok" : strerror(errno)))
		return;
	vt_qp_create(&a1, d, NULL);
	vt_qp_create(&b1, d, &bo);
	vt_qp_create(&a2, d, NULL);
	vt_qp_create(&b2, d, &bo);
	if (vt_qp_connect(&a1, &b1) || vt_qp_connect(&a2, &b2)) {
		vt_fail("connecting QPs with an SRQ: %s", strerror(errno));
		return;
	}
	/* Four receive buffers of 1 KiB, and the SENDs' source after them
	 * (sending from a receive buffer would race with the receive). */
	vt_buf_init(&buf, d, 5 * 1024, LW, 1);
	for (int i = 0; i < 4; i++) {
		s = vt_sge(&buf, 1024 * (size_t)i, 1024);
		vt_post_recv(&b1, 0x60 + (uint64_t)i, &s, 1);   /* into the SRQ */
	}
	s = vt_sge(&buf, 4096, 16);
	for (int i = 0; i < 2; i++) {
		wr = vt_wr(1, IBV_WR_SEND, &s);
		vt_post_send(&a1, &wr);
		vt_post_send(&a2, &wr);
	}
	n = vt_poll(rcq, wc, 4, 10);
	VT_EXPECT_EQ("SRQ: receives completed for 2 SENDs on each of 2 QPs", 4, n);
	for (int i = 0; i < n; i++) {
		from1 += wc[i].qp_num == b1.qp->qp_num;
		from2 += wc[i].qp_num == b2.qp->qp_num;
	}
	vt_check(from1 == 2 && from2 == 2, "SRQ: completions name the QP each SEND came in on "
		 "(%d on 0x%x, %d on 0x%x)", from1, b1.qp->qp_num, from2, b2.qp->qp_num);
	vt_qp_destroy(&a1);
	vt_qp_destroy(&b1);
	vt_qp_destroy(&a2);
	vt_qp_destroy(&b2);
	vt_buf_free(&buf);
	ibv_destroy_srq(srq);
	ibv_destroy_cq(rcq);
}

static void case_ud(struct vt_dev *d)
{
	struct vt_qp a, b;
	struct vt_qp_opts o = { .type = IBV_QPT_UD };
	struct ibv_ah *ah;
	struct vt_buf src, dst;
	struct ibv_sge s, r;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	uint32_t len = 512;

	vt_qp_create(&a, d, &o);
	vt_qp_create(&b, d, &o);
	if (vt_qp_connect(&a, &b)) {
		vt_fail("UD QPs to RTS: %s", strerror(errno));
		return;
	}
	ah = vt_ah(d);
	vt_buf_init(&src, d, 4096, LW, 1);
	vt_buf_init(&dst, d, 4096, LW, 2);
	r = vt_sge(&dst, 0, 40 + len);
	vt_post_recv(&b, 0x70, &r, 1);
	s = vt_sge(&src, 0, len);
	wr = vt_wr(0x71, IBV_WR_SEND_WITH_IMM, &s);
	wr.imm_data = htobe32(0xfeed);
	vt_wr_ud(&wr, ah, b.qp->qp_num, 0x11111111);
	vt_post_send(&a, &wr);
	if (vt_poll_one(a.scq, &wc, 10, "UD SEND"))
		VT_EXPECT_STATUS("UD SEND", IBV_WC_SUCCESS, wc.status);
	if (vt_poll_one(b.rcq, &wc, 10, "UD receive")) {
		VT_EXPECT_STATUS("UD receive", IBV_WC_SUCCESS, wc.status);
		VT_EXPECT_EQ("UD receive: byte_len (40-byte GRH + payload)", 40 + len, wc.byte_len);
		VT_EXPECT_EQ("UD receive: src_qp", a.qp->qp_num, wc.src_qp);
		VT_EXPECT_EQ("UD receive: qp_num", b.qp->qp_num, wc.qp_num);
		vt_check(wc.wc_flags & IBV_WC_GRH, "UD receive: IBV_WC_GRH set (wc_flags 0x%x)", wc.wc_flags);
		/* The L3 type in sl, as mlx5 reports it on RoCE (UCX reads it). */
		VT_EXPECT_EQ("UD receive: sl is the L3 type (2 IPv4, 1 IPv6)",
			     !memcmp(d->gid.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12) ? 2 : 1, wc.sl);
		vt_check((wc.wc_flags & IBV_WC_WITH_IMM) && be32toh(wc.imm_data) == 0xfeed,
			 "UD receive: immediate 0x%x (want 0xfeed)", be32toh(wc.imm_data));
	}
	vt_check(!memcmp(dst.p + 40, src.p, len), "UD receive: the payload follows the GRH intact");
	/* The GRH names the sender: an IPv4 header in its last 20 bytes for
	 * an IPv4-mapped GID (as rxe does), else an IPv6 header. */
	if (!memcmp(d->gid.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12))
		vt_check(dst.p[20] == 0x45 && !memcmp(dst.p + 32, d->gid.raw + 12, 4),
			 "UD receive: the GRH holds an IPv4 header from the sender's address "
			 "(version/ihl 0x%02x, source %u.%u.%u.%u)", dst.p[20], dst.p[32], dst.p[33],
			 dst.p[34], dst.p[35]);
	else
		vt_check((dst.p[0] >> 4) == 6 && !memcmp(dst.p + 8, d->gid.raw, 16),
			 "UD receive: the GRH is an IPv6 header with the sender's GID as source");
	/* A reply through ibv_create_ah_from_wc reaches the sender. */
	{
		struct ibv_ah *back = ibv_create_ah_from_wc(d->pd, &wc, (struct ibv_grh *)dst.p, d->port);
		struct ibv_wc wc2;

		if (vt_check(back != NULL, "ibv_create_ah_from_wc: %s", back ? "ok" : strerror(errno))) {
			r = vt_sge(&src, 1024, 40 + 64);
			vt_post_recv(&a, 0x74, &r, 1);
			s = vt_sge(&dst, 2048, 64);
			wr = vt_wr(0x75, IBV_WR_SEND, &s);
			vt_wr_ud(&wr, back, wc.src_qp, 0x11111111);
			vt_post_send(&b, &wr);
			if (vt_poll_one(a.rcq, &wc2, 10, "the reply through the AH from the WC"))
				vt_check(wc2.status == IBV_WC_SUCCESS && wc2.byte_len == 40 + 64 &&
					 wc2.src_qp == b.qp->qp_num,
					 "the reply through the AH from the WC arrived (status %s, byte_len %u, "
					 "src_qp 0x%x)", ibv_wc_status_str(wc2.status), wc2.byte_len, wc2.src_qp);
			vt_poll(b.scq, &wc2, 1, 10);
			ibv_destroy_ah(back);
		}
	}
	/* A wrong Q_Key is dropped: no completion. */
	r = vt_sge(&dst, 0, 40 + len);
	vt_post_recv(&b, 0x72, &r, 1);
	s = vt_sge(&src, 0, len);
	wr = vt_wr(0x73, IBV_WR_SEND, &s);
	vt_wr_ud(&wr, ah, b.qp->qp_num, 0x22222222);
	vt_post_send(&a, &wr);
	if (vt_poll_one(a.scq, &wc, 10, "UD SEND with a wrong Q_Key"))
		VT_EXPECT_STATUS("UD SEND with a wrong Q_Key (the sender cannot know)", IBV_WC_SUCCESS, wc.status);
	vt_poll_none(b.rcq, 0.2, "UD receive of a datagram with a wrong Q_Key");
	ibv_destroy_ah(ah);
	vt_qp_destroy(&a);
	vt_qp_destroy(&b);
	vt_buf_free(&src);
	vt_buf_free(&dst);
}

static const struct vt_case cases[] = {
	{ "inline", case_inline },
	{ "sges", case_sges },
	{ "unsignaled", case_unsignaled },
	{ "completions", case_completions },
	{ "srq", case_srq },
	{ "ud", case_ud },
	{ NULL, NULL },
};

VT_MAIN(cases)
