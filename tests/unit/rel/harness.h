/* The protocol harness: two (or more) real QPs in one process whose paths
 * lead to a fake transport.  Its send() records each packet (header bytes,
 * gathered payload, pad and a zero ICRC) in a queue instead of sending it;
 * the test then delivers, drops, duplicates or reorders packets by hand
 * through ur_recv_packet(), the stack's own dispatch (parse, QPN lookup,
 * QP lock, responder or completer).  Nothing crosses a socket and the
 * stack's reactor has no thread (ut_stack.h); the files that read the
 * clock are compiled in against a virtual one.  Every scenario is
 * deterministic: timers fire only in t_advance().
 *
 * Debugging: T_TRACE=1 prints every packet delivered (and, in the random
 * loss test, every drop); T_SEED=n T_LOSS=per-mille T_DUP=.. T_REORDER=..
 * [T_MAY_FAIL=1] runs one random-loss scenario alone.
 */
#ifndef UROCE_TESTS_REL_HARNESS_H
#define UROCE_TESTS_REL_HARNESS_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Virtual time: the protocol files and the engine are compiled into the
 * test (white-box) against this clock instead of CLOCK_MONOTONIC, so a
 * deadline is exactly "now + timeout" and time moves only in
 * t_advance(). */
#define UROCE_UTIL_CLOCK_H
static uint64_t t_clock_ns = 1000000000000ull;

static inline uint64_t ur_now_ns(void)
{
	return t_clock_ns;
}

#include "ut.h"
#include "ut_env.h"
#include "ut_stack.h"

#include "rel/timers.c"
#include "rel/progress.c"
#include "rel/run.c"

/* The shared XRC domain (rel/xrc.c), white-box: one process plays both the
 * target QP's and the SRQ owner's, so the host registry is made to say
 * that SRQ numbers belong to another process (t_xrc_other_pid), that
 * process's liveness is t_xrc_other_dead, and the owner's REPLYs go to the
 * fake transport too. */
#include <signal.h>
#include "host/registry.h"
static pid_t t_xrc_other_pid;
static bool t_xrc_other_dead;
static inline int t_registry_lookup(uint32_t qpn, struct ur_reg_owner *o)
{
	if (!t_xrc_other_pid)
		return ur_registry_lookup(qpn, o);
	memset(o, 0, sizeof(*o));
	o->pid = t_xrc_other_pid;
	return 0;
}
static inline int t_kill(pid_t pid, int sig)
{
	(void)sig;
	if (pid == t_xrc_other_pid && t_xrc_other_dead) {
		errno = ESRCH;
		return -1;
	}
	return 0;
}
#define ur_registry_lookup t_registry_lookup
#define kill t_kill
#include "rel/xrc.c"
#undef ur_registry_lookup
#undef kill

#include "core/ah.h"
#include "core/context.h"
#include "core/limits.h"
#include "core/cq.h"
#include "core/device.h"
#include "core/mr.h"
#include "core/pd.h"
#include "core/qp.h"
#include "core/srq.h"
#include "core/xrcd.h"
#include "rel/comp.h"
#include "rel/held.h"
#include "rel/mcast.h"
#include "rel/psn.h"
#include "rel/qp_ops.h"
#include "rel/recv.h"
#include "rel/resp_batch.h"
#include "rel/rel_priv.h"
#include "rel/stack.h"
#include "verbs/verbs_priv.h"
#include "wire/opcode.h"
#include "wire/pkt_parse.h"
#include "wire/roce_hdr.h"
#include "util/fault_guard.h"

/* ---- the fake transport ---------------------------------------------------- */

#define T_PKT_MAX (UR_MAX_HDR_BYTES + 4096 + 4 + 4)
#define T_KEPT_MAX 256

struct t_pkt {
	uint32_t len;
	uint32_t placed;             /* bytes the sender copied itself (rx meta) */
	uint8_t buf[T_PKT_MAX];
};

static struct {
	struct ur_xport x;
	struct t_pkt **q;            /* sent, not yet delivered, in send order */
	unsigned n, cap;
	unsigned sent;               /* packets accepted since t_reset */
	int eagain_after;            /* -1: never; else EAGAIN once sent reaches it */
	bool eagain;                 /* refusing now */
	unsigned eagain_calls;
	int fail_errno;              /* refuse everything with this (not EAGAIN) */
	void (*on_send)(const struct t_pkt *k);   /* sees every packet accepted */
	/* The UDP transport's full socket: packets are taken (send says 0)
	 * but kept, flush says -EAGAIN, and they join the queue, in order,
	 * only when a flush or flush_kept finds room (park false). */
	bool park;
	struct t_pkt *kept[T_KEPT_MAX];
	unsigned nkept;
	unsigned flush_kept_calls;
	bool behind;                 /* a local peer has not read all we sent */
	bool behind_self;            /* this process has not read all sent to it */
} net = { .eagain_after = -1 };

