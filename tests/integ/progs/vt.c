/* The verbs test harness: see vt.h. */
#include "vt.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *vt_case = "setup";
int vt_failures, vt_checks;

static void vline(const char *tag, const char *fmt, va_list ap)
{
	printf("%s: %s: ", tag, vt_case);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
}

void vt_ok(const char *fmt, ...)
{
	va_list ap;

	vt_checks++;
	va_start(ap, fmt);
	vline("ok", fmt, ap);
	va_end(ap);
}

void vt_fail(const char *fmt, ...)
{
	va_list ap;

	vt_checks++;
	vt_failures++;
	va_start(ap, fmt);
	vline("FAIL", fmt, ap);
	va_end(ap);
}

bool vt_check(bool cond, const char *fmt, ...)
{
	va_list ap;

	vt_checks++;
	if (!cond)
		vt_failures++;
	va_start(ap, fmt);
	vline(cond ? "ok" : "FAIL", fmt, ap);
	va_end(ap);
	return cond;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("FAIL", fmt, ap);
	va_end(ap);
	exit(2);
}

double vt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t lag_max_us, lag_at_ms;   /* written by the watcher */
static unsigned lag_long;
static const char *lag_who;
static double lag_t0;

/* 10 ms: a thread that sleeps and wakes a thousand times a second beside
 * busy ones makes this kernel's scheduler keep other sessions' threads
 * off the CPU for up to seconds (docs/reliability.md): the watcher must
 * not cause what it measures in a neighbour. */
#define LAG_SLEEP 0.010

