/* The UDP transmit path: packets are staged, with their ICRC, in a
 * per-thread buffer and leave as one UDP GSO send (UDP_SEGMENT) when the
 * caller flushes, the destination changes, or the buffer is full: one
 * system call and one trip through the stack for up to 64 packets.  A peer
 * sees ordinary RoCEv2 packets; a uroce receiver on this host with UDP_GRO
 * even gets them as one buffer.
 *
 * GSO needs every segment but the last to have the same size, so a packet
 * of another size (a WRITE's FIRST carries a RETH the MIDDLEs lack) closes
 * the batch.  A batch the socket has no room for is kept, whole and in
 * order, on the socket's pending list; nothing else is sent on that socket
 * until it has gone (ur_udp_flush_pending, when the engine sees the socket
 * writable).  Batches for a process of this host take the same path to a
 * connected unix socket instead (udp_local.c), which pushes back rather
 * than drops.
 */
#include <errno.h>
#include <netinet/udp.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "wire/gid.h"
#include "engine/engine.h"
#include "util/clock.h"
#include "util/copy.h"
#include "util/log.h"
#include "wire/roce_hdr.h"
#include "host/registry.h"
#include "xport/udp/udp_priv.h"

#define UR_GSO_MAX_SEGS 64
#define UR_GSO_MAX_BYTES 65000      /* a UDP datagram's payload limit, with room */

/* Where a batch goes: everything but the payload a packet's send needs. */
struct tx_dest {
	int family;
	union {
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} dst;
	union {
		struct in_addr v4;
		struct in6_addr v6;
	} src;
	unsigned ifindex;             /* multicast / link-local output */
	uint16_t sport;               /* the UDP source port the ICRC covers */
	struct ur_udp_sock *sock;     /* ours, or a local peer's (AF_UNIX) */
};

struct tx_batch {
	struct tx_dest d;
	uint32_t seg;                 /* size of every segment but the last */
	uint32_t nseg;
	uint32_t len;
	bool closed;                  /* a short last segment is in */
	struct tx_batch *next;        /* on the pending list */
	uint8_t buf[UR_GSO_MAX_BYTES + UR_UDP_BUF];
};

static pthread_key_t stage_key;
static pthread_once_t stage_once = PTHREAD_ONCE_INIT;

static void stage_key_init(void)
{
	pthread_key_create(&stage_key, free);
}

static struct tx_batch *stage(void)
{
	struct tx_batch *b;

	pthread_once(&stage_once, stage_key_init);
	b = pthread_getspecific(stage_key);
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (b)
			pthread_setspecific(stage_key, b);
	}
	return b;
}

static bool same_dest(const struct tx_dest *a, const struct tx_dest *b)
{
	if (a->family != b->family || a->sock != b->sock || a->ifindex != b->ifindex)
		return false;
	if (a->family == AF_INET)
		return a->dst.v4.sin_addr.s_addr == b->dst.v4.sin_addr.s_addr &&
		       a->dst.v4.sin_port == b->dst.v4.sin_port &&
		       a->src.v4.s_addr == b->src.v4.s_addr;
	return !memcmp(&a->dst.v6.sin6_addr, &b->dst.v6.sin6_addr, 16) &&
	       a->dst.v6.sin6_port == b->dst.v6.sin6_port &&
	       a->dst.v6.sin6_scope_id == b->dst.v6.sin6_scope_id &&
	       !memcmp(&a->src.v6, &b->src.v6, 16);
}

static int send_error(const struct tx_batch *b, int err)
{
	if (err == EAGAIN || err == ENOBUFS) {
		__atomic_add_fetch(&ur_engine_stats.tx_eagain, 1, __ATOMIC_RELAXED);
		return -EAGAIN;
	}
	if (b->d.sock->family == AF_UNIX)
		ur_udp_peer_gone(b->d.sock);    /* the process ended: a loss */
	else
		ur_warn_ratelimited(NULL, "UDP send of %u packet(s) failed: %s", b->nseg,
				    strerror(err));
	return -err;
}