static inline int t_queue(struct t_pkt *k)
{
	if (net.n == net.cap) {
		unsigned ncap = net.cap ? net.cap * 2 : 64;
		struct t_pkt **nq = realloc(net.q, ncap * sizeof(*nq));

		if (!nq)
			return -ENOMEM;
		net.q = nq;
		net.cap = ncap;
	}
	net.q[net.n++] = k;
	return 0;
}

/* What was kept leaves, oldest first, if there is room: 0, or -EAGAIN. */
static inline int t_release_kept(void)
{
	if (!net.nkept)
		return 0;
	if (net.park)
		return -EAGAIN;
	for (unsigned i = 0; i < net.nkept; i++)
		if (t_queue(net.kept[i]))
			free(net.kept[i]);
	net.nkept = 0;
	return 0;
}

static inline int t_xport_flush(struct ur_xport *x)
{
	(void)x;
	return t_release_kept();
}

static inline enum ur_behind t_xport_peer_behind(struct ur_xport *x)
{
	(void)x;
	if (net.behind_self)
		return UR_BEHIND_SELF;
	return net.behind || net.nkept ? UR_BEHIND_PEER : UR_BEHIND_NONE;
}

static inline int t_xport_flush_kept(struct ur_xport *x)
{
	(void)x;
	net.flush_kept_calls++;
	return t_release_kept();
}

static inline int t_xport_send(struct ur_xport *x, const struct ur_path *path, const struct ur_tx_pkt *p)
{
	struct t_pkt *k;
	uint32_t off = 0, gathered = 0;

	(void)x;
	(void)path;
	if (!net.eagain && net.eagain_after >= 0 && net.sent >= (unsigned)net.eagain_after)
		net.eagain = true;
	if (net.eagain) {
		net.eagain_calls++;
		return -EAGAIN;
	}
	if (net.fail_errno)
		return -net.fail_errno;
	/* The transport contract: header, pieces adding up to paylen, a pad
	 * that makes the packet whole words. */
	UT_CHECK(p->hdr_len >= UR_BTH_BYTES && p->hdr_len <= UR_MAX_HDR_BYTES);
	UT_CHECK(p->pad < 4);
	UT_CHECK(((p->paylen + p->pad) & 3) == 0);
	UT_CHECK(p->niov >= 0 && p->niov <= UR_MAX_SGE + 1);
	for (int i = 0; i < p->niov; i++)
		gathered += (uint32_t)p->iov[i].iov_len;
	UT_EQ(gathered, p->paylen);
	if (p->hdr_len + p->paylen + p->pad + 4u > T_PKT_MAX || gathered != p->paylen)
		return -EMSGSIZE;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	memcpy(k->buf, p->hdr, p->hdr_len);
	off = p->hdr_len;
	for (int i = 0; i < p->niov; i++) {
		/* As the real transports: a piece no longer mapped is -EFAULT. */
		if (!ur_guarded_copy(k->buf + off, p->iov[i].iov_base, p->iov[i].iov_len)) {
			free(k);
			return -EFAULT;
		}
		off += (uint32_t)p->iov[i].iov_len;
	}
	off += p->pad;          /* calloc: pad bytes and ICRC are zero */
	k->len = off + 4;
	k->placed = p->placed;
	/* Nothing overtakes what is kept. */
	if (net.park || t_release_kept() == -EAGAIN) {
		UT_CHECK(net.nkept < T_KEPT_MAX);
		if (net.nkept == T_KEPT_MAX) {
			free(k);
			return -EAGAIN;
		}
		net.kept[net.nkept++] = k;
	} else if (t_queue(k)) {
		free(k);
		return -ENOMEM;
	}
	net.sent++;
	if (net.on_send)
		net.on_send(k);
	return 0;
}

static inline int t_xport_resolve(struct ur_xport *x, const union ibv_gid *sgid, unsigned ifindex,
			   const union ibv_gid *dgid, uint32_t dqpn, struct ur_path *path)
{
	return 0;   /* the set fills in path->xport */
}

static inline int t_xport_mcast(struct ur_xport *x, const union ibv_gid *gid, unsigned ifindex, bool join)
{
	return 0;
}

/* Local messages (struct ur_xport_ops.local_msg), queued like packets. */
struct t_lmsg {
	pid_t pid;
	uint32_t len;
	uint8_t buf[sizeof(struct ur_xrc_msg) + 4096];
};

#define T_LMSG_MAX 64
static struct {
	struct t_lmsg *q[T_LMSG_MAX];
	unsigned n;
	int fail;                    /* -errno to refuse with, 0: accept */
} lnet;

