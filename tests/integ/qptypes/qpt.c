#include "qpt.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- checks ---------------------------------------------------------- */

static int passes, failures;

bool qpt_check(bool ok, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		passes++;
		fputs("ok: ", stdout);
	} else {
		failures++;
		printf("FAIL: (%s:%d) ", strrchr(file, '/') ? strrchr(file, '/') + 1 : file, line);
	}
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	return ok;
}

void qpt_die(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	int e = errno;

	printf("FAIL: (%s:%d) setup: ", strrchr(file, '/') ? strrchr(file, '/') + 1 : file, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" (errno %d: %s)\n", e, strerror(e));
	fflush(stdout);
	exit(2);
}

void qpt_note(const char *fmt, ...)
{
	va_list ap;

	fputs("note: ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

int qpt_finish(void)
{
	printf("%s: %d checks passed, %d failed\n", failures ? "FAILED" : "PASSED", passes,
	       failures);
	fflush(stdout);
	return failures || !passes ? 1 : 0;
}

/* ---- options ----------------------------------------------------------- */

void qpt_parse(int argc, char **argv, struct qpt_opts *o)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->gidx = 1;
	o->port = 18515;
	o->mode = "all";
	while ((c = getopt(argc, argv, "d:g:p:m:n:a:")) != -1) {
		switch (c) {
		case 'd': o->dev = optarg; break;
		case 'g': o->gidx = atoi(optarg); break;
		case 'p': o->port = atoi(optarg); break;
		case 'm': o->mode = optarg; break;
		case 'n': o->count = atoi(optarg); break;
		case 'a': o->arg = optarg; break;
		default:
			fprintf(stderr, "usage: %s [-d dev] [-g gid index] [-p tcp port] "
				"[-m mode] [-n count] [-a arg] [server host]\n", argv[0]);
			exit(2);
		}
	}
	if (optind < argc)
		o->host = argv[optind];
	setvbuf(stdout, NULL, _IOLBF, 0);
	srand48(getpid() ^ (long)time(NULL));
}

/* ---- a program's main -------------------------------------------------- */

static bool role_fits(const struct qpt_role *r, const struct qpt_opts *o)
{
	if (r->mode && strcmp(r->mode, o->mode))
		return false;
	return r->side == QPT_EITHER || (r->side == QPT_SERVER) == qpt_is_server(o);
}

/* "-m a|b|c": the modes the roles name, for the failure of no fit. */
static __attribute__((noreturn)) void die_no_role(void)
{
	char modes[256] = "-m ";
	const size_t start = strlen(modes);
	size_t at = start;

	for (const struct qpt_role *r = qpt_roles; r->run && at < sizeof(modes); r++)
		if (r->mode)
			at += (size_t)snprintf(modes + at, sizeof(modes) - at, "%s%s",
					       at > start ? "|" : "", r->mode);
	DIE("%s", modes);
}

int main(int argc, char **argv)
{
	const struct qpt_role *r;
	struct qpt_opts o;

	qpt_parse(argc, argv, &o);
	for (r = qpt_roles; r->run && !role_fits(r, &o); r++)
		;
	if (!r->run)
		die_no_role();
	r->run(&o);
	return qpt_finish();
}

/* ---- device ------------------------------------------------------------ */

unsigned qpt_mtu_bytes(enum ibv_mtu m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128u << m : 0;
}

const char *qpt_gid_str(const union ibv_gid *gid, char buf[64])
{
	inet_ntop(AF_INET6, gid->raw, buf, 64);
	return buf;
}

void qpt_open(struct qpt_dev *d, const char *name, int gidx)
{
	struct ibv_device **list;
	int n, i;

	memset(d, 0, sizeof(*d));
	list = ibv_get_device_list(&n);
	if (!list || !n)
		DIE("no RDMA devices");
	for (i = 0; i < n; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name))
			break;
	if (i == n)
		DIE("device %s not found", name);
	d->ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!d->ctx)
		DIE("ibv_open_device");
	d->pd = ibv_alloc_pd(d->ctx);
	if (!d->pd)
		DIE("ibv_alloc_pd");
	if (ibv_query_port(d->ctx, 1, &d->port))
		DIE("ibv_query_port");
	d->gidx = gidx;
	if (ibv_query_gid(d->ctx, 1, gidx, &d->gid))
		DIE("ibv_query_gid %d", gidx);
	d->mtu = qpt_mtu_bytes(d->port.active_mtu);
}

void qpt_close(struct qpt_dev *d)
{
	if (d->pd && ibv_dealloc_pd(d->pd))
		qpt_note("ibv_dealloc_pd failed (objects left)");
	if (d->ctx)
		ibv_close_device(d->ctx);
	memset(d, 0, sizeof(*d));
}