/* A batch to a local peer: the forwarding header with what the receiver's
 * ICRC check needs (the addresses and ports UDP would have carried), then
 * the packets back to back. */
static int transmit_local(const struct tx_batch *b)
{
	struct ur_fwd_hdr h = {
		.magic = UR_FWD_MAGIC, .version = UR_FWD_VERSION, .family = (uint16_t)b->d.family,
		.sport = b->d.sport, .hop_limit = 64,
		.seg = b->nseg > 1 ? (uint16_t)b->seg : 0,
	};
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)b->buf, b->len } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };

	if (b->d.family == AF_INET) {
		memcpy(h.saddr, &b->d.src.v4, 4);
		memcpy(h.daddr, &b->d.dst.v4.sin_addr, 4);
		h.dport = ntohs(b->d.dst.v4.sin_port);
	} else {
		memcpy(h.saddr, &b->d.src.v6, 16);
		memcpy(h.daddr, &b->d.dst.v6.sin6_addr, 16);
		h.dport = ntohs(b->d.dst.v6.sin6_port);
	}
	if (sendmsg(b->d.sock->fd, &msg, MSG_DONTWAIT) < 0)
		return send_error(b, errno);
	__atomic_add_fetch(&ur_engine_stats.sent_pkts, b->nseg, __ATOMIC_RELAXED);
	return 0;
}

/* One sendmsg for the whole batch.  0, -EAGAIN, or another -errno. */
static int transmit(const struct tx_batch *b)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct in6_pktinfo)) + CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} ctrl;
	struct iovec iov = { (void *)b->buf, b->len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl.buf };
	struct cmsghdr *cm;
	size_t clen = 0;

	if (b->d.sock->family == AF_UNIX)
		return transmit_local(b);
	memset(ctrl.buf, 0, sizeof(ctrl.buf));
	cm = (struct cmsghdr *)ctrl.buf;
	if (b->d.family == AF_INET) {
		struct in_pktinfo pi = { .ipi_spec_dst = b->d.src.v4, .ipi_ifindex = (int)b->d.ifindex };

		msg.msg_name = (void *)&b->d.dst.v4;
		msg.msg_namelen = sizeof(b->d.dst.v4);
		cm->cmsg_level = IPPROTO_IP;
		cm->cmsg_type = IP_PKTINFO;
		cm->cmsg_len = CMSG_LEN(sizeof(pi));
		memcpy(CMSG_DATA(cm), &pi, sizeof(pi));
		clen = CMSG_SPACE(sizeof(pi));
	} else {
		struct in6_pktinfo pi = { .ipi6_addr = b->d.src.v6, .ipi6_ifindex = b->d.ifindex };

		msg.msg_name = (void *)&b->d.dst.v6;
		msg.msg_namelen = sizeof(b->d.dst.v6);
		cm->cmsg_level = IPPROTO_IPV6;
		cm->cmsg_type = IPV6_PKTINFO;
		cm->cmsg_len = CMSG_LEN(sizeof(pi));
		memcpy(CMSG_DATA(cm), &pi, sizeof(pi));
		clen = CMSG_SPACE(sizeof(pi));
	}
	if (b->nseg > 1) {
		uint16_t seg = (uint16_t)b->seg;

		cm = (struct cmsghdr *)(ctrl.buf + clen);
		cm->cmsg_level = SOL_UDP;
		cm->cmsg_type = UDP_SEGMENT;
		cm->cmsg_len = CMSG_LEN(sizeof(seg));
		memcpy(CMSG_DATA(cm), &seg, sizeof(seg));
		clen += CMSG_SPACE(sizeof(seg));
	}
	msg.msg_controllen = clen;
	if (sendmsg(b->d.sock->fd, &msg, MSG_DONTWAIT) < 0)
		return send_error(b, errno);
	__atomic_add_fetch(&ur_engine_stats.sent_pkts, b->nseg, __ATOMIC_RELAXED);
	return 0;
}

static bool pending(struct ur_udp_sock *s)
{
	return __atomic_load_n(&s->pending, __ATOMIC_ACQUIRE) != NULL;
}