static inline int t_xport_local_msg(struct ur_xport *x, pid_t pid, const struct iovec *iov,
				    int iovcnt)
{
	struct t_lmsg *m;

	(void)x;
	if (lnet.fail)
		return lnet.fail;
	if (lnet.n == T_LMSG_MAX)
		return -EAGAIN;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->pid = pid;
	for (int i = 0; i < iovcnt; i++) {
		UT_CHECK(m->len + iov[i].iov_len <= sizeof(m->buf));
		if (m->len + iov[i].iov_len > sizeof(m->buf)) {
			free(m);
			return -EMSGSIZE;
		}
		memcpy(m->buf + m->len, iov[i].iov_base, iov[i].iov_len);
		m->len += (uint32_t)iov[i].iov_len;
	}
	lnet.q[lnet.n++] = m;
	return 0;
}

/* One copy between the sides, both in this process: off unless a test
 * turns it on (t_onecopy.fetch, .place); counts what it copied.  The responder checks
 * the key as it would for any placed request. */
static struct {
	bool fetch, place;           /* each direction on */
	int refuse;                  /* an errno to refuse with meanwhile (ENOENT: not published) */
	unsigned fetches, places;
} t_onecopy;

static inline int t_xport_copy(bool fetch, uint64_t va, const struct iovec *iov, int niov)
{
	uint8_t *remote = (uint8_t *)(uintptr_t)va;

	if (!(fetch ? t_onecopy.fetch : t_onecopy.place))
		return -EOPNOTSUPP;
	if (t_onecopy.refuse)
		return -t_onecopy.refuse;
	for (int i = 0; i < niov; i++) {
		if (fetch)
			memcpy(iov[i].iov_base, remote, iov[i].iov_len);
		else
			memcpy(remote, iov[i].iov_base, iov[i].iov_len);
		remote += iov[i].iov_len;
	}
	if (fetch)
		t_onecopy.fetches++;
	else
		t_onecopy.places++;
	return 0;
}

static inline int t_xport_fetch(struct ur_xport *x, const struct ur_path *path, uint32_t dqpn,
				uint32_t rkey, uint64_t va, const struct iovec *iov, int niov,
				uint64_t len)
{
	(void)x, (void)path, (void)dqpn, (void)rkey, (void)len;
	return t_xport_copy(true, va, iov, niov);
}

static inline int t_xport_place(struct ur_xport *x, const struct ur_path *path, uint32_t dqpn,
				uint32_t rkey, uint64_t va, const struct iovec *iov, int niov,
				uint64_t len)
{
	(void)x, (void)path, (void)dqpn, (void)rkey, (void)len;
	return t_xport_copy(false, va, iov, niov);
}

static const struct ur_xport_ops t_xport_ops = {
	.name = "test",
	.send = t_xport_send,
	.flush = t_xport_flush,
	.flush_kept = t_xport_flush_kept,
	.peer_behind = t_xport_peer_behind,
	.place = t_xport_place,
	.fetch = t_xport_fetch,
	.resolve = t_xport_resolve,
	.mcast = t_xport_mcast,
	.local_msg = t_xport_local_msg,
};

/* The test's transports: the fake alone.  The stack is made with them at
 * the first reset. */
static struct ur_xports t_xports;

static inline struct ur_stack *t_stack(void)
{
	t_xports.x[0] = &net.x;
	t_xports.n = 1;
	net.x.ops = &t_xport_ops;
	return ut_stack_with(&t_xports);
}

/* Local message i, parsed (a message uroce sent must parse). */
static inline struct ur_xrc_msg t_lmsg(unsigned i)
{
	struct ur_xrc_msg m;
	const uint8_t *pay;

	memset(&m, 0, sizeof(m));
	UT_CHECK(i < lnet.n);
	if (i < lnet.n)
		UT_EQ(ur_xrc_msg_parse(lnet.q[i]->buf, lnet.q[i]->len, &m, &pay), 0);
	return m;
}

static inline void t_lmsg_drop(unsigned i)
{
	if (i >= lnet.n)
		return;
	free(lnet.q[i]);
	memmove(&lnet.q[i], &lnet.q[i + 1], (lnet.n - i - 1) * sizeof(lnet.q[0]));
	lnet.n--;
}

/* Hands local message i to the stack, as the receiving process's would. */
static inline void t_lmsg_deliver(unsigned i)
{
	struct t_lmsg *m;

	if (i >= lnet.n)
		return;
	m = lnet.q[i];
	memmove(&lnet.q[i], &lnet.q[i + 1], (lnet.n - i - 1) * sizeof(lnet.q[0]));
	lnet.n--;
	ur_recv_local_msg(t_stack(), m->buf, m->len);
	free(m);
}

