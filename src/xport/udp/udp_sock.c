/* The UDP sockets: setup, the send path (ICRC added here) and the batched
 * receive path. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "core/device.h"
#include "wire/gid.h"
#include "engine/engine.h"
#include "util/log.h"
#include "wire/roce_hdr.h"
#include "host/registry.h"
#include "xport/udp/udp_priv.h"

#define UR_SOCK_BUF (32 << 20)   /* only used while backlogged */

static void set_bufs(int fd)
{
	int sz = UR_SOCK_BUF;

	/* Root may exceed net.core.rmem_max; others get what it allows. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
}

int ur_udp_open_sock(struct ur_udp_sock *s, struct ur_udp *u, int family, uint16_t port)
{
	int fd, on = 1, pmtu;
	union {
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} a;
	socklen_t alen;

	s->u = u;
	s->fd = -1;
	s->family = family;
	pthread_mutex_init(&s->pending_lock, NULL);
	s->pending = s->pending_tail = NULL;
	s->roce_port = port == UR_ROCE_UDP_PORT;
	fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
	if (fd < 0)
		return -errno;
	memset(&a, 0, sizeof(a));
	if (family == AF_INET) {
		/* DF on an unconnected socket: the kernel then sends IP ID 0,
		 * which the sender's ICRC assumes. */
		pmtu = IP_PMTUDISC_DO;
		setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
		setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &on, sizeof(on));
		setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &on, sizeof(on));
		setsockopt(fd, IPPROTO_IP, IP_RECVTTL, &on, sizeof(on));
		a.v4.sin_family = AF_INET;
		a.v4.sin_port = htons(port);
		a.v4.sin_addr.s_addr = htonl(INADDR_ANY);
		alen = sizeof(a.v4);
	} else {
		pmtu = IPV6_PMTUDISC_DO;
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
		setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu, sizeof(pmtu));
		setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &on, sizeof(on));
		setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &on, sizeof(on));
		setsockopt(fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &on, sizeof(on));
		a.v6.sin6_family = AF_INET6;
		a.v6.sin6_port = htons(port);
		a.v6.sin6_addr = in6addr_any;
		alen = sizeof(a.v6);
	}
	set_bufs(fd);
	/* UDP GRO: a peer's GSO batch (a uroce sender's, passed whole through
	 * a veth or the stack) arrives as one buffer, split in
	 * handle_datagram.  Without it the kernel cuts the batch on receive
	 * and charges every piece the whole batch's memory: the socket buffer
	 * fills after a few hundred packets and UC/UD messages are lost (seen:
	 * 95% of a 64 KiB UC stream across a veth).  UROCE_UDP_GRO=0 turns it
	 * off; on loopback IPv6 the kernel was seen to hold GRO datagrams for
	 * ~2 ms, but processes of one host no longer talk over UDP. */
	if (!getenv("UROCE_UDP_GRO") || strcmp(getenv("UROCE_UDP_GRO"), "0"))
		setsockopt(fd, SOL_UDP, UDP_GRO, &on, sizeof(on));
	if (bind(fd, (struct sockaddr *)&a, alen)) {
		int err = errno;

		close(fd);
		return -err;
	}
	if (getsockname(fd, (struct sockaddr *)&a, &alen)) {
		int err = errno;

		close(fd);
		return -err;
	}
	s->port = ntohs(family == AF_INET ? a.v4.sin_port : a.v6.sin6_port);
	s->fd = fd;
	return 0;
}

void ur_udp_close_sock(struct ur_udp_sock *s)
{
	if (s->fd >= 0) {
		ur_engine_unwatch_fd(s->u->engine, s->fd);
		close(s->fd);
	}
	s->fd = -1;
}

/* ---- routes ------------------------------------------------------------ */

static int udp_resolve(struct ur_xport *x, const union ibv_gid *sgid, unsigned ifindex,
		       const union ibv_gid *dgid, uint32_t dqpn, struct ur_path *path)
{
	struct ur_udp *u = container_of(x, struct ur_udp, xport);
	int fd, ret = 0;

	memset(path, 0, sizeof(*path));
	path->xport = x;
	path->ifindex = ifindex;
	if (ur_gid_is_v4mapped(sgid)) {
		path->family = AF_INET;
		memcpy(&path->src.v4, &sgid->raw[12], 4);
		path->dst.v4.sin_family = AF_INET;
		path->dst.v4.sin_port = htons(UR_ROCE_UDP_PORT);
		memcpy(&path->dst.v4.sin_addr, &dgid->raw[12], 4);
	} else {
		if (u->own6.fd < 0)
			return -EAFNOSUPPORT;
		path->family = AF_INET6;
		memcpy(&path->src.v6, sgid->raw, 16);
		path->dst.v6.sin6_family = AF_INET6;
		path->dst.v6.sin6_port = htons(UR_ROCE_UDP_PORT);
		memcpy(&path->dst.v6.sin6_addr, dgid->raw, 16);
		if (ur_gid_is_link_local(dgid))
			path->dst.v6.sin6_scope_id = ifindex;
	}
	if (ur_gid_is_multicast(dgid)) {
		/* A group: sent on the device's link, no unicast route needed. */
		path->mcast = true;
		if (path->family == AF_INET6)
			path->dst.v6.sin6_scope_id = ifindex;
		return 0;
	}
	/* A route must exist now, as a RoCE device resolves it at RTR. */
	fd = socket(path->family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		if (connect(fd, (struct sockaddr *)&path->dst,
			    path->family == AF_INET ? sizeof(path->dst.v4) : sizeof(path->dst.v6)))
			ret = -errno;
		close(fd);
	}
	if (ret)
		return ret;
	path->local = ur_gid_is_local_addr(dgid);
	return 0;
}

