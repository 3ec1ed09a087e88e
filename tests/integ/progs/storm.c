/* RC under load between two processes: a stream of random messages on one
 * or many QPs, every byte and every atomic result checked.
 *
 *   storm DEVICE GID_INDEX -s PORT                                 the server
 *   storm DEVICE GID_INDEX -c HOST PORT [--qps N] [--messages N | --seconds S]
 *         [--max-size BYTES] [--depth D] [--seed S] [--events]     the client
 *         [--timeout T]   (the QPs' local ACK timeout exponent, default 14)
 *
 * The client drives; the server only receives and checks.  Message number
 * i of QP q is a function of (seed, q, i): its operation (SEND, SEND with
 * immediate, WRITE, WRITE with immediate, READ, fetch-and-add,
 * compare-and-swap), its length (1 B .. max-size, log-uniform: every size
 * class is as likely) and its bytes, so both sides know what must arrive
 * without telling each other.  What is checked:
 *   - every work request completes successfully;
 *   - the server's receives come in order, exactly once: each is the next
 *     receive-consuming message of its QP, with its opcode, length,
 *     immediate (the message number) and bytes (SEND);
 *   - every WRITE's bytes, read back right after it by an RDMA READ on the
 *     same QP (which the responder executes after the WRITE; each WRITE
 *     goes to a slot no READ in flight reads);
 *   - every READ's bytes (a region the server filled with a known pattern);
 *   - every fetch-and-add and compare-and-swap returns exactly what the
 *     ones before it leave, and the server's words end at the number of each
 *     (an atomic executed twice would show).
 * With --events the server sleeps on a completion channel when its CQ is
 * empty instead of polling.  The client prints the goodput: every work request's payload (a WRITE's
 * read-back counts) per second.  Run it with UROCE_FAULTS in both
 * processes' environment to check all this under loss, reordering,
 * duplication and corruption.
 *
 * STORM_ON_FAIL in the environment is a shell command started once, at
 * the first failure, beside the run, which waits for it before it tears
 * its QPs down: a test dumps both sides there (tests/integ/storm_lib.sh).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vt.h"
#include "vt_peer.h"

enum op { OP_SEND, OP_SEND_IMM, OP_WRITE, OP_WRITE_IMM, OP_READ, OP_FAA, OP_CAS };
static const char *const op_name[] = {
	[OP_SEND] = "SEND", [OP_SEND_IMM] = "SEND with immediate", [OP_WRITE] = "WRITE",
	[OP_WRITE_IMM] = "WRITE with immediate", [OP_READ] = "READ",
	[OP_FAA] = "fetch-and-add", [OP_CAS] = "compare-and-swap",
};

#define STORM_MAGIC 0x53544f52u
/* WRITE targets per QP on the server: each WRITE takes the next, in turn,
 * so that none is written again while a READ of it may be outstanding.  The
 * IBA lets a responder execute a WRITE before it reads the data of a READ
 * that came earlier (uroce does: READ responses are built as they are
 * sent); only a fence would stop it, and this test wants the pipeline. */
#define WSLOTS (2 * cfg.depth)
#define MAX_QPS 4096
#define STALL_SECONDS 60.0  /* no progress this long: a hang, not slowness */
#define MAX_REPORTS 10      /* mismatches printed before giving up */

/* What the client tells the server first. */
#define STORM_EVENTS 1u   /* the server sleeps on a completion channel */

struct hello {
	uint32_t magic, qps, depth, max_size;
	uint32_t flags, pad;
	uint64_t seed;
	union ibv_gid gid;
};

/* And what the server answers. */
struct layout {
	union ibv_gid gid;
	uint64_t target;        /* per QP: WSLOTS write slots, then the FAA and CAS words */
	uint64_t stride;
	uint64_t read_area;     /* 2 * max_size bytes of the read pattern */
	uint32_t rkey, pad;
};

static struct hello cfg;

/* ---- what message i of QP q is ------------------------------------------ */

struct plan {
	enum op op;
	uint32_t len;
	uint32_t roff;          /* READ: offset in the read area */
	uint64_t key;           /* the message's bytes */
};

static struct plan plan_of(uint32_t q, uint64_t i)
{
	uint64_t h = vt_mix(cfg.seed ^ vt_mix(((uint64_t)q << 40) ^ i));
	unsigned pick = (unsigned)(h % 100), bits = 0;
	struct plan p;