/* Forgets queued packets and transport faults. */
static inline void t_net_reset(void)
{
	for (unsigned i = 0; i < net.n; i++)
		free(net.q[i]);
	net.n = 0;
	net.sent = 0;
	net.eagain_after = -1;
	net.eagain = false;
	net.eagain_calls = 0;
	net.fail_errno = 0;
	net.on_send = NULL;
	net.park = false;
	while (net.nkept)
		free(net.kept[--net.nkept]);
	net.flush_kept_calls = 0;
	net.behind = false;
	net.behind_self = false;
	t_stack();
	while (lnet.n)
		t_lmsg_drop(0);
	lnet.fail = 0;
	t_xrc_other_pid = 0;
	t_xrc_other_dead = false;
}

static inline unsigned t_count(void)
{
	return net.n;
}

static inline struct t_pkt *t_pkt(unsigned i)
{
	UT_CHECK(i < net.n);
	return i < net.n ? net.q[i] : NULL;
}

/* Parses queued packet i; a packet uroce sent must always parse. */
static inline struct ur_pkt_view t_view(unsigned i)
{
	struct ur_pkt_view v;
	struct t_pkt *k = t_pkt(i);

	memset(&v, 0, sizeof(v));
	if (!k)
		return v;
	UT_EQ(ur_pkt_parse(&v, k->buf, k->len), UR_PARSE_OK);
	return v;
}

static inline uint8_t t_op(unsigned i) { return i < net.n ? bth_opcode(net.q[i]->buf) : 0xff; }
static inline uint32_t t_psn(unsigned i) { return i < net.n ? bth_psn(net.q[i]->buf) : 0xffffffff; }
static inline uint32_t t_dqpn(unsigned i) { return i < net.n ? bth_qpn(net.q[i]->buf) : 0; }
static inline bool t_ackreq(unsigned i) { return i < net.n && bth_ackreq(net.q[i]->buf); }

/* AETH syndrome of an ACK / read response / atomic ACK (-1 if none). */
static inline int t_syn(unsigned i)
{
	struct ur_pkt_view v = t_view(i);
	const uint8_t *a = ur_pkt_hdr(&v, UR_HDR_AETH);

	return a ? aeth_syn(a) : -1;
}

static inline struct t_pkt *t_take(unsigned i)
{
	struct t_pkt *k = t_pkt(i);

	if (!k)
		return NULL;
	memmove(&net.q[i], &net.q[i + 1], (net.n - i - 1) * sizeof(*net.q));
	net.n--;
	return k;
}

static inline void t_drop(unsigned i)
{
	free(t_take(i));
}

/* A copy of queued packet i, left in the queue (for duplicates). */
static inline struct t_pkt *t_copy(unsigned i)
{
	struct t_pkt *k = t_pkt(i), *c = malloc(sizeof(*c));

	if (c && k)
		memcpy(c, k, sizeof(*c));
	return c;
}

/* A hand-built packet: BTH for opcode op, zeroed extension headers (fill
 * them through t_hdr()), payload and pad, zero ICRC. */
static inline struct t_pkt *t_build(uint8_t op, uint32_t dqpn, uint32_t psn, bool ackreq,
				    const void *payload, uint32_t paylen)
{
	const struct ur_opcode_info *info = &ur_opcode[op];
	uint8_t pad = (uint8_t)ur_pad_of(paylen);
	struct t_pkt *k = calloc(1, sizeof(*k));

	UT_CHECK(info->mask != 0);
	UT_CHECK(info->length + paylen + pad + 4u <= T_PKT_MAX);
	bth_init(k->buf, op, false, pad, UR_DEFAULT_PKEY, dqpn, ackreq, psn);
	if (paylen)
		memcpy(k->buf + info->length, payload, paylen);
	k->len = info->length + paylen + pad + 4;
	return k;
}

/* Header t of a raw packet (hand-built or captured). */
static inline uint8_t *t_hdr(struct t_pkt *k, enum ur_hdr_type t)
{
	const struct ur_opcode_info *info = &ur_opcode[bth_opcode(k->buf)];

	UT_CHECK(info->mask & ur_hdr_bit(t));
	return k->buf + info->offset[t];
}

/* Everything arrives from 127.0.0.1 (the GID every test QP talks to). */
static inline void t_meta(struct ur_rx_meta *m)
{
	struct in_addr lo = { htonl(INADDR_LOOPBACK) };

	memset(m, 0, sizeof(*m));
	ur_gid_from_v4(&m->sgid, lo);
	ur_gid_from_v4(&m->dgid, lo);
	m->hop_limit = 64;
}

/* Hands a packet to the stack's dispatch, as a transport would; frees it. */
static inline void t_inject(struct t_pkt *k)
{
	struct ur_rx_meta m;

	if (!k)
		return;
	t_meta(&m);
	m.placed = k->placed;
	ur_recv_packet(t_stack(), k->buf, k->len, &m);
	free(k);
}

static inline void t_deliver(unsigned i)
{
	if (getenv("T_TRACE") && i < net.n)
		fprintf(stderr, "  deliver %s psn 0x%x qpn 0x%x syn %d\n", ur_opcode_name(t_op(i)), t_psn(i), t_dqpn(i), t_syn(i));
	t_inject(t_take(i));
}

