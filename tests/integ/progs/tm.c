/* Tag matching (an IBV_SRQT_TM SRQ behind an RC QP): tagged buffers added,
 * deleted and synced with ibv_post_srq_ops; an EAGER message lands, TMH
 * stripped, in the buffer its tag matches, with the tag and application
 * context in the completion; one that matches nothing is unexpected and
 * takes an ordinary receive, TMH included, and matching waits for a sync
 * that counts it (an add posted before completes with SYNC_REQ); a
 * NO_TAG message is an ordinary receive; a RNDV message matched to a
 * buffer is READ from the sender, reported twice (MATCH, then DATA_VALID)
 * and answered with a FIN; a rendezvous naming a bad key ends in
 * IBV_WC_TM_RNDV_INCOMPLETE; only RC QPs take a TM SRQ.
 *
 *   tm DEVICE GID_INDEX [CASE...]
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/tm_types.h>

#include "vt.h"

#define ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define MSG 116            /* a TMH and 100 bytes */
#define RNDV_LEN 8192

struct tm_pair {
	struct vt_qp a, b;        /* a sends; b's receives are the TM SRQ's */
	struct ibv_cq_ex *cq;     /* b's: receives and list operations */
	struct ibv_srq *srq;
	struct vt_buf src, dst;
	uint32_t unexpected;      /* as the application has counted them */
};

static void tm_open(struct tm_pair *p, struct vt_dev *d)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = 256, .wc_flags = IBV_WC_STANDARD_FLAGS |
									   IBV_WC_EX_WITH_TM_INFO };
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = 64, .max_sge = 1 }, .srq_type = IBV_SRQT_TM, .pd = d->pd,
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ |
			     IBV_SRQ_INIT_ATTR_TM,
		.tm_cap = { .max_num_tags = 16, .max_ops = 16 },
	};
	struct ibv_device_attr_ex ex;
	struct vt_qp_opts bo = { 0 };

	memset(p, 0, sizeof(*p));
	if (vt_check(ibv_query_device_ex(d->ctx, NULL, &ex) == 0, "ibv_query_device_ex"))
		vt_check((ex.tm_caps.flags & IBV_TM_CAP_RC) && ex.tm_caps.max_num_tags >= 16 &&
			 ex.tm_caps.max_rndv_hdr_size >= 32,
			 "tm_caps: RC, %u tags, %u-byte rendezvous headers", ex.tm_caps.max_num_tags,
			 ex.tm_caps.max_rndv_hdr_size);
	p->cq = ibv_create_cq_ex(d->ctx, &ca);
	vt_check(p->cq != NULL, "a CQ with IBV_WC_EX_WITH_TM_INFO (%s)", p->cq ? "ok" : strerror(errno));
	sa.cq = ibv_cq_ex_to_cq(p->cq);
	p->srq = p->cq ? ibv_create_srq_ex(d->ctx, &sa) : NULL;
	if (!vt_check(p->srq != NULL, "a tag-matching SRQ (%s)", p->srq ? "ok" : strerror(errno)))
		exit(2);
	bo.srq = p->srq;
	bo.send_cq = bo.recv_cq = ibv_cq_ex_to_cq(p->cq);
	vt_rc_pair(d, &p->a, NULL, &p->b, &bo);
	vt_buf_init(&p->src, d, RNDV_LEN, ALL, 1);
	vt_buf_init(&p->dst, d, RNDV_LEN, ALL, 2);
}

static void tm_close(struct tm_pair *p)
{
	vt_qp_destroy(&p->a);
	vt_qp_destroy(&p->b);
	ibv_destroy_srq(p->srq);
	ibv_destroy_cq(ibv_cq_ex_to_cq(p->cq));
	vt_buf_free(&p->src);
	vt_buf_free(&p->dst);
}

/* One completion of b's CQ. */
struct tm_wc {
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint64_t wr_id;
	uint32_t flags, len;
	struct ibv_wc_tm_info tm;
};