void qpt_buf(struct qpt_dev *d, struct qpt_buf *b, size_t len, int access)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	b->len = len;
	if (posix_memalign((void **)&b->p, pg, (len + pg - 1) / pg * pg))
		DIE("posix_memalign %zu", len);
	memset(b->p, 0, len);
	b->mr = ibv_reg_mr(d->pd, b->p, len, access);
	if (!b->mr)
		DIE("ibv_reg_mr %zu bytes, access 0x%x", len, access);
}

void qpt_buf_free(struct qpt_buf *b)
{
	if (b->mr && ibv_dereg_mr(b->mr))
		qpt_note("ibv_dereg_mr failed");
	free(b->p);
	memset(b, 0, sizeof(*b));
}

void qpt_teardown(int fd, const struct qpt_made *m)
{
	if (fd >= 0)
		qpt_sync(fd, "done");
	if (m->ah)
		ibv_destroy_ah(m->ah);
	for (int i = 0; i < m->nqp; i++)
		ibv_destroy_qp(m->qp[i]);
	for (size_t i = 0; i < sizeof(m->cq) / sizeof(m->cq[0]); i++)
		if (m->cq[i])
			ibv_destroy_cq(m->cq[i]);
	if (m->buf)
		qpt_buf_free(m->buf);
	if (m->d)
		qpt_close(m->d);
}

/* ---- out-of-band exchange --------------------------------------------- */

int qpt_listen(int port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port) };
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, zero = 0;

	if (fd < 0)
		DIE("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 64))
		DIE("listen on TCP port %d", port);
	return fd;
}

int qpt_accept(int lfd)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	int fd;

	if (poll(&p, 1, 120000) != 1)
		DIE("no peer connected within 120 s");
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		DIE("accept");
	return fd;
}

int qpt_connect_to(const char *host, int port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *t;
	char service[16];
	uint64_t end = qpt_now_ms() + 60000;

	snprintf(service, sizeof(service), "%d", port);
	if (getaddrinfo(host, service, &hints, &res))
		DIE("getaddrinfo %s", host);
	for (;;) {
		for (t = res; t; t = t->ai_next) {
			int fd = socket(t->ai_family, t->ai_socktype | SOCK_CLOEXEC, t->ai_protocol);

			if (fd < 0)
				continue;
			if (!connect(fd, t->ai_addr, t->ai_addrlen)) {
				freeaddrinfo(res);
				return fd;
			}
			close(fd);
		}
		if (qpt_now_ms() > end)
			DIE("cannot connect to %s:%d", host, port);
		qpt_sleep_ms(100);
	}
}

int qpt_oob(const struct qpt_opts *o)
{
	int lfd, fd;

	if (o->host)
		return qpt_connect_to(o->host, o->port);
	lfd = qpt_listen(o->port);
	fd = qpt_accept(lfd);
	close(lfd);
	return fd;
}

void qpt_send(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			DIE("out-of-band write");
		p += n;
		len -= (size_t)n;
	}
}

void qpt_recv(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&pf, 1, 180000) != 1)
			DIE("the peer said nothing for 180 s");
		n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			DIE("out-of-band read: the peer is gone");
		p += n;
		len -= (size_t)n;
	}
}

void qpt_sync(int fd, const char *point)
{
	char mine[48] = { 0 }, theirs[48];

	snprintf(mine, sizeof(mine), "%s", point);
	qpt_send(fd, mine, sizeof(mine));
	qpt_recv(fd, theirs, sizeof(theirs));
	theirs[sizeof(theirs) - 1] = 0;
	if (strcmp(mine, theirs)) {
		errno = 0;
		DIE("out of step: here at '%s', the peer at '%s'", mine, theirs);
	}
}

uint64_t qpt_xchg64(int fd, uint64_t mine)
{
	uint64_t theirs;

	qpt_send(fd, &mine, sizeof(mine));
	qpt_recv(fd, &theirs, sizeof(theirs));
	return theirs;
}

void qpt_xchg_ep(int fd, const struct qpt_ep *mine, struct qpt_ep *theirs)
{
	qpt_send(fd, mine, sizeof(*mine));
	qpt_recv(fd, theirs, sizeof(*theirs));
}

uint64_t qpt_netns_id(void)
{
	struct stat st;

	return stat("/proc/self/ns/net", &st) ? 0 : (uint64_t)st.st_ino;
}

/* ---- QPs ---------------------------------------------------------------- */

struct ibv_cq *qpt_cq(struct qpt_dev *d, int cqe)
{
	struct ibv_cq *cq = ibv_create_cq(d->ctx, cqe, NULL, NULL, 0);

	if (!cq)
		DIE("ibv_create_cq %d", cqe);
	return cq;
}

