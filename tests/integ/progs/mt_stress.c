/* Many application threads on one device at once, beside the library's
 * engine thread, in one process (the build's ThreadSanitizer stage runs it
 * too: scripts/test, docs/testing.md):
 *
 *  - four RC pairs, requesters on context A; responders of pairs 0 and 1
 *    on A, of pairs 2 and 3 on a second context B of the same device;
 *  - one sender thread per pair posts batches of SEND, SEND with
 *    immediate, RDMA WRITE, RDMA READ (of what it just wrote), WRITE with
 *    immediate, FETCH_AND_ADD and CMP_AND_SWP, and waits for them:
 *      pairs 0 and 1 share one send CQ, busy-polled by both senders and by
 *        the churn thread (each credits what it polls to the owner);
 *      pair 2 waits on its send CQ's completion channel (req_notify,
 *        poll() on the fd, ibv_get_cq_event, ibv_ack_cq_events);
 *      pair 3 busy-polls an ibv_cq_ex with ibv_start_poll/next/end;
 *  - one thread posts every receive of the four responders, as the
 *    receiving threads free the buffers;
 *  - two threads wait on the responders' receive CQs through completion
 *    channels: one CQ for pairs 0 and 1, and one for pairs 2 and 3 with
 *    event moderation (ibv_modify_cq: an event after 8 completions or
 *    50 us after the first, so that the period's timer fires often);
 *  - a churn thread creates a CQ and two QPs sending on the shared send
 *    CQ, connects them, exchanges a SEND, a WRITE and a READ, destroys
 *    them, and again;
 *  - a UC sender thread keeps three UC QPs writing; a UC send completes in
 *    the posting thread, so their send CQs (moderated, on one channel
 *    that a UC waiter thread waits on) get completions, and their
 *    moderation timers get armed, outside the engine's receive path.
 *
 * Checked: every completion succeeds, has the opcode of its work request
 * and arrives once; receives arrive in order with their byte_len, immediate
 * and payload; what was written is read back; every FETCH_AND_ADD returns
 * a larger value than the one before on its pair and the counters end at
 * the number of adds; each CMP_AND_SWP finds the value the previous one
 * left; every total is reached within the time limit, and a thread still
 * inside a verb 10 s after it is reported as a hang.
 *
 *   mt_stress DEVICE GID_INDEX [BATCHES [SECONDS]]
 *
 * BATCHES per sender (default 200), SECONDS the time limit (default 60).
 * Exit 0 if every check passed, 1 otherwise (the FAIL lines name what), 2
 * if the setup failed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vt.h"

#define NPAIRS 4
#define NOPS 7                 /* work requests per batch */
#define NRECV 16               /* receive slots per responder */
#define MAXMSG 9000            /* SEND sizes: 8 .. MAXMSG, up to 3 packets */
#define WSLOT 16384            /* RDMA WRITE/READ sizes: 1 .. 12000 */
#define MAXWIMM 64             /* WRITE with immediate: 0 .. 64 bytes */
#define CHURN_OPS 3
#define MOD_COUNT 8            /* receive CQ B's moderation */
#define MOD_PERIOD_US 50
#define MAX_PRINTED_FAILS 20

#define ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
	     IBV_ACCESS_REMOTE_ATOMIC)

/* ---- failures, from any thread -------------------------------------------- */

static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
static int stop;               /* atomic: a failure ends every thread */
static double deadline;

static void mt_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void mt_fail(const char *fmt, ...)
{
	static int printed;
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&fail_lock);
	if (printed++ < MAX_PRINTED_FAILS)
		vt_fail("%s", msg);
	else
		vt_failures++;
	pthread_mutex_unlock(&fail_lock);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
}

static void die_setup(const char *what, int err) __attribute__((noreturn));
static void die_setup(const char *what, int err)
{
	vt_fail("setup: %s: %s", what, strerror(err));
	exit(2);
}

static bool stopped(void)
{
	return __atomic_load_n(&stop, __ATOMIC_ACQUIRE);
}