/* Delivers everything, oldest first, including what deliveries produce. */
static inline unsigned t_run(void)
{
	unsigned steps = 0;

	while (net.n && steps < 100000) {
		t_deliver(0);
		steps++;
	}
	UT_CHECK(steps < 100000);
	return steps;
}

/* ---- devices, QPs, memory ---------------------------------------------------- */

static struct ur_device *t_dev;

static inline struct ur_device *t_device(void)
{
	if (!t_dev)
		t_dev = ur_device_by_name("ut0");
	return t_dev;
}

/* A buffer with guard bytes on both sides; only [buf, buf + len) is
 * registered.  Guards and buffer start with a known pattern. */
#define T_GUARD 64

struct t_mem {
	uint8_t *raw;                /* T_GUARD + len + T_GUARD */
	uint8_t *buf;
	size_t len;
	struct ibv_mr *mr;
};

struct t_side {
	struct ur_context *ctx;
	struct ur_pd *pd;
	struct ur_cq *scq, *rcq;
	struct ur_srq *srq;
	struct ur_qp *qp;
	struct t_mem mem;            /* t_pair_open_mem's buffer, freed by t_pair_close */
};

struct t_opts {
	enum ibv_qp_type type;       /* IBV_QPT_RC (0 means RC) */
	enum ibv_mtu mtu;            /* 0: IBV_MTU_1024 */
	uint32_t a_psn, b_psn;       /* each side's first send PSN */
	int access;                  /* QP access flags; -1: none */
	uint8_t timeout;             /* 0: 20 (4 s, never reached: timers are manual) */
	uint8_t retry_cnt, rnr_retry;  /* 0: 7; T_ZERO: 0 */
	uint8_t min_rnr_timer;
	uint8_t rd_atomic;           /* 0: 16 */
	uint8_t dest_rd_atomic;      /* max_dest_rd_atomic at RTR; 0: rd_atomic */
	bool srq_b;                  /* B receives from an SRQ */
	bool b_rtr;                  /* B stays in RTR */
	bool sig_all;
	uint32_t max_wr;             /* 0: 64 */
	uint32_t max_sge;            /* 0: 4 */
	uint32_t max_inline;
	uint32_t cqe;                /* 0: 256 */
	bool rtr_only;               /* (t_connect) stop at RTR */
	bool go_back;                /* packets unmarked: go-back-N as with a peer
				      * that does not retransmit selectively */
	bool ooo;                    /* both tolerate reordering (UROCE_OOO=1) */
};

#define T_ZERO 0x80

#define T_ALL_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static inline struct ibv_ah_attr t_av(void)
{
	struct ibv_ah_attr av = { .is_global = 1, .port_num = 1 };
	struct in_addr lo = { htonl(INADDR_LOOPBACK) };

	ur_gid_from_v4(&av.grh.dgid, lo);
	av.grh.sgid_index = 1;           /* ::ffff:127.0.0.1 on lo */
	av.grh.hop_limit = 64;
	return av;
}

static inline void t_wr_start(struct ibv_qp_ex *qpx)
{
	ur_qp_wr_start(to_uqp(&qpx->qp_base));
}

static inline int t_wr_complete(struct ibv_qp_ex *qpx)
{
	return -ur_qp_wr_complete(to_uqp(&qpx->qp_base));
}

static inline void t_wr_abort(struct ibv_qp_ex *qpx)
{
	ur_qp_wr_abort(to_uqp(&qpx->qp_base));
}

/* Installs the batch calls src/verbs installs around core's builders. */
static inline struct ur_qp *t_wr_ops(struct ur_qp *qp)
{
	if (qp) {
		qp->qpx.wr_start = t_wr_start;
		qp->qpx.wr_complete = t_wr_complete;
		qp->qpx.wr_abort = t_wr_abort;
	}
	return qp;
}