struct ibv_qp *qpt_qp(struct qpt_dev *d, enum ibv_qp_type type, struct ibv_cq *scq,
		      struct ibv_cq *rcq, struct ibv_srq *srq, int depth)
{
	struct ibv_qp_init_attr a = {
		.send_cq = scq,
		.recv_cq = rcq,
		.srq = srq,
		.cap = {
			.max_send_wr = (uint32_t)depth,
			.max_recv_wr = srq ? 0 : (uint32_t)depth,
			.max_send_sge = 2,
			.max_recv_sge = srq ? 0 : 2,
			.max_inline_data = 64,
		},
		.qp_type = type,
	};
	struct ibv_qp *qp = ibv_create_qp(d->pd, &a);

	if (!qp)
		DIE("ibv_create_qp type %d", type);
	return qp;
}

void qpt_ep_of(struct qpt_dev *d, struct ibv_qp *qp, struct qpt_ep *ep)
{
	memset(ep, 0, sizeof(*ep));
	ep->gid = d->gid;
	ep->qpn = qp ? qp->qp_num : 0;
	ep->psn = (uint32_t)lrand48() & 0xffffff;
	ep->netns = qpt_netns_id();
	ep->v[7] = d->mtu;
}

enum ibv_mtu qpt_path_mtu(struct qpt_dev *d, uint32_t remote_mtu)
{
	unsigned m = d->mtu < remote_mtu || !remote_mtu ? d->mtu : remote_mtu;

	return m >= 4096 ? IBV_MTU_4096 : m >= 2048 ? IBV_MTU_2048 : m >= 1024 ? IBV_MTU_1024
	     : m >= 512 ? IBV_MTU_512 : IBV_MTU_256;
}

int qpt_to_state(struct ibv_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr a = { .qp_state = s };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

enum ibv_qp_state qpt_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return (enum ibv_qp_state)-1;
	return a.qp_state;
}

int qpt_connect_rtr(struct qpt_dev *d, struct ibv_qp *qp, const struct qpt_ep *remote,
		    int access, enum ibv_mtu mtu)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = 1,
		.qp_access_flags = access,
	};
	/* Responder attributes: RC and XRC targets (an initiator has none). */
	bool rc = qp->qp_type == IBV_QPT_RC || qp->qp_type == IBV_QPT_XRC_RECV;
	int ret;

	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					    IBV_QP_ACCESS_FLAGS);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = remote->qpn;
	a.rq_psn = remote->psn;
	a.max_dest_rd_atomic = rc ? 4 : 0;
	a.min_rnr_timer = rc ? 1 : 0;        /* 0.01 ms: RNR retries come quickly */
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = remote->gid;
	a.ah_attr.grh.sgid_index = (uint8_t)d->gidx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					     (rc ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0));
}

int qpt_modify_rts(struct ibv_qp *qp, const struct qpt_ep *mine)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTS,
		.sq_psn = mine->psn,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.max_rd_atomic = 4,
	};
	bool rc = qp->qp_type == IBV_QPT_RC || qp->qp_type == IBV_QPT_XRC_SEND;

	if (qp->qp_type == IBV_QPT_XRC_RECV)
		return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT);
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
					     (rc ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
						   IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC : 0));
}

int qpt_connect(struct qpt_dev *d, struct ibv_qp *qp, const struct qpt_ep *mine,
		const struct qpt_ep *remote, int access, enum ibv_mtu mtu)
{
	int ret = qpt_connect_rtr(d, qp, remote, access, mtu);

	return ret ? ret : qpt_modify_rts(qp, mine);
}

void qpt_connect_each(struct qpt_dev *d, int fd, struct ibv_qp *const *qp, struct qpt_ep *me,
		      struct qpt_ep *peer, int n, int access)
{
	for (int i = 0; i < n; i++) {
		qpt_ep_of(d, qp[i], &me[i]);
		qpt_xchg_ep(fd, &me[i], &peer[i]);
		if (qpt_connect(d, qp[i], &me[i], &peer[i], access, IBV_MTU_1024))
			DIE("QP %d to RTS", i);
	}
}

int qpt_ud_ready(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
				 .qkey = qkey };
	int ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						IBV_QP_QKEY);

	if (ret)
		return ret;
	a.qp_state = IBV_QPS_RTR;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	if (ret)
		return ret;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = (uint32_t)lrand48() & 0xffffff;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

int qpt_post_send1(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, void *addr,
		   uint32_t len, uint32_t lkey, int flags)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = (unsigned)flags,
	}, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

int qpt_post_recv1(struct ibv_qp *qp, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

int qpt_post_srq_recv1(struct ibv_srq *srq, uint64_t wr_id, void *addr, uint32_t len,
		       uint32_t lkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_srq_recv(srq, &wr, &bad);
}

/* ---- completions, events, counters ------------------------------------- */

uint64_t qpt_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

void qpt_sleep_ms(int ms)
{
	struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&t, &t) && errno == EINTR)
		;
}

