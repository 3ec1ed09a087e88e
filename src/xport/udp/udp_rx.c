/* The receive side: UDP sockets (our own, and port 4791 while this process
 * serves it) and our unix socket.  Every packet has its ICRC checked here
 * and goes to the hooks; on port 4791, packets for another process's QP
 * are handed to it instead, and multicast datagrams to every member.  A
 * socket that becomes writable releases what it kept and tells the hooks. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stddef.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "host/cm_route.h"
#include "host/netdev.h"
#include "host/registry.h"
#include "util/fd.h"
#include "util/log.h"
#include "wire/gid.h"
#include "wire/roce_hdr.h"
#include "xport/capture.h"
#include "xport/udp/udp_priv.h"

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

/* Every received RoCE packet, through its receive context's fault
 * injector when asked for. */
static void deliver(struct ur_udp *u, struct ur_udp_rx *rx, const uint8_t *pkt, size_t len,
		    const struct ur_roce_ip *ip, uint8_t tclass, uint8_t hop)
{
	if (rx->fault)
		ur_udp_fault_rx(u, rx->fault, pkt, len, ip, tclass, hop);
	else
		ur_udp_deliver(u, pkt, len, ip, tclass, hop);
}

static void malformed(struct ur_udp *u)
{
	UR_UDP_COUNT(u, malformed, 1);
	u->hooks.dropped(u->hooks.arg, UR_XPORT_DROP_MALFORMED, NULL);
}

/* A datagram on our unix socket from another user's process: never
 * delivered, counted as malformed, said once. */
static void foreign(struct ur_udp *u)
{
	static bool warned;

	if (!__atomic_exchange_n(&warned, true, __ATOMIC_RELAXED))
		ur_warn(NULL, "refused a datagram from another user's process on this process's "
			"local socket (further ones are counted as malformed)");
	malformed(u);
}

/* A multicast datagram on port 4791: every member process of the host
 * gets it, this one directly (context 0). */
static void fan_out(struct ur_udp *u, struct ur_udp_rx *rx, const uint8_t *pkt, size_t len,
		    const struct ur_roce_ip *ip, uint8_t tclass, uint8_t hop)
{
	struct ur_reg_owner members[64];
	union ibv_gid dgid;
	int n;

	if (ip->family == AF_INET)
		ur_gid_from_v4(&dgid, ip->v4.daddr);
	else
		memcpy(dgid.raw, &ip->v6.daddr, 16);
	n = ur_registry_mcast_members(u->reg, &dgid, members, (int)UR_ARRAY_SIZE(members));
	for (int i = 0; i < n; i++) {
		if (members[i].self)
			deliver(u, rx, pkt, len, ip, tclass, hop);
		else
			ur_udp_hand_on(u, rx, members[i].pid, pkt, len, ip, tclass, hop);
	}
}

/* A packet off a UDP socket, to the capture: the one place it is seen
 * arriving (what comes through our unix socket was recorded as it left
 * the process of this host that sent it).  owner: the process it is
 * handed to, 0 for us or a group. */
static void tap(const uint8_t *buf, size_t len, const struct ur_roce_ip *ip, uint8_t tclass,
		uint8_t hop, pid_t owner)
{
	struct iovec iov = { (void *)buf, len };

	if (ur_capture_on())
		ur_capture_roce(UR_CAP_RX, UR_CAP_VIA_UDP, owner, ip, tclass, hop, 0, &iov, 1, len,
				true);
}

/* A group's datagram sent from one of this namespace's addresses came back
 * by multicast loop: its sender recorded it as it left. */
static bool looped_back(const struct ur_roce_ip *ip)
{
	union ibv_gid src, dst;

	ur_udp_ip_gids(ip, &src, &dst);
	return ur_gid_is_local_addr(&src);
}

static bool to_group(const struct ur_roce_ip *ip)
{
	return ip->family == AF_INET ? IN_MULTICAST(ntohl(ip->v4.daddr.s_addr)) :
				       IN6_IS_ADDR_MULTICAST(&ip->v6.daddr);
}