static bool next_wc(struct tm_pair *p, struct tm_wc *w, const char *what)
{
	struct ibv_poll_cq_attr pa = { 0 };
	double end = vt_now() + 10;
	int ret;

	while ((ret = ibv_start_poll(p->cq, &pa)) == ENOENT && vt_now() < end)
		;
	if (!vt_check(ret == 0, "%s: a completion (%s)", what, ret ? strerror(ret) : "ok"))
		return false;
	w->status = p->cq->status;
	w->wr_id = p->cq->wr_id;
	w->opcode = ibv_wc_read_opcode(p->cq);
	w->flags = ibv_wc_read_wc_flags(p->cq);
	w->len = ibv_wc_read_byte_len(p->cq);
	ibv_wc_read_tm_info(p->cq, &w->tm);
	ibv_end_poll(p->cq);
	return true;
}

static void expect_wc(struct tm_pair *p, const char *what, enum ibv_wc_opcode op, uint64_t wr_id,
		      uint32_t flags, uint64_t tag)
{
	struct tm_wc w;

	if (!next_wc(p, &w, what))
		return;
	vt_check(w.status == IBV_WC_SUCCESS && w.opcode == op && w.wr_id == wr_id &&
		 (w.flags & (IBV_WC_TM_SYNC_REQ | IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID)) == flags &&
		 w.tm.tag == tag,
		 "%s: status %s opcode %d (want %d) wr_id %llu (want %llu) flags 0x%x (want 0x%x) "
		 "tag %llu (want %llu)", what, ibv_wc_status_str(w.status), w.opcode, op,
		 (unsigned long long)w.wr_id, (unsigned long long)wr_id,
		 w.flags & 0x70, flags, (unsigned long long)w.tm.tag, (unsigned long long)tag);
}

static void op(struct tm_pair *p, enum ibv_ops_wr_opcode opcode, uint64_t wr_id, uint64_t tag,
	       size_t off, uint32_t *handle)
{
	struct ibv_sge sge = vt_sge(&p->dst, off, 1024);
	struct ibv_ops_wr wr = { .wr_id = wr_id, .opcode = opcode, .flags = IBV_OPS_SIGNALED }, *bad;
	int ret;

	wr.tm.unexpected_cnt = p->unexpected;
	wr.tm.add.recv_wr_id = wr_id;
	wr.tm.add.sg_list = &sge;
	wr.tm.add.num_sge = 1;
	wr.tm.add.tag = tag;
	wr.tm.add.mask = ~0ull;
	if (handle && opcode == IBV_WR_TAG_DEL)
		wr.tm.handle = *handle;
	ret = ibv_post_srq_ops(p->srq, &wr, &bad);
	vt_check(ret == 0, "ibv_post_srq_ops (opcode %d): %s", opcode, strerror(ret));
	if (handle && opcode == IBV_WR_TAG_ADD)
		*handle = wr.tm.handle;
}

static void ordinary_recv(struct tm_pair *p, uint64_t wr_id, size_t off)
{
	struct ibv_sge sge = vt_sge(&p->dst, off, 1024);
	struct ibv_recv_wr r = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	vt_check(ibv_post_srq_recv(p->srq, &r, &bad) == 0, "an ordinary receive on the TM SRQ");
}

/* A MSG-byte SEND from a: TMH (opcode, tag, application context) and data. */
static void send_tm(struct tm_pair *p, uint8_t tmh_op, uint64_t tag, uint8_t seed)
{
	struct ibv_tmh h = { .opcode = tmh_op, .app_ctx = htobe32(0xc0ffee), .tag = htobe64(tag) };
	struct ibv_sge sge = vt_sge(&p->src, 0, MSG);
	struct ibv_send_wr wr = vt_wr(seed, IBV_WR_SEND, &sge);
	struct ibv_wc wc;

	vt_buf_fill(&p->src, seed);
	memcpy(p->src.p, &h, sizeof(h));
	vt_check(vt_post_send(&p->a, &wr) == 0, "the SEND");
	vt_poll_one(p->a.scq, &wc, 10, "the SEND completes");
}