	p.op = pick < 20 ? OP_SEND : pick < 35 ? OP_SEND_IMM : pick < 55 ? OP_WRITE :
	       pick < 70 ? OP_WRITE_IMM : pick < 90 ? OP_READ : pick < 95 ? OP_FAA : OP_CAS;
	while ((2ull << bits) <= cfg.max_size)
		bits++;
	/* A power of two chosen uniformly, then a length uniform within it. */
	{
		unsigned e = (unsigned)((h >> 8) % (bits + 1));
		uint64_t lo = 1ull << e, span = lo;

		p.len = (uint32_t)(lo + (h >> 16) % span);
		if (p.len > cfg.max_size)
			p.len = cfg.max_size;
	}
	if (p.op == OP_FAA || p.op == OP_CAS)
		p.len = 8;
	/* Mostly word-aligned, where checking is fast; some not. */
	p.roff = (uint32_t)(vt_mix(h) % ((uint64_t)cfg.max_size + 1));
	if (h & 0xe000)
		p.roff &= ~7u;
	p.key = vt_mix(h ^ 0x5a5a5a5aull);
	return p;
}

static bool takes_receive(enum op op)
{
	return op == OP_SEND || op == OP_SEND_IMM || op == OP_WRITE_IMM;
}

static const uint64_t read_key = 0x0123456789abcdefull;

/* ---- both sides ---------------------------------------------------------- */

static struct vt_dev dev;
static struct vt_qp *qps;
static struct ibv_cq *cq;
static struct ibv_comp_channel *channel;
static int reports;
static uint64_t events;     /* completion events the server waited for */

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p) {
		fprintf(stderr, "storm: out of memory (%zu x %zu bytes)\n", n, size);
		exit(2);
	}
	return p;
}

static uint8_t *reg_area(size_t len, int access, struct ibv_mr **mr)
{
	uint8_t *p = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);

	if (!p) {
		fprintf(stderr, "storm: cannot allocate %zu bytes\n", len);
		exit(2);
	}
	memset(p, 0, len);
	*mr = ibv_reg_mr(dev.pd, p, len, access);
	if (!*mr) {
		fprintf(stderr, "storm: ibv_reg_mr(%zu bytes): %s\n", len, strerror(errno));
		exit(2);
	}
	return p;
}

/* The QPs' local ACK timeout (IBA exponent: 4.096 us << t); 0: vt's 14. */
static uint8_t qp_timeout;

static void make_qps(uint32_t sq, uint32_t rq)
{
	struct vt_qp_opts o = { .sq = sq, .rq = rq, .max_sge = 1, .max_rd_atomic = 16,
				.timeout = qp_timeout };

	cq = ibv_create_cq(dev.ctx, (int)(cfg.qps * (sq + rq)), NULL, channel, 0);
	if (!cq) {
		fprintf(stderr, "storm: ibv_create_cq(%u): %s\n", cfg.qps * (sq + rq), strerror(errno));
		exit(2);
	}
	o.send_cq = o.recv_cq = cq;
	qps = xcalloc(cfg.qps, sizeof(*qps));
	for (uint32_t q = 0; q < cfg.qps; q++)
		vt_qp_create(&qps[q], &dev, &o);
}

static void connect_qps(const uint32_t *peer_qpn, const union ibv_gid *gid)
{
	uint32_t q;
	int ret = vt_qps_connect_remote(qps, cfg.qps, peer_qpn, gid, &q);

	if (ret) {
		fprintf(stderr, "storm: connecting QP %u: %s\n", q, strerror(ret));
		exit(2);
	}
}

/* A mismatch: one FAIL line; after MAX_REPORTS the run stops. */
static double t_start;   /* when the program started: vt_lag_watch's zero */

/* The first failure starts STORM_ON_FAIL beside the run, which goes on
 * as it was (stopping this thread to wait would change what the command
 * sees: this thread's polls receive packets); the exit waits for it. */
static pid_t on_fail_pid;

static void on_fail_wait(void)
{
	int status;

	if (on_fail_pid > 0 && waitpid(on_fail_pid, &status, 0) == on_fail_pid &&
	    (!WIFEXITED(status) || WEXITSTATUS(status)))
		fprintf(stderr, "storm: STORM_ON_FAIL ended with status 0x%x\n", status);
	on_fail_pid = 0;
}

