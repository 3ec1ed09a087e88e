/* Port 4791 and the hand-off to the owning process.
 *
 * Exactly one process per host (network namespace) binds 4791: whoever
 * holds an exclusive flock on the router lock file.  When it exits, the
 * kernel drops its lock and the next process to try (every engine tick)
 * takes over, so a dead peer never leaves the port orphaned.  Packets for
 * another process's QP travel over that process's abstract unix socket,
 * prefixed with the IP facts its ICRC check needs.  Processes of the host
 * send to each other over the same sockets (udp_local.c), whole batches at
 * a time.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "engine/engine.h"
#include "rel/xrc_msg.h"
#include "util/clock.h"
#include "util/log.h"
#include "wire/roce_hdr.h"
#include "host/registry.h"
#include "xport/udp/udp_priv.h"

#define UR_ELECTION_PERIOD_NS 200000000ull   /* 200 ms */

socklen_t ur_udp_fwd_addr(struct sockaddr_un *sun, pid_t pid)
{
	int n;

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	/* Abstract names live in the network namespace: exactly our scope. */
	n = snprintf(sun->sun_path + 1, sizeof(sun->sun_path) - 1, "uroce-fwd-%u-%d",
		     (unsigned)getuid(), (int)pid);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

int ur_udp_fwd_open(struct ur_udp *u)
{
	struct sockaddr_un sun;
	socklen_t len = ur_udp_fwd_addr(&sun, getpid());
	int sz = 4 << 20;
	int fd;

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (bind(fd, (struct sockaddr *)&sun, len)) {
		int err = errno;

		close(fd);
		return -err;
	}
	u->fwd_fd = fd;
	return ur_engine_watch_fd(u->engine, fd, EPOLLIN, ur_udp_on_fwd_readable, u);
}

void ur_udp_forward(struct ur_udp *u, uint32_t qpn, const uint8_t *pkt, size_t len,
		    const struct ur_roce_ip *ip, uint8_t tclass, uint8_t hop)
{
	struct ur_reg_owner o;

	if (ur_registry_lookup(qpn, &o)) {
		__atomic_add_fetch(&ur_engine_stats.no_qp, 1, __ATOMIC_RELAXED);
		return;
	}
	ur_udp_forward_to(u, o.pid, pkt, len, ip, tclass, hop);
}

void ur_udp_forward_to(struct ur_udp *u, pid_t pid, const uint8_t *pkt, size_t len,
		       const struct ur_roce_ip *ip, uint8_t tclass, uint8_t hop)
{
	struct ur_fwd_hdr h = {
		.magic = UR_FWD_MAGIC, .version = UR_FWD_VERSION,
		.family = (uint16_t)ip->family, .sport = ip->sport, .dport = ip->dport,
		.tclass = tclass, .hop_limit = hop,
	};
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)pkt, len } };
	struct sockaddr_un sun;
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };

	if (ip->family == AF_INET) {
		memcpy(h.saddr, &ip->v4.saddr, 4);
		memcpy(h.daddr, &ip->v4.daddr, 4);
	} else {
		memcpy(h.saddr, &ip->v6.saddr, 16);
		memcpy(h.daddr, &ip->v6.daddr, 16);
	}
	msg.msg_name = &sun;
	msg.msg_namelen = ur_udp_fwd_addr(&sun, pid);
	if (sendmsg(u->fwd_fd, &msg, MSG_DONTWAIT) < 0) {
		/* Full or gone: a lost packet, which RC recovers from. */
		__atomic_add_fetch(&ur_engine_stats.no_qp, 1, __ATOMIC_RELAXED);
		return;
	}
	__atomic_add_fetch(&ur_engine_stats.forwarded, 1, __ATOMIC_RELAXED);
}

