/* Failures of two-sided traffic and of the connection itself:
 *  - a SEND longer than the posted receive: IBV_WC_LOC_LEN_ERR at the
 *    receiver, IBV_WC_REM_INV_REQ_ERR at the sender, nothing written past
 *    the receive buffer (one packet or many);
 *  - RNR: no receive posted; rnr_retry 0 ends at once in
 *    IBV_WC_RNR_RETRY_EXC_ERR, rnr_retry 2 after its retries; rnr_retry 7
 *    (infinite) waits and succeeds once a receive is posted, with the data
 *    intact (also for RDMA WRITE with immediate, which consumes a receive);
 *  - an RNR wait (rnr_retry 7, RNR timer 0.64 ms) costs little CPU: the
 *    requester sleeps on the timer between tries;
 *  - a peer that is gone (destroyed QP, QP in error): IBV_WC_RETRY_EXC_ERR
 *    after the retries, within the bound timeout and retry_cnt imply, not a
 *    hang;
 *  - QP to ERROR: every outstanding receive and send (blocked in RNR
 *    waits) completes with IBV_WC_WR_FLUSH_ERR, in order, with its wr_id;
 *    so does what is posted afterwards;
 *  - RTR towards a GID the host has no route to: ibv_modify_qp fails at
 *    once with ENETUNREACH, as the kernel's route resolution at modify does,
 *    and the QP stays in INIT (then connects to a reachable peer); a UD QP,
 *    which has no address at RTR, reaches RTS there (run by name only).
 *
 *   send_errors DEVICE GID_INDEX [CASE...]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vt.h"

#define LW IBV_ACCESS_LOCAL_WRITE

static void send_too_long(struct vt_dev *d, uint32_t rlen, uint32_t slen, enum ibv_mtu mtu)
{
	struct vt_qp a, b;
	struct vt_qp_opts o = { .mtu = mtu };
	struct vt_buf src, dst;
	struct ibv_sge ss, rs;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	char what[128];
	size_t changed = 0;

	snprintf(what, sizeof(what), "SEND of %u bytes into a %u-byte receive (MTU %d)",
		 slen, rlen, 128 << mtu);
	vt_rc_pair(d, &a, &o, &b, &o);
	vt_buf_init(&src, d, slen, LW, 1);
	vt_buf_init(&dst, d, 65536, LW, 2);
	rs = vt_sge(&dst, 0, rlen);
	vt_post_recv(&b, 0x10, &rs, 1);
	ss = vt_sge(&src, 0, slen);
	wr = vt_wr(0x20, IBV_WR_SEND, &ss);
	vt_post_send(&a, &wr);
	if (vt_poll_one(b.rcq, &wc, 10, what)) {
		VT_EXPECT_STATUS("receiver", IBV_WC_LOC_LEN_ERR, wc.status);
		VT_EXPECT_EQ("receiver's wr_id", 0x10, wc.wr_id);
	}
	if (vt_poll_one(a.scq, &wc, 10, what)) {
		VT_EXPECT_STATUS("sender", IBV_WC_REM_INV_REQ_ERR, wc.status);
		VT_EXPECT_EQ("sender's wr_id", 0x20, wc.wr_id);
	}
	/* The receive buffer's content is undefined after the error; not one
	 * byte past it may change. */
	for (size_t i = VT_GUARD + rlen; i < dst.len + 2 * VT_GUARD; i++)
		changed += dst.base[i] != vt_pattern(dst.seed, i);
	for (size_t i = 0; i < VT_GUARD; i++)
		changed += dst.base[i] != vt_pattern(dst.seed, i);
	vt_check(!changed, "%s: no byte written outside the receive buffer (%zu changed)", what,
		 changed);
	vt_check(vt_qp_wait_state(&b, IBV_QPS_ERR, 5) == IBV_QPS_ERR,
		 "%s: the receiver's QP is in error", what);
	vt_qp_destroy(&a);
	vt_qp_destroy(&b);
	vt_buf_free(&src);
	vt_buf_free(&dst);
}

static void case_send_too_long(struct vt_dev *d)
{
	send_too_long(d, 100, 200, d->port_attr.active_mtu);
	send_too_long(d, 2048, 8192, IBV_MTU_1024);
	send_too_long(d, 0, 1, d->port_attr.active_mtu);
}

