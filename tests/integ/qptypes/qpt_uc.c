/* UC: SEND, SEND_WITH_IMM, RDMA_WRITE and RDMA_WRITE_WITH_IMM between two
 * processes; no acknowledgements on the wire; READ and atomics refused at
 * post; a message without a posted receive is dropped and the QP carries on;
 * a sender completes even when the peer QP is gone.
 *
 *   qpt_uc -d DEV -g GIDX -p PORT            (server: the receiver)
 *   qpt_uc -d DEV -g GIDX -p PORT SERVER_IP  (client: the sender)
 *
 * The path MTU is 1024 so that messages span several packets; the counters
 * checked are the device's (sent_pkts/rcvd_pkts), which the two processes
 * share when they run in one network namespace. */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "qpt.h"

#define MSG_PKTS 19           /* packets the client sends in phase 1 */
#define WRITE1_OFF 0
#define WRITE1_LEN 8192
#define WRITE2_OFF 16384
#define WRITE2_LEN 3000
#define IMM1 0x12345678u
#define IMM2 0xabcdef01u

static void fill(uint8_t *p, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7 + (i >> 8));
}

static bool same(const uint8_t *p, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != (uint8_t)(seed + i * 7 + (i >> 8)))
			return false;
	return true;
}

struct side {
	struct qpt_dev d;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct qpt_buf buf;       /* server: receive slots + write target */
	struct qpt_ep me, peer;
	int fd;
	bool same_ns;
};

static void setup(struct side *s, const struct qpt_opts *o)
{
	qpt_open(&s->d, o->dev, o->gidx);
	s->scq = qpt_cq(&s->d, 64);
	s->rcq = qpt_cq(&s->d, 64);
	s->qp = qpt_qp(&s->d, IBV_QPT_UC, s->scq, s->rcq, NULL, 32);
	qpt_buf(&s->d, &s->buf, 1 << 20, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	qpt_ep_of(&s->d, s->qp, &s->me);
	s->me.addr = (uintptr_t)s->buf.p;
	s->me.rkey = s->buf.mr->rkey;
	s->fd = qpt_oob(o);
	qpt_xchg_ep(s->fd, &s->me, &s->peer);
	s->same_ns = s->me.netns == s->peer.netns;
	if (qpt_connect(&s->d, s->qp, &s->me, &s->peer, IBV_ACCESS_REMOTE_WRITE, IBV_MTU_1024))
		DIE("UC QP to RTS");
}

/* Receive slot i of the server: 64 KiB each, from 256 KiB on. */
static uint8_t *slot(struct side *s, int i) { return s->buf.p + (256 << 10) + (i << 16); }

/* Phases 1 and 2: the client's messages, one of each opcode, then the one
 * after the opcodes refused at post. */
static void server_check_messages(struct side *s)
{
	struct ibv_wc wc[8];
	int n;

	qpt_sync(s->fd, "phase1-sent");
	n = qpt_poll(s->rcq, wc, 4, 20000);
	CHECK(n == 4, "4 receive completions (SEND, SEND_WITH_IMM, WRITE_WITH_IMM, 0-byte SEND), got %d", n);
	if (n >= 1) {
		CHECK(wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_RECV &&
		      wc[0].byte_len == 100 && !(wc[0].wc_flags & IBV_WC_WITH_IMM) &&
		      wc[0].wr_id == 100 && wc[0].qp_num == s->qp->qp_num,
		      "SEND: RECV of 100 bytes, no immediate, on this QP (status %s, opcode %d, len %u, flags 0x%x)",
		      ibv_wc_status_str(wc[0].status), wc[0].opcode, wc[0].byte_len, wc[0].wc_flags);
		CHECK(same(slot(s, 0), 100, 1), "SEND: payload intact");
	}
	if (n >= 2) {
		CHECK(wc[1].status == IBV_WC_SUCCESS && wc[1].opcode == IBV_WC_RECV &&
		      wc[1].byte_len == 5000 && (wc[1].wc_flags & IBV_WC_WITH_IMM) &&
		      be32toh(wc[1].imm_data) == IMM1,
		      "SEND_WITH_IMM: RECV of 5000 bytes (5 packets) with immediate 0x%x (len %u, flags 0x%x, imm 0x%x)",
		      IMM1, wc[1].byte_len, wc[1].wc_flags, be32toh(wc[1].imm_data));
		CHECK(same(slot(s, 1), 5000, 2), "SEND_WITH_IMM: payload intact across packets");
	}
	if (n >= 3) {
		CHECK(wc[2].status == IBV_WC_SUCCESS && wc[2].opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
		      wc[2].byte_len == WRITE2_LEN && (wc[2].wc_flags & IBV_WC_WITH_IMM) &&
		      be32toh(wc[2].imm_data) == IMM2 && wc[2].wr_id == 102,
		      "RDMA_WRITE_WITH_IMM: RECV_RDMA_WITH_IMM, byte_len %u, immediate 0x%x, consumed a receive (opcode %d, len %u, imm 0x%x)",
		      WRITE2_LEN, IMM2, wc[2].opcode, wc[2].byte_len, be32toh(wc[2].imm_data));
	}
	if (n >= 4)
		CHECK(wc[3].status == IBV_WC_SUCCESS && wc[3].opcode == IBV_WC_RECV &&
		      wc[3].byte_len == 0 && wc[3].wr_id == 103,
		      "0-byte SEND: RECV of 0 bytes (len %u, wr_id %llu)", wc[3].byte_len,
		      (unsigned long long)wc[3].wr_id);
	CHECK(same(s->buf.p + WRITE1_OFF, WRITE1_LEN, 3),
	      "RDMA_WRITE: 8 KiB written into the region (8 packets), no receive consumed");
	CHECK(same(s->buf.p + WRITE2_OFF, WRITE2_LEN, 4), "RDMA_WRITE_WITH_IMM: data written");
	CHECK(s->buf.p[WRITE1_OFF + WRITE1_LEN] == 0 && s->buf.p[WRITE2_OFF + WRITE2_LEN] == 0,
	      "RDMA_WRITEs: nothing written past their length");
	qpt_sync(s->fd, "phase2");
	n = qpt_poll(s->rcq, wc, 1, 20000);
	CHECK(n == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].byte_len == 64 && wc[0].wr_id == 104,
	      "after the refused READ/atomics the QP still receives (n %d, len %u)", n,
	      n ? wc[0].byte_len : 0);
	CHECK(qpt_poll_none(s->rcq, 300, wc), "no other receive completion");
}