/* True (and a failure naming what) once the time limit has passed. */
static bool late(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static bool late(const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	if (vt_now() < deadline)
		return false;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	mt_fail("%s: not within the time limit", msg);
	return true;
}

/* ---- completion owners ------------------------------------------------------ */

/* Whoever polls a send completion credits it to the owner named in its
 * wr_id: owner << 56 | batch << 8 | index in the batch. */
struct owner {
	const char *name;
	const enum ibv_wc_opcode *ops;   /* the opcode each index completes with */
	int nops;
	uint32_t len[NOPS];              /* byte_len expected for READ/atomics */
	uint32_t batch;                  /* atomic: the batch in flight */
	uint32_t seen;                   /* atomic: indexes completed (mask) */
	uint32_t done;                   /* atomic: how many */
};

#define MAX_OWNERS 8
static struct owner *owners[MAX_OWNERS];
static int nowners;

static uint64_t wr_id_of(int owner, uint32_t batch, int idx)
{
	return (uint64_t)owner << 56 | (uint64_t)batch << 8 | (uint64_t)idx;
}

static bool wc_reads_len(enum ibv_wc_opcode op)
{
	return op == IBV_WC_RDMA_READ || op == IBV_WC_COMP_SWAP || op == IBV_WC_FETCH_ADD;
}

static void owner_start(struct owner *o, uint32_t batch)
{
	__atomic_store_n(&o->seen, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&o->done, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&o->batch, batch, __ATOMIC_RELEASE);
}

static int owner_done(struct owner *o)
{
	return (int)__atomic_load_n(&o->done, __ATOMIC_ACQUIRE);
}

/* A send completion, polled by any thread: checked, then counted. */
static void credit(const struct ibv_wc *wc, const char *poller)
{
	unsigned o = (unsigned)(wc->wr_id >> 56), idx = (unsigned)(wc->wr_id & 0xff);
	uint32_t batch = (uint32_t)(wc->wr_id >> 8);
	struct owner *ow = o < (unsigned)nowners ? owners[o] : NULL;
	uint32_t bit = 1u << (idx & 31);

	if (!ow) {
		mt_fail("%s polled a send completion of no owner: wr_id 0x%llx, status %s", poller,
			(unsigned long long)wc->wr_id, ibv_wc_status_str(wc->status));
		return;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		mt_fail("%s: work request %u of batch %u completed with status %s (vendor_err 0x%x, polled by %s)",
			ow->name, idx, batch, ibv_wc_status_str(wc->status), wc->vendor_err, poller);
		return;
	}
	if ((int)idx >= ow->nops || wc->opcode != ow->ops[idx]) {
		mt_fail("%s: work request %u of batch %u completed with opcode %d, expected %d",
			ow->name, idx, batch, wc->opcode, (int)idx < ow->nops ? (int)ow->ops[idx] : -1);
		return;
	}
	if (batch != __atomic_load_n(&ow->batch, __ATOMIC_ACQUIRE)) {
		mt_fail("%s: a completion of batch %u during batch %u (polled by %s)", ow->name, batch,
			__atomic_load_n(&ow->batch, __ATOMIC_RELAXED), poller);
		return;
	}
	if (wc_reads_len(wc->opcode) && wc->byte_len != ow->len[idx]) {
		mt_fail("%s: work request %u of batch %u: byte_len %u, expected %u", ow->name, idx,
			batch, wc->byte_len, ow->len[idx]);
		return;
	}
	if (__atomic_fetch_or(&ow->seen, bit, __ATOMIC_RELAXED) & bit) {
		mt_fail("%s: work request %u of batch %u completed twice (polled by %s)", ow->name, idx,
			batch, poller);
		return;
	}
	__atomic_add_fetch(&ow->done, 1, __ATOMIC_RELEASE);
}

/* Polls a plain CQ once; every send completion is credited.  Returns how
 * many were polled, -1 on error. */
static int poll_credit(struct ibv_cq *cq, const char *poller)
{
	struct ibv_wc wc[8];
	int n = ibv_poll_cq(cq, 8, wc);

	if (n < 0) {
		mt_fail("%s: ibv_poll_cq returned %d", poller, n);
		return -1;
	}
	for (int i = 0; i < n; i++)
		credit(&wc[i], poller);
	return n;
}

/* ---- pairs ----------------------------------------------------------------- */

enum wait_mode { WAIT_SHARED, WAIT_EVENTS, WAIT_EX };

static const enum ibv_wc_opcode batch_ops[NOPS] = {
	IBV_WC_SEND, IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ, IBV_WC_RDMA_WRITE,
	IBV_WC_FETCH_ADD, IBV_WC_COMP_SWAP,
};

struct pair {
	int id;
	char name[96];
	struct owner ow;
	enum wait_mode wait;
	struct vt_dev *rdev, *sdev;      /* requester's and responder's contexts */
	struct vt_qp req, resp;
	struct ibv_cq *scq;              /* the requester's send CQ */
	struct ibv_cq_ex *scqx;          /* WAIT_EX */
	struct ibv_comp_channel *sch;    /* WAIT_EVENTS */
	uint64_t send_events;

	/* requester side */
	struct vt_buf sbuf;              /* two SEND payloads */
	struct vt_buf wbuf;              /* WRITE sources */
	struct vt_buf rbuf;              /* READ destination */
	struct vt_buf res;               /* atomic results */
	uint64_t faa_prev;
	uint32_t batches_done;

	/* responder side */
	struct vt_buf rq;                /* NRECV receive slots */
	struct vt_buf wreg;              /* WRITE/READ target, immediate writes, CAS word */
	struct vt_buf *counter;          /* the FETCH_AND_ADD word of its context */
	uint32_t posted;                 /* receives posted (the poster thread's) */
	uint32_t consumed;               /* atomic: receives checked and freed */

	pthread_t thread;
};

#define WREG_IMM (2 * WSLOT)
#define WREG_CAS (WREG_IMM + 4096)
#define WREG_LEN (WREG_CAS + 4096)

static uint32_t nbatches = 200;
static struct pair pairs[NPAIRS];
static struct vt_buf counters[2];    /* one FETCH_AND_ADD word per context */

/* Receives a pair's responder consumes: SEND, SEND with immediate and
 * WRITE with immediate per batch. */
static uint32_t recvs_total(void)
{
	return 3 * nbatches;
}

static uint32_t send_len(int pair, uint32_t n)
{
	return 8 + (uint32_t)((n * 2654435761u + (uint32_t)pair * 977u) % (MAXMSG - 8 + 1));
}

static uint32_t wimm_len(int pair, uint32_t n)
{
	return (n + (uint32_t)pair) % (MAXWIMM + 1);
}

static uint32_t write_len(int pair, uint32_t b)
{
	return 1 + (uint32_t)((b * 7919u + (uint32_t)pair * 131u) % 12000u);
}

static uint8_t msg_seed(int pair, uint32_t n)
{
	return (uint8_t)(n * 7u + (uint32_t)pair * 61u);
}

/* A SEND payload: the receive number and the pair, then a pattern. */
static void fill_msg(uint8_t *p, int pair, uint32_t n, uint32_t len)
{
	uint32_t hdr[2] = { n, (uint32_t)pair };

	memcpy(p, hdr, 8);
	for (uint32_t i = 8; i < len; i++)
		p[i] = vt_pattern(msg_seed(pair, n), i);
}

/* Offset of the first byte of len that differs from fill_msg's, or -1. */
static long check_msg(const uint8_t *p, int pair, uint32_t n, uint32_t len)
{
	uint32_t hdr[2];

	memcpy(hdr, p, 8);
	if (hdr[0] != n)
		return 0;
	if (hdr[1] != (uint32_t)pair)
		return 4;
	for (uint32_t i = 8; i < len; i++)
		if (p[i] != vt_pattern(msg_seed(pair, n), i))
			return (long)i;
	return -1;
}

/* Posts batch b of pair p: seven work requests in one list. */
static int post_batch(struct pair *p, uint32_t b)
{
	uint32_t n0 = 3 * b;
	struct ibv_sge sg[NOPS];
	struct ibv_send_wr wr[NOPS], *bad = NULL;
	uint64_t raddr = (uintptr_t)p->wreg.p;
	uint32_t rkey = p->wreg.mr->rkey, wlen = write_len(p->id, b), ilen = wimm_len(p->id, n0 + 2);
	uint8_t wseed = (uint8_t)(b * 13u + (uint32_t)p->id);
	uint64_t *res = (uint64_t *)p->res.p;
	int ret;

	fill_msg(p->sbuf.p, p->id, n0, send_len(p->id, n0));
	fill_msg(p->sbuf.p + MAXMSG, p->id, n0 + 1, send_len(p->id, n0 + 1));
	for (uint32_t i = 0; i < wlen; i++)
		p->wbuf.p[i] = vt_pattern(wseed, i);
	for (uint32_t i = 0; i < ilen; i++)
		p->wbuf.p[WSLOT + i] = vt_pattern((uint8_t)~wseed, i);
	memset(p->rbuf.p, 0, wlen);
	res[0] = res[1] = ~0ull;

	sg[0] = vt_sge(&p->sbuf, 0, send_len(p->id, n0));
	sg[1] = vt_sge(&p->sbuf, MAXMSG, send_len(p->id, n0 + 1));
	sg[2] = vt_sge(&p->wbuf, 0, wlen);
	sg[3] = vt_sge(&p->rbuf, 0, wlen);
	sg[4] = vt_sge(&p->wbuf, WSLOT, ilen);
	sg[5] = vt_sge(&p->res, 0, 8);
	sg[6] = vt_sge(&p->res, 8, 8);
	for (int i = 0; i < NOPS; i++) {
		wr[i] = vt_wr(wr_id_of(p->id, b, i), IBV_WR_SEND, &sg[i]);
		wr[i].next = i + 1 < NOPS ? &wr[i + 1] : NULL;
	}
	wr[1].opcode = IBV_WR_SEND_WITH_IMM;
	wr[1].imm_data = htonl(n0 + 1);
	wr[2].opcode = IBV_WR_RDMA_WRITE;
	wr[2].wr.rdma.remote_addr = raddr + (b & 1) * WSLOT;
	wr[2].wr.rdma.rkey = rkey;
	wr[3].opcode = IBV_WR_RDMA_READ;        /* reads back what 2 wrote */
	wr[3].wr.rdma.remote_addr = raddr + (b & 1) * WSLOT;
	wr[3].wr.rdma.rkey = rkey;
	wr[4].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr[4].num_sge = ilen ? 1 : 0;
	wr[4].imm_data = htonl(n0 + 2);
	wr[4].wr.rdma.remote_addr = raddr + WREG_IMM;
	wr[4].wr.rdma.rkey = rkey;
	wr[5].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr[5].wr.atomic.remote_addr = (uintptr_t)p->counter->p;
	wr[5].wr.atomic.rkey = p->counter->mr->rkey;
	wr[5].wr.atomic.compare_add = 1;
	wr[6].opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr[6].wr.atomic.remote_addr = raddr + WREG_CAS;
	wr[6].wr.atomic.rkey = rkey;
	wr[6].wr.atomic.compare_add = b;
	wr[6].wr.atomic.swap = b + 1;

	p->ow.len[3] = wlen;
	p->ow.len[5] = p->ow.len[6] = 8;
	owner_start(&p->ow, b);
	ret = ibv_post_send(p->req.qp, &wr[0], &bad);
	if (ret)
		mt_fail("%s: ibv_post_send of batch %u: %s (at work request %d)", p->name, b,
			strerror(ret), bad ? (int)(bad - wr) : -1);
	return ret;
}

/* The completions of one batch: by the way the pair waits. */
static bool wait_shared(struct pair *p, uint32_t b)
{
	for (unsigned spins = 0; owner_done(&p->ow) < NOPS; spins++) {
		if (stopped() || poll_credit(p->scq, p->name) < 0)
			return false;
		if (spins % 256 == 0 &&
		    late("%s: batch %u: %d of %d completions", p->name, b, owner_done(&p->ow), NOPS))
			return false;
	}
	return true;
}

static bool wait_ex(struct pair *p, uint32_t b)
{
	struct ibv_poll_cq_attr attr = { 0 };

	for (unsigned spins = 0; owner_done(&p->ow) < NOPS; spins++) {
		int ret = ibv_start_poll(p->scqx, &attr);

		if (ret == 0) {
			do {
				struct ibv_wc wc = {
					.wr_id = p->scqx->wr_id,
					.status = p->scqx->status,
					.opcode = ibv_wc_read_opcode(p->scqx),
					.byte_len = ibv_wc_read_byte_len(p->scqx),
					.qp_num = ibv_wc_read_qp_num(p->scqx),
				};

				if (wc.qp_num != p->req.qp->qp_num)
					mt_fail("%s: ibv_wc_read_qp_num 0x%06x, expected 0x%06x",
						p->name, wc.qp_num, p->req.qp->qp_num);
				credit(&wc, p->name);
			} while (ibv_next_poll(p->scqx) == 0);
			ibv_end_poll(p->scqx);
		} else if (ret != ENOENT) {
			mt_fail("%s: ibv_start_poll: %s", p->name, strerror(ret));
			return false;
		}
		if (stopped())
			return false;
		if (spins % 256 == 0 &&
		    late("%s: batch %u: %d of %d completions", p->name, b, owner_done(&p->ow), NOPS))
			return false;
	}
	return true;
}

/* Waits up to 100 ms for an event on ch, which must name cq; events are
 * acknowledged 8 at a time (*unacked counts the others).  1: an event, 0:
 * none, -1: a failure. */
static int wait_event(struct ibv_comp_channel *ch, struct ibv_cq *cq, unsigned *unacked,
		      const char *who)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int n = poll(&pfd, 1, 100);

	if (n < 0 && errno != EINTR) {
		mt_fail("%s: poll on the completion channel: %s", who, strerror(errno));
		return -1;
	}
	if (n <= 0)
		return 0;
	if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx)) {
		mt_fail("%s: ibv_get_cq_event: %s", who, strerror(errno));
		return -1;
	}
	if (ev_cq != cq || ev_ctx != cq->cq_context) {
		mt_fail("%s: ibv_get_cq_event named CQ %p (context %p), expected %p (%p)", who,
			(void *)ev_cq, ev_ctx, (void *)cq, cq->cq_context);
		return -1;
	}
	if (++*unacked == 8) {
		ibv_ack_cq_events(cq, *unacked);
		*unacked = 0;
	}
	return 1;
}