/* A send to a responder without receives; returns the sender's status
 * after at most seconds. */
static enum ibv_wc_status rnr(struct vt_dev *d, uint8_t rnr_retry, uint8_t min_rnr_timer,
			      double seconds, double *elapsed)
{
	struct vt_qp a, b;
	struct vt_qp_opts ao = { .rnr_retry = rnr_retry }, bo = { .min_rnr_timer = min_rnr_timer };
	struct vt_buf src;
	struct ibv_sge s;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	double t0;

	vt_rc_pair(d, &a, &ao, &b, &bo);
	vt_buf_init(&src, d, 64, LW, 1);
	s = vt_sge(&src, 0, 64);
	wr = vt_wr(0x30, IBV_WR_SEND, &s);
	t0 = vt_now();
	vt_post_send(&a, &wr);
	if (vt_poll(a.scq, &wc, 1, seconds) != 1)
		wc.status = (enum ibv_wc_status)-1;
	*elapsed = vt_now() - t0;
	vt_poll_none(b.rcq, 0.01, "the responder (no receive posted)");
	vt_qp_destroy(&a);
	vt_qp_destroy(&b);
	vt_buf_free(&src);
	return wc.status;
}

static void case_rnr_exceeded(struct vt_dev *d)
{
	double t;
	enum ibv_wc_status s;

	s = rnr(d, VT_ZERO, 1, 10, &t);
	vt_check(s == IBV_WC_RNR_RETRY_EXC_ERR, "rnr_retry 0, no receive: expected %s, saw %s (%.3f s)",
		 ibv_wc_status_str(IBV_WC_RNR_RETRY_EXC_ERR),
		 (int)s == -1 ? "no completion in 10 s" : ibv_wc_status_str(s), t);
	/* min_rnr_timer 14: 0.96 ms between tries. */
	s = rnr(d, 2, 14, 10, &t);
	vt_check(s == IBV_WC_RNR_RETRY_EXC_ERR, "rnr_retry 2, no receive: expected %s, saw %s (%.3f s)",
		 ibv_wc_status_str(IBV_WC_RNR_RETRY_EXC_ERR),
		 (int)s == -1 ? "no completion in 10 s" : ibv_wc_status_str(s), t);
	vt_check(t >= 0.0019, "rnr_retry 2 with 0.96 ms RNR timer: the sender waited (%.4f s >= 2 timer periods)", t);
}

/* rnr_retry 7: the sender keeps trying until a receive is posted. */
static void rnr_then_recv(struct vt_dev *d, enum ibv_wr_opcode op, uint32_t len, enum ibv_mtu mtu)
{
	struct vt_qp a, b;
	struct vt_qp_opts ao = { .rnr_retry = 7, .mtu = mtu }, bo = { .min_rnr_timer = 12, .mtu = mtu };
	struct vt_buf src, dst;
	struct ibv_sge ss, rs;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	char what[128];

	snprintf(what, sizeof(what), "%s of %u bytes, rnr_retry 7",
		 op == IBV_WR_SEND ? "SEND" : "RDMA WRITE with immediate", len);
	vt_rc_pair(d, &a, &ao, &b, &bo);
	vt_buf_init(&src, d, len, LW, 1);
	vt_buf_init(&dst, d, len, LW | IBV_ACCESS_REMOTE_WRITE, 2);
	ss = vt_sge(&src, 0, len);
	wr = vt_wr(0x40, op, &ss);
	wr.imm_data = htobe32(0x1234abcd);
	wr.wr.rdma.remote_addr = (uintptr_t)dst.p;
	wr.wr.rdma.rkey = dst.mr->rkey;
	vt_post_send(&a, &wr);
	vt_poll_none(a.scq, 0.3, "before a receive is posted, the sender");
	rs = vt_sge(&dst, 0, op == IBV_WR_SEND ? len : 0);
	vt_post_recv(&b, 0x41, &rs, op == IBV_WR_SEND ? 1 : 0);
	if (vt_poll_one(a.scq, &wc, 10, what))
		VT_EXPECT_STATUS("sender, after a receive was posted", IBV_WC_SUCCESS, wc.status);
	if (vt_poll_one(b.rcq, &wc, 10, what)) {
		VT_EXPECT_STATUS("receiver", IBV_WC_SUCCESS, wc.status);
		VT_EXPECT_EQ("receiver's byte_len", len, wc.byte_len);
		VT_EXPECT_EQ("receiver's opcode", op == IBV_WR_SEND ? IBV_WC_RECV : IBV_WC_RECV_RDMA_WITH_IMM,
			     wc.opcode);
		if (op != IBV_WR_SEND)
			VT_EXPECT_EQ("immediate data", 0x1234abcd, be32toh(wc.imm_data));
	}
	vt_check(!memcmp(dst.p, src.p, len), "%s: the data arrived intact", what);
	vt_qp_destroy(&a);
	vt_qp_destroy(&b);
	vt_buf_free(&src);
	vt_buf_free(&dst);
}