/* Whether the kernel's program should have steered this packet elsewhere
 * (udp_host_port.c): counted, to check that a QP stays on one context. */
static bool stray(const struct ur_udp_sock *s, uint32_t qpn)
{
	unsigned n = __atomic_load_n(&s->spread, __ATOMIC_RELAXED);

	if (!n)
		return false;
	return (qpn == UR_GSI_QPN || qpn == UR_MCAST_QPN ? 0 : qpn % n) != s->rx->index;
}

static void handle_packet(struct ur_udp_sock *s, const uint8_t *buf, size_t len,
			  const struct ur_roce_ip *ip, uint8_t tclass, uint8_t hop)
{
	struct ur_udp *u = s->u;
	struct ur_udp_rx *rx = s->rx;

	/* The kernel gives every socket of the port its own copy of a
	 * datagram sent to an IP multicast group: context 0 takes it. */
	if (rx->index && to_group(ip))
		return;
	__atomic_add_fetch(&rx->pkts, 1, __ATOMIC_RELAXED);
	if (s->roce_port && len >= UR_BTH_BYTES) {
		struct ur_reg_owner o;
		uint32_t qpn = bth_qpn(buf);

		if (stray(s, qpn))
			__atomic_add_fetch(&rx->strays, 1, __ATOMIC_RELAXED);
		/* Groups and QP1 are context 0's (the kernel steers them there;
		 * one that came another way, in a GRO batch, goes there too). */
		if (rx->index && (qpn == UR_MCAST_QPN || qpn == UR_GSI_QPN)) {
			tap(buf, len, ip, tclass, hop, 0);   /* our unix socket's are not */
			ur_udp_hand_on(u, rx, getpid(), buf, len, ip, tclass, hop);
			return;
		}
		if (qpn == UR_MCAST_QPN) {
			if (ur_capture_on() && !looped_back(ip))
				tap(buf, len, ip, tclass, hop, 0);
			fan_out(u, rx, buf, len, ip, tclass, hop);
			return;
		}
		/* QP1 is the host's: a CM MAD goes to the process it is for. */
		if (qpn == UR_GSI_QPN) {
			if (ur_host_cm_owner(u->reg, buf, len, &o) == 0 && !o.self) {
				tap(buf, len, ip, tclass, hop, o.pid);
				ur_udp_hand_on(u, rx, o.pid, buf, len, ip, tclass, hop);
			} else {
				tap(buf, len, ip, tclass, hop, 0);
				deliver(u, rx, buf, len, ip, tclass, hop);
			}
			return;
		}
		/* Another process's QP: hand it over. */
		if (ur_registry_lookup(u->reg, qpn, &o) == 0 && !o.self) {
			tap(buf, len, ip, tclass, hop, o.pid);
			ur_udp_hand_on(u, rx, o.pid, buf, len, ip, tclass, hop);
			return;
		}
	}
	tap(buf, len, ip, tclass, hop, 0);
	deliver(u, rx, buf, len, ip, tclass, hop);
}