static void *lag_thread(void *arg)
{
	(void)arg;
	for (;;) {
		double t = vt_now();
		uint64_t late;

		vt_sleep(LAG_SLEEP);
		late = (uint64_t)((vt_now() - t - LAG_SLEEP) * 1e6);
		if (late > __atomic_load_n(&lag_max_us, __ATOMIC_RELAXED)) {
			__atomic_store_n(&lag_max_us, late, __ATOMIC_RELAXED);
			__atomic_store_n(&lag_at_ms, (uint64_t)((t - lag_t0) * 1e3), __ATOMIC_RELAXED);
		}
		if (late > 100000)
			__atomic_add_fetch(&lag_long, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void lag_report(void)
{
	printf("%s: longest wake-up lag of a 10 ms sleeper: %.1f ms at %.3f s, %u over 100 ms\n",
	       lag_who, (double)__atomic_load_n(&lag_max_us, __ATOMIC_RELAXED) / 1e3,
	       (double)__atomic_load_n(&lag_at_ms, __ATOMIC_RELAXED) / 1e3,
	       __atomic_load_n(&lag_long, __ATOMIC_RELAXED));
}

void vt_lag_watch(const char *who)
{
	pthread_t t;

	lag_who = who;
	lag_t0 = vt_now();
	if (!pthread_create(&t, NULL, lag_thread, NULL)) {
		pthread_detach(t);
		atexit(lag_report);   /* failures exit early too */
	}
}

void vt_sleep(double seconds)
{
	struct timespec ts = { (time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9) };

	nanosleep(&ts, NULL);
}

/* ---- device ------------------------------------------------------------ */

void vt_dev_open(struct vt_dev *d, const char *name, int gid_index)
{
	struct ibv_device **list;
	int n, i;

	memset(d, 0, sizeof(*d));
	list = ibv_get_device_list(&n);
	if (!list)
		die("ibv_get_device_list: %s", strerror(errno));
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			break;
	if (i == n)
		die("device %s not found", name);
	d->ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!d->ctx)
		die("ibv_open_device(%s): %s", name, strerror(errno));
	d->port = 1;
	d->gid_index = gid_index;
	if (ibv_query_port(d->ctx, d->port, &d->port_attr))
		die("ibv_query_port: %s", strerror(errno));
	if (ibv_query_gid(d->ctx, d->port, gid_index, &d->gid))
		die("ibv_query_gid(%d): %s", gid_index, strerror(errno));
	if (ibv_query_device(d->ctx, &d->attr))
		die("ibv_query_device: %s", strerror(errno));
	d->pd = ibv_alloc_pd(d->ctx);
	if (!d->pd)
		die("ibv_alloc_pd: %s", strerror(errno));
}

void vt_dev_close(struct vt_dev *d)
{
	int ret;

	if (d->pd && (ret = ibv_dealloc_pd(d->pd)))
		vt_fail("ibv_dealloc_pd at the end (something leaked?): %s", strerror(ret));
	if (d->ctx && (ret = ibv_close_device(d->ctx)))
		vt_fail("ibv_close_device: %s", strerror(ret));
}

/* ---- memory ------------------------------------------------------------ */

uint8_t vt_pattern(uint8_t seed, size_t i)
{
	return (uint8_t)(seed * 131u + i * 7u + (i >> 8) * 13u + 1u);
}

void vt_buf_fill(struct vt_buf *b, uint8_t seed)
{
	size_t span = b->len + 2 * VT_GUARD;

	b->seed = seed;
	for (size_t i = 0; i < span; i++)
		b->base[i] = vt_pattern(seed, i);
}

void vt_buf_init(struct vt_buf *b, struct vt_dev *d, size_t len, int access, uint8_t seed)
{
	memset(b, 0, sizeof(*b));
	if (posix_memalign((void **)&b->base, 4096, len + 2 * VT_GUARD))
		die("out of memory");
	b->p = b->base + VT_GUARD;
	b->len = len;
	vt_buf_fill(b, seed);
	if (access < 0)
		return;
	b->mr = ibv_reg_mr(d->pd, b->p, len, access);
	if (!b->mr)
		die("ibv_reg_mr(%zu bytes, access 0x%x): %s", len, access, strerror(errno));
}

void vt_buf_free(struct vt_buf *b)
{
	int ret;

	if (b->mr && (ret = ibv_dereg_mr(b->mr)))
		vt_fail("ibv_dereg_mr: %s", strerror(ret));
	free(b->base);
	memset(b, 0, sizeof(*b));
}

bool vt_buf_unchanged(const struct vt_buf *b, const char *what)
{
	size_t span = b->len + 2 * VT_GUARD, first = span, last = 0, n = 0;

	for (size_t i = 0; i < span; i++) {
		if (b->base[i] != vt_pattern(b->seed, i)) {
			if (first == span)
				first = i;
			last = i;
			n++;
		}
	}
	if (!n) {
		vt_ok("%s: not one byte changed (%zu bytes and %u guard bytes each side)",
		      what, b->len, VT_GUARD);
		return true;
	}
	vt_fail("%s: %zu bytes changed, from offset %zd to %zd of the region "
		"(negative: the guard before it; >= %zu: the guard after it)",
		what, n, (ssize_t)first - (ssize_t)VT_GUARD, (ssize_t)last - (ssize_t)VT_GUARD,
		b->len);
	return false;
}

/* ---- QPs --------------------------------------------------------------- */

static void defaults(struct vt_qp_opts *o, const struct vt_qp_opts *in, struct vt_dev *d)
{
	if (in)
		*o = *in;
	else
		memset(o, 0, sizeof(*o));
	if (!o->type)
		o->type = IBV_QPT_RC;
	if (!o->sq)
		o->sq = 64;
	if (!o->rq)
		o->rq = 64;
	if (!o->max_sge)
		o->max_sge = 4;
	if (!o->access && !o->no_access)
		o->access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC;
	if (!o->timeout)
		o->timeout = 14;
	if (!o->retry_cnt)
		o->retry_cnt = 7;
	else if (o->retry_cnt == VT_ZERO)
		o->retry_cnt = 0;
	if (!o->rnr_retry)
		o->rnr_retry = 7;
	else if (o->rnr_retry == VT_ZERO)
		o->rnr_retry = 0;
	if (!o->min_rnr_timer)
		o->min_rnr_timer = 1;
	if (!o->max_rd_atomic)
		o->max_rd_atomic = 4;
	if (!o->mtu)
		o->mtu = d->port_attr.active_mtu;
}

void vt_qp_create(struct vt_qp *q, struct vt_dev *d, const struct vt_qp_opts *opts)
{
	struct ibv_qp_init_attr_ex a;

	memset(q, 0, sizeof(*q));
	q->dev = d;
	defaults(&q->o, opts, d);
	if (!q->o.send_cq || !q->o.recv_cq) {
		q->cq = ibv_create_cq(d->ctx, (int)(q->o.sq + q->o.rq + 16), NULL, NULL, 0);
		if (!q->cq)
			die("ibv_create_cq: %s", strerror(errno));
		q->own_cq = true;
	}
	q->scq = q->o.send_cq ? q->o.send_cq : q->cq;
	q->rcq = q->o.recv_cq ? q->o.recv_cq : q->cq;

	memset(&a, 0, sizeof(a));
	a.qp_type = q->o.type;
	a.send_cq = q->scq;
	a.recv_cq = q->rcq;
	a.srq = q->o.srq;
	a.sq_sig_all = q->o.sq_sig_all;
	a.cap.max_send_wr = q->o.sq;
	a.cap.max_recv_wr = q->o.srq ? 0 : q->o.rq;
	a.cap.max_send_sge = q->o.max_sge;
	a.cap.max_recv_sge = q->o.srq ? 0 : q->o.max_sge;
	a.cap.max_inline_data = q->o.max_inline;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = d->pd;
	if (q->o.send_ops_flags) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = q->o.send_ops_flags;
	}
	q->qp = ibv_create_qp_ex(d->ctx, &a);
	if (!q->qp)
		die("ibv_create_qp_ex (type %d, send_ops_flags 0x%llx): %s", q->o.type,
		    (unsigned long long)q->o.send_ops_flags, strerror(errno));
	if (q->o.send_ops_flags) {
		q->qpx = ibv_qp_to_qp_ex(q->qp);
		if (!q->qpx)
			die("ibv_qp_to_qp_ex: NULL");
	}
}

void vt_qp_destroy(struct vt_qp *q)
{
	int ret;

	if (q->qp && (ret = ibv_destroy_qp(q->qp)))
		vt_fail("ibv_destroy_qp: %s", strerror(ret));
	if (q->own_cq && (ret = ibv_destroy_cq(q->cq)))
		vt_fail("ibv_destroy_cq: %s", strerror(ret));
	memset(q, 0, sizeof(*q));
}

static int to_init(struct vt_qp *q)
{
	struct ibv_qp_attr a;
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = q->dev->port;
	if (q->o.type == IBV_QPT_UD) {
		a.qkey = 0x11111111;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = q->o.no_access ? 0 : (unsigned)q->o.access;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	return ibv_modify_qp(q->qp, &a, mask);
}

static int to_rtr_remote(struct vt_qp *q, uint32_t qpn, const union ibv_gid *gid)
{
	struct ibv_qp_attr a;
	int mask = IBV_QP_STATE;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (q->o.type != IBV_QPT_UD) {
		a.path_mtu = q->o.mtu;
		a.dest_qp_num = qpn;
		a.rq_psn = 0x100;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = *gid;
		a.ah_attr.grh.sgid_index = (uint8_t)q->dev->gid_index;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.port_num = q->dev->port;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (q->o.type == IBV_QPT_RC) {
			a.max_dest_rd_atomic = 16;
			a.min_rnr_timer = q->o.min_rnr_timer;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
	}
	return ibv_modify_qp(q->qp, &a, mask);
}

static int to_rtr(struct vt_qp *q, struct vt_qp *peer)
{
	return to_rtr_remote(q, peer->qp->qp_num, &peer->dev->gid);
}

static int to_rts(struct vt_qp *q)
{
	struct ibv_qp_attr a;
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x100;
	if (q->o.type == IBV_QPT_RC) {
		a.timeout = q->o.timeout;
		a.retry_cnt = q->o.retry_cnt;
		a.rnr_retry = q->o.rnr_retry;
		a.max_rd_atomic = q->o.max_rd_atomic;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return ibv_modify_qp(q->qp, &a, mask);
}

int vt_qp_connect(struct vt_qp *a, struct vt_qp *b)
{
	int ret;

	if ((ret = to_init(a)) || (ret = to_init(b)))
		return ret;
	if ((ret = to_rtr(a, b)) || (ret = to_rtr(b, a)))
		return ret;
	if ((ret = to_rts(a)) || (ret = to_rts(b)))
		return ret;
	return 0;
}

int vt_qp_connect_remote(struct vt_qp *q, uint32_t qpn, const union ibv_gid *gid)
{
	int ret;

	if ((ret = to_init(q)) || (ret = to_rtr_remote(q, qpn, gid)) || (ret = to_rts(q)))
		return ret;
	return 0;
}

int vt_qps_connect_remote(struct vt_qp *qps, uint32_t n, const uint32_t *peer_qpn,
			  const union ibv_gid *gid, uint32_t *bad)
{
	for (uint32_t i = 0; i < n; i++) {
		int ret = vt_qp_connect_remote(&qps[i], peer_qpn[i], gid);

		if (ret) {
			*bad = i;
			return ret;
		}
	}
	return 0;
}

void vt_rc_pair(struct vt_dev *d, struct vt_qp *a, const struct vt_qp_opts *ao,
		struct vt_qp *b, const struct vt_qp_opts *bo)
{
	int ret;

	vt_qp_create(a, d, ao);
	vt_qp_create(b, d, bo);
	ret = vt_qp_connect(a, b);
	if (ret)
		die("connecting QPs 0x%06x and 0x%06x: %s", a->qp->qp_num, b->qp->qp_num,
		    strerror(ret));
}

enum ibv_qp_state vt_qp_state(struct vt_qp *q)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(q->qp, &a, IBV_QP_STATE, &ia))
		return (enum ibv_qp_state)-1;
	return a.qp_state;
}

enum ibv_qp_state vt_qp_wait_state(struct vt_qp *q, enum ibv_qp_state state, double seconds)
{
	double end = vt_now() + seconds;
	enum ibv_qp_state s;

	while ((s = vt_qp_state(q)) != state && vt_now() < end)
		vt_sleep(0.001);
	return s;
}

int vt_qp_to_error(struct vt_qp *q)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	return ibv_modify_qp(q->qp, &a, IBV_QP_STATE);
}

struct ibv_ah *vt_ah(struct vt_dev *d)
{
	struct ibv_ah_attr a;
	struct ibv_ah *ah;

	memset(&a, 0, sizeof(a));
	a.is_global = 1;
	a.grh.dgid = d->gid;
	a.grh.sgid_index = (uint8_t)d->gid_index;
	a.grh.hop_limit = 64;
	a.port_num = d->port;
	ah = ibv_create_ah(d->pd, &a);
	if (!ah)
		die("ibv_create_ah: %s", strerror(errno));
	return ah;
}

/* ---- posting and polling ------------------------------------------------ */

int vt_post_recv(struct vt_qp *q, uint64_t wr_id, struct ibv_sge *sge, int nsge)
{
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = sge, .num_sge = nsge }, *bad;

	return q->o.srq ? ibv_post_srq_recv(q->o.srq, &wr, &bad) : ibv_post_recv(q->qp, &wr, &bad);
}

