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
 * The QPs, their memory, posting and completions are in pair.h.
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

/* The look at the peer's process (rel/starved.c) counted: it judges by
 * two looks a QP timeout apart, so each period must ask it, whatever else
 * holds the retry back.  t_starved_says makes it answer "kept off the
 * CPU", t_peer_runs "runs" (no process of the test is ever found). */
#include "rel/starved.h"
static unsigned t_starved_asks;
static bool t_starved_says, t_peer_runs;
static inline enum ur_peer_cpu t_peer_cpu_look(struct ur_qp *qp, uint64_t now, uint64_t qpt)
{
	enum ur_peer_cpu v = ur_peer_cpu_look(qp, now, qpt);

	t_starved_asks++;
	if (t_starved_says)
		return UR_PEER_CPU_STARVED;
	return t_peer_runs ? UR_PEER_CPU_RUNS : v;
}
#define ur_peer_cpu_look t_peer_cpu_look
#include "rel/timers.c"
#undef ur_peer_cpu_look
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
static inline int t_registry_lookup(const struct ur_registry *r, uint32_t qpn,
				    struct ur_reg_owner *o)
{
	if (!t_xrc_other_pid)
		return ur_registry_lookup(r, qpn, o);
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

/* Lets ns nanoseconds pass: every timer of every QP that is due by then
 * fires, through the engine's timer list as its thread would.  Packets
 * produced are queued. */
static inline void t_advance(uint64_t ns)
{
	t_clock_ns += ns;
	ur_engine_run_timers(t_stack()->engine, t_clock_ns);
}

/* The transport takes packets again (no EAGAIN, none planned) and the
 * engine says so, as it does when a full socket drains. */
static inline void t_writable(void)
{
	net.eagain = false;
	net.eagain_after = -1;
	ur_progress_resume(t_stack());
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