/* The event loop of a CQ with a channel: poll; when empty, arm and poll
 * again (a completion that came before the arming raises no event), then
 * wait for the event.  Returns what poll_cq returned (> 0: completions in
 * wc), 0 when the caller should look at its totals again, -1 on a failure. */
struct ev_loop {
	struct ibv_cq *cq;
	struct ibv_comp_channel *ch;
	bool armed;
	unsigned unacked;
	uint64_t events;
};

static int ev_poll(struct ev_loop *l, struct ibv_wc *wc, int max, const char *who)
{
	int n = ibv_poll_cq(l->cq, max, wc), ret;

	if (n < 0) {
		mt_fail("%s: ibv_poll_cq returned %d", who, n);
		return -1;
	}
	if (n > 0)
		return n;
	if (!l->armed) {
		ret = ibv_req_notify_cq(l->cq, 0);
		if (ret) {
			mt_fail("%s: ibv_req_notify_cq: %s", who, strerror(ret));
			return -1;
		}
		l->armed = true;
		return 0;
	}
	ret = wait_event(l->ch, l->cq, &l->unacked, who);
	if (ret > 0) {
		l->events++;
		l->armed = false;
	}
	return ret < 0 ? -1 : 0;
}

static void ev_done(struct ev_loop *l)
{
	if (l->unacked)
		ibv_ack_cq_events(l->cq, l->unacked);
	l->unacked = 0;
}

static bool wait_events(struct pair *p, uint32_t b)
{
	struct ev_loop l = { .cq = p->scq, .ch = p->sch };
	bool ok = true;

	while (owner_done(&p->ow) < NOPS) {
		struct ibv_wc wc[8];
		int n = ev_poll(&l, wc, 8, p->name);

		for (int i = 0; i < n; i++)
			credit(&wc[i], p->name);
		if (n < 0 || stopped() ||
		    late("%s: batch %u: %d of %d completions", p->name, b, owner_done(&p->ow), NOPS)) {
			ok = false;
			break;
		}
	}
	ev_done(&l);
	p->send_events += l.events;
	return ok;
}

static bool check_batch(struct pair *p, uint32_t b)
{
	uint32_t wlen = write_len(p->id, b);
	uint8_t wseed = (uint8_t)(b * 13u + (uint32_t)p->id);
	const uint64_t *res = (const uint64_t *)p->res.p;

	for (uint32_t i = 0; i < wlen; i++) {
		if (p->rbuf.p[i] != vt_pattern(wseed, i)) {
			mt_fail("%s: batch %u: the READ of the %u bytes just written differs at byte %u",
				p->name, b, wlen, i);
			return false;
		}
	}
	if (res[1] != b) {
		mt_fail("%s: batch %u: CMP_AND_SWP(%u -> %u) found %llu", p->name, b, b, b + 1,
			(unsigned long long)res[1]);
		return false;
	}
	if (res[0] >= 2ull * nbatches || (b > 0 && res[0] <= p->faa_prev)) {
		mt_fail("%s: batch %u: FETCH_AND_ADD returned %llu (the previous returned %llu; at most %u adds)",
			p->name, b, (unsigned long long)res[0], (unsigned long long)p->faa_prev,
			2 * nbatches);
		return false;
	}
	p->faa_prev = res[0];
	return true;
}

static void *sender_main(void *arg)
{
	struct pair *p = arg;

	for (uint32_t b = 0; b < nbatches && !stopped(); b++) {
		bool ok;

		if (post_batch(p, b))
			break;
		switch (p->wait) {
		case WAIT_SHARED: ok = wait_shared(p, b); break;
		case WAIT_EX:     ok = wait_ex(p, b); break;
		default:          ok = wait_events(p, b); break;
		}
		if (!ok || !check_batch(p, b))
			break;
		p->batches_done = b + 1;
	}
	return NULL;
}