int vt_post_send(struct vt_qp *q, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	return ibv_post_send(q->qp, wr, &bad);
}

struct ibv_send_wr vt_wr(uint64_t wr_id, enum ibv_wr_opcode op, struct ibv_sge *sge)
{
	struct ibv_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.sg_list = sge;
	wr.num_sge = sge ? 1 : 0;
	wr.send_flags = IBV_SEND_SIGNALED;
	return wr;
}

void vt_wr_ud(struct ibv_send_wr *wr, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	wr->wr.ud.ah = ah;
	wr->wr.ud.remote_qpn = qpn;
	wr->wr.ud.remote_qkey = qkey;
}

struct ibv_sge vt_sge(const struct vt_buf *b, size_t off, uint32_t len)
{
	struct ibv_sge s = { .addr = (uintptr_t)(b->p + off), .length = len,
			     .lkey = b->mr ? b->mr->lkey : 0 };

	return s;
}

int vt_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n, double seconds)
{
	double end = vt_now() + seconds;
	int got = 0;

	while (got < n) {
		int r = ibv_poll_cq(cq, n - got, wc + got);

		if (r < 0) {
			vt_fail("ibv_poll_cq returned %d", r);
			return got;
		}
		got += r;
		if (got < n) {
			if (vt_now() >= end)
				break;
			if (!r)
				sched_yield();
		}
	}
	return got;
}

