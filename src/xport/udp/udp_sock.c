/* The transport's sockets: UDP ones (our own, port 4791) and the
 * connected unix sockets to local peers share this shape. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "engine/engine.h"
#include "util/config.h"
#include "wire/roce_hdr.h"
#include "xport/udp/udp_priv.h"
#include "util/sys_socket.h"

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

int ur_udp_open_sock(struct ur_udp_sock *s, struct ur_udp *u, int family, uint16_t port,
		     bool reuse)
{
	int fd, on = 1, pmtu;
	union {
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} a;
	socklen_t alen;

	s->u = u;
	s->rx = u->rx[0];
	s->fd = -1;
	s->family = family;
	pthread_mutex_init(&s->pending_lock, NULL);
	s->pending = s->pending_tail = NULL;
	s->roce_port = port == UR_ROCE_UDP_PORT;
	fd = ur_socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
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
	if (ur_config()->udp_gro)
		setsockopt(fd, SOL_UDP, UDP_GRO, &on, sizeof(on));
	if (reuse && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on))) {
		int err = errno;

		close(fd);
		return -err;
	}
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

int ur_udp_adopt_sock(struct ur_udp_sock *s, struct ur_udp *u, int family, int fd)
{
	union {
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} a;
	socklen_t alen = sizeof(a);
	int type = 0, domain = 0;
	socklen_t len = sizeof(int);

	/* The sender is a process of our user, but what it sent must still be
	 * what the message says before we read from it and send with it. */
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) || type != SOCK_DGRAM ||
	    getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) || domain != family ||
	    getsockname(fd, (struct sockaddr *)&a, &alen) || a.v4.sin_family != family ||
	    ntohs(family == AF_INET ? a.v4.sin_port : a.v6.sin6_port) != UR_ROCE_UDP_PORT)
		return -EINVAL;
	s->u = u;
	s->rx = u->rx[0];
	s->family = family;
	pthread_mutex_init(&s->pending_lock, NULL);
	s->pending = s->pending_tail = NULL;
	s->roce_port = true;
	s->port = UR_ROCE_UDP_PORT;
	s->armed = false;
	s->spread = 0;
	s->fd = fd;
	return 0;
}

void ur_udp_close_sock(struct ur_udp_sock *s)
{
	if (s->fd >= 0)
		ur_engine_unwatch(s->u->engine, s->fd);
	ur_udp_close_fd(&s->fd);
}

void ur_udp_sock_arm(struct ur_udp_sock *s, bool on)
{
	if (__atomic_load_n(&s->armed, __ATOMIC_ACQUIRE) == on)
		return;
	__atomic_store_n(&s->armed, on, __ATOMIC_RELEASE);
	ur_engine_rewatch(s->u->engine, s->fd,
			  (s->family == AF_UNIX ? 0 : EPOLLIN) | (on ? EPOLLOUT : 0));
}