/* ---- receives ------------------------------------------------------------- */

/* Receive n of pair p, in order: kind n % 3 is SEND, SEND with immediate,
 * WRITE with immediate. */
static bool check_recv(struct pair *p, const struct ibv_wc *wc, const char *who)
{
	uint32_t n = __atomic_load_n(&p->consumed, __ATOMIC_RELAXED), kind = n % 3;
	uint32_t slot = (uint32_t)(wc->wr_id & 0xffffffff);
	uint32_t len = kind == 2 ? wimm_len(p->id, n) : send_len(p->id, n);
	enum ibv_wc_opcode op = kind == 2 ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
	long bad;

	if (wc->status != IBV_WC_SUCCESS) {
		mt_fail("%s: receive %u completed with status %s (polled by %s)", p->name, n,
			ibv_wc_status_str(wc->status), who);
		return false;
	}
	if (slot != n || wc->opcode != op) {
		mt_fail("%s: receive %u: completion of receive WR %u with opcode %d, expected opcode %d (out of order?)",
			p->name, n, slot, wc->opcode, op);
		return false;
	}
	if (wc->byte_len != len) {
		mt_fail("%s: receive %u: byte_len %u, expected %u", p->name, n, wc->byte_len, len);
		return false;
	}
	if (kind && (!(wc->wc_flags & IBV_WC_WITH_IMM) || ntohl(wc->imm_data) != n)) {
		mt_fail("%s: receive %u: immediate %s0x%x, expected 0x%x", p->name, n,
			wc->wc_flags & IBV_WC_WITH_IMM ? "" : "missing, ", ntohl(wc->imm_data), n);
		return false;
	}
	if (kind < 2 && (bad = check_msg(p->rq.p + (size_t)(n % NRECV) * MAXMSG, p->id, n, len)) >= 0) {
		mt_fail("%s: receive %u: payload of %u bytes differs at byte %ld", p->name, n, len, bad);
		return false;
	}
	/* The slot is free again: the poster thread may reuse it. */
	__atomic_store_n(&p->consumed, n + 1, __ATOMIC_RELEASE);
	return true;
}

struct recv_group {
	const char *name;
	struct ibv_cq *cq;
	struct ibv_comp_channel *ch;
	struct pair *pairs[2];
	uint64_t events, completions;
	pthread_t thread;
};

static struct pair *pair_of_qpn(struct recv_group *g, uint32_t qpn)
{
	for (int i = 0; i < 2; i++)
		if (g->pairs[i]->resp.qp->qp_num == qpn)
			return g->pairs[i];
	return NULL;
}

static bool group_done(struct recv_group *g)
{
	for (int i = 0; i < 2; i++)
		if (__atomic_load_n(&g->pairs[i]->consumed, __ATOMIC_RELAXED) < recvs_total())
			return false;
	return true;
}

/* Waits on the receive CQ's channel and checks every receive. */
static void *receiver_main(void *arg)
{
	struct recv_group *g = arg;
	struct ev_loop l = { .cq = g->cq, .ch = g->ch };

	while (!group_done(g) && !stopped()) {
		struct ibv_wc wc[16];
		int n = ev_poll(&l, wc, 16, g->name);

		if (n < 0)
			break;
		for (int i = 0; i < n; i++) {
			struct pair *p = pair_of_qpn(g, wc[i].qp_num);

			if (!p) {
				mt_fail("%s: a receive completion of QP 0x%06x, none of its QPs (status %s)",
					g->name, wc[i].qp_num, ibv_wc_status_str(wc[i].status));
				break;
			}
			if (!check_recv(p, &wc[i], g->name))
				break;
		}
		g->completions += (uint64_t)n;
		if (n == 0 && late("%s: receives %u, %u of %u", g->name,
				   __atomic_load_n(&g->pairs[0]->consumed, __ATOMIC_RELAXED),
				   __atomic_load_n(&g->pairs[1]->consumed, __ATOMIC_RELAXED),
				   recvs_total()))
			break;
	}
	ev_done(&l);
	g->events = l.events;
	return NULL;
}

/* Posts the responders' receives as slots free up. */
static void *poster_main(void *arg)
{
	(void)arg;
	for (;;) {
		bool all = true, posted = false;

		if (stopped())
			break;
		for (int i = 0; i < NPAIRS; i++) {
			struct pair *p = &pairs[i];

			while (p->posted < recvs_total() &&
			       p->posted - __atomic_load_n(&p->consumed, __ATOMIC_ACQUIRE) < NRECV) {
				struct ibv_sge s = vt_sge(&p->rq, (size_t)(p->posted % NRECV) * MAXMSG, MAXMSG);
				int ret = vt_post_recv(&p->resp, p->posted, &s, 1);

				if (ret) {
					mt_fail("%s: ibv_post_recv of receive %u: %s", p->name, p->posted,
						strerror(ret));
					return NULL;
				}
				p->posted++;
				posted = true;
			}
			all &= p->posted == recvs_total();
		}
		if (all)
			break;
		if (!posted) {
			if (late("receive poster: %u %u %u %u of %u receives posted", pairs[0].posted,
				 pairs[1].posted, pairs[2].posted, pairs[3].posted, recvs_total()))
				break;
			usleep(100);
		}
	}
	return NULL;
}

/* ---- QP churn -------------------------------------------------------------- */

static const enum ibv_wc_opcode churn_ops[CHURN_OPS] = {
	IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ,
};

struct churn {
	struct owner ow;
	struct vt_dev *dev;
	struct ibv_cq *shared_cq;        /* the send CQ of pairs 0 and 1 */
	uint32_t rounds, rounds_done;
	struct vt_buf a, b;              /* q0's and q1's memory */
	pthread_t thread;
};

#define CHURN_LEN 6000

/* Polls the shared send CQ (crediting the owners) and rcq until the
 * round's 3 sends and its receive on q1 (qpn) completed.  False on an
 * error, a stop or the time limit. */
static bool churn_wait(struct churn *c, uint32_t r, struct ibv_cq *rcq, uint32_t qpn)
{
	struct ibv_wc wc;
	int got = 0;

	for (unsigned spins = 0; owner_done(&c->ow) < CHURN_OPS || got < 1; spins++) {
		int n;

		if (stopped() || poll_credit(c->shared_cq, "churn") < 0)
			return false;
		n = ibv_poll_cq(rcq, 1, &wc);
		if (n < 0) {
			mt_fail("churn round %u: ibv_poll_cq returned %d", r, n);
			return false;
		}
		if (n == 1) {
			got++;
			if (wc.status != IBV_WC_SUCCESS || wc.wr_id != 1 || wc.opcode != IBV_WC_RECV ||
			    wc.byte_len != CHURN_LEN || wc.qp_num != qpn) {
				mt_fail("churn round %u: receive: status %s wr_id %llu opcode %d byte_len %u qp 0x%06x; expected success, 1, RECV, %u, 0x%06x",
					r, ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id,
					wc.opcode, wc.byte_len, wc.qp_num, CHURN_LEN, qpn);
				return false;
			}
		}
		if (spins % 256 == 0 && late("churn round %u: %d of %d send completions, %d of 1 receive",
					     r, owner_done(&c->ow), CHURN_OPS, got))
			return false;
	}
	return true;
}