static inline int t_side_open(struct t_side *s, const struct t_opts *o, bool use_srq)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = o->cqe ? o->cqe : 256 };
	struct ibv_qp_init_attr_ex qa = { 0 };

	int ret;

	memset(s, 0, sizeof(*s));
	t_stack()->selective = !o->go_back;
	t_stack()->ooo = o->ooo;
	s->ctx = ut_context_open(t_device());
	if (!s->ctx)
		return -ENODEV;
	ret = ur_pd_alloc(s->ctx, &s->pd);
	if (!ret)
		ret = ur_cq_create(s->ctx, &ca, &s->scq);
	if (!ret)
		ret = ur_cq_create(s->ctx, &ca, &s->rcq);
	if (ret)
		return ret;
	if (use_srq) {
		struct ibv_srq_init_attr_ex sa = { 0 };

		sa.attr.max_wr = 64;
		sa.attr.max_sge = 4;
		ret = ur_srq_create(s->ctx, s->pd, &sa, &s->srq);
		if (ret)
			return ret;
	}
	qa.qp_type = o->type ? o->type : IBV_QPT_RC;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qa.pd = &s->pd->ibpd;
	qa.send_cq = (struct ibv_cq *)&s->scq->ibcq;
	qa.recv_cq = (struct ibv_cq *)&s->rcq->ibcq;
	qa.srq = s->srq ? &s->srq->ibsrq : NULL;
	qa.sq_sig_all = o->sig_all;
	qa.cap.max_send_wr = o->max_wr ? o->max_wr : 64;
	qa.cap.max_recv_wr = o->max_wr ? o->max_wr : 64;
	qa.cap.max_send_sge = o->max_sge ? o->max_sge : 4;
	qa.cap.max_recv_sge = o->max_sge ? o->max_sge : 4;
	qa.cap.max_inline_data = o->max_inline;
	ret = ur_qp_create(s->ctx, &qa, &s->qp);
	if (!ret)
		t_wr_ops(s->qp);
	return ret;
}

static inline void t_side_close(struct t_side *s)
{
	if (s->qp)
		UT_EQ(ur_qp_destroy(s->qp), 0);
	if (s->srq)
		UT_EQ(ur_srq_destroy(s->srq), 0);
	if (s->scq)
		UT_EQ(ur_cq_destroy(s->scq), 0);
	if (s->rcq)
		UT_EQ(ur_cq_destroy(s->rcq), 0);
	if (s->pd)
		UT_EQ(ur_pd_dealloc(s->pd), 0);
	if (s->ctx)
		ur_context_close(s->ctx);
	memset(s, 0, sizeof(*s));
}

static inline int t_to_init(struct ur_qp *qp, int access)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	if (qp->type == IBV_QPT_UD) {
		a.qkey = 0x11111111;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = (unsigned)access;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	return ur_qp_modify(qp, &a, mask);
}

/* INIT -> RTR -> RTS towards dqpn; the path then leads to the fake transport. */
static inline int t_connect(struct ur_qp *qp, uint32_t dqpn, uint32_t rq_psn, uint32_t sq_psn,
		     const struct t_opts *o)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };
	int ret, mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;

	a.ah_attr = t_av();
	a.path_mtu = o->mtu ? o->mtu : IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = rq_psn;
	if (qp->type == IBV_QPT_RC || qp->type == IBV_QPT_XRC_RECV) {
		a.max_dest_rd_atomic = o->dest_rd_atomic ? o->dest_rd_atomic
				       : o->rd_atomic ? o->rd_atomic : 16;
		a.min_rnr_timer = o->min_rnr_timer;
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	ret = ur_qp_modify(qp, &a, mask);
	if (ret)
		return ret;
	if (qp->type == IBV_QPT_XRC_RECV || o->rtr_only)
		return 0;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (ur_qp_is_reliable(qp)) {
		a.timeout = o->timeout ? o->timeout : 20;
		a.retry_cnt = o->retry_cnt == T_ZERO ? 0 : o->retry_cnt ? o->retry_cnt : 7;
		a.rnr_retry = o->rnr_retry == T_ZERO ? 0 : o->rnr_retry ? o->rnr_retry : 7;
		a.max_rd_atomic = o->rd_atomic ? o->rd_atomic : 16;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return ur_qp_modify(qp, &a, mask);
}

static inline void t_pattern(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7 + (i >> 8));
}

static inline int t_mem_reg(struct t_mem *m, struct t_side *s, size_t len, int access, uint8_t seed)
{
	memset(m, 0, sizeof(*m));
	m->raw = malloc(len + 2 * T_GUARD);
	if (!m->raw)
		return -ENOMEM;
	m->buf = m->raw + T_GUARD;
	m->len = len;
	t_pattern(m->raw, len + 2 * T_GUARD, seed);
	m->mr = ibv_reg_mr_iova2(&s->pd->ibpd, m->buf, len, (uintptr_t)m->buf, (unsigned)access);
	UT_CHECK(m->mr != NULL);
	return m->mr ? 0 : -errno;
}

/* True if not one byte (guards included) differs from the pattern. */
static inline bool t_mem_intact(const struct t_mem *m, uint8_t seed)
{
	uint8_t *ref = malloc(m->len + 2 * T_GUARD);
	bool same;

	t_pattern(ref, m->len + 2 * T_GUARD, seed);
	same = !memcmp(ref, m->raw, m->len + 2 * T_GUARD);
	free(ref);
	return same;
}

/* True if everything but [buf + off, buf + off + len) still holds the
 * pattern: guards and the rest of the buffer were not written. */