static void case_eager(struct vt_dev *d)
{
	struct tm_pair p;
	uint32_t h11;
	struct tm_wc w;

	tm_open(&p, d);
	op(&p, IBV_WR_TAG_ADD, 5, 5, 0, NULL);
	expect_wc(&p, "add tag 5", IBV_WC_TM_ADD, 5, 0, 0);
	send_tm(&p, IBV_TMH_EAGER, 5, 10);
	if (next_wc(&p, &w, "EAGER tag 5")) {
		vt_check(w.opcode == IBV_WC_TM_RECV && w.wr_id == 5 && w.tm.tag == 5 &&
			 w.tm.priv == 0xc0ffee &&
			 (w.flags & (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID)) ==
				 (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID) && w.len == MSG - 16,
			 "EAGER tag 5: matched, its buffer's wr_id, tag and context, %u bytes", w.len);
		vt_check(!memcmp(p.dst.p, p.src.p + 16, MSG - 16), "the data after the TMH landed");
	}
	/* Unexpected: an ordinary receive takes it whole. */
	ordinary_recv(&p, 100, 2048);
	send_tm(&p, IBV_TMH_EAGER, 7, 11);
	expect_wc(&p, "EAGER tag 7 (no buffer): unexpected", IBV_WC_TM_RECV, 100, 0, 0);
	vt_check(!memcmp(p.dst.p + 2048, p.src.p, MSG), "the unexpected message landed whole");
	/* Matching waits for the sync that counts it. */
	op(&p, IBV_WR_TAG_ADD, 9, 9, 1024, NULL);
	expect_wc(&p, "add tag 9 before the sync", IBV_WC_TM_ADD, 9, IBV_WC_TM_SYNC_REQ, 0);
	ordinary_recv(&p, 101, 3072);
	send_tm(&p, IBV_TMH_EAGER, 9, 12);
	expect_wc(&p, "EAGER tag 9 before the sync: unexpected", IBV_WC_TM_RECV, 101, 0, 0);
	p.unexpected = 2;
	op(&p, IBV_WR_TAG_SYNC, 77, 0, 0, NULL);
	expect_wc(&p, "sync", IBV_WC_TM_SYNC, 77, 0, 0);
	send_tm(&p, IBV_TMH_EAGER, 9, 13);
	expect_wc(&p, "EAGER tag 9 after the sync: matched", IBV_WC_TM_RECV, 9,
		  IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID, 9);
	/* A deleted buffer matches nothing. */
	op(&p, IBV_WR_TAG_ADD, 11, 11, 4096, &h11);
	expect_wc(&p, "add tag 11", IBV_WC_TM_ADD, 11, 0, 0);
	op(&p, IBV_WR_TAG_DEL, 12, 0, 0, &h11);
	expect_wc(&p, "delete tag 11", IBV_WC_TM_DEL, 12, 0, 0);
	ordinary_recv(&p, 102, 5120);
	send_tm(&p, IBV_TMH_EAGER, 11, 14);
	expect_wc(&p, "EAGER tag 11 after its delete: unexpected", IBV_WC_TM_RECV, 102, 0, 0);
	/* NO_TAG: an ordinary receive, whatever the tag. */
	p.unexpected = 3;
	op(&p, IBV_WR_TAG_SYNC, 78, 0, 0, NULL);
	expect_wc(&p, "sync", IBV_WC_TM_SYNC, 78, 0, 0);
	ordinary_recv(&p, 103, 6144);
	send_tm(&p, IBV_TMH_NO_TAG, 5, 15);
	expect_wc(&p, "NO_TAG", IBV_WC_TM_NO_TAG, 103, 0, 0);
	/* Only RC: a rendezvous is answered with a READ. */
	{
		struct ibv_qp_init_attr ua = { .send_cq = ibv_cq_ex_to_cq(p.cq),
					       .recv_cq = ibv_cq_ex_to_cq(p.cq), .srq = p.srq,
					       .cap = { .max_send_wr = 4, .max_send_sge = 1 },
					       .qp_type = IBV_QPT_UC };
		struct ibv_qp *uq = ibv_create_qp(d->pd, &ua);

		vt_check(!uq && errno == EOPNOTSUPP, "a UC QP on a tag-matching SRQ: EOPNOTSUPP (%s)",
			 uq ? "made" : strerror(errno));
		if (uq)
			ibv_destroy_qp(uq);
	}
	tm_close(&p);
}

