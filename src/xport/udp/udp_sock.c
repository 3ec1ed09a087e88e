/* The UDP sockets: setup, the send path (ICRC added here) and the batched
 * receive path. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "core/device.h"
#include "core/netdev.h"
#include "engine/mcast.h"
#include "engine/engine.h"
#include "util/log.h"
#include "wire/roce_hdr.h"
#include "xport/registry.h"
#include "xport/udp/udp_priv.h"

#define UR_SOCK_BUF (4 << 20)

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

/* ---- send --------------------------------------------------------------- */

static int udp_send(struct ur_xport *x, const struct ur_path *path, const struct ur_tx_pkt *pkt)
{
	struct ur_udp *u = container_of(x, struct ur_udp, xport);
	struct ur_udp_sock *s = path->family == AF_INET ? &u->own4 : &u->own6;
	static const uint8_t zeros[4];
	struct iovec iov[UR_MAX_SGE + 4];
	union {
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} dst;
	union {
		char buf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
		struct cmsghdr align;
	} ctrl;
	struct msghdr msg = { 0 };
	struct cmsghdr *cm;
	struct ur_roce_ip ip = { 0 };
	uint8_t icrc[4];
	size_t roce_len;
	int n = 0;

	if (s->fd < 0)
		return -EAFNOSUPPORT;
	memcpy(&dst, &path->dst, sizeof(dst));
	if (path->local) {
		/* A process of this host: straight to its own socket. */
		struct ur_reg_owner o;

		if (!ur_registry_lookup(bth_qpn(pkt->hdr), &o)) {
			uint16_t port = path->family == AF_INET ? o.port4 : o.port6;

			if (port) {
				if (path->family == AF_INET)
					dst.v4.sin_port = htons(port);
				else
					dst.v6.sin6_port = htons(port);
			}
		}
	}
	iov[n++] = (struct iovec){ (void *)pkt->hdr, pkt->hdr_len };
	for (int i = 0; i < pkt->niov; i++)
		iov[n++] = pkt->iov[i];
	if (pkt->pad)
		iov[n++] = (struct iovec){ (void *)zeros, pkt->pad };
	roce_len = pkt->hdr_len + pkt->paylen + pkt->pad;

	ip.family = path->family;
	ip.sport = s->port;
	ip.ip_id = 0;
	ip.df = true;
	msg.msg_control = ctrl.buf;
	cm = (struct cmsghdr *)ctrl.buf;
	memset(ctrl.buf, 0, sizeof(ctrl.buf));
	if (path->family == AF_INET) {
		struct in_pktinfo pi = { .ipi_spec_dst = path->src.v4 };

		if (path->mcast)
			pi.ipi_ifindex = (int)path->ifindex;   /* the group's link */

		ip.v4.saddr = path->src.v4;
		ip.v4.daddr = dst.v4.sin_addr;
		ip.dport = ntohs(dst.v4.sin_port);
		msg.msg_name = &dst.v4;
		msg.msg_namelen = sizeof(dst.v4);
		cm->cmsg_level = IPPROTO_IP;
		cm->cmsg_type = IP_PKTINFO;
		cm->cmsg_len = CMSG_LEN(sizeof(pi));
		memcpy(CMSG_DATA(cm), &pi, sizeof(pi));
		msg.msg_controllen = CMSG_SPACE(sizeof(pi));
	} else {
		struct in6_pktinfo pi = { .ipi6_addr = path->src.v6 };

		if (path->mcast || ur_gid_is_link_local((const union ibv_gid *)&path->src.v6))
			pi.ipi6_ifindex = path->ifindex;
		ip.v6.saddr = path->src.v6;
		ip.v6.daddr = dst.v6.sin6_addr;
		ip.dport = ntohs(dst.v6.sin6_port);
		msg.msg_name = &dst.v6;
		msg.msg_namelen = sizeof(dst.v6);
		cm->cmsg_level = IPPROTO_IPV6;
		cm->cmsg_type = IPV6_PKTINFO;
		cm->cmsg_len = CMSG_LEN(sizeof(pi));
		memcpy(CMSG_DATA(cm), &pi, sizeof(pi));
		msg.msg_controllen = CMSG_SPACE(sizeof(pi));
	}
	ur_put_le32(icrc, ur_icrc_calc(&ip, iov, n, roce_len));
	iov[n++] = (struct iovec){ icrc, sizeof(icrc) };
	msg.msg_iov = iov;
	msg.msg_iovlen = (size_t)n;
	if (sendmsg(s->fd, &msg, MSG_DONTWAIT) < 0) {
		if (errno == EAGAIN || errno == ENOBUFS) {
			__atomic_add_fetch(&ur_engine_stats.tx_eagain, 1, __ATOMIC_RELAXED);
			return -EAGAIN;
		}
		ur_warn_ratelimited(NULL, "UDP send failed: %s", strerror(errno));
		return -errno;
	}
	__atomic_add_fetch(&ur_engine_stats.sent_pkts, 1, __ATOMIC_RELAXED);
	return 0;
}

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
	.send = udp_send,
	.resolve = udp_resolve,
	.mcast = ur_udp_mcast,
};

/* ---- receive ------------------------------------------------------------ */

static void read_cmsgs(struct msghdr *m, int family, struct ur_roce_ip *ip,
		       uint8_t *tclass, uint8_t *hop)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
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

static void handle_datagram(struct ur_udp_sock *s, struct mmsghdr *mm, uint8_t *buf)
{
	struct ur_udp *u = s->u;
	struct ur_roce_ip ip = { .family = s->family, .dport = s->port };
	uint8_t tclass = 0, hop = 0;
	size_t len = mm->msg_len;

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
	read_cmsgs(&mm->msg_hdr, s->family, &ip, &tclass, &hop);
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

void ur_udp_want_writable(struct ur_udp *u)
{
	ur_engine_rewatch_fd(u->engine, u->own4.fd, EPOLLIN | EPOLLOUT);
	if (u->own6.fd >= 0)
		ur_engine_rewatch_fd(u->engine, u->own6.fd, EPOLLIN | EPOLLOUT);
}

void ur_udp_stop_writable(struct ur_udp *u)
{
	ur_engine_rewatch_fd(u->engine, u->own4.fd, EPOLLIN);
	if (u->own6.fd >= 0)
		ur_engine_rewatch_fd(u->engine, u->own6.fd, EPOLLIN);
}