int qpt_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n, int timeout_ms)
{
	uint64_t end = qpt_now_ms() + (uint64_t)timeout_ms;
	int got = 0;

	while (got < n) {
		int r = ibv_poll_cq(cq, n - got, wc + got);

		if (r < 0) {
			qpt_note("ibv_poll_cq returned %d", r);
			break;
		}
		got += r;
		if (got < n) {
			if (qpt_now_ms() > end)
				break;
			if (!r)
				usleep(200);
		}
	}
	return got;
}

bool qpt_poll_none(struct ibv_cq *cq, int ms, struct ibv_wc *wc)
{
	struct ibv_wc tmp;

	return qpt_poll(cq, wc ? wc : &tmp, 1, ms) == 0;
}

bool qpt_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, int timeout_ms)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	void *cq_ctx;

	if (poll(&p, 1, timeout_ms) != 1)
		return false;
	return ibv_get_cq_event(ch, cq, &cq_ctx) == 0;
}

#define MAX_KEPT 256
static struct {
	enum ibv_event_type type;
	const void *element;
	bool used;
} kept[MAX_KEPT];
static int nkept;

static const void *element_of(const struct ibv_async_event *ev)
{
	switch (ev->event_type) {
	case IBV_EVENT_CQ_ERR:
		return ev->element.cq;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return ev->element.srq;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
	case IBV_EVENT_DEVICE_FATAL:
		return NULL;
	default:
		return ev->element.qp;
	}
}

static bool take_kept(enum ibv_event_type type, const void *element)
{
	for (int i = 0; i < nkept; i++)
		if (!kept[i].used && kept[i].type == type && (!element || kept[i].element == element)) {
			kept[i].used = true;
			return true;
		}
	return false;
}

int qpt_async_seen(enum ibv_event_type type, const void *element)
{
	int n = 0;

	for (int i = 0; i < nkept; i++)
		n += kept[i].type == type && (!element || kept[i].element == element);
	return n;
}

/* Reads every event available within ms into kept[]; true if one matched
 * (type, element) and was taken. */
static bool read_events(struct ibv_context *ctx, enum ibv_event_type type,
			const void *element, int ms)
{
	uint64_t end = qpt_now_ms() + (uint64_t)ms;

	for (;;) {
		struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
		struct ibv_async_event ev;
		int64_t left = (int64_t)(end - qpt_now_ms());

		if (take_kept(type, element))
			return true;
		if (left < 0 || poll(&p, 1, (int)left) != 1)
			return false;
		if (ibv_get_async_event(ctx, &ev))
			return false;
		qpt_note("async event %s (%d) element %p", ibv_event_type_str(ev.event_type),
			 ev.event_type, element_of(&ev));
		if (nkept < MAX_KEPT)
			kept[nkept++] = (typeof(kept[0])){ ev.event_type, element_of(&ev), false };
		ibv_ack_async_event(&ev);
	}
}

bool qpt_async_wait(struct ibv_context *ctx, enum ibv_event_type type, const void *element,
		    int timeout_ms)
{
	return read_events(ctx, type, element, timeout_ms);
}

bool qpt_async_none(struct ibv_context *ctx, enum ibv_event_type type, const void *element,
		    int ms)
{
	return !read_events(ctx, type, element, ms);
}

/* Exported by libibverbs, declared only in its provider header
 * (infiniband/driver.h): the way rdma-core's tools read sysfs. */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);

int64_t qpt_counter(struct ibv_context *ctx, const char *name)
{
	char path[128], val[64];

	snprintf(path, sizeof(path), "ports/1/hw_counters/%s", name);
	if (ibv_read_sysfs_file(ctx->device->ibdev_path, path, val, sizeof(val)) <= 0)
		return -1;
	return strtoll(val, NULL, 0);
}

int64_t qpt_counter_wait(struct ibv_context *ctx, const char *name, int64_t at_least,
			 int timeout_ms)
{
	uint64_t end = qpt_now_ms() + (uint64_t)timeout_ms;
	int64_t v;

	while ((v = qpt_counter(ctx, name)) < at_least && qpt_now_ms() < end)
		qpt_sleep_ms(50);
	return v;
}

int64_t qpt_counter_settle(struct ibv_context *ctx, const char *name, int ms)
{
	int64_t v = qpt_counter(ctx, name), w;
	uint64_t since = qpt_now_ms(), end = since + 30000;

	while (qpt_now_ms() < end) {
		qpt_sleep_ms(50);
		w = qpt_counter(ctx, name);
		if (w != v) {
			v = w;
			since = qpt_now_ms();
		} else if (qpt_now_ms() - since >= (uint64_t)ms) {
			break;
		}
	}
	return v;
}