static inline bool t_mem_intact_outside(const struct t_mem *m, uint8_t seed, size_t off, size_t len)
{
	size_t total = m->len + 2 * T_GUARD;
	uint8_t *ref = malloc(total);
	bool same;

	t_pattern(ref, total, seed);
	same = !memcmp(ref, m->raw, T_GUARD + off) &&
	       !memcmp(ref + T_GUARD + off + len, m->raw + T_GUARD + off + len,
		       total - (T_GUARD + off + len));
	free(ref);
	return same;
}

static inline void t_mem_free(struct t_mem *m)
{
	if (m->mr)
		UT_EQ(ibv_dereg_mr(m->mr), 0);
	free(m->raw);
	memset(m, 0, sizeof(*m));
}

struct t_pair {
	struct t_side a, b;
	struct t_opts o;
};

/* Two connected QPs: A -> B and B -> A, with o's settings. */
static inline int t_pair_open(struct t_pair *p, const struct t_opts *o)
{
	int access = o->access < 0 ? 0 : (o->access ? o->access : T_ALL_ACCESS);
	int ret;

	memset(p, 0, sizeof(*p));
	p->o = *o;
	t_net_reset();
	ret = t_side_open(&p->a, o, false);
	if (!ret)
		ret = t_side_open(&p->b, o, o->srq_b);
	if (!ret)
		ret = t_to_init(p->a.qp, access);
	if (!ret)
		ret = t_to_init(p->b.qp, access);
	if (!ret)
		ret = t_connect(p->a.qp, ur_qp_num(p->b.qp), o->b_psn, o->a_psn, o);
	if (!ret) {
		struct t_opts ob = *o;

		ob.rtr_only = o->b_rtr;
		ret = t_connect(p->b.qp, ur_qp_num(p->a.qp), o->a_psn, o->b_psn, &ob);
	}
	UT_EQ(ret, 0);
	return ret;
}

static inline void t_pair_close(struct t_pair *p)
{
	t_mem_free(&p->a.mem);
	t_mem_free(&p->b.mem);
	t_side_close(&p->a);
	t_side_close(&p->b);
	t_net_reset();
}

/* The scene most tests start from: a pair with a buffer on each side, A's
 * (a_len bytes, seed 1) for A's own use, B's (b_len bytes, seed 2) with
 * b_access; a length of 0 leaves that side without.  t_pair_close frees
 * them. */
static inline int t_pair_open_mem(struct t_pair *p, const struct t_opts *o, size_t a_len,
				  size_t b_len, int b_access)
{
	int ret = t_pair_open(p, o);

	if (!ret && a_len)
		ret = t_mem_reg(&p->a.mem, &p->a, a_len, IBV_ACCESS_LOCAL_WRITE, 1);
	if (!ret && b_len)
		ret = t_mem_reg(&p->b.mem, &p->b, b_len, b_access, 2);
	if (ret)
		t_pair_close(p);
	return ret;
}

/* Two pages registered as one region, the second then taken away (as UCX
 * unmaps buffers under a region its cache deregisters later): *gone is the
 * second page's start.  PROT_NONE faults as a hole does, and unlike a hole
 * no later mapping can fill it while the test runs. */
static inline struct ibv_mr *t_mem_reg_half_unmapped(struct t_side *s, int access, uint8_t **gone)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr;

	UT_CHECK(p != MAP_FAILED);
	if (p == MAP_FAILED)
		return NULL;
	memset(p, 0x5a, 2 * page);
	mr = ibv_reg_mr_iova2(&s->pd->ibpd, p, 2 * page, (uintptr_t)p, (unsigned)access);
	UT_CHECK(mr != NULL);
	mprotect(p + page, page, PROT_NONE);
	*gone = p + page;
	return mr;
}

/* Deregisters it and unmaps both pages. */
static inline void t_mem_free_half_unmapped(struct ibv_mr *mr)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p = mr->addr;

	UT_EQ(ibv_dereg_mr(mr), 0);
	munmap(p, 2 * page);
}

/* ---- posting and completions ----------------------------------------------- */

static inline int t_post_recv(struct t_side *s, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (s->srq)
		return ur_srq_post_recv(s->srq, &wr, &bad);
	return ur_qp_post_recv(s->qp, &wr, &bad);
}

static inline int t_post(struct ur_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;

	return ur_qp_post_send(qp, wr, &bad);
}

static inline int t_post_send(struct t_side *s, uint64_t wr_id, enum ibv_wr_opcode op,
		       void *addr, uint32_t len, uint32_t lkey, unsigned flags)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
				  .opcode = op, .send_flags = flags };

	return t_post(s->qp, &wr);
}

static inline int t_post_rdma(struct t_side *s, uint64_t wr_id, enum ibv_wr_opcode op,
		       void *addr, uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
				  .opcode = op, .send_flags = IBV_SEND_SIGNALED };

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (op == IBV_WR_RDMA_WRITE_WITH_IMM)
		wr.imm_data = htonl(0x1234abcd);
	return t_post(s->qp, &wr);
}

