/* The datagram data path: a datagram goes over UD once its destination's
 * QP is known, by UDP before (and when it is larger than the path's MTU);
 * what arrives (UD completions, and what the UDP thread queued) waits in
 * one ring for recvfrom, in the order it came.  Progress and sleeping as
 * data.c's for streams.  rs->lock held throughout. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "rsocket/dgram_wire.h"
#include "rsocket/rsocket.h"
#include "rsocket/dgram_priv.h"
#include "util/clock.h"
#include "util/log.h"

#define RS_DS_POLL_BATCH 16
#define RS_DS_UDP_BATCH  64   /* UDP datagrams read per turn of the UDP thread */

static bool can_send(const struct rsock *rs)
{
	return rs->dg->sqe_avail > 0;
}

static bool have_data(const struct rsock *rs)
{
	return rs->dg->ring && rs->dg->head != rs->dg->tail;
}

/* A datagram socket sleeps at most nap_ms (rs_config) at a time. */
static void nap(struct rsock *rs)
{
	rs_ds_sleep(rs, rs_config()->nap_ms);
}

/* rs_wait's loop (wait.c) for a datagram socket. */
static const struct rs_wait_ops wait_ops = {
	.progress = rs_ds_progress,
	.arm = rs_ds_arm,
	.sleep = nap,
};

