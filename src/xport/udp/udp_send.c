/* A staged batch onto its socket: one sendmsg (UDP GSO, or the unix
 * socket of a process of this host), and the batches a socket had no room
 * for, kept in order until it drains.  Nothing else leaves on a socket
 * while it keeps a batch, so packets never overtake each other. */
#include <errno.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "util/log.h"
#include "xport/capture.h"
#include "xport/udp/udp_priv.h"

static int send_error(struct ur_udp *u, const struct tx_batch *b, int err)
{
	if (err == EAGAIN || err == ENOBUFS) {
		UR_UDP_COUNT(u, tx_eagain, 1);
		return -EAGAIN;
	}
	if (b->d.sock->family == AF_UNIX) {
		/* The process ended: a loss, counted in the transport only (a
		 * device's counter takes the device list's lock, which may not
		 * be taken under the QP's held here). */
		ur_udp_sock_stale(b->d.sock);
		UR_UDP_COUNT(u, lost, b->nseg);
	} else {
		ur_warn_ratelimited(NULL, "UDP send of %u packet(s) failed: %s", b->nseg,
				    strerror(err));
	}
	return -err;
}

/* A batch that left, packet by packet, to the capture (xport/capture.h):
 * a local peer's receiving record is this one.  Segment i had IPv4 ID i
 * (udp_tx.c), which its ICRC covers. */
static void capture_batch(const struct tx_batch *b, struct ur_roce_ip *ip)
{
	uint16_t seg = 0;
	pid_t peer = 0;
	enum ur_cap_via via = UR_CAP_VIA_UDP;

	if (b->d.sock->family == AF_UNIX) {
		peer = container_of(b->d.sock, struct ur_udp_peer, sock)->pid;
		via = UR_CAP_VIA_UNIX;
	}
	for (uint32_t off = 0; off < b->len; off += b->nseg > 1 ? b->seg : b->len) {
		uint32_t n = b->nseg > 1 ? ur_min(b->seg, b->len - off) : b->len;
		struct iovec iov = { (void *)(b->buf + off), n };

		ip->ip_id = seg++;
		ur_capture_roce(UR_CAP_TX, via, peer, ip, 0, 64, 0, &iov, 1, n, true);
	}
}

/* The addresses of a batch's packets. */
static void batch_ip(const struct tx_batch *b, struct ur_roce_ip *ip)
{
	memset(ip, 0, sizeof(*ip));
	ip->family = b->d.family;
	ip->sport = b->d.sport;
	ip->df = true;
	if (b->d.family == AF_INET) {
		ip->v4.saddr = b->d.src.v4;
		ip->v4.daddr = b->d.dst.v4.sin_addr;
		ip->dport = ntohs(b->d.dst.v4.sin_port);
	} else {
		ip->v6.saddr = b->d.src.v6;
		ip->v6.daddr = b->d.dst.v6.sin6_addr;
		ip->dport = ntohs(b->d.dst.v6.sin6_port);
	}
}

/* A batch to a local peer: the forwarding header, then the packets back
 * to back. */
static int transmit_local(struct ur_udp *u, const struct tx_batch *b)
{
	struct ur_roce_ip ip;
	struct ur_fwd_hdr h;
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)b->buf, b->len } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };

	batch_ip(b, &ip);
	ur_udp_fwd_hdr_packets(&h, &ip, b->handed_on ? b->tclass : 0,
			       b->handed_on ? b->hop_limit : 64, b->nseg > 1 ? (uint16_t)b->seg : 0);
	if (sendmsg(b->d.sock->fd, &msg, MSG_DONTWAIT) < 0)
		return send_error(u, b, errno);
	if (b->handed_on) {
		UR_UDP_COUNT(u, forwarded, b->nseg);   /* recorded as they arrived */
		return 0;
	}
	UR_UDP_COUNT(u, sent_pkts, b->nseg);
	if (ur_capture_on())
		capture_batch(b, &ip);
	return 0;
}

/* Writes a control message of len bytes of data at at (aligned, zeroed);
 * returns the room it takes. */
static size_t put_cmsg(char *at, int level, int type, const void *data, size_t len)
{
	struct cmsghdr *cm = (struct cmsghdr *)at;

	cm->cmsg_level = level;
	cm->cmsg_type = type;
	cm->cmsg_len = CMSG_LEN(len);
	memcpy(CMSG_DATA(cm), data, len);
	return CMSG_SPACE(len);
}

int ur_udp_transmit(struct ur_udp *u, const struct tx_batch *b)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct in6_pktinfo)) + CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} ctrl;
	struct iovec iov = { (void *)b->buf, b->len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl.buf };
	size_t clen;

	if (b->d.sock->family == AF_UNIX)
		return transmit_local(u, b);
	memset(ctrl.buf, 0, sizeof(ctrl.buf));
	if (b->d.family == AF_INET) {
		struct in_pktinfo pi = { .ipi_spec_dst = b->d.src.v4, .ipi_ifindex = (int)b->d.ifindex };

		msg.msg_name = (void *)&b->d.dst.v4;
		msg.msg_namelen = sizeof(b->d.dst.v4);
		clen = put_cmsg(ctrl.buf, IPPROTO_IP, IP_PKTINFO, &pi, sizeof(pi));
	} else {
		struct in6_pktinfo pi = { .ipi6_addr = b->d.src.v6, .ipi6_ifindex = b->d.ifindex };

		msg.msg_name = (void *)&b->d.dst.v6;
		msg.msg_namelen = sizeof(b->d.dst.v6);
		clen = put_cmsg(ctrl.buf, IPPROTO_IPV6, IPV6_PKTINFO, &pi, sizeof(pi));
	}
	if (b->nseg > 1) {
		uint16_t seg = (uint16_t)b->seg;

		clen += put_cmsg(ctrl.buf + clen, SOL_UDP, UDP_SEGMENT, &seg, sizeof(seg));
	}
	msg.msg_controllen = clen;
	if (sendmsg(b->d.sock->fd, &msg, MSG_DONTWAIT) < 0)
		return send_error(u, b, errno);
	UR_UDP_COUNT(u, sent_pkts, b->nseg);
	if (ur_capture_on()) {
		struct ur_roce_ip ip;

		batch_ip(b, &ip);
		capture_batch(b, &ip);
	}
	return 0;
}