static void server(const struct qpt_opts *o)
{
	struct side s;
	struct ibv_wc wc[8];
	int64_t sent0, rcvd0, sent1, rcvd1;
	long long got, merged;
	int n, i;

	setup(&s, o);
	for (i = 0; i < 5; i++)
		if (qpt_post_recv1(s.qp, 100 + i, slot(&s, i), 1 << 16, s.buf.mr->lkey))
			DIE("post_recv");
	qpt_sync(s.fd, "connected");
	sent0 = qpt_counter_settle(s.d.ctx, "sent_pkts", 600);
	rcvd0 = qpt_counter_settle(s.d.ctx, "rcvd_pkts", 600);
	CHECK(sent0 >= 0 && rcvd0 >= 0, "counters sent_pkts/rcvd_pkts readable (%lld, %lld)",
	      (long long)sent0, (long long)rcvd0);
	qpt_sync(s.fd, "counted");

	server_check_messages(&s);

	/* The counters: the server's QP sent nothing (no ACK, no NAK). */
	sent1 = qpt_counter_settle(s.d.ctx, "sent_pkts", 1000);
	rcvd1 = qpt_counter_settle(s.d.ctx, "rcvd_pkts", 1000);
	/* On one host a WRITE may be copied straight into the responder and
	 * travel as one packet of headers: 8 KiB as 1 packet instead of 8,
	 * 3000 bytes as 1 instead of 3. */
	got = rcvd1 - rcvd0;
	merged = MSG_PKTS - got;
	CHECK(got == MSG_PKTS || (s.same_ns && (merged == 7 || merged == 2 || merged == 9)),
	      "rcvd_pkts grew by the %d request packets, or (one host) fewer by the WRITEs "
	      "copied straight in (by %lld)", MSG_PKTS, got);
	CHECK(sent1 - sent0 == (s.same_ns ? got : 0),
	      "sent_pkts grew by %lld (%s): the responder sent no ACK (by %lld)",
	      s.same_ns ? got : 0,
	      s.same_ns ? "the client's requests, same namespace" : "other namespace",
	      (long long)(sent1 - sent0));
	qpt_sync(s.fd, "counters-done");

	/* Phase 3: no receive posted -> the message is dropped, silently. */
	qpt_sync(s.fd, "phase3-sent-without-recv");
	CHECK(qpt_poll_none(s.rcq, 500, wc), "a SEND with no receive posted: dropped, no completion");
	if (qpt_post_recv1(s.qp, 200, slot(&s, 5), 1 << 16, s.buf.mr->lkey))
		DIE("post_recv");
	qpt_sync(s.fd, "phase3-posted");
	n = qpt_poll(s.rcq, wc, 1, 20000);
	CHECK(n == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 200 &&
	      wc[0].byte_len == 77 && same(slot(&s, 5), 77, 9),
	      "the next SEND after the drop arrives whole in the new receive (n %d, len %u)", n,
	      n ? wc[0].byte_len : 0);
	CHECK(qpt_qp_state(s.qp) == IBV_QPS_RTS, "the UC QP is still in RTS after the drop");

	/* Phase 4: the QP goes away; the sender does not notice. */
	CHECK(ibv_destroy_qp(s.qp) == 0, "ibv_destroy_qp");
	qpt_sync(s.fd, "qp-destroyed");
	qpt_teardown(s.fd, &(struct qpt_made){ .d = &s.d, .buf = &s.buf, .cq = { s.scq, s.rcq } });
}