bool vt_poll_one(struct ibv_cq *cq, struct ibv_wc *wc, double seconds, const char *what)
{
	memset(wc, 0, sizeof(*wc));
	if (vt_poll(cq, wc, 1, seconds) == 1)
		return true;
	wc->status = (enum ibv_wc_status)-1;
	vt_fail("%s: no completion within %.0f s", what, seconds);
	return false;
}

bool vt_poll_none(struct ibv_cq *cq, double seconds, const char *what)
{
	struct ibv_wc wc;

	if (vt_poll(cq, &wc, 1, seconds) == 0) {
		vt_ok("%s: no completion in %.1f s", what, seconds);
		return true;
	}
	vt_fail("%s: unexpected completion wr_id 0x%llx status %s opcode %d", what,
		(unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status), wc.opcode);
	return false;
}

/* ---- running cases ------------------------------------------------------ */

int vt_main(int argc, char **argv, const struct vt_case *cases)
{
	struct vt_dev d;
	int ran = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3) {
		fprintf(stderr, "usage: %s DEVICE GID_INDEX [CASE...]\ncases:", argv[0]);
		for (const struct vt_case *c = cases; c->name; c++)
			fprintf(stderr, " %s", c->name);
		fprintf(stderr, "\n");
		return 2;
	}
	vt_dev_open(&d, argv[1], atoi(argv[2]));
	for (const struct vt_case *c = cases; c->name; c++) {
		bool want = argc == 3 && !c->by_name_only;

		for (int i = 3; i < argc; i++)
			want |= !strcmp(argv[i], c->name);
		if (!want)
			continue;
		vt_case = c->name;
		c->fn(&d);
		ran++;
	}
	vt_case = "teardown";
	vt_dev_close(&d);
	fprintf(stderr, "%d cases, %d checks, %d failed\n", ran, vt_checks, vt_failures);
	return vt_failures || !vt_checks ? 1 : 0;
}