void ur_udp_on_fwd_readable(void *arg, uint32_t events)
{
	struct ur_udp *u = arg;
	struct ur_rx_batch *b = u->batch;

	for (;;) {
		int n;

		for (int i = 0; i < UR_UDP_BATCH; i++) {
			b->iov[i] = (struct iovec){ b->buf[i], sizeof(b->buf[i]) };
			b->msgs[i].msg_hdr = (struct msghdr){
				.msg_iov = &b->iov[i], .msg_iovlen = 1,
			};
		}
		n = recvmmsg(u->fwd_fd, b->msgs, UR_UDP_BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0)
			return;
		for (int i = 0; i < n; i++) {
			struct ur_fwd_hdr h;
			struct ur_roce_ip ip = { 0 };
			size_t len = b->msgs[i].msg_len;

			if (b->msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
				__atomic_add_fetch(&ur_engine_stats.malformed, 1, __ATOMIC_RELAXED);
				continue;
			}
			/* Not a packet: a shared XRC domain's message (rel/xrc_msg.h). */
			if (ur_xrc_msg_is(b->buf[i], len)) {
				ur_engine_local_msg(u->engine, b->buf[i], len);
				continue;
			}
			if (len < sizeof(h)) {
				__atomic_add_fetch(&ur_engine_stats.malformed, 1, __ATOMIC_RELAXED);
				continue;
			}
			memcpy(&h, b->buf[i], sizeof(h));
			if (h.magic != UR_FWD_MAGIC || h.version != UR_FWD_VERSION ||
			    (h.family != AF_INET && h.family != AF_INET6)) {
				__atomic_add_fetch(&ur_engine_stats.malformed, 1, __ATOMIC_RELAXED);
				continue;
			}
			ip.family = h.family;
			ip.sport = h.sport;
			ip.dport = h.dport;
			if (h.family == AF_INET) {
				memcpy(&ip.v4.saddr, h.saddr, 4);
				memcpy(&ip.v4.daddr, h.daddr, 4);
			} else {
				memcpy(&ip.v6.saddr, h.saddr, 16);
				memcpy(&ip.v6.daddr, h.daddr, 16);
			}
			len -= sizeof(h);
			if (!h.seg || h.seg >= len) {
				__atomic_add_fetch(&ur_engine_stats.rcvd_pkts, 1, __ATOMIC_RELAXED);
				ur_udp_deliver(u, b->buf[i] + sizeof(h), len, &ip, h.tclass,
					       h.hop_limit);
				continue;
			}
			/* A local peer's batch, cut as UDP GSO would have cut it. */
			for (size_t off = 0; off < len; off += h.seg) {
				__atomic_add_fetch(&ur_engine_stats.rcvd_pkts, 1, __ATOMIC_RELAXED);
				ur_udp_deliver(u, b->buf[i] + sizeof(h) + off,
					       ur_min((size_t)h.seg, len - off), &ip, h.tclass,
					       h.hop_limit);
			}
		}
		if (n < UR_UDP_BATCH)
			return;
	}
}

static int bind_roce_port(struct ur_udp *u)
{
	int ret = ur_udp_open_sock(&u->roce4, u, AF_INET, UR_ROCE_UDP_PORT);

	if (ret)
		return ret;
	ret = ur_engine_watch_fd(u->engine, u->roce4.fd, EPOLLIN, ur_udp_on_readable, &u->roce4);
	if (ret) {
		ur_udp_close_sock(&u->roce4);
		return ret;
	}
	if (u->own6.fd >= 0 && !ur_udp_open_sock(&u->roce6, u, AF_INET6, UR_ROCE_UDP_PORT))
		ur_engine_watch_fd(u->engine, u->roce6.fd, EPOLLIN, ur_udp_on_readable, &u->roce6);
	return 0;
}

void ur_udp_router_elect(struct ur_udp *u)
{
	char path[128];
	int ret;

	if (u->router && u->roce4.fd >= 0)
		return;
	if (u->router_lock_fd < 0) {
		ur_registry_router_lock_path(path, sizeof(path));
		u->router_lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (u->router_lock_fd < 0)
			return;
	}
	if (!u->router) {
		if (flock(u->router_lock_fd, LOCK_EX | LOCK_NB))
			return;
		u->router = true;
	}
	ret = bind_roce_port(u);
	if (ret) {
		if (!u->bind_warned)
			ur_warn(NULL, "cannot bind UDP port %d (%s): peers on other hosts "
				"cannot reach this host's QPs until it is free (is the kernel's "
				"rdma_rxe or another RoCE stack using it?)",
				UR_ROCE_UDP_PORT, strerror(-ret));
		u->bind_warned = true;
		return;
	}
	ur_info(NULL, "this process serves UDP port %d for the host", UR_ROCE_UDP_PORT);
}

void ur_udp_tick(struct ur_udp *u)
{
	uint64_t now = ur_now_ns();

	if (now < u->next_election_ns)
		return;
	u->next_election_ns = now + UR_ELECTION_PERIOD_NS;
	ur_udp_router_elect(u);
}