/* Phase 1: one of each opcode, each signaled. */
static void client_send_each_opcode(struct side *s)
{
	struct ibv_wc wc[8];
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	uint8_t *b = s->buf.p;
	int n;

	fill(b, 100, 1);
	fill(b + 4096, 5000, 2);
	fill(b + 16384, WRITE1_LEN, 3);
	fill(b + 32768, WRITE2_LEN, 4);
	CHECK(qpt_post_send1(s->qp, IBV_WR_SEND, 1, b, 100, s->buf.mr->lkey, IBV_SEND_SIGNALED) == 0,
	      "post SEND");
	memset(&wr, 0, sizeof(wr));
	sge = (struct ibv_sge){ (uintptr_t)(b + 4096), 5000, s->buf.mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 2, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
				   .imm_data = htobe32(IMM1) };
	CHECK(ibv_post_send(s->qp, &wr, &bad) == 0, "post SEND_WITH_IMM");
	sge = (struct ibv_sge){ (uintptr_t)(b + 16384), WRITE1_LEN, s->buf.mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 3, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED };
	wr.wr.rdma.remote_addr = s->peer.addr + WRITE1_OFF;
	wr.wr.rdma.rkey = s->peer.rkey;
	CHECK(ibv_post_send(s->qp, &wr, &bad) == 0, "post RDMA_WRITE");
	sge = (struct ibv_sge){ (uintptr_t)(b + 32768), WRITE2_LEN, s->buf.mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 4, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				   .send_flags = IBV_SEND_SIGNALED, .imm_data = htobe32(IMM2) };
	wr.wr.rdma.remote_addr = s->peer.addr + WRITE2_OFF;
	wr.wr.rdma.rkey = s->peer.rkey;
	CHECK(ibv_post_send(s->qp, &wr, &bad) == 0, "post RDMA_WRITE_WITH_IMM");
	CHECK(qpt_post_send1(s->qp, IBV_WR_SEND, 5, b, 0, s->buf.mr->lkey, IBV_SEND_SIGNALED) == 0,
	      "post a 0-byte SEND");
	n = qpt_poll(s->scq, wc, 5, 20000);
	CHECK(n == 5, "5 send completions without any ACK to wait for (got %d)", n);
	for (int i = 0; i < n; i++) {
		static const enum ibv_wc_opcode want[] = { IBV_WC_SEND, IBV_WC_SEND, IBV_WC_RDMA_WRITE,
							    IBV_WC_RDMA_WRITE, IBV_WC_SEND };
		CHECK(wc[i].status == IBV_WC_SUCCESS && wc[i].wr_id == (uint64_t)i + 1 &&
		      wc[i].opcode == want[i],
		      "send completion %d: success, in order, opcode %d (status %s, wr_id %llu, opcode %d)",
		      i + 1, want[i], ibv_wc_status_str(wc[i].status),
		      (unsigned long long)wc[i].wr_id, wc[i].opcode);
	}
	qpt_sync(s->fd, "phase1-sent");
}

/* Phase 2: what UC does not have is refused at post time. */
static void client_refused_at_post(struct side *s)
{
	static const struct { enum ibv_wr_opcode op; const char *name; } no[] = {
		{ IBV_WR_RDMA_READ, "RDMA_READ" },
		{ IBV_WR_ATOMIC_CMP_AND_SWP, "ATOMIC_CMP_AND_SWP" },
		{ IBV_WR_ATOMIC_FETCH_AND_ADD, "ATOMIC_FETCH_AND_ADD" },
		{ IBV_WR_SEND_WITH_INV, "SEND_WITH_INV" },
	};
	struct ibv_wc wc[8];
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	uint8_t *b = s->buf.p;
	int ret;

	for (unsigned i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		sge = (struct ibv_sge){ (uintptr_t)b, 8, s->buf.mr->lkey };
		wr = (struct ibv_send_wr){ .wr_id = 50 + i, .sg_list = &sge, .num_sge = 1,
					   .opcode = no[i].op, .send_flags = IBV_SEND_SIGNALED };
		wr.wr.atomic.remote_addr = s->peer.addr;
		wr.wr.atomic.rkey = s->peer.rkey;
		if (no[i].op == IBV_WR_RDMA_READ) {
			wr.wr.rdma.remote_addr = s->peer.addr;
			wr.wr.rdma.rkey = s->peer.rkey;
		}
		bad = NULL;
		ret = ibv_post_send(s->qp, &wr, &bad);
		CHECK(ret == EINVAL && bad == &wr,
		      "UC %s refused at post with EINVAL, bad_wr set (ret %d)", no[i].name, ret);
	}
	CHECK(qpt_poll_none(s->scq, 300, wc), "the refused requests leave no completion");
	CHECK(qpt_qp_state(s->qp) == IBV_QPS_RTS, "the QP is still in RTS");
}