static void case_rnr_then_recv(struct vt_dev *d)
{
	rnr_then_recv(d, IBV_WR_SEND, 64, d->port_attr.active_mtu);
	rnr_then_recv(d, IBV_WR_SEND, 8192, IBV_MTU_1024);
	rnr_then_recv(d, IBV_WR_RDMA_WRITE_WITH_IMM, 8192, IBV_MTU_1024);
}

static double cpu_seconds(void)
{
	struct rusage r;

	getrusage(RUSAGE_SELF, &r);
	return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
	       (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

/* A SEND waiting for a receive (RNR, retried without end): the process's
 * CPU while it waits, both QPs and the engine thread included.  A storm
 * (retrying without waiting on the timer) would take a whole core; the
 * sanitizer builds run the same work several times slower. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RNR_WAIT_CPU_MAX 0.75
#else
#define RNR_WAIT_CPU_MAX 0.25
#endif
static void case_rnr_wait_cpu(struct vt_dev *d)
{
	struct vt_qp a, b;
	struct vt_qp_opts ao = { .rnr_retry = 7 }, bo = { .min_rnr_timer = 12 };   /* 0.64 ms */
	struct vt_buf src, dst;
	struct ibv_sge ss, rs;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	double c0, t0, cpu, wall;

	vt_rc_pair(d, &a, &ao, &b, &bo);
	vt_buf_init(&src, d, 64, LW, 1);
	vt_buf_init(&dst, d, 64, LW, 2);
	ss = vt_sge(&src, 0, 64);
	wr = vt_wr(0x60, IBV_WR_SEND, &ss);
	vt_post_send(&a, &wr);
	c0 = cpu_seconds();
	t0 = vt_now();
	vt_sleep(1.0);
	cpu = cpu_seconds() - c0;
	wall = vt_now() - t0;
	vt_check(cpu < RNR_WAIT_CPU_MAX * wall, "an RNR wait of %.1f s (RNR timer 0.64 ms, rnr_retry 7) "
		 "used %.1f %% of a core (allowed: under %.0f %%)", wall, 100 * cpu / wall,
		 100 * RNR_WAIT_CPU_MAX);
	rs = vt_sge(&dst, 0, 64);
	vt_post_recv(&b, 0x61, &rs, 1);
	if (vt_poll_one(a.scq, &wc, 10, "the SEND once a receive is posted"))
		VT_EXPECT_STATUS("the SEND after the RNR wait", IBV_WC_SUCCESS, wc.status);
	vt_qp_destroy(&a);
	vt_qp_destroy(&b);
	vt_buf_free(&src);
	vt_buf_free(&dst);
}

/* The peer's QP is gone or in error: the transport retries run out. */
static void peer_gone(struct vt_dev *d, bool destroy)
{
	struct vt_qp a, b;
	struct vt_qp_opts ao = { .timeout = 10, .retry_cnt = 2 };
	struct vt_buf src;
	struct ibv_sge s;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	const char *what = destroy ? "peer QP destroyed" : "peer QP in error";
	double t0;

	vt_rc_pair(d, &a, &ao, &b, NULL);
	vt_buf_init(&src, d, 64, LW, 1);
	if (destroy)
		vt_qp_destroy(&b);
	else
		vt_qp_to_error(&b);
	s = vt_sge(&src, 0, 64);
	wr = vt_wr(0x50, IBV_WR_SEND, &s);
	t0 = vt_now();
	vt_post_send(&a, &wr);
	if (vt_poll_one(a.scq, &wc, 30, what)) {
		/* IBA 9.7.6.1.3: the local ACK timeout 4.096 us * 2^10 = 4.2 ms
		 * is a minimum (a HCA may wait up to about 4 times it), and the
		 * request goes retry_cnt + 1 times: no sooner than 3 timeouts;
		 * no later than 4 times that, plus 2 s for a loaded machine. */
		double t = vt_now() - t0, lo = 3 * 4.096e-6 * 1024;

		VT_EXPECT_STATUS(what, IBV_WC_RETRY_EXC_ERR, wc.status);
		vt_check(t >= lo * 0.99 && t <= 4 * lo + 2.0,
			 "%s: the sender gave up after %.3f s, within the bound timeout 10 and "
			 "retry_cnt 2 imply (%.3f .. %.3f s)", what, t, lo, 4 * lo + 2.0);
	}
	vt_check(vt_qp_state(&a) == IBV_QPS_ERR, "%s: the sender's QP is in error", what);
	vt_qp_destroy(&a);
	if (!destroy)
		vt_qp_destroy(&b);
	vt_buf_free(&src);
}

static void case_retry_exceeded(struct vt_dev *d)
{
	peer_gone(d, true);
	peer_gone(d, false);
}

static void expect_flushed(struct ibv_cq *cq, uint64_t first, int n, const char *what)
{
	struct ibv_wc wc[64];
	int got = vt_poll(cq, wc, n, 10), bad = 0;

	if (!VT_EXPECT_EQ(what, n, got))
		return;
	for (int i = 0; i < got; i++) {
		if (wc[i].status != IBV_WC_WR_FLUSH_ERR || wc[i].wr_id != first + (uint64_t)i) {
			if (!bad++)
				vt_fail("%s: completion %d: wr_id 0x%llx status %s, expected wr_id 0x%llx %s",
					what, i, (unsigned long long)wc[i].wr_id,
					ibv_wc_status_str(wc[i].status),
					(unsigned long long)(first + (uint64_t)i),
					ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR));
		}
	}
	if (!bad)
		vt_ok("%s: all %d flushed in order with their wr_ids", what, n);
	vt_poll_none(cq, 0.05, what);
}