static void handle_datagram(struct ur_udp_sock *s, struct mmsghdr *mm, uint8_t *buf)
{
	struct ur_roce_ip ip = { .family = s->family, .dport = s->port };
	uint8_t tclass = 0, hop = 0;
	size_t len = mm->msg_len, seg = 0;

	if (mm->msg_hdr.msg_flags & MSG_TRUNC) {
		malformed(s->u);
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

void ur_udp_on_sock_event(void *arg, uint32_t events)
{
	struct ur_udp_sock *s = arg;
	struct ur_udp *u = s->u;
	struct ur_rx_batch *b;

	/* Room on a socket is context 0's news (the extra contexts only read
	 * port 4791). */
	if (!s->rx || !s->rx->index)
		ur_udp_on_room(s, events);
	if (!(events & EPOLLIN) || !s->rx)
		return;
	b = s->rx->batch;
	for (int round = 0; round < UR_UDP_RX_ROUNDS; round++) {
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
		if (u->hooks.rx_batch)
			u->hooks.rx_batch(u->hooks.arg, true);
		for (int i = 0; i < n; i++)
			handle_datagram(s, &b->msgs[i], b->buf[i]);
		ur_udp_hand_on_flush(u, s->rx);
		if (u->hooks.rx_batch)
			u->hooks.rx_batch(u->hooks.arg, false);
		if (n < UR_UDP_BATCH)
			return;
	}
}

/* One datagram from our unix socket, its sender checked. */
void ur_udp_on_fwd_datagram(struct ur_udp *u, const uint8_t *buf, size_t len)
{
	struct ur_fwd_hdr h;
	struct ur_roce_ip ip;

	if (len < sizeof(h)) {
		malformed(u);
		return;
	}
	memcpy(&h, buf, sizeof(h));
	if (ur_udp_fwd_hdr_check(&h, &ip)) {
		malformed(u);
		return;
	}
	buf += sizeof(h);
	len -= sizeof(h);
	if (h.kind == UR_FWD_MSG) {
		u->hooks.local_msg(u->hooks.arg, buf, len);
		return;
	}
	if (h.kind == UR_FWD_PORT) {
		malformed(u);       /* without the port's descriptors */
		return;
	}
	if (!h.seg || h.seg >= len) {
		deliver(u, u->rx[0], buf, len, &ip, h.tclass, h.hop_limit);
		return;
	}
	/* A local peer's batch, cut as UDP GSO would have cut it. */
	for (size_t off = 0; off < len; off += h.seg)
		deliver(u, u->rx[0], buf + off, ur_min((size_t)h.seg, len - off), &ip, h.tclass, h.hop_limit);
}

void ur_udp_on_fwd_readable(void *arg, uint32_t events)
{
	struct ur_udp *u = arg;
	struct ur_rx_batch *b = u->rx[0]->batch;

	for (int round = 0; round < UR_FWD_RX_ROUNDS; round++) {
		int n;

		for (int i = 0; i < UR_UDP_BATCH; i++) {
			b->iov[i] = (struct iovec){ b->buf[i], sizeof(b->buf[i]) };
			b->msgs[i].msg_hdr = (struct msghdr){
				.msg_iov = &b->iov[i], .msg_iovlen = 1,
				.msg_control = b->ctrl[i], .msg_controllen = sizeof(b->ctrl[i]),
			};
		}
		n = recvmmsg(u->fwd_fd, b->msgs, UR_UDP_BATCH, MSG_DONTWAIT | MSG_CMSG_CLOEXEC, NULL);
		if (n <= 0)
			return;
		for (int i = 0; i < n; i++) {
			const struct msghdr *m = &b->msgs[i].msg_hdr;
			int fds[UR_FWD_MAX_FDS];
			unsigned nfds = ur_udp_fwd_fds(m, fds, UR_FWD_MAX_FDS);
			bool ok = ur_udp_fwd_sender_ok(m) && !(m->msg_flags & (MSG_TRUNC | MSG_CTRUNC));

			/* Descriptors come only with port 4791 handed on. */
			if (ok && nfds && b->msgs[i].msg_len > offsetof(struct ur_fwd_hdr, kind) &&
			    b->buf[i][offsetof(struct ur_fwd_hdr, kind)] == UR_FWD_PORT) {
				ur_udp_router_take(u, b->buf[i], b->msgs[i].msg_len, fds, nfds);
				continue;
			}
			ur_fds_close(fds, nfds);
			if (!ur_udp_fwd_sender_ok(m))
				foreign(u);
			else if (nfds || (m->msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
				malformed(u);
			else
				ur_udp_on_fwd_datagram(u, b->buf[i], b->msgs[i].msg_len);
		}
		if (n < UR_UDP_BATCH)
			return;
	}
}