static void client(const struct qpt_opts *o)
{
	struct side s;
	struct ibv_wc wc[8];
	int64_t rcvd0, rcvd1;
	long long merged;
	uint8_t *b;
	int n;

	setup(&s, o);
	b = s.buf.p;
	qpt_sync(s.fd, "connected");
	rcvd0 = qpt_counter_settle(s.d.ctx, "rcvd_pkts", 600);
	qpt_sync(s.fd, "counted");

	client_send_each_opcode(&s);
	client_refused_at_post(&s);
	qpt_sync(s.fd, "phase2");
	fill(b, 64, 8);
	CHECK(qpt_post_send1(s.qp, IBV_WR_SEND, 6, b, 64, s.buf.mr->lkey, IBV_SEND_SIGNALED) == 0 &&
	      qpt_poll(s.scq, wc, 1, 20000) == 1 && wc[0].status == IBV_WC_SUCCESS,
	      "a SEND after the refused ones completes");

	/* No ACK ever came back: the client's namespace received nothing
	 * (or, sharing the namespace, exactly the client's own requests). */
	rcvd1 = qpt_counter_settle(s.d.ctx, "rcvd_pkts", 1000);
	/* (WRITEs copied straight in travel as one packet: see the server.) */
	merged = MSG_PKTS - (rcvd1 - rcvd0);
	CHECK(s.same_ns ? merged == 0 || merged == 7 || merged == 2 || merged == 9
			: rcvd1 == rcvd0,
	      "rcvd_pkts on the sender's side grew by %d (fewer by the WRITEs copied straight "
	      "in): no ACKs (by %lld)", s.same_ns ? MSG_PKTS : 0, (long long)(rcvd1 - rcvd0));
	qpt_sync(s.fd, "counters-done");

	/* Phase 3: a SEND while the server has no receive posted. */
	fill(b, 77, 9);
	CHECK(qpt_post_send1(s.qp, IBV_WR_SEND, 7, b + 2048, 500, s.buf.mr->lkey,
			     IBV_SEND_SIGNALED) == 0 &&
	      qpt_poll(s.scq, wc, 1, 20000) == 1 && wc[0].status == IBV_WC_SUCCESS,
	      "a SEND to a QP with no receive posted completes successfully (UC: no RNR)");
	qpt_sync(s.fd, "phase3-sent-without-recv");
	qpt_sync(s.fd, "phase3-posted");
	CHECK(qpt_post_send1(s.qp, IBV_WR_SEND, 8, b, 77, s.buf.mr->lkey, IBV_SEND_SIGNALED) == 0 &&
	      qpt_poll(s.scq, wc, 1, 20000) == 1 && wc[0].status == IBV_WC_SUCCESS,
	      "the next SEND completes");

	/* Phase 4: the peer QP is destroyed; UC sends still complete. */
	qpt_sync(s.fd, "qp-destroyed");
	for (int i = 0; i < 3; i++)
		qpt_post_send1(s.qp, IBV_WR_SEND, 10 + i, b, 3000, s.buf.mr->lkey, IBV_SEND_SIGNALED);
	n = qpt_poll(s.scq, wc, 3, 20000);
	CHECK(n == 3 && wc[0].status == IBV_WC_SUCCESS && wc[1].status == IBV_WC_SUCCESS &&
	      wc[2].status == IBV_WC_SUCCESS,
	      "SENDs to a destroyed peer QP complete successfully: nothing waits for an ACK (n %d)", n);
	CHECK(qpt_qp_state(s.qp) == IBV_QPS_RTS, "the QP is still in RTS");
	qpt_teardown(s.fd, &(struct qpt_made){ .d = &s.d, .buf = &s.buf, .qp = &s.qp, .nqp = 1,
					       .cq = { s.scq, s.rcq } });
}

const struct qpt_role qpt_roles[] = {
	{ NULL, QPT_SERVER, server },
	{ NULL, QPT_CLIENT, client },
	{ NULL, QPT_EITHER, NULL },
};