static const struct ur_xport_ops udp_ops = {
	.name = "udp",
	.send = ur_udp_send,
	.resolve = udp_resolve,
	.mcast = ur_udp_mcast,
	.flush = ur_udp_flush,
	.local_msg = ur_udp_local_msg,
};

/* ---- receive ------------------------------------------------------------ */

static void read_cmsgs(struct msghdr *m, int family, struct ur_roce_ip *ip,
		       uint8_t *tclass, uint8_t *hop, size_t *gro_seg)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
			int v;

			memcpy(&v, CMSG_DATA(c), sizeof(v));
			*gro_seg = v > 0 ? (size_t)v : 0;
			continue;
		}
		if (family == AF_INET && c->cmsg_level == IPPROTO_IP) {
			if (c->cmsg_type == IP_PKTINFO) {
				struct in_pktinfo pi;

				memcpy(&pi, CMSG_DATA(c), sizeof(pi));
				ip->v4.daddr = pi.ipi_addr;
			} else if (c->cmsg_type == IP_TOS) {
				*tclass = *(uint8_t *)CMSG_DATA(c);
			} else if (c->cmsg_type == IP_TTL) {
				int v;

				memcpy(&v, CMSG_DATA(c), sizeof(v));
				*hop = (uint8_t)v;
			}
		} else if (family == AF_INET6 && c->cmsg_level == IPPROTO_IPV6) {
			if (c->cmsg_type == IPV6_PKTINFO) {
				struct in6_pktinfo pi;

				memcpy(&pi, CMSG_DATA(c), sizeof(pi));
				ip->v6.daddr = pi.ipi6_addr;
			} else if (c->cmsg_type == IPV6_TCLASS) {
				int v;

				memcpy(&v, CMSG_DATA(c), sizeof(v));
				*tclass = (uint8_t)v;
			} else if (c->cmsg_type == IPV6_HOPLIMIT) {
				int v;

				memcpy(&v, CMSG_DATA(c), sizeof(v));
				*hop = (uint8_t)v;
			}
		}
	}
}

void ur_udp_deliver(struct ur_udp *u, const uint8_t *pkt, size_t len,
		    const struct ur_roce_ip *ip, uint8_t tclass, uint8_t hop)
{
	struct ur_rx_meta meta = { .traffic_class = tclass, .hop_limit = hop };

	if (ip->family == AF_INET) {
		ur_gid_from_v4(&meta.sgid, ip->v4.saddr);
		ur_gid_from_v4(&meta.dgid, ip->v4.daddr);
	} else {
		memcpy(meta.sgid.raw, &ip->v6.saddr, 16);
		memcpy(meta.dgid.raw, &ip->v6.daddr, 16);
		meta.ipv6 = true;
	}
	if (ur_icrc_check(ip, pkt, len, NULL)) {
		__atomic_add_fetch(&ur_engine_stats.icrc_errors, 1, __ATOMIC_RELAXED);
		ur_device_count_by_gid(&meta.dgid, UR_CNT_ICRC_ERRORS);
		ur_dbg(NULL, "dropped a %zu byte packet: ICRC mismatch", len);
		return;
	}
	ur_engine_rx(u->engine, pkt, len, &meta);
}

static void handle_packet(struct ur_udp_sock *s, const uint8_t *buf, size_t len,
			  const struct ur_roce_ip *ipp, uint8_t tclass, uint8_t hop);

static void handle_datagram(struct ur_udp_sock *s, struct mmsghdr *mm, uint8_t *buf)
{
	struct ur_roce_ip ip = { .family = s->family, .dport = s->port };
	uint8_t tclass = 0, hop = 0;
	size_t len = mm->msg_len, seg = 0;

	if (mm->msg_hdr.msg_flags & MSG_TRUNC) {
		__atomic_add_fetch(&ur_engine_stats.malformed, 1, __ATOMIC_RELAXED);
		return;
	}
	if (s->family == AF_INET) {
		struct sockaddr_in *from = mm->msg_hdr.msg_name;

		ip.v4.saddr = from->sin_addr;
		ip.sport = ntohs(from->sin_port);
	} else {
		struct sockaddr_in6 *from = mm->msg_hdr.msg_name;

		ip.v6.saddr = from->sin6_addr;
		ip.sport = ntohs(from->sin6_port);
	}
	read_cmsgs(&mm->msg_hdr, s->family, &ip, &tclass, &hop, &seg);
	if (!seg || seg >= len) {
		handle_packet(s, buf, len, &ip, tclass, hop);
		return;
	}
	/* Coalesced by UDP GRO: equal segments, the last maybe shorter. */
	for (size_t off = 0; off < len; off += seg)
		handle_packet(s, buf + off, ur_min(seg, len - off), &ip, tclass, hop);
}