/* RNDV: the data is READ from a's buffer; a gets a FIN. */
static void rndv(struct vt_dev *d, bool bad_key)
{
	struct ibv_tmh h = { .opcode = IBV_TMH_RNDV, .tag = htobe64(3) };
	struct ibv_rvh v;
	struct vt_buf hdr, fin;
	struct ibv_sge sge, rs;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	struct tm_pair p;
	struct tm_wc w;

	tm_open(&p, d);
	vt_buf_init(&hdr, d, 64, ALL, 3);
	vt_buf_init(&fin, d, 64, ALL, 4);
	rs = vt_sge(&fin, 0, 64);
	vt_post_recv(&p.a, 200, &rs, 1);
	{
		struct ibv_sge b = vt_sge(&p.dst, 0, RNDV_LEN);
		struct ibv_ops_wr ow = { .wr_id = 3, .opcode = IBV_WR_TAG_ADD, .flags = IBV_OPS_SIGNALED }, *bad;

		ow.tm.add.recv_wr_id = 3;
		ow.tm.add.sg_list = &b;
		ow.tm.add.num_sge = 1;
		ow.tm.add.tag = 3;
		ow.tm.add.mask = ~0ull;
		vt_check(ibv_post_srq_ops(p.srq, &ow, &bad) == 0, "add tag 3 (8 KiB)");
		expect_wc(&p, "add tag 3", IBV_WC_TM_ADD, 3, 0, 0);
	}
	v.va = htobe64((uintptr_t)p.src.p);
	v.rkey = htobe32(bad_key ? p.src.mr->rkey ^ 0x4400 : p.src.mr->rkey);
	v.len = htobe32(RNDV_LEN);
	memcpy(hdr.p, &h, sizeof(h));
	memcpy(hdr.p + sizeof(h), &v, sizeof(v));
	sge = vt_sge(&hdr, 0, 32);
	wr = vt_wr(1, IBV_WR_SEND, &sge);
	vt_check(vt_post_send(&p.a, &wr) == 0, "the rendezvous request");
	vt_poll_one(p.a.scq, &wc, 10, "the rendezvous request completes");
	expect_wc(&p, "RNDV tag 3: matched", IBV_WC_TM_RECV, 3, IBV_WC_TM_MATCH, 3);
	if (!next_wc(&p, &w, "RNDV tag 3: the data"))
		goto out;
	if (bad_key) {
		VT_EXPECT_STATUS("a rendezvous naming a bad key", IBV_WC_TM_RNDV_INCOMPLETE, w.status);
		vt_buf_unchanged(&p.src, "the sender's buffer");
		goto out;
	}
	vt_check(w.status == IBV_WC_SUCCESS && w.opcode == IBV_WC_TM_RECV && w.wr_id == 3 &&
		 (w.flags & IBV_WC_TM_DATA_VALID) && w.len == RNDV_LEN,
		 "RNDV tag 3: DATA_VALID, %u bytes (status %s)", w.len, ibv_wc_status_str(w.status));
	vt_check(!memcmp(p.dst.p, p.src.p, RNDV_LEN), "the 8 KiB were READ from the sender");
	if (vt_poll_one(p.a.rcq, &wc, 10, "the sender's FIN")) {
		struct ibv_tmh f;

		memcpy(&f, fin.p, sizeof(f));
		vt_check(wc.status == IBV_WC_SUCCESS && wc.byte_len == 16 && f.opcode == IBV_TMH_FIN &&
			 be64toh(f.tag) == 3, "a FIN with tag 3 (%u bytes)", wc.byte_len);
	}
out:
	vt_buf_free(&hdr);
	vt_buf_free(&fin);
	tm_close(&p);
}

static void case_rndv(struct vt_dev *d)
{
	rndv(d, false);
}

static void case_rndv_bad_key(struct vt_dev *d)
{
	rndv(d, true);
}

static const struct vt_case cases[] = {
	{ "eager", case_eager },
	{ "rndv", case_rndv },
	{ "rndv_bad_key", case_rndv_bad_key },
	{ NULL, NULL },
};

VT_MAIN(cases)