bool ur_udp_has_pending(struct ur_udp_sock *s)
{
	return __atomic_load_n(&s->pending, __ATOMIC_ACQUIRE) != NULL;
}

int ur_udp_flush_pending_sock(struct ur_udp *u, struct ur_udp_sock *s)
{
	int ret = 0;

	pthread_mutex_lock(&s->pending_lock);
	while (s->pending) {
		struct tx_batch *b = s->pending;

		ret = ur_udp_transmit(u, b);
		if (ret == -EAGAIN)
			break;
		/* Sent, or refused for good (a loss the protocol recovers).
		 * Published atomically: ur_udp_has_pending peeks unlocked. */
		__atomic_store_n(&s->pending, b->next, __ATOMIC_RELEASE);
		if (!s->pending)
			s->pending_tail = NULL;
		s->pending_pkts -= b->nseg;
		free(b);
		ret = 0;
	}
	pthread_mutex_unlock(&s->pending_lock);
	return ret;
}

uint32_t ur_udp_drop_pending(struct ur_udp *u, struct ur_udp_sock *s)
{
	struct tx_batch *b;
	uint32_t n = 0;

	/* Taken off under the lock, counted after it: a device's counter
	 * takes the device list's lock, which comes before this one. */
	pthread_mutex_lock(&s->pending_lock);
	b = s->pending;
	__atomic_store_n(&s->pending, NULL, __ATOMIC_RELEASE);
	s->pending_tail = NULL;
	s->pending_pkts = 0;
	pthread_mutex_unlock(&s->pending_lock);
	while (b) {
		struct tx_batch *next = b->next;

		n += b->nseg;
		ur_udp_batch_lost(u, b);
		free(b);
		b = next;
	}
	return n;
}

void ur_udp_on_room(void *arg, uint32_t events)
{
	struct ur_udp_sock *s = arg;

	if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
		return;
	/* What was kept is older than anything a QP would send now. */
	ur_udp_flush_pending(s->u);
	s->u->hooks.writable(s->u->hooks.arg);
}

int ur_udp_flush_pending(struct ur_udp *u)
{
	struct ur_udp_sock *s;
	int i, ret = 0;

	ur_udp_for_each_sock(u, s, i)
		if (ur_udp_has_pending(s) && ur_udp_flush_pending_sock(u, s))
			ret = -EAGAIN;
	return ret;
}

/* Arms S for EPOLLOUT when it keeps batches (or when FORCE), under the
 * lock ur_udp_park takes, so that a batch kept meanwhile is never left
 * without a wake-up.  Returns whether S keeps batches. */
static bool arm_if_pending(struct ur_udp_sock *s, bool force)
{
	bool p;

	pthread_mutex_lock(&s->pending_lock);
	p = s->pending != NULL;
	ur_udp_sock_arm(s, p || force);
	pthread_mutex_unlock(&s->pending_lock);
	return p;
}

void ur_udp_update_writable(struct ur_udp *u, bool waiting)
{
	struct ur_udp_sock *s;
	bool any = false;
	int i;

	ur_udp_for_each_sock(u, s, i)
		if (s != &u->own4)
			any |= arm_if_pending(s, false);
	/* Somebody waits while nothing is kept (it drained in between): our
	 * own socket, writable, wakes them at once. */
	arm_if_pending(&u->own4, waiting && !any);
}

int ur_udp_park(struct ur_udp *u, const struct tx_batch *st)
{
	struct ur_udp_sock *s = st->d.sock;
	size_t size = offsetof(struct tx_batch, buf) + st->len;
	struct tx_batch *b = malloc(size);

	if (!b) {
		UR_UDP_COUNT(u, lost, st->nseg);
		return -ENOMEM;    /* lost: retransmission recovers it */
	}
	memcpy(b, st, size);
	b->next = NULL;
	pthread_mutex_lock(&s->pending_lock);
	if (b->handed_on && s->pending_pkts + b->nseg > UR_HANDON_KEEP_PKTS) {
		pthread_mutex_unlock(&s->pending_lock);
		free(b);
		UR_UDP_COUNT(u, lost, st->nseg);
		return -ENOBUFS;
	}
	s->pending_pkts += b->nseg;
	if (s->pending_tail)
		s->pending_tail->next = b;
	else
		__atomic_store_n(&s->pending, b, __ATOMIC_RELEASE);
	s->pending_tail = b;
	ur_udp_sock_arm(s, true);
	pthread_mutex_unlock(&s->pending_lock);
	return -EAGAIN;
}