static void on_fail(void)
{
	static bool ran;
	const char *cmd = getenv("STORM_ON_FAIL");

	if (ran || !cmd || !*cmd)
		return;
	ran = true;
	on_fail_pid = fork();
	if (on_fail_pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	if (on_fail_pid < 0)
		fprintf(stderr, "storm: STORM_ON_FAIL not started: %s\n", strerror(errno));
	else
		atexit(on_fail_wait);
}

static void mismatch(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void mismatch(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* The time, to set beside the peers' wake-up lags (vt_lag_watch). */
	vt_fail("%s (at %.3f s)", msg, vt_now() - t_start);
	on_fail();
	if (++reports >= MAX_REPORTS) {
		vt_fail("%d mismatches: giving up", reports);
		exit(1);
	}
}

/* ---- the server ------------------------------------------------------------ */

/* Sleeps until the CQ has something or the client's socket fd speaks (at
 * most 50 ms), as a program waiting on a completion channel does. */
static bool wait_event(int fd)
{
	struct pollfd pfd[2] = { { .fd = channel->fd, .events = POLLIN },
				 { .fd = fd, .events = POLLIN } };
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	if (ibv_req_notify_cq(cq, 0)) {
		vt_fail("server: ibv_req_notify_cq: %s", strerror(errno));
		return false;
	}
	if (poll(pfd, 2, 50) > 0 && (pfd[0].revents & POLLIN)) {
		if (ibv_get_cq_event(channel, &ev_cq, &ev_ctx)) {
			vt_fail("server: ibv_get_cq_event: %s", strerror(errno));
			return false;
		}
		ibv_ack_cq_events(ev_cq, 1);
		events++;
	}
	return true;
}

/* What the server's steps share. */
static struct {
	uint8_t *recv_area, *target;      /* the receive slots; the region WRITEs and atomics hit */
	struct ibv_mr *rmr, *tmr;
	size_t stride;                    /* one QP's part of target */
	uint64_t *count, *next, *got;     /* per QP: messages sent (the client says), next, received */
	uint64_t expect_total, got_total;
	bool counts_known;
	double last;                      /* when a receive last completed */
} srv;

/* One receive completion: it must be the next message its QP takes a
 * receive for, with its length, immediate and bytes; its receive is
 * posted again.  Returns 2 if that fails, else 0. */
static int take_receive(const struct ibv_wc *wc)
{
	uint32_t q = (uint32_t)(wc->wr_id >> 32), s = (uint32_t)wc->wr_id;
	uint8_t *buf = srv.recv_area + ((size_t)q * cfg.depth + s) * cfg.max_size;
	struct plan p = plan_of(q, srv.next[q]);
	bool imm = p.op != OP_SEND;
	enum ibv_wc_opcode want = p.op == OP_WRITE_IMM ? IBV_WC_RECV_RDMA_WITH_IMM
						 : IBV_WC_RECV;
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = cfg.max_size,
			       .lkey = srv.rmr->lkey };
	long d;

	if (wc->status != IBV_WC_SUCCESS) {
		mismatch("server: QP %u: receive for message %llu completed with %s", q,
			 (unsigned long long)srv.next[q], ibv_wc_status_str(wc->status));
		return 0;
	}
	if (wc->opcode != want || wc->byte_len != p.len ||
	    !!(wc->wc_flags & IBV_WC_WITH_IMM) != imm ||
	    (imm && ntohl(wc->imm_data) != (uint32_t)srv.next[q]))
		mismatch("server: QP %u: expected message %llu (%s, %u bytes%s), got opcode "
			 "%d, %u bytes, immediate %s %u", q, (unsigned long long)srv.next[q],
			 op_name[p.op], p.len, imm ? ", immediate" : "", wc->opcode,
			 wc->byte_len, wc->wc_flags & IBV_WC_WITH_IMM ? "" : "(none)",
			 ntohl(wc->imm_data));
	else if (p.op != OP_WRITE_IMM && (d = vt_stream_diff(buf, p.len, p.key, 0)) >= 0)
		mismatch("server: QP %u: message %llu (%s, %u bytes): byte %ld differs", q,
			 (unsigned long long)srv.next[q], op_name[p.op], p.len, d);
	srv.got[q]++;
	srv.got_total++;
	do
		srv.next[q]++;
	while (!takes_receive(plan_of(q, srv.next[q]).op));
	if (vt_post_recv(&qps[q], wc->wr_id, &sge, 1)) {
		fprintf(stderr, "storm: ibv_post_recv: %s\n", strerror(errno));
		return 2;
	}
	return 0;
}

/* Every QP's two atomic words count its atomics: none ran twice. */
static void check_atomic_words(void)
{
	uint64_t faa_bad = 0, cas_bad = 0, faa_total = 0, cas_total = 0;

	for (uint32_t q = 0; q < cfg.qps; q++) {
		uint64_t faa = 0, cas = 0, wf, wc;

		for (uint64_t i = 0; i < srv.count[q]; i++) {
			enum op op = plan_of(q, i).op;

			faa += op == OP_FAA;
			cas += op == OP_CAS;
		}
		memcpy(&wf, srv.target + q * srv.stride + WSLOTS * (size_t)cfg.max_size, 8);
		memcpy(&wc, srv.target + q * srv.stride + WSLOTS * (size_t)cfg.max_size + 8, 8);
		faa_bad += wf != faa;
		cas_bad += wc != cas;
		faa_total += faa;
		cas_total += cas;
		if (wf != faa || wc != cas)
			mismatch("server: QP %u: the atomic words are %llu (FAA) and %llu (CAS) after "
				 "%llu and %llu of them", q, (unsigned long long)wf,
				 (unsigned long long)wc, (unsigned long long)faa,
				 (unsigned long long)cas);
	}
	vt_check(!faa_bad && !cas_bad, "server: every QP's atomic words equal the number of "
		 "its atomics (%llu fetch-and-add, %llu compare-and-swap in all): none executed twice",
		 (unsigned long long)faa_total, (unsigned long long)cas_total);
}

/* Receives and checks until the client has said how many it sent (over
 * fd) and all of those that take a receive have come.  Returns 0 then,
 * else the exit code. */
static int receive_all(int fd)
{
	while (!srv.counts_known || srv.got_total < srv.expect_total) {
		struct ibv_wc wc[64];
		int n = ibv_poll_cq(cq, 64, wc);

		for (int k = 0; k < n; k++)
			if (take_receive(&wc[k]))
				return 2;
		if (n > 0)
			srv.last = vt_now();
		if (!n && channel && !wait_event(fd))
			return 1;
		if (!srv.counts_known && !n && vt_peer_spoke(fd)) {
			vt_xfer(fd, srv.count, cfg.qps * sizeof(*srv.count), false);
			srv.counts_known = true;
			for (uint32_t q = 0; q < cfg.qps; q++)
				for (uint64_t i = 0; i < srv.count[q]; i++)
					srv.expect_total += takes_receive(plan_of(q, i).op);
		}
		if (n < 0 || vt_now() - srv.last > STALL_SECONDS) {
			on_fail();
			vt_fail("server: no receive completion for %.0f s: %llu of %s%llu arrived",
				STALL_SECONDS, (unsigned long long)srv.got_total,
				srv.counts_known ? "" : "at least ", (unsigned long long)srv.expect_total);
			return 1;
		}
	}
	return 0;
}

static int serve(const char *port)
{
	int fd = vt_tcp_accept(port);
	uint32_t *qpn, *peer_qpn;
	struct layout lay = { 0 };
	int ret;

	srv.last = vt_now();

	vt_xfer(fd, &cfg, sizeof(cfg), false);
	if (cfg.magic != STORM_MAGIC || !cfg.qps || cfg.qps > MAX_QPS || !cfg.depth ||
	    !cfg.max_size || cfg.max_size > (1u << 30)) {
		fprintf(stderr, "storm: a client spoke nonsense (magic 0x%x, %u QPs)\n", cfg.magic,
			cfg.qps);
		return 2;
	}
	srv.stride = (size_t)WSLOTS * cfg.max_size + 64;
	srv.recv_area = reg_area((size_t)cfg.qps * cfg.depth * cfg.max_size, IBV_ACCESS_LOCAL_WRITE,
				 &srv.rmr);
	srv.target = reg_area(srv.stride * cfg.qps + 2ull * cfg.max_size,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC, &srv.tmr);
	vt_stream_fill(srv.target + srv.stride * cfg.qps, 2ull * cfg.max_size, read_key, 0);
	if (cfg.flags & STORM_EVENTS) {
		channel = ibv_create_comp_channel(dev.ctx);
		if (!channel) {
			fprintf(stderr, "storm: ibv_create_comp_channel: %s\n", strerror(errno));
			return 2;
		}
	}
	make_qps(4, cfg.depth);

	qpn = xcalloc(cfg.qps, sizeof(*qpn));
	peer_qpn = xcalloc(cfg.qps, sizeof(*peer_qpn));
	srv.count = xcalloc(cfg.qps, sizeof(*srv.count));
	srv.next = xcalloc(cfg.qps, sizeof(*srv.next));
	srv.got = xcalloc(cfg.qps, sizeof(*srv.got));
	vt_xfer(fd, peer_qpn, cfg.qps * sizeof(*peer_qpn), false);
	connect_qps(peer_qpn, &cfg.gid);
	for (uint32_t q = 0; q < cfg.qps; q++) {
		qpn[q] = qps[q].qp->qp_num;
		for (uint32_t s = 0; s < cfg.depth; s++) {
			struct ibv_sge sge = {
				.addr = (uintptr_t)(srv.recv_area + ((size_t)q * cfg.depth + s) * cfg.max_size),
				.length = cfg.max_size, .lkey = srv.rmr->lkey };

			if (vt_post_recv(&qps[q], (uint64_t)q << 32 | s, &sge, 1)) {
				fprintf(stderr, "storm: ibv_post_recv: %s\n", strerror(errno));
				return 2;
			}
		}
		while (!takes_receive(plan_of(q, srv.next[q]).op))
			srv.next[q]++;
	}
	lay.gid = dev.gid;
	lay.target = (uintptr_t)srv.target;
	lay.stride = srv.stride;
	lay.read_area = (uintptr_t)(srv.target + srv.stride * cfg.qps);
	lay.rkey = srv.tmr->rkey;
	vt_xfer(fd, &lay, sizeof(lay), true);
	vt_xfer(fd, qpn, cfg.qps * sizeof(*qpn), true);

	ret = receive_all(fd);
	if (ret)
		return ret;
	vt_check(srv.got_total == srv.expect_total && !reports,
		 "server: %llu receives (SEND, SEND with immediate, WRITE with immediate) on %u QP%s, "
		 "each the next of its QP, exactly once, with its length, immediate and bytes",
		 (unsigned long long)srv.got_total, cfg.qps, cfg.qps > 1 ? "s" : "");
	vt_poll_none(cq, 0.2, "server: nothing more arrives");
	check_atomic_words();
	if (channel)
		vt_check(events > 0, "server: slept on a completion channel: %llu events",
			 (unsigned long long)events);
	on_fail_wait();   /* it sees the QPs as they are */
	vt_peer_verdict_send(fd);
	for (uint32_t q = 0; q < cfg.qps; q++)
		vt_qp_destroy(&qps[q]);
	ibv_destroy_cq(cq);
	if (channel)
		ibv_destroy_comp_channel(channel);
	ibv_dereg_mr(srv.rmr);
	ibv_dereg_mr(srv.tmr);
	free(srv.recv_area);
	free(srv.target);
	free(qps);
	free(qpn);
	free(peer_qpn);
	free(srv.count);
	free(srv.next);
	free(srv.got);
	return vt_failures ? 1 : 0;
}

/* ---- the client ------------------------------------------------------------ */

enum wr_kind { K_SEND, K_WDATA, K_WBACK, K_READ, K_ATOMIC };

/* One posted work request, found again from its completion. */
struct posted {
	uint64_t idx;
	uint64_t expect;        /* an atomic's result */
	enum wr_kind kind;
};

struct cqp {
	uint64_t next, target;  /* next message to post, how many to post */
	uint64_t posted, completed;     /* work requests */
	uint64_t done;          /* messages checked */
	uint64_t faa, cas;      /* atomics posted so far */
	uint64_t writes;        /* WRITEs posted so far: the next takes slot writes % WSLOTS */
};

static struct layout lay;
static struct cqp *cs;
static struct posted *posts;
static uint8_t *local;
static struct ibv_mr *lmr;
static uint32_t sq_depth;

static uint8_t *slot_of(uint32_t q, uint64_t seq)
{
	return local + ((size_t)q * sq_depth + seq % sq_depth) * cfg.max_size;
}

static int post_one(uint32_t q, enum ibv_wr_opcode opcode, uint32_t len, uint64_t raddr,
		    uint32_t imm, enum wr_kind kind, uint64_t idx, uint64_t cmp_add, uint64_t swap,
		    uint64_t expect)
{
	struct cqp *c = &cs[q];
	uint64_t seq = c->posted;
	struct ibv_sge sge = { .addr = (uintptr_t)slot_of(q, seq), .length = len, .lkey = lmr->lkey };
	struct ibv_send_wr wr = vt_wr((uint64_t)q << 32 | (seq & 0xffffffffu), opcode, &sge);
	struct posted *p = &posts[(size_t)q * sq_depth + seq % sq_depth];
	int ret;

	if (opcode == IBV_WR_ATOMIC_FETCH_AND_ADD || opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = lay.rkey;
		wr.wr.atomic.compare_add = cmp_add;
		wr.wr.atomic.swap = swap;
	} else if (opcode != IBV_WR_SEND && opcode != IBV_WR_SEND_WITH_IMM) {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = lay.rkey;
	}
	if (opcode == IBV_WR_SEND_WITH_IMM || opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
		wr.imm_data = htonl(imm);
	p->idx = idx;
	p->kind = kind;
	p->expect = expect;
	ret = vt_post_send(&qps[q], &wr);
	if (ret) {
		vt_fail("client: QP %u: ibv_post_send of message %llu: %s", q,
			(unsigned long long)idx, strerror(ret));
		exit(1);
	}
	c->posted++;
	return 0;
}

/* Posts QP q's next message if its send queue has room; false if not. */
static bool post_next(uint32_t q, uint64_t *bytes)
{
	struct cqp *c = &cs[q];
	struct plan p = plan_of(q, c->next);
	uint64_t slots = lay.target + q * lay.stride;
	uint64_t slot = slots + c->writes % WSLOTS * cfg.max_size;
	uint64_t words = slots + (uint64_t)WSLOTS * cfg.max_size;
	unsigned need = p.op == OP_WRITE || p.op == OP_WRITE_IMM ? 2 : 1;

	if (c->posted - c->completed + need > sq_depth)
		return false;
	switch (p.op) {
	case OP_SEND:
	case OP_SEND_IMM:
		vt_stream_fill(slot_of(q, c->posted), p.len, p.key, 0);
		post_one(q, p.op == OP_SEND ? IBV_WR_SEND : IBV_WR_SEND_WITH_IMM, p.len, 0,
			 (uint32_t)c->next, K_SEND, c->next, 0, 0, 0);
		break;
	case OP_WRITE:
	case OP_WRITE_IMM:
		vt_stream_fill(slot_of(q, c->posted), p.len, p.key, 0);
		post_one(q, p.op == OP_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_WRITE_WITH_IMM, p.len,
			 slot, (uint32_t)c->next, K_WDATA, c->next, 0, 0, 0);
		/* Not a byte of the old contents may pass for the new ones. */
		memset(slot_of(q, c->posted), 0, p.len);
		slot_of(q, c->posted)[0] = (uint8_t)~vt_stream_byte(p.key, 0);
		post_one(q, IBV_WR_RDMA_READ, p.len, slot, 0, K_WBACK, c->next, 0, 0, 0);
		c->writes++;
		*bytes += p.len;
		break;
	case OP_READ:
		slot_of(q, c->posted)[0] = (uint8_t)~vt_stream_byte(read_key, p.roff);
		post_one(q, IBV_WR_RDMA_READ, p.len, lay.read_area + p.roff, 0, K_READ, c->next, 0,
			 0, 0);
		break;
	case OP_FAA:
		post_one(q, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, words, 0, K_ATOMIC, c->next, 1, 0, c->faa);
		c->faa++;
		break;
	case OP_CAS:
		post_one(q, IBV_WR_ATOMIC_CMP_AND_SWP, 8, words + 8, 0, K_ATOMIC, c->next, c->cas,
			 c->cas + 1, c->cas);
		c->cas++;
		break;
	}
	*bytes += p.len;
	c->next++;
	return true;
}

/* Checks one completion; returns true if it ended a message. */
static bool complete(const struct ibv_wc *wc)
{
	uint32_t q = (uint32_t)(wc->wr_id >> 32);
	struct cqp *c = &cs[q];
	uint64_t seq = c->completed;
	struct posted *p = &posts[(size_t)q * sq_depth + seq % sq_depth];
	struct plan pl = plan_of(q, p->idx);
	uint8_t *buf = slot_of(q, seq);
	long d;

	if ((uint32_t)wc->wr_id != (uint32_t)seq)
		mismatch("client: QP %u: completion of work request %u where %llu was next", q,
			 (uint32_t)wc->wr_id, (unsigned long long)seq);
	c->completed++;
	if (wc->status != IBV_WC_SUCCESS) {
		mismatch("client: QP %u: message %llu (%s, %u bytes) completed with %s", q,
			 (unsigned long long)p->idx, op_name[pl.op], pl.len, ibv_wc_status_str(wc->status));
		return p->kind != K_WDATA;
	}
	switch (p->kind) {
	case K_WDATA:
		return false;
	case K_SEND:
		break;
	case K_WBACK:
		if ((d = vt_stream_diff(buf, pl.len, pl.key, 0)) >= 0)
			mismatch("client: QP %u: message %llu (%s, %u bytes): read back, byte %ld differs",
				 q, (unsigned long long)p->idx, op_name[pl.op], pl.len, d);
		break;
	case K_READ:
		if ((d = vt_stream_diff(buf, pl.len, read_key, pl.roff)) >= 0)
			mismatch("client: QP %u: message %llu (READ, %u bytes at %u): byte %ld differs", q,
				 (unsigned long long)p->idx, pl.len, pl.roff, d);
		break;
	case K_ATOMIC: {
		uint64_t v;

		memcpy(&v, buf, 8);
		if (v != p->expect)
			mismatch("client: QP %u: message %llu (%s) returned %llu, expected %llu", q,
				 (unsigned long long)p->idx, op_name[pl.op], (unsigned long long)v,
				 (unsigned long long)p->expect);
		break;
	}
	}
	c->done++;
	return true;
}

static int drive(const char *host, const char *port, uint64_t messages, double seconds)
{
	int fd = vt_tcp_connect(host, port);
	uint32_t *qpn, *peer_qpn;
	uint64_t *count, done = 0, bytes = 0, total = 0, ops[7] = { 0 };
	double t0, t, last, stop;
	bool posting = true;

	sq_depth = 2 * cfg.depth;
	local = reg_area((size_t)cfg.qps * sq_depth * cfg.max_size, IBV_ACCESS_LOCAL_WRITE, &lmr);
	make_qps(sq_depth, 1);
	cs = xcalloc(cfg.qps, sizeof(*cs));
	posts = xcalloc((size_t)cfg.qps * sq_depth, sizeof(*posts));
	qpn = xcalloc(cfg.qps, sizeof(*qpn));
	peer_qpn = xcalloc(cfg.qps, sizeof(*peer_qpn));
	count = xcalloc(cfg.qps, sizeof(*count));
	for (uint32_t q = 0; q < cfg.qps; q++) {
		qpn[q] = qps[q].qp->qp_num;
		cs[q].target = messages ? messages / cfg.qps + (q < messages % cfg.qps) : UINT64_MAX;
	}
	cfg.gid = dev.gid;
	vt_peer_hello(fd, &cfg, sizeof(cfg), qpn, &lay, sizeof(lay), peer_qpn, cfg.qps);
	connect_qps(peer_qpn, &lay.gid);
	vt_ok("client: %u RC QP%s connected to the server's; messages of 1 .. %u bytes, %u in flight "
	      "per QP, seed %llu", cfg.qps, cfg.qps > 1 ? "s" : "", cfg.max_size, cfg.depth,
	      (unsigned long long)cfg.seed);

	t0 = last = vt_now();
	stop = seconds > 0 ? t0 + seconds : 0;
	for (;;) {
		struct ibv_wc wc[64];
		int n;

		if (posting) {
			bool more = false;

			for (uint32_t q = 0; q < cfg.qps; q++) {
				while (cs[q].next < cs[q].target && post_next(q, &bytes))
					ops[plan_of(q, cs[q].next - 1).op]++;
				more |= cs[q].next < cs[q].target;
			}
			posting = more && !(stop && vt_now() >= stop);
		}
		n = ibv_poll_cq(cq, 64, wc);
		if (n < 0) {
			vt_fail("client: ibv_poll_cq: %d", n);
			return 1;
		}
		for (int k = 0; k < n; k++)
			done += complete(&wc[k]);
		t = vt_now();
		if (n)
			last = t;
		if (!posting) {
			total = 0;
			for (uint32_t q = 0; q < cfg.qps; q++)
				total += cs[q].next;
			if (done == total)
				break;
		}
		if (t - last > STALL_SECONDS) {
			on_fail();
			vt_fail("client: no completion for %.0f s: %llu of %llu messages done",
				STALL_SECONDS, (unsigned long long)done, (unsigned long long)total);
			return 1;
		}
	}
	t = vt_now() - t0;
	vt_check(!reports, "client: %llu messages (%llu SEND, %llu SEND with immediate, %llu WRITE, "
		 "%llu WRITE with immediate, %llu READ, %llu fetch-and-add, %llu compare-and-swap) "
		 "completed successfully, every READ, read-back WRITE and atomic result right",
		 (unsigned long long)done, (unsigned long long)ops[OP_SEND],
		 (unsigned long long)ops[OP_SEND_IMM], (unsigned long long)ops[OP_WRITE],
		 (unsigned long long)ops[OP_WRITE_IMM], (unsigned long long)ops[OP_READ],
		 (unsigned long long)ops[OP_FAA], (unsigned long long)ops[OP_CAS]);
	printf("storm: %llu messages on %u QPs, %.1f MB in %.2f s: %.3f Gb/s, %.0f messages/s\n",
	       (unsigned long long)done, cfg.qps, bytes / 1e6, t, bytes * 8 / t / 1e9, done / t);
	on_fail_wait();   /* it sees the QPs as they are */
	for (uint32_t q = 0; q < cfg.qps; q++)
		count[q] = cs[q].next;
	vt_xfer(fd, count, cfg.qps * sizeof(*count), true);
	vt_peer_verdict_check(fd);
	for (uint32_t q = 0; q < cfg.qps; q++)
		vt_qp_destroy(&qps[q]);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(lmr);
	free(local);
	free(qps);
	free(cs);
	free(posts);
	free(qpn);
	free(peer_qpn);
	free(count);
	return vt_failures ? 1 : 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: storm DEVICE GID_INDEX -s PORT\n"
		"       storm DEVICE GID_INDEX -c HOST PORT [--qps N] [--messages N | --seconds S]\n"
		"             [--max-size BYTES] [--depth D] [--seed S] [--events] [--timeout T]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "qps", required_argument, NULL, 'q' },
		{ "messages", required_argument, NULL, 'n' },
		{ "seconds", required_argument, NULL, 't' },
		{ "max-size", required_argument, NULL, 'm' },
		{ "depth", required_argument, NULL, 'd' },
		{ "seed", required_argument, NULL, 'S' },
		{ "events", no_argument, NULL, 'e' },
		{ "timeout", required_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t messages = 0;
	double seconds = 0;
	bool server = false, client = false;
	int c, ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	vt_case = "storm";
	cfg = (struct hello){ .magic = STORM_MAGIC, .qps = 1, .depth = 16, .max_size = 1u << 20,
			      .seed = 1 };
	while ((c = getopt_long(argc, argv, "sc", opts, NULL)) != -1) {
		switch (c) {
		case 's': server = true; break;
		case 'c': client = true; break;
		case 'q': cfg.qps = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'n': messages = strtoull(optarg, NULL, 0); break;
		case 't': seconds = atof(optarg); break;
		case 'm': cfg.max_size = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'd': cfg.depth = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'S': cfg.seed = strtoull(optarg, NULL, 0); break;
		case 'e': cfg.flags |= STORM_EVENTS; break;
		case 'T': qp_timeout = (uint8_t)strtoul(optarg, NULL, 0); break;
		default: usage();
		}
	}
	if (server == client || argc - optind != (server ? 3 : 4) ||
	    (client && !messages && seconds <= 0) || !cfg.qps || cfg.qps > MAX_QPS ||
	    !cfg.depth || !cfg.max_size || cfg.max_size > (1u << 30))
		usage();
	t_start = vt_now();
	vt_lag_watch(server ? "storm server" : "storm client");
	vt_dev_open(&dev, argv[optind], atoi(argv[optind + 1]));
	ret = server ? serve(argv[optind + 2])
		     : drive(argv[optind + 2], argv[optind + 3], messages, seconds);
	on_fail_wait();
	vt_dev_close(&dev);
	fprintf(stderr, "storm: %d checks, %d failed\n", vt_checks, vt_failures);
	return ret ? ret : vt_failures ? 1 : 0;
}