/* Sends what is pending on the socket, oldest first.  0 when all went. */
static int flush_pending_sock(struct ur_udp_sock *s)
{
	int ret = 0;

	pthread_mutex_lock(&s->pending_lock);
	while (s->pending) {
		struct tx_batch *b = s->pending;

		ret = transmit(b);
		if (ret == -EAGAIN)
			break;
		/* Sent, or refused for good (a loss the protocol recovers). */
		s->pending = b->next;
		if (!s->pending)
			s->pending_tail = NULL;
		free(b);
		ret = 0;
	}
	pthread_mutex_unlock(&s->pending_lock);
	return ret;
}

int ur_udp_flush_pending(struct ur_udp *u)
{
	struct ur_udp_sock *s;
	int i, ret = 0;

	ur_udp_for_each_sock(u, s, i)
		if (pending(s) && flush_pending_sock(s))
			ret = -EAGAIN;
	return ret;
}

void ur_udp_drain(struct ur_udp *u, int timeout_ms)
{
	uint64_t end = ur_now_ns() + (uint64_t)timeout_ms * 1000000u;

	ur_udp_flush(&u->xport);
	while (ur_udp_flush_pending(u) == -EAGAIN && ur_now_ns() < end) {
		struct pollfd pfd[2 + UR_UDP_PEERS];
		struct ur_udp_sock *s;
		nfds_t n = 0;
		int i;

		ur_udp_for_each_sock(u, s, i)
			if (pending(s))
				pfd[n++] = (struct pollfd){ .fd = s->fd, .events = POLLOUT };
		if (n)
			poll(pfd, n, 10);
	}
}

/* Arms S for EPOLLOUT when it has parked batches (or when FORCE), under
 * the lock park() takes, so that a batch parked meanwhile is never left
 * without a wake-up.  Returns whether S has parked batches. */
static bool arm_if_pending(struct ur_udp_sock *s, bool force)
{
	bool p;

	pthread_mutex_lock(&s->pending_lock);
	p = s->pending != NULL;
	ur_udp_sock_arm(s, p || force);
	pthread_mutex_unlock(&s->pending_lock);
	return p;
}

void ur_udp_update_writable(struct ur_udp *u, bool qps_blocked)
{
	struct ur_udp_sock *s;
	bool any = false;
	int i;

	ur_udp_for_each_sock(u, s, i)
		if (s != &u->own4)
			any |= arm_if_pending(s, false);
	/* QPs blocked while nothing is parked (it drained in between) need a
	 * wake-up at once: our own socket, writable, gives it. */
	arm_if_pending(&u->own4, qps_blocked && !any);
}

/* Keeps a batch the socket had no room for, after everything pending. */
static int park(const struct tx_batch *st)
{
	struct ur_udp_sock *s = st->d.sock;
	size_t size = offsetof(struct tx_batch, buf) + st->len;
	struct tx_batch *b = malloc(size);

	if (!b)
		return -ENOMEM;    /* lost: retransmission recovers it */
	memcpy(b, st, size);
	b->next = NULL;
	pthread_mutex_lock(&s->pending_lock);
	if (s->pending_tail)
		s->pending_tail->next = b;
	else
		__atomic_store_n(&s->pending, b, __ATOMIC_RELEASE);
	s->pending_tail = b;
	ur_udp_sock_arm(s, true);
	pthread_mutex_unlock(&s->pending_lock);
	return -EAGAIN;
}

/* Sends this thread's staged batch.  -EAGAIN: it is parked, will leave
 * when the socket drains, and the caller should wait for that too. */
static int flush_stage(struct tx_batch *b)
{
	int ret;

	if (!b->nseg)
		return 0;
	ret = pending(b->d.sock) ? -EAGAIN : transmit(b);
	if (ret == -EAGAIN)
		ret = park(b);
	else
		ret = 0;           /* sent, or a loss */
	b->nseg = 0;
	b->len = 0;
	b->closed = false;
	return ret;
}

int ur_udp_flush(struct ur_xport *x)
{
	struct tx_batch *b = stage();

	return b ? flush_stage(b) : 0;
}