static void case_flush(struct vt_dev *d)
{
	struct ibv_cq *scq = ibv_create_cq(d->ctx, 64, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(d->ctx, 64, NULL, NULL, 0);
	struct vt_qp_opts ao = { .rnr_retry = 7, .send_cq = scq, .recv_cq = rcq };
	struct vt_qp_opts bo = { .min_rnr_timer = 20 };
	struct vt_qp a, b;
	struct vt_buf buf;
	struct ibv_sge s;
	struct ibv_send_wr wr;

	if (!scq || !rcq) {
		vt_fail("ibv_create_cq: %s", strerror(errno));
		return;
	}
	vt_rc_pair(d, &a, &ao, &b, &bo);
	vt_buf_init(&buf, d, 4096, LW, 1);
	s = vt_sge(&buf, 0, 64);
	/* Receives of a, and sends of a held up by RNR waits at b (which has
	 * no receive). */
	for (int i = 0; i < 8; i++)
		vt_post_recv(&a, 0x100 + (uint64_t)i, &s, 1);
	for (int i = 0; i < 5; i++) {
		wr = vt_wr(0x200 + (uint64_t)i, IBV_WR_SEND, &s);
		vt_post_send(&a, &wr);
	}
	vt_poll_none(scq, 0.2, "sends waiting on RNR");
	if (vt_qp_to_error(&a))
		vt_fail("ibv_modify_qp(ERR): %s", strerror(errno));
	expect_flushed(rcq, 0x100, 8, "receives outstanding when the QP went to ERR");
	expect_flushed(scq, 0x200, 5, "sends outstanding when the QP went to ERR (the first in an RNR wait)");
	/* In the error state, posting works and completes as flushed. */
	if (vt_post_recv(&a, 0x300, &s, 1))
		vt_fail("ibv_post_recv in ERR: %s", strerror(errno));
	wr = vt_wr(0x400, IBV_WR_SEND, &s);
	if (vt_post_send(&a, &wr))
		vt_fail("ibv_post_send in ERR: %s", strerror(errno));
	expect_flushed(rcq, 0x300, 1, "a receive posted in ERR");
	expect_flushed(scq, 0x400, 1, "a send posted in ERR");
	vt_poll_none(b.rcq, 0.01, "the peer");
	vt_qp_destroy(&a);
	vt_qp_destroy(&b);
	vt_buf_free(&buf);
	ibv_destroy_cq(scq);
	ibv_destroy_cq(rcq);
}

/* Whether the kernel has a route to gid: a route lookup (connect on a UDP
 * socket), no packet sent. */
static bool host_routes_to(const union ibv_gid *gid)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	struct sockaddr_in s4 = { .sin_family = AF_INET, .sin_port = htons(4791) };
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6, .sin6_port = htons(4791) };
	bool v4 = memcmp(gid->raw, v4mapped, sizeof(v4mapped)) == 0;
	int fd = socket(v4 ? AF_INET : AF_INET6, SOCK_DGRAM, 0);
	bool ok;

	memcpy(&s4.sin_addr, &gid->raw[12], 4);
	memcpy(&s6.sin6_addr, gid->raw, 16);
	ok = fd >= 0 && connect(fd, v4 ? (struct sockaddr *)&s4 : (struct sockaddr *)&s6,
				v4 ? sizeof(s4) : sizeof(s6)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

/* RTR towards ::ffff:192.0.2.1 (TEST-NET-1) or 2001:db8::1 (the
 * documentation prefix), whichever family the device's GID is.  Run by
 * name only, in a namespace without a default route (errors.test.sh);
 * where the host does route there, it fails rather than check nothing. */
static void case_rtr_no_route(struct vt_dev *d)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	struct vt_qp_opts ud = { .type = IBV_QPT_UD };
	union ibv_gid far;
	struct vt_qp a, b, u;
	char g[INET6_ADDRSTRLEN];
	int ret;

	memset(&far, 0, sizeof(far));
	if (memcmp(d->gid.raw, v4mapped, sizeof(v4mapped)) == 0) {
		memcpy(far.raw, v4mapped, sizeof(v4mapped));
		inet_pton(AF_INET, "192.0.2.1", &far.raw[12]);
	} else {
		inet_pton(AF_INET6, "2001:db8::1", far.raw);
	}
	inet_ntop(AF_INET6, far.raw, g, sizeof(g));
	if (host_routes_to(&far)) {
		vt_fail("the host has a route to %s: run this case in a "
			"namespace without a default route", g);
		return;
	}
	vt_qp_create(&a, d, NULL);
	vt_qp_create(&b, d, NULL);
	ret = vt_qp_connect_remote(&a, 0x123, &far);
	vt_check(ret == ENETUNREACH, "RC QP to RTR towards %s (no route): "
		 "ibv_modify_qp fails with ENETUNREACH (saw %s)", g, ret ? strerror(ret) : "success");
	VT_EXPECT_EQ("the QP stays in INIT", IBV_QPS_INIT, vt_qp_state(&a));
	ret = vt_qp_connect(&a, &b);
	vt_check(ret == 0, "the same QP then connects to a reachable peer (%s)",
		 ret ? strerror(ret) : "ok");
	vt_qp_destroy(&a);
	vt_qp_destroy(&b);
	/* UD: no address at RTR, nothing to resolve. */
	vt_qp_create(&u, d, &ud);
	ret = vt_qp_connect_remote(&u, 0, &far);
	vt_check(ret == 0, "a UD QP reaches RTS all the same (%s)",
		 ret ? strerror(ret) : "ok");
	vt_qp_destroy(&u);
}

static const struct vt_case cases[] = {
	{ "send_too_long", case_send_too_long },
	{ "rnr_exceeded", case_rnr_exceeded },
	{ "rnr_then_recv", case_rnr_then_recv },
	{ "rnr_wait_cpu", case_rnr_wait_cpu },
	{ "retry_exceeded", case_retry_exceeded },
	{ "flush", case_flush },
	{ "rtr_no_route", case_rtr_no_route, true },
	{ NULL, NULL },
};

VT_MAIN(cases)