static void handle_packet(struct ur_udp_sock *s, const uint8_t *buf, size_t len,
			  const struct ur_roce_ip *ipp, uint8_t tclass, uint8_t hop)
{
	struct ur_udp *u = s->u;
	struct ur_roce_ip ip = *ipp;

	if (s->roce_port && len >= UR_BTH_BYTES) {
		struct ur_reg_owner o;
		uint32_t qpn = bth_qpn(buf);

		if (qpn == UR_MCAST_QPN) {
			ur_udp_mcast_fanout(u, buf, len, &ip, tclass, hop);
			return;
		}
		if (ur_registry_lookup(qpn, &o) == 0 && !o.self) {
			ur_udp_forward(u, qpn, buf, len, &ip, tclass, hop);
			return;
		}
	}
	ur_udp_deliver(u, buf, len, &ip, tclass, hop);
}

void ur_udp_on_readable(void *arg, uint32_t events)
{
	struct ur_udp_sock *s = arg;
	struct ur_rx_batch *b = s->u->batch;

	if (events & EPOLLOUT)
		ur_engine_writable(s->u->engine);
	if (!(events & EPOLLIN))
		return;
	for (;;) {
		int n;

		for (int i = 0; i < UR_UDP_BATCH; i++) {
			b->iov[i] = (struct iovec){ b->buf[i], UR_UDP_BUF };
			b->msgs[i].msg_hdr = (struct msghdr){
				.msg_name = &b->from[i], .msg_namelen = sizeof(b->from[i]),
				.msg_iov = &b->iov[i], .msg_iovlen = 1,
				.msg_control = b->ctrl[i], .msg_controllen = sizeof(b->ctrl[i]),
			};
		}
		n = recvmmsg(s->fd, b->msgs, UR_UDP_BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0)
			return;
		for (int i = 0; i < n; i++) {
			__atomic_add_fetch(&ur_engine_stats.rcvd_pkts, 1, __ATOMIC_RELAXED);
			handle_datagram(s, &b->msgs[i], b->buf[i]);
		}
		if (n < UR_UDP_BATCH)
			return;
	}
}

/* ---- lifetime ----------------------------------------------------------- */

struct ur_udp *ur_udp_create(struct ur_engine *e)
{
	struct ur_udp *u = calloc(1, sizeof(*u));
	int ret;

	if (!u)
		return NULL;
	u->batch = calloc(1, sizeof(*u->batch));
	if (!u->batch) {
		free(u);
		return NULL;
	}
	u->xport.ops = &udp_ops;
	u->engine = e;
	u->fwd_fd = -1;
	u->router_lock_fd = -1;
	u->roce4.fd = u->roce6.fd = -1;
	ur_udp_peers_init(u);
	ret = ur_udp_open_sock(&u->own4, u, AF_INET, 0);
	if (ret) {
		ur_err(NULL, "cannot open a UDP socket: %s", strerror(-ret));
		goto err_free;
	}
	if (ur_udp_open_sock(&u->own6, u, AF_INET6, 0))
		u->own6.fd = -1;         /* IPv6 disabled: IPv4 GIDs still work */
	ret = ur_engine_watch_fd(e, u->own4.fd, EPOLLIN, ur_udp_on_readable, &u->own4);
	if (!ret && u->own6.fd >= 0)
		ret = ur_engine_watch_fd(e, u->own6.fd, EPOLLIN, ur_udp_on_readable, &u->own6);
	if (!ret)
		ret = ur_udp_fwd_open(u);
	if (!ret)
		ret = ur_registry_set_ports(u->own4.port, u->own6.fd >= 0 ? u->own6.port : 0);
	if (ret) {
		ur_err(NULL, "cannot set up the UDP transport: %s", strerror(-ret));
		goto err_socks;
	}
	ur_udp_router_elect(u);
	return u;

err_socks:
	ur_udp_close_sock(&u->own6);
	ur_udp_close_sock(&u->own4);
err_free:
	free(u->batch);
	free(u);
	errno = -ret;
	return NULL;
}

void ur_udp_destroy(struct ur_udp *u)
{
	ur_udp_peers_close(u);
	ur_udp_close_sock(&u->roce4);
	ur_udp_close_sock(&u->roce6);
	ur_udp_close_sock(&u->own4);
	ur_udp_close_sock(&u->own6);
	if (u->fwd_fd >= 0)
		close(u->fwd_fd);
	if (u->router_lock_fd >= 0)
		close(u->router_lock_fd);
	free(u->batch);
	free(u);
}

struct ur_xport *ur_udp_xport(struct ur_udp *u)
{
	return &u->xport;
}

bool ur_udp_is_router(const struct ur_udp *u)
{
	return u->router;
}