static bool churn_round(struct churn *c, uint32_t r, int id)
{
	struct vt_qp_opts o = { .sq = 8, .rq = 8, .send_cq = c->shared_cq };
	struct vt_qp q0, q1;
	struct ibv_cq *rcq;
	struct ibv_sge s0, s1, s2, r0, r1;
	struct ibv_send_wr w0, w1, w2, *bad;
	struct ibv_wc wc;
	uint8_t seed = (uint8_t)(r * 3u + 1u);
	bool ok = false;
	int ret;

	rcq = ibv_create_cq(c->dev->ctx, 16, NULL, NULL, 0);
	if (!rcq) {
		mt_fail("churn round %u: ibv_create_cq: %s", r, strerror(errno));
		return false;
	}
	o.recv_cq = rcq;
	vt_qp_create(&q0, c->dev, &o);
	vt_qp_create(&q1, c->dev, &o);
	ret = vt_qp_connect(&q0, &q1);
	if (ret) {
		mt_fail("churn round %u: connecting QPs 0x%06x and 0x%06x: %s", r, q0.qp->qp_num,
			q1.qp->qp_num, strerror(ret));
		goto out;
	}
	/* q0 SENDs to q1; q1 WRITEs into q0's memory; q0 READs q1's. */
	for (uint32_t i = 0; i < CHURN_LEN; i++) {
		c->a.p[i] = vt_pattern(seed, i);
		c->b.p[CHURN_LEN + i] = vt_pattern((uint8_t)(seed + 1), i);
		c->b.p[2 * CHURN_LEN + i] = vt_pattern((uint8_t)(seed + 2), i);
	}
	memset(c->b.p, 0, CHURN_LEN);
	memset(c->a.p + CHURN_LEN, 0, 2 * CHURN_LEN);
	r1 = vt_sge(&c->b, 0, CHURN_LEN);
	r0 = vt_sge(&c->a, 3 * CHURN_LEN, 64);
	if ((ret = vt_post_recv(&q1, 1, &r1, 1)) || (ret = vt_post_recv(&q0, 2, &r0, 1))) {
		mt_fail("churn round %u: ibv_post_recv: %s", r, strerror(ret));
		goto out;
	}
	s0 = vt_sge(&c->a, 0, CHURN_LEN);
	s1 = vt_sge(&c->b, CHURN_LEN, CHURN_LEN);
	s2 = vt_sge(&c->a, 2 * CHURN_LEN, CHURN_LEN);
	w0 = vt_wr(wr_id_of(id, r, 0), IBV_WR_SEND, &s0);
	w1 = vt_wr(wr_id_of(id, r, 1), IBV_WR_RDMA_WRITE, &s1);
	w1.wr.rdma.remote_addr = (uintptr_t)(c->a.p + CHURN_LEN);
	w1.wr.rdma.rkey = c->a.mr->rkey;
	w2 = vt_wr(wr_id_of(id, r, 2), IBV_WR_RDMA_READ, &s2);
	w2.wr.rdma.remote_addr = (uintptr_t)(c->b.p + 2 * CHURN_LEN);
	w2.wr.rdma.rkey = c->b.mr->rkey;
	c->ow.len[2] = CHURN_LEN;
	owner_start(&c->ow, r);
	if ((ret = ibv_post_send(q0.qp, &w0, &bad)) || (ret = ibv_post_send(q1.qp, &w1, &bad)) ||
	    (ret = ibv_post_send(q0.qp, &w2, &bad))) {
		mt_fail("churn round %u: ibv_post_send: %s", r, strerror(ret));
		goto out;
	}
	if (!churn_wait(c, r, rcq, q1.qp->qp_num))
		goto out;
	for (uint32_t i = 0; i < CHURN_LEN; i++) {
		if (c->b.p[i] != vt_pattern(seed, i) ||
		    c->a.p[CHURN_LEN + i] != vt_pattern((uint8_t)(seed + 1), i) ||
		    c->a.p[2 * CHURN_LEN + i] != vt_pattern((uint8_t)(seed + 2), i)) {
			mt_fail("churn round %u: SEND, WRITE or READ data differs at byte %u", r, i);
			goto out;
		}
	}
	ok = true;
out:
	/* q0 still has a receive posted: destroying it discards it. */
	if ((ret = ibv_destroy_qp(q0.qp)) || (ret = ibv_destroy_qp(q1.qp))) {
		mt_fail("churn round %u: ibv_destroy_qp: %s", r, strerror(ret));
		ok = false;
	}
	if (ok && ibv_poll_cq(rcq, 1, &wc) != 0) {
		mt_fail("churn round %u: a completion (wr_id %llu, %s) left on the receive CQ of destroyed QPs",
			r, (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
		ok = false;
	}
	if ((ret = ibv_destroy_cq(rcq))) {
		mt_fail("churn round %u: ibv_destroy_cq: %s", r, strerror(ret));
		ok = false;
	}
	return ok;
}

static void *churn_main(void *arg)
{
	struct churn *c = arg;

	for (uint32_t r = 0; r < c->rounds && !stopped(); r++) {
		if (!churn_round(c, r, NPAIRS))
			break;
		c->rounds_done = r + 1;
	}
	return NULL;
}

/* ---- UC writes: completions pushed by the posting thread ------------------- */

/* A UC send completes when it leaves, in the thread that posts it, so
 * these CQs get completions (and their moderation timers get armed) from
 * an application thread while the engine thread fires the timers.  Three
 * UC QPs on context A write to three on B; each requester has its own send
 * CQ, all three on one completion channel, with event moderation.  UC
 * writes lost on the way are not retried, so only the completions are
 * checked: every one successful, an RDMA WRITE of that QP, in order. */
#define NUC 3
#define UC_OUTSTANDING 32
#define UC_LEN 2048
#define UC_MOD_COUNT 16
#define UC_MOD_PERIOD_US 20

struct uc {
	struct vt_qp req[NUC], resp[NUC];
	struct ibv_cq *cq[NUC];           /* the requesters' send CQs */
	struct ibv_cq *resp_cq;
	struct ibv_comp_channel *ch;
	struct vt_buf src, dst;
	uint32_t total;                   /* writes per QP */
	uint32_t posted[NUC];             /* the sender's */
	uint32_t polled[NUC];             /* atomic: completions checked */
	uint64_t events;
	pthread_t sender, waiter;
};

static void *uc_sender_main(void *arg)
{
	struct uc *u = arg;

	for (;;) {
		bool all = true, posted = false;

		if (stopped())
			break;
		for (int i = 0; i < NUC; i++) {
			while (u->posted[i] < u->total &&
			       u->posted[i] - __atomic_load_n(&u->polled[i], __ATOMIC_ACQUIRE) < UC_OUTSTANDING) {
				uint32_t n = u->posted[i], len = 1 + n % UC_LEN;
				struct ibv_sge sg = vt_sge(&u->src, 0, len);
				struct ibv_send_wr wr = vt_wr((uint64_t)i << 32 | n, IBV_WR_RDMA_WRITE, &sg), *bad;
				int ret;

				wr.wr.rdma.remote_addr = (uintptr_t)(u->dst.p + (size_t)i * UC_LEN);
				wr.wr.rdma.rkey = u->dst.mr->rkey;
				ret = ibv_post_send(u->req[i].qp, &wr, &bad);
				if (ret) {
					mt_fail("UC QP %d: ibv_post_send of write %u: %s", i, n, strerror(ret));
					return NULL;
				}
				u->posted[i] = n + 1;
				posted = true;
			}
			all &= u->posted[i] == u->total;
		}
		if (all)
			break;
		if (!posted) {
			if (late("UC sender: %u %u %u of %u writes posted", u->posted[0], u->posted[1],
				 u->posted[2], u->total))
				break;
			sched_yield();
		}
	}
	return NULL;
}

static bool uc_check(struct uc *u, int i, const struct ibv_wc *wc)
{
	uint32_t n = __atomic_load_n(&u->polled[i], __ATOMIC_RELAXED);

	if (wc->status != IBV_WC_SUCCESS || wc->opcode != IBV_WC_RDMA_WRITE ||
	    wc->wr_id != ((uint64_t)i << 32 | n) || wc->qp_num != u->req[i].qp->qp_num) {
		mt_fail("UC QP %d: completion %u: status %s, opcode %d, wr_id 0x%llx, QP 0x%06x; expected success, RDMA_WRITE, 0x%llx, 0x%06x",
			i, n, ibv_wc_status_str(wc->status), wc->opcode,
			(unsigned long long)wc->wr_id, wc->qp_num,
			(unsigned long long)((uint64_t)i << 32 | n), u->req[i].qp->qp_num);
		return false;
	}
	__atomic_store_n(&u->polled[i], n + 1, __ATOMIC_RELEASE);
	return true;
}

static int uc_index(struct uc *u, struct ibv_cq *cq)
{
	for (int i = 0; i < NUC; i++)
		if (u->cq[i] == cq)
			return i;
	return -1;
}

/* One channel for three CQs: an event names the CQ to poll and re-arm. */
static void *uc_waiter_main(void *arg)
{
	struct uc *u = arg;
	bool armed[NUC] = { false };
	unsigned unacked[NUC] = { 0 };

	for (;;) {
		struct pollfd pfd = { .fd = u->ch->fd, .events = POLLIN };
		bool all = true, got = false, armed_now = false;
		struct ibv_cq *ev_cq;
		void *ev_ctx;
		int i, n;

		for (i = 0; i < NUC && !stopped(); i++) {
			struct ibv_wc wc[16];

			n = ibv_poll_cq(u->cq[i], 16, wc);
			if (n < 0) {
				mt_fail("UC QP %d: ibv_poll_cq returned %d", i, n);
				goto out;
			}
			for (int k = 0; k < n; k++)
				if (!uc_check(u, i, &wc[k]))
					goto out;
			got |= n > 0;
			all &= __atomic_load_n(&u->polled[i], __ATOMIC_RELAXED) == u->total;
		}
		if (all || stopped())
			break;
		if (got)
			continue;
		if (late("UC waiter: %u %u %u of %u completions", u->polled[0], u->polled[1],
			 u->polled[2], u->total))
			break;
		for (i = 0; i < NUC; i++) {
			if (!armed[i]) {
				int ret = ibv_req_notify_cq(u->cq[i], 0);

				if (ret) {
					mt_fail("UC QP %d: ibv_req_notify_cq: %s", i, strerror(ret));
					goto out;
				}
				armed[i] = armed_now = true;
			}
		}
		if (armed_now)
			continue;     /* poll once more: completions before the arming */
		n = poll(&pfd, 1, 100);
		if (n < 0 && errno != EINTR) {
			mt_fail("UC waiter: poll: %s", strerror(errno));
			break;
		}
		if (n <= 0)
			continue;
		if (ibv_get_cq_event(u->ch, &ev_cq, &ev_ctx)) {
			mt_fail("UC waiter: ibv_get_cq_event: %s", strerror(errno));
			break;
		}
		i = uc_index(u, ev_cq);
		if (i < 0 || ev_ctx != u) {
			mt_fail("UC waiter: ibv_get_cq_event named CQ %p (context %p), none of its CQs",
				(void *)ev_cq, ev_ctx);
			break;
		}
		u->events++;
		armed[i] = false;
		if (++unacked[i] == 8) {
			ibv_ack_cq_events(u->cq[i], unacked[i]);
			unacked[i] = 0;
		}
	}
out:
	for (int i = 0; i < NUC; i++)
		if (unacked[i])
			ibv_ack_cq_events(u->cq[i], unacked[i]);
	return NULL;
}

static void uc_setup(struct uc *u, struct vt_dev *da, struct vt_dev *db)
{
	struct ibv_modify_cq_attr mod = {
		.attr_mask = IBV_CQ_ATTR_MODERATE,
		.moderate = { .cq_count = UC_MOD_COUNT, .cq_period = UC_MOD_PERIOD_US },
	};
	struct vt_qp_opts ro = { .type = IBV_QPT_UC, .sq = UC_OUTSTANDING, .rq = 1,
				 .access = IBV_ACCESS_REMOTE_WRITE };
	struct vt_qp_opts so = ro;
	int ret;

	u->total = 8 * nbatches;
	u->ch = ibv_create_comp_channel(da->ctx);
	if (!u->ch)
		die_setup("ibv_create_comp_channel (UC)", errno);
	u->resp_cq = ibv_create_cq(db->ctx, 8, NULL, NULL, 0);
	if (!u->resp_cq)
		die_setup("ibv_create_cq (UC responders)", errno);
	vt_buf_init(&u->src, da, UC_LEN, IBV_ACCESS_LOCAL_WRITE, 3);
	vt_buf_init(&u->dst, db, NUC * UC_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 4);
	so.send_cq = so.recv_cq = u->resp_cq;
	for (int i = 0; i < NUC; i++) {
		u->cq[i] = ibv_create_cq(da->ctx, 2 * UC_OUTSTANDING, u, u->ch, 0);
		if (!u->cq[i])
			die_setup("ibv_create_cq (UC)", errno);
		ret = ibv_modify_cq(u->cq[i], &mod);
		if (ret)
			die_setup("ibv_modify_cq (UC)", ret);
		ro.send_cq = ro.recv_cq = u->cq[i];
		vt_qp_create(&u->req[i], da, &ro);
		vt_qp_create(&u->resp[i], db, &so);
		ret = vt_qp_connect(&u->req[i], &u->resp[i]);
		if (ret)
			die_setup("connecting UC QPs", ret);
	}
	vt_ok("UC: 3 QPs on context A writing to 3 on B; their send CQs on one channel, moderated (%d completions or %d us)",
	      UC_MOD_COUNT, UC_MOD_PERIOD_US);
}

static void uc_teardown(struct uc *u)
{
	int ret;

	for (int i = 0; i < NUC; i++) {
		if ((ret = ibv_destroy_qp(u->req[i].qp)) || (ret = ibv_destroy_qp(u->resp[i].qp)))
			vt_fail("UC QP %d: ibv_destroy_qp: %s", i, strerror(ret));
		if ((ret = ibv_destroy_cq(u->cq[i])))
			vt_fail("UC QP %d: ibv_destroy_cq: %s", i, strerror(ret));
	}
	if ((ret = ibv_destroy_cq(u->resp_cq)))
		vt_fail("UC: ibv_destroy_cq: %s", strerror(ret));
	if ((ret = ibv_destroy_comp_channel(u->ch)))
		vt_fail("UC: ibv_destroy_comp_channel: %s", strerror(ret));
	vt_buf_free(&u->src);
	vt_buf_free(&u->dst);
}

/* ---- setup and the verdict ----------------------------------------------- */

static void pair_setup(struct pair *p, int id, struct vt_dev *rdev, struct vt_dev *sdev,
		       enum wait_mode wait, struct ibv_cq *shared_scq, struct ibv_cq *rcq,
		       struct vt_buf *counter)
{
	struct vt_qp_opts ro = { .sq = 2 * NOPS, .rq = 1 }, so = { .sq = 1, .rq = NRECV };
	static const char *how[] = {
		[WAIT_SHARED] = "send CQ shared with another pair, busy-polled by both senders and the churn",
		[WAIT_EVENTS] = "send CQ waited on through a completion channel",
		[WAIT_EX] = "ibv_cq_ex busy-polled with ibv_start_poll",
	};
	int ret;

	p->id = id;
	p->wait = wait;
	p->rdev = rdev;
	p->sdev = sdev;
	snprintf(p->name, sizeof(p->name), "pair %d", id);
	p->ow.name = p->name;
	p->ow.ops = batch_ops;
	p->ow.nops = NOPS;
	p->counter = counter;
	if (wait == WAIT_SHARED) {
		p->scq = shared_scq;
	} else if (wait == WAIT_EVENTS) {
		p->sch = ibv_create_comp_channel(rdev->ctx);
		if (!p->sch)
			die_setup("ibv_create_comp_channel", errno);
		p->scq = ibv_create_cq(rdev->ctx, 64, p, p->sch, 0);
		if (!p->scq)
			die_setup("ibv_create_cq with a channel", errno);
	} else {
		struct ibv_cq_init_attr_ex a = {
			.cqe = 64, .wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM,
		};

		p->scqx = ibv_create_cq_ex(rdev->ctx, &a);
		if (!p->scqx)
			die_setup("ibv_create_cq_ex", errno);
		p->scq = ibv_cq_ex_to_cq(p->scqx);
	}
	ro.send_cq = ro.recv_cq = p->scq;
	so.send_cq = so.recv_cq = rcq;
	vt_qp_create(&p->req, rdev, &ro);
	vt_qp_create(&p->resp, sdev, &so);
	ret = vt_qp_connect(&p->req, &p->resp);
	if (ret)
		die_setup("connecting a pair", ret);
	vt_buf_init(&p->sbuf, rdev, 2 * MAXMSG, IBV_ACCESS_LOCAL_WRITE, (uint8_t)id);
	vt_buf_init(&p->wbuf, rdev, WSLOT + MAXWIMM, IBV_ACCESS_LOCAL_WRITE, (uint8_t)id);
	vt_buf_init(&p->rbuf, rdev, WSLOT, IBV_ACCESS_LOCAL_WRITE, (uint8_t)id);
	vt_buf_init(&p->res, rdev, 64, IBV_ACCESS_LOCAL_WRITE, (uint8_t)id);
	vt_buf_init(&p->rq, sdev, (size_t)NRECV * MAXMSG, IBV_ACCESS_LOCAL_WRITE, (uint8_t)id);
	vt_buf_init(&p->wreg, sdev, WREG_LEN, ALL, (uint8_t)id);
	*(uint64_t *)(p->wreg.p + WREG_CAS) = 0;
	vt_ok("%s: QP 0x%06x (context A) -> QP 0x%06x (context %s): %s", p->name,
	      p->req.qp->qp_num, p->resp.qp->qp_num, sdev == rdev ? "A" : "B", how[wait]);
}

static void pair_teardown(struct pair *p)
{
	int ret;

	if ((ret = ibv_destroy_qp(p->req.qp)) || (ret = ibv_destroy_qp(p->resp.qp)))
		vt_fail("%s: ibv_destroy_qp: %s", p->name, strerror(ret));
	if (p->wait != WAIT_SHARED && (ret = ibv_destroy_cq(p->scq)))
		vt_fail("%s: ibv_destroy_cq: %s", p->name, strerror(ret));
	if (p->sch && (ret = ibv_destroy_comp_channel(p->sch)))
		vt_fail("%s: ibv_destroy_comp_channel: %s", p->name, strerror(ret));
	vt_buf_free(&p->sbuf);
	vt_buf_free(&p->wbuf);
	vt_buf_free(&p->rbuf);
	vt_buf_free(&p->res);
	vt_buf_free(&p->rq);
	vt_buf_free(&p->wreg);
}

/* Every thread checks the time limit between verbs calls; one that has
 * not returned JOIN_GRACE seconds after it is stuck inside a verb, where
 * nothing here can end it: the program says so and exits without tearing
 * down. */
#define JOIN_GRACE 10

static void join(pthread_t t, const char *name)
{
	struct timespec abs;
	double left = deadline + JOIN_GRACE - vt_now();
	int ret;

	clock_gettime(CLOCK_REALTIME, &abs);
	if (left > 0) {
		abs.tv_sec += (time_t)left;
		abs.tv_nsec += (long)((left - (double)(time_t)left) * 1e9);
		if (abs.tv_nsec >= 1000000000L) {
			abs.tv_sec++;
			abs.tv_nsec -= 1000000000L;
		}
	}
	ret = pthread_timedjoin_np(t, NULL, &abs);
	if (ret == 0)
		return;
	mt_fail("%s has not returned %d s after the time limit: blocked in a verbs call "
		"(a hang in the library; a debugger shows where)", name, JOIN_GRACE);
	fflush(stdout);
	_exit(1);
}

static void start(pthread_t *t, void *(*fn)(void *), void *arg, const char *name)
{
	int ret = pthread_create(t, NULL, fn, arg);

	if (ret)
		die_setup("pthread_create", ret);
	pthread_setname_np(*t, name);
}

/* The shared send CQ of pairs 0 and 1 (returned) and each receiver's CQ
 * and channel; receiver B's CQ is moderated. */
static struct ibv_cq *make_cqs(struct vt_dev *da, struct vt_dev *db, struct recv_group *groups)
{
	struct ibv_modify_cq_attr mod = {
		.attr_mask = IBV_CQ_ATTR_MODERATE, .moderate = { .cq_count = MOD_COUNT, .cq_period = MOD_PERIOD_US },
	};
	struct ibv_cq *shared_scq;
	int ret;

	shared_scq = ibv_create_cq(da->ctx, 128, NULL, NULL, 0);
	if (!shared_scq)
		die_setup("ibv_create_cq (shared send CQ)", errno);
	for (int g = 0; g < 2; g++) {
		struct vt_dev *d = g ? db : da;

		groups[g].ch = ibv_create_comp_channel(d->ctx);
		if (!groups[g].ch)
			die_setup("ibv_create_comp_channel", errno);
		groups[g].cq = ibv_create_cq(d->ctx, 2 * NRECV + 8, &groups[g], groups[g].ch, 0);
		if (!groups[g].cq)
			die_setup("ibv_create_cq (receive CQ)", errno);
	}
	ret = ibv_modify_cq(groups[1].cq, &mod);
	vt_check(ret == 0, "ibv_modify_cq(IBV_CQ_ATTR_MODERATE, %d completions, %d us) on %s: %s",
		 MOD_COUNT, MOD_PERIOD_US, groups[1].name, ret ? strerror(ret) : "ok");
	return shared_scq;
}

/* Starts the threads and waits for each (a thread that does not end is
 * fatal: see join). */
static void run_threads(struct recv_group *groups, struct churn *churn, struct uc *uc)
{
	pthread_t poster;

	start(&poster, poster_main, NULL, "mt-poster");
	for (int g = 0; g < 2; g++)
		start(&groups[g].thread, receiver_main, &groups[g], g ? "mt-recv-b" : "mt-recv-a");
	for (int i = 0; i < NPAIRS; i++)
		start(&pairs[i].thread, sender_main, &pairs[i], "mt-sender");
	start(&churn->thread, churn_main, churn, "mt-churn");
	start(&uc->waiter, uc_waiter_main, uc, "mt-uc-waiter");
	start(&uc->sender, uc_sender_main, uc, "mt-uc-sender");

	for (int i = 0; i < NPAIRS; i++)
		join(pairs[i].thread, pairs[i].name);
	join(churn->thread, "the churn thread");
	join(uc->sender, "the UC sender");
	join(uc->waiter, "the UC waiter");
	join(poster, "the receive poster");
	for (int g = 0; g < 2; g++)
		join(groups[g].thread, groups[g].name);
}

/* What the threads did, against what they should have done. */
static void verdict(const struct recv_group *groups, const struct churn *churn,
		    const struct uc *uc, double t0)
{
	vt_case = "verdict";
	for (int i = 0; i < NPAIRS; i++) {
		struct pair *p = &pairs[i];

		vt_check(p->batches_done == nbatches,
			 "%s: %u of %u batches of 7 work requests completed, all successful, data and atomics checked",
			 p->name, p->batches_done, nbatches);
		vt_check(p->consumed == recvs_total(),
			 "%s: %u of %u receives (SEND, SEND with immediate, WRITE with immediate) in order, with their length, immediate and payload",
			 p->name, p->consumed, recvs_total());
		vt_check(*(uint64_t *)(p->wreg.p + WREG_CAS) == nbatches,
			 "%s: the CMP_AND_SWP word is %llu after %u swaps", p->name,
			 (unsigned long long)*(uint64_t *)(p->wreg.p + WREG_CAS), nbatches);
		if (p->wait == WAIT_EVENTS)
			vt_check(p->send_events > 0, "%s: %llu completion events on its send CQ",
				 p->name, (unsigned long long)p->send_events);
	}
	vt_check(*(uint64_t *)counters[0].p == 2ull * nbatches,
		 "context A's FETCH_AND_ADD word: %llu after 2 x %u adds from pairs 0 and 1",
		 (unsigned long long)*(uint64_t *)counters[0].p, nbatches);
	vt_check(*(uint64_t *)counters[1].p == 2ull * nbatches,
		 "context B's FETCH_AND_ADD word: %llu after 2 x %u adds from pairs 2 and 3",
		 (unsigned long long)*(uint64_t *)counters[1].p, nbatches);
	vt_check(churn->rounds_done == churn->rounds,
		 "churn: %u of %u rounds of create, connect, SEND/WRITE/READ, destroy (2 QPs and a CQ each)",
		 churn->rounds_done, churn->rounds);
	for (int g = 0; g < 2; g++)
		vt_check(groups[g].events > 0 && groups[g].events <= groups[g].completions,
			 "%s: %llu completion events for %llu completions", groups[g].name,
			 (unsigned long long)groups[g].events,
			 (unsigned long long)groups[g].completions);
	for (int i = 0; i < NUC; i++)
		vt_check(uc->polled[i] == uc->total,
			 "UC QP %d: %u of %u RDMA WRITE completions, successful and in order", i,
			 uc->polled[i], uc->total);
	vt_check(uc->events > 0, "UC: %llu completion events on the shared channel",
		 (unsigned long long)uc->events);
	vt_ok("%.1f s for %u batches per pair", vt_now() - t0, nbatches);
}

int main(int argc, char **argv)
{
	struct vt_dev da, db;
	struct ibv_cq *shared_scq;
	struct recv_group groups[2] = {
		{ .name = "receiver A (pairs 0, 1)" },
		{ .name = "receiver B (pairs 2, 3, moderated)" },
	};
	struct churn churn = { 0 };
	static struct uc uc;
	double seconds = 60, t0;
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: %s DEVICE GID_INDEX [BATCHES [SECONDS]]\n", argv[0]);
		return 2;
	}
	if (argc > 3)
		nbatches = (uint32_t)strtoul(argv[3], NULL, 0);
	if (argc > 4)
		seconds = strtod(argv[4], NULL);
	if (nbatches < 1 || nbatches > 1000000 || seconds <= 0) {
		fprintf(stderr, "BATCHES must be 1..1000000 and SECONDS > 0\n");
		return 2;
	}

	vt_case = "setup";
	vt_dev_open(&da, argv[1], atoi(argv[2]));
	vt_dev_open(&db, argv[1], atoi(argv[2]));
	vt_buf_init(&counters[0], &da, 64, ALL, 0);
	vt_buf_init(&counters[1], &db, 64, ALL, 0);
	*(uint64_t *)counters[0].p = 0;
	*(uint64_t *)counters[1].p = 0;

	shared_scq = make_cqs(&da, &db, groups);

	pair_setup(&pairs[0], 0, &da, &da, WAIT_SHARED, shared_scq, groups[0].cq, &counters[0]);
	pair_setup(&pairs[1], 1, &da, &da, WAIT_SHARED, shared_scq, groups[0].cq, &counters[0]);
	pair_setup(&pairs[2], 2, &da, &db, WAIT_EVENTS, NULL, groups[1].cq, &counters[1]);
	pair_setup(&pairs[3], 3, &da, &db, WAIT_EX, NULL, groups[1].cq, &counters[1]);
	groups[0].pairs[0] = &pairs[0];
	groups[0].pairs[1] = &pairs[1];
	groups[1].pairs[0] = &pairs[2];
	groups[1].pairs[1] = &pairs[3];
	for (int i = 0; i < NPAIRS; i++)
		owners[nowners++] = &pairs[i].ow;

	churn.ow.name = "churn";
	churn.ow.ops = churn_ops;
	churn.ow.nops = CHURN_OPS;
	churn.dev = &da;
	churn.shared_cq = shared_scq;
	churn.rounds = nbatches / 10 > 4 ? nbatches / 10 : 4;
	vt_buf_init(&churn.a, &da, 4 * CHURN_LEN, ALL, 1);
	vt_buf_init(&churn.b, &da, 3 * CHURN_LEN, ALL, 2);
	owners[nowners++] = &churn.ow;
	uc_setup(&uc, &da, &db);

	/* Go: 4 senders, 2 receivers, the receive poster and the churn. */
	vt_case = "run";
	t0 = vt_now();
	deadline = t0 + seconds;
	run_threads(groups, &churn, &uc);
	verdict(groups, &churn, &uc, t0);

	vt_case = "teardown";
	for (int i = 0; i < NPAIRS; i++)
		pair_teardown(&pairs[i]);
	uc_teardown(&uc);
	for (int g = 0; g < 2; g++) {
		if ((ret = ibv_destroy_cq(groups[g].cq)))
			vt_fail("ibv_destroy_cq (receive CQ): %s", strerror(ret));
		if ((ret = ibv_destroy_comp_channel(groups[g].ch)))
			vt_fail("ibv_destroy_comp_channel: %s", strerror(ret));
	}
	if ((ret = ibv_destroy_cq(shared_scq)))
		vt_fail("ibv_destroy_cq (shared send CQ): %s", strerror(ret));
	vt_buf_free(&churn.a);
	vt_buf_free(&churn.b);
	vt_buf_free(&counters[0]);
	vt_buf_free(&counters[1]);
	vt_dev_close(&db);
	vt_dev_close(&da);
	fprintf(stderr, "%d checks, %d failed\n", vt_checks, vt_failures);
	return vt_failures || !vt_checks ? 1 : 0;
}