static void dest_of(struct ur_udp *u, const struct ur_path *path, const struct ur_tx_pkt *pkt,
		    struct tx_dest *d)
{
	memset(d, 0, sizeof(*d));
	d->family = path->family;
	d->sock = path->family == AF_INET ? &u->own4 : &u->own6;
	d->sport = d->sock->port;
	memcpy(&d->dst, &path->dst, sizeof(d->dst));
	memcpy(&d->src, &path->src, sizeof(d->src));
	if (path->mcast || (path->family == AF_INET6 &&
			    ur_gid_is_link_local((const union ibv_gid *)&path->src.v6)))
		d->ifindex = path->ifindex;
	if (path->local) {
		/* A process of this host: straight to its own socket. */
		struct ur_reg_owner o;

		if (!ur_registry_lookup(bth_qpn(pkt->hdr), &o)) {
			uint16_t port = path->family == AF_INET ? o.port4 : o.port6;
			struct ur_udp_sock *peer = ur_udp_peer_sock(u, o.pid);

			if (port) {
				if (path->family == AF_INET)
					d->dst.v4.sin_port = htons(port);
				else
					d->dst.v6.sin6_port = htons(port);
			}
			if (peer)
				d->sock = peer;   /* lossless; else UDP to its port */
		}
	}
}

int ur_udp_send(struct ur_xport *x, const struct ur_path *path, const struct ur_tx_pkt *pkt)
{
	struct ur_udp *u = container_of(x, struct ur_udp, xport);
	uint32_t size = pkt->hdr_len + pkt->paylen + pkt->pad + UR_ICRC_BYTES;
	struct ur_roce_ip ip = { .family = path->family, .ip_id = 0, .df = true };
	struct tx_batch *b = stage();
	struct tx_dest d;
	struct iovec iov;
	uint8_t *p;
	int ret;

	if (!b)
		return -ENOMEM;
	dest_of(u, path, pkt, &d);
	if (d.sock->fd < 0)
		return -EAFNOSUPPORT;
	if (b->nseg && (b->closed || !same_dest(&b->d, &d) || size > b->seg ||
			b->nseg == UR_GSO_MAX_SEGS || b->len + size > UR_GSO_MAX_BYTES)) {
		ret = flush_stage(b);
		if (ret)
			return ret;
	}
	if (!b->nseg) {
		if (pending(d.sock) && flush_pending_sock(d.sock))
			return -EAGAIN;      /* order: nothing overtakes a parked batch */
		b->d = d;
		b->seg = size;
	} else if (size < b->seg) {
		b->closed = true;            /* a shorter packet ends a GSO batch */
	}

	/* Lay the packet out whole: headers, payload, pad, ICRC. */
	p = b->buf + b->len;
	memcpy(p, pkt->hdr, pkt->hdr_len);
	p += pkt->hdr_len;
	for (int i = 0; i < pkt->niov; i++) {
		ur_memcpy(p, pkt->iov[i].iov_base, pkt->iov[i].iov_len);
		p += pkt->iov[i].iov_len;
	}
	memset(p, 0, pkt->pad);
	p += pkt->pad;
	/* Linux gives an unconnected socket's DF datagram IP ID 0 and numbers
	 * GSO segments from there: segment i leaves with ID i, which the ICRC
	 * covers.  (IPv6 has no ID.) */
	ip.ip_id = (uint16_t)b->nseg;
	ip.sport = d.sport;
	if (d.family == AF_INET) {
		ip.v4.saddr = d.src.v4;
		ip.v4.daddr = d.dst.v4.sin_addr;
		ip.dport = ntohs(d.dst.v4.sin_port);
	} else {
		ip.v6.saddr = d.src.v6;
		ip.v6.daddr = d.dst.v6.sin6_addr;
		ip.dport = ntohs(d.dst.v6.sin6_port);
	}
	iov = (struct iovec){ b->buf + b->len, size - UR_ICRC_BYTES };
	ur_put_le32(p, ur_icrc_calc(&ip, &iov, 1, size - UR_ICRC_BYTES));
	b->len += size;
	b->nseg++;
	return 0;
}