static inline int t_post_atomic(struct t_side *s, uint64_t wr_id, enum ibv_wr_opcode op,
			 void *addr, uint32_t lkey, uint64_t raddr, uint32_t rkey,
			 uint64_t cmp_add, uint64_t swap)
{
	struct ibv_sge sge = { (uintptr_t)addr, 8, lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
				  .opcode = op, .send_flags = IBV_SEND_SIGNALED };

	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = cmp_add;
	wr.wr.atomic.swap = swap;
	return t_post(s->qp, &wr);
}

/* The same from and into the buffers of t_pair_open_mem: off, a_off and
 * b_off count from the start of the side's, A's and B's buffer. */
static inline int t_post_recv_mem(struct t_side *s, uint64_t wr_id, size_t off, uint32_t len)
{
	return t_post_recv(s, wr_id, s->mem.buf + off, len, s->mem.mr->lkey);
}

static inline int t_post_send_mem(struct t_side *s, uint64_t wr_id, enum ibv_wr_opcode op,
				  size_t off, uint32_t len, unsigned flags)
{
	return t_post_send(s, wr_id, op, s->mem.buf + off, len, s->mem.mr->lkey, flags);
}

static inline int t_post_rdma_mem(struct t_pair *p, uint64_t wr_id, enum ibv_wr_opcode op,
				  size_t a_off, uint32_t len, size_t b_off)
{
	return t_post_rdma(&p->a, wr_id, op, p->a.mem.buf + a_off, len, p->a.mem.mr->lkey,
			   (uintptr_t)p->b.mem.buf + b_off, p->b.mem.mr->rkey);
}

static inline int t_post_atomic_mem(struct t_pair *p, uint64_t wr_id, enum ibv_wr_opcode op,
				    size_t a_off, size_t b_off, uint64_t cmp_add, uint64_t swap)
{
	return t_post_atomic(&p->a, wr_id, op, p->a.mem.buf + a_off, p->a.mem.mr->lkey,
			     (uintptr_t)p->b.mem.buf + b_off, p->b.mem.mr->rkey, cmp_add, swap);
}

static inline int t_poll(struct ur_cq *cq, struct ibv_wc *wc, int n)
{
	return ur_cq_poll(cq, n, wc);
}

/* Exactly one completion is queued on cq; it is returned in *wc. */
#define t_expect_wc(cq, wcp, id, st)                                         \
	do {                                                                 \
		int _n = t_poll((cq), (wcp), 1);                             \
		UT_EQ(_n, 1);                                                \
		if (_n == 1) {                                               \
			UT_EQ((wcp)->wr_id, (id));                           \
			UT_EQ((wcp)->status, (st));                          \
		}                                                            \
	} while (0)

/* The next receive at B (t_pair_open_mem) completes wr_id with len bytes:
 * A's, from a_off, now at b_off in B's buffer.  A macro, as t_expect_wc,
 * so a failure names the test's line. */
#define t_expect_recv(p, wcp, id, len, b_off, a_off)                        \
	do {                                                                 \
		t_expect_wc((p)->b.rcq, (wcp), (id), IBV_WC_SUCCESS);        \
		UT_EQ((wcp)->byte_len, (len));                               \
		UT_MEMEQ((p)->b.mem.buf + (b_off), (p)->a.mem.buf + (a_off), (len)); \
	} while (0)

static inline bool t_cq_empty(struct ur_cq *cq)
{
	struct ibv_wc wc;

	return ur_cq_poll(cq, 1, &wc) == 0;
}

/* Lets ns nanoseconds pass: every timer of every QP that is due by then
 * fires, through the engine's timer list as its thread would.  Packets
 * produced are queued. */
static inline void t_advance(uint64_t ns)
{
	t_clock_ns += ns;
	ur_engine_run_timers(t_stack()->engine, t_clock_ns);
}

/* Next async event on a context, without blocking; false if none. */
static inline bool t_async(struct ur_context *ctx, struct ibv_async_event *ev)
{
	int fl = fcntl(ctx->async.rfd, F_GETFL);
	int ret;

	fcntl(ctx->async.rfd, F_SETFL, fl | O_NONBLOCK);
	ret = ur_async_get(&ctx->async, ev);
	fcntl(ctx->async.rfd, F_SETFL, fl);
	return ret == 0;
}

/* Looks for an event of this type about this QP among the queued ones
 * (consuming all of them); returns how many matched. */
static inline int t_async_count(struct ur_context *ctx, enum ibv_event_type type, struct ur_qp *qp)
{
	struct ibv_async_event ev;
	int n = 0;

	while (t_async(ctx, &ev))
		if (ev.event_type == type && (!qp || ev.element.qp == &qp->qpx.qp_base))
			n++;
	return n;
}

#endif