static size_t iov_len(const struct iovec *iov, int cnt)
{
	size_t n = 0;

	for (int i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	return n;
}

static void gather(uint8_t *dst, const struct iovec *iov, int cnt)
{
	for (int i = 0; i < cnt; i++) {
		memcpy(dst, iov[i].iov_base, iov[i].iov_len);
		dst += iov[i].iov_len;
	}
}

static size_t scatter(const struct iovec *iov, int cnt, const uint8_t *src, size_t n)
{
	size_t done = 0;

	for (int i = 0; i < cnt && done < n; i++) {
		size_t k = iov[i].iov_len < n - done ? iov[i].iov_len : n - done;

		memcpy(iov[i].iov_base, src + done, k);
		done += k;
	}
	return done;
}

/* A UDP header naming d's QP, then n bytes at data, to d. */
static ssize_t send_udp(struct rsock *rs, struct rs_ds_dest *d, uint8_t op, const uint8_t *data,
			size_t n, bool nonblock)
{
	uint8_t hdr[RS_DS_UDP_V6_LEN];
	struct iovec v[2] = { { hdr, 0 }, { (void *)data, n } };
	struct msghdr m = { .msg_name = &d->addr, .msg_iov = v, .msg_iovlen = n ? 2 : 1 };
	ssize_t sent;

	v[0].iov_len = rs_ds_udp_write(hdr, op, d->qp->id->qp->qp_num,
				       (const struct sockaddr *)&d->qp->local);
	m.msg_namelen = d->addr.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						      : sizeof(struct sockaddr_in);
	sent = sendmsg(rs->fd, &m, nonblock ? MSG_DONTWAIT : 0);
	if (sent < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return sent - (ssize_t)v[0].iov_len;
}

ssize_t rs_ds_send(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags,
		   const struct sockaddr *dst, socklen_t dst_len)
{
	struct rs_dgram *dg = rs->dg;
	bool nonblock = rs->nonblock || (flags & MSG_DONTWAIT);
	size_t n = iov_len(iov, iovcnt);
	size_t max = rs->domain == AF_INET6 ? RS_DS_MAX_V6 : RS_DS_MAX_V4;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct rs_ds_dest *d;
	uint8_t *slot;
	uint16_t i;
	int ret;

	ret = rs_ds_ready(rs);
	if (ret)
		return ret;
	if (dst)
		ret = rs_ds_dest(rs, dst, dst_len, &d);
	else if (!(d = dg->conn_dest))
		ret = -EDESTADDRREQ;
	if (ret)
		return ret;
	if (n > max)
		return -EMSGSIZE;
	if (!d->ah || d->qp->hdr_len + n > d->qp->mtu) {
		/* Its QP not known yet, or too large for one UD message:
		 * by UDP (the receiver queues it as it would a UD one). */
		uint8_t buf[RS_SNDLOWAT];

		if (d->ah && !dg->said_mtu) {
			dg->said_mtu = true;
			ur_info(NULL, "rsocket %d: datagrams of over %u bytes go by UDP: the path "
				"MTU is %u", rs->fd, d->qp->mtu - d->qp->hdr_len, d->qp->mtu);
		}
		gather(buf, iov, iovcnt);
		return send_udp(rs, d, RS_OP_DATA, buf, n, nonblock);
	}
	ret = rs_wait_loop(rs, &wait_ops, can_send, nonblock, false);
	if (ret)
		return ret;
	i = dg->free_slots[--dg->sqe_avail];
	slot = dg->sbuf + (size_t)i * RS_SNDLOWAT;
	memcpy(slot, d->qp->hdr, d->qp->hdr_len);
	gather(slot + d->qp->hdr_len, iov, iovcnt);
	sge.addr = (uintptr_t)slot;
	sge.length = (uint32_t)(d->qp->hdr_len + n);
	sge.lkey = d->qp->smr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = i;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED | (sge.length <= rs->sq_inline ? IBV_SEND_INLINE : 0);
	wr.wr.ud.ah = d->ah;
	wr.wr.ud.remote_qpn = d->qpn;
	wr.wr.ud.remote_qkey = RS_DS_QKEY;
	ret = ibv_post_send(d->qp->id->qp, &wr, &bad);
	if (ret) {
		dg->free_slots[dg->sqe_avail++] = i;
		return -ret;
	}
	return (ssize_t)n;
}

static struct rs_ds_msg *ring_tail(struct rsock *rs)
{
	struct rs_dgram *dg = rs->dg;

	if (!dg->rqe_avail)
		return NULL;
	return &dg->ring[dg->tail];
}

static void ring_push(struct rsock *rs)
{
	struct rs_dgram *dg = rs->dg;

	dg->tail = (dg->tail + 1) % (rs->rq_size + 1u);
	dg->rqe_avail--;
}

static void drop(struct rsock *rs, const char *why)
{
	if (!rs->dg->dropped++)
		ur_info(NULL, "rsocket %d: a datagram dropped (%s); later ones are not said", rs->fd,
			why);
}

static void on_recv(struct rsock *rs, struct rs_ds_qp *qp, const struct ibv_wc *wc)
{
	uint32_t off = (uint32_t)wc->wr_id;
	struct rs_ds_msg *m;
	int hl;

	if (wc->status == IBV_WC_WR_FLUSH_ERR)
		return;
	if (wc->status != IBV_WC_SUCCESS || wc->byte_len < 40) {
		rs_ds_repost(rs, qp, off);
		drop(rs, ibv_wc_status_str(wc->status));
		return;
	}
	m = ring_tail(rs);
	if (!m) {
		rs_ds_repost(rs, qp, off);
		drop(rs, "no room: the application reads slower than datagrams come");
		return;
	}
	hl = rs_ds_hdr_read(qp->rbuf + off, wc->byte_len - 40, &m->src, &m->src_len);
	if (hl < 0) {
		rs_ds_repost(rs, qp, off);
		drop(rs, "not an rsocket datagram header");
		return;
	}
	rs_ds_map_v4(rs, &m->src, &m->src_len);
	m->qp = qp;
	m->offset = off;
	m->copy = NULL;
	m->data = qp->rbuf + off + hl;
	m->len = wc->byte_len - 40 - (uint32_t)hl;
	ring_push(rs);
}

void rs_ds_progress(struct rsock *rs)
{
	struct rs_dgram *dg = rs->dg;
	struct ibv_wc wc[RS_DS_POLL_BATCH];
	int n;

	for (struct rs_ds_qp *qp = dg->qps; qp; qp = qp->next)
		while ((n = ibv_poll_cq(qp->cq, RS_DS_POLL_BATCH, wc)) > 0)
			for (int i = 0; i < n; i++) {
				if (wc[i].wr_id & RS_DS_WR_RECV)
					on_recv(rs, qp, &wc[i]);
				else
					dg->free_slots[dg->sqe_avail++] = (uint16_t)wc[i].wr_id;
			}
}

ssize_t rs_ds_recv(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags,
		   struct sockaddr *src, socklen_t *src_len)
{
	struct rs_dgram *dg = rs->dg;
	struct rs_ds_msg *m;
	size_t done;
	int ret;

	ret = rs_ds_ready(rs);
	if (ret)
		return ret;
	ret = rs_wait_loop(rs, &wait_ops, have_data, rs->nonblock || (flags & MSG_DONTWAIT), true);
	if (ret)
		return ret;
	m = &dg->ring[dg->head];
	done = scatter(iov, iovcnt, m->data, m->len);
	if (src && src_len) {
		memcpy(src, &m->src, *src_len < m->src_len ? *src_len : m->src_len);
		*src_len = m->src_len;
	}
	if (flags & MSG_TRUNC)
		done = m->len;   /* the datagram's length, as UDP's MSG_TRUNC */
	if (!(flags & MSG_PEEK)) {
		if (m->qp)
			rs_ds_repost(rs, m->qp, m->offset);
		free(m->copy);
		m->copy = NULL;
		dg->head = (dg->head + 1) % (rs->rq_size + 1u);
		dg->rqe_avail++;
	}
	return (ssize_t)done;
}

bool rs_ds_arm(struct rsock *rs)
{
	bool armed = false;

	for (struct rs_ds_qp *qp = rs->dg->qps; qp; qp = qp->next)
		if (!qp->armed && !ibv_req_notify_cq(qp->cq, 0))
			qp->armed = armed = true;
	return armed;
}

void rs_ds_drain(struct rsock *rs)
{
	struct epoll_event ev[8];
	int n = epoll_wait(rs->dg->epfd, ev, 8, 0);

	for (int i = 0; i < n; i++) {
		struct rs_ds_qp *qp = ev[i].data.ptr;
		struct ibv_cq *cq;
		void *ctx;
		uint64_t v;

		if (!qp) {
			if (read(rs->dg->evfd, &v, sizeof(v)) < 0)
				continue;   /* already read by another waiter */
			continue;
		}
		while (ibv_get_cq_event(qp->cc, &cq, &ctx) == 0) {
			ibv_ack_cq_events(cq, 1);
			qp->armed = false;
		}
	}
}

void rs_ds_sleep(struct rsock *rs, int timeout_ms)
{
	struct pollfd p = { .fd = rs->dg->epfd, .events = POLLIN };

	pthread_mutex_unlock(&rs->lock);
	poll(&p, 1, timeout_ms);
	pthread_mutex_lock(&rs->lock);
	if (p.revents)
		rs_ds_drain(rs);
}

short rs_ds_poll_events(struct rsock *rs)
{
	short ev = 0;

	if (have_data(rs))
		ev |= POLLIN;
	if (!rs->dg->ready || can_send(rs))
		ev |= POLLOUT;
	return ev;
}

void rs_ds_poll_arm(struct rsock *rs, struct pollfd *p)
{
	rs_ds_arm(rs);
	p->fd = rs->dg->epfd;
	p->events = POLLIN;
}

/* One datagram read from the UDP socket: a sender telling us its QP, with
 * its bytes (RS_OP_DATA, answered with our QP) or without (RS_OP_CTRL, an
 * answer to ours). */
static void udp_one(struct rsock *rs, const uint8_t *buf, size_t n,
		    const struct sockaddr_storage *from, socklen_t from_len)
{
	struct rs_ds_dest *d;
	struct rs_ds_udp h;
	struct rs_ds_msg *m;
	int ret;

	if (rs_ds_udp_read(buf, n, rs_ds_is_v4(from) ? AF_INET : AF_INET6, &h)) {
		drop(rs, "a UDP datagram without an rsocket header");
		return;
	}
	ret = rs_ds_dest(rs, (const struct sockaddr *)from, from_len, &d);
	if (ret) {
		drop(rs, "no RDMA device serves the sender's address");
		return;
	}
	if (h.op == RS_OP_DATA)
		send_udp(rs, d, RS_OP_CTRL, NULL, 0, true);
	ret = rs_ds_set_peer(rs, d, h.qpn);
	if (ret)
		ur_info(NULL, "rsocket %d: no path to the sender's QP (%s): datagrams to it go by UDP",
			rs->fd, strerror(-ret));
	if (h.op != RS_OP_DATA)
		return;
	m = ring_tail(rs);
	if (!m) {
		drop(rs, "no room: the application reads slower than datagrams come");
		return;
	}
	m->copy = malloc(n - h.hdr_len ? n - h.hdr_len : 1);
	if (!m->copy) {
		drop(rs, "out of memory");
		return;
	}
	memcpy(m->copy, buf + h.hdr_len, n - h.hdr_len);
	m->qp = NULL;
	m->data = m->copy;
	m->len = (uint32_t)(n - h.hdr_len);
	m->src = *from;
	m->src_len = from_len;
	ring_push(rs);
	if (write(rs->dg->evfd, &(uint64_t){ 1 }, sizeof(uint64_t)) < 0)
		return;   /* the counter is full: a sleeper wakes anyway */
}

void rs_ds_udp_input(struct rsock *rs)
{
	uint8_t buf[RS_SNDLOWAT];

	pthread_mutex_lock(&rs->lock);
	for (int i = 0; rs->type == SOCK_DGRAM && rs->dg->ready && i < RS_DS_UDP_BATCH; i++) {
		struct sockaddr_storage from;
		socklen_t from_len = sizeof(from);
		ssize_t n = recvfrom(rs->fd, buf, sizeof(buf), MSG_DONTWAIT,
				     (struct sockaddr *)&from, &from_len);

		if (n < 0)
			break;
		udp_one(rs, buf, (size_t)n, &from, from_len);
	}
	pthread_mutex_unlock(&rs->lock);
}
