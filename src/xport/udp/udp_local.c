/* Packets to processes of this host, without loss.
 *
 * UDP over loopback has no flow control: a receiver that falls behind has
 * datagrams dropped at its socket, which RC pays for with go-back-N and UC
 * and UD with lost messages.  A connected unix datagram socket pushes back
 * instead: when the receiver's queue is full the send fails with EAGAIN,
 * the batch is parked (udp_tx.c) and the QP waits for the socket to drain,
 * as it would for a full NIC queue.  So packets to a local QP go, as whole
 * GSO-style batches, to its process's forwarding socket (the one the 4791
 * router also uses) over one connected socket per peer process.  Only the
 * carriage changes: the bytes are the RoCEv2 packets with their ICRC, and
 * the receiver checks them as it checks UDP ones.
 *
 * Peers are kept in a fixed table; when it is full and no entry belongs to
 * a dead process, packets to further processes take the UDP path.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "engine/engine.h"
#include "util/log.h"
#include "xport/udp/udp_priv.h"

#define UR_PEER_SNDBUF (4 << 20)   /* room for max_dgram_qlen full batches */

struct ur_udp_sock *ur_udp_sock_at(struct ur_udp *u, int i)
{
	if (i == 0)
		return &u->own4;
	if (i == 1)
		return &u->own6;
	return u->peers[i - 2].pid ? &u->peers[i - 2].sock : NULL;
}

void ur_udp_sock_arm(struct ur_udp_sock *s, bool on)
{
	if (__atomic_load_n(&s->armed, __ATOMIC_ACQUIRE) == on)
		return;
	__atomic_store_n(&s->armed, on, __ATOMIC_RELEASE);
	ur_engine_rewatch_fd(s->u->engine, s->fd,
			     (s->family == AF_UNIX ? 0 : EPOLLIN) | (on ? EPOLLOUT : 0));
}

static void on_peer_event(void *arg, uint32_t events)
{
	struct ur_udp_sock *s = arg;

	if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
		ur_engine_writable(s->u->engine);
}

static int peer_connect(struct ur_udp_sock *s, pid_t pid)
{
	struct sockaddr_un sun;
	socklen_t len = ur_udp_fwd_addr(&sun, pid);

	if (connect(s->fd, (struct sockaddr *)&sun, len))
		return -errno;
	s->stale = false;
	return 0;
}

static struct ur_udp_peer *peer_new(struct ur_udp *u, pid_t pid)
{
	struct ur_udp_peer *free_p = NULL, *dead_p = NULL;
	int sz = UR_PEER_SNDBUF, fd;

	for (int i = 0; i < UR_UDP_PEERS && !free_p; i++) {
		struct ur_udp_peer *p = &u->peers[i];

		if (!p->pid && p->sock.fd < 0)
			free_p = p;
		else if (!dead_p && p->pid && !p->sock.pending && kill(p->pid, 0) &&
			 errno == ESRCH)
			dead_p = p;
	}
	if (!free_p && dead_p) {
		/* The socket stays: connect() points it at the new peer. */
		if (peer_connect(&dead_p->sock, pid))
			return NULL;
		__atomic_store_n(&dead_p->pid, pid, __ATOMIC_RELEASE);
		return dead_p;
	}
	if (!free_p)
		return NULL;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return NULL;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	free_p->sock.fd = fd;
	if (peer_connect(&free_p->sock, pid) ||
	    ur_engine_watch_fd(u->engine, fd, 0, on_peer_event, &free_p->sock)) {
		close(fd);
		free_p->sock.fd = -1;
		return NULL;
	}
	__atomic_store_n(&free_p->pid, pid, __ATOMIC_RELEASE);
	return free_p;
}

struct ur_udp_sock *ur_udp_peer_sock(struct ur_udp *u, pid_t pid)
{
	struct ur_udp_sock *s = NULL;

	pthread_mutex_lock(&u->peers_lock);
	for (int i = 0; i < UR_UDP_PEERS; i++) {
		struct ur_udp_peer *p = &u->peers[i];

		if (p->pid == pid) {
			s = &p->sock;
			if (s->stale && peer_connect(s, pid))
				s = NULL;   /* still gone */
			goto out;
		}
	}
	{
		struct ur_udp_peer *p = peer_new(u, pid);

		s = p ? &p->sock : NULL;
	}
out:
	pthread_mutex_unlock(&u->peers_lock);
	return s;
}

void ur_udp_peer_gone(struct ur_udp_sock *s)
{
	__atomic_store_n(&s->stale, true, __ATOMIC_RELEASE);
}

void ur_udp_peers_init(struct ur_udp *u)
{
	pthread_mutex_init(&u->peers_lock, NULL);
	for (int i = 0; i < UR_UDP_PEERS; i++) {
		struct ur_udp_sock *s = &u->peers[i].sock;

		s->u = u;
		s->fd = -1;
		s->family = AF_UNIX;
		pthread_mutex_init(&s->pending_lock, NULL);
	}
}

void ur_udp_peers_close(struct ur_udp *u)
{
	for (int i = 0; i < UR_UDP_PEERS; i++) {
		struct ur_udp_sock *s = &u->peers[i].sock;

		if (s->fd >= 0)
			ur_udp_close_sock(s);   /* unwatches it too */
	}
}

int ur_udp_local_msg(struct ur_xport *x, pid_t pid, const struct iovec *iov, int iovcnt)
{
	struct ur_udp *u = container_of(x, struct ur_udp, xport);
	struct msghdr msg = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt };
	struct ur_udp_sock *s;

	errno = 0;
	s = ur_udp_peer_sock(u, pid);
	if (!s) {
		/* No socket by that name: the process is gone, or a zombie
		 * (kill() would still find it). */
		if (errno == ECONNREFUSED || errno == ENOENT)
			return -ESRCH;
		return kill(pid, 0) && errno == ESRCH ? -ESRCH : -EAGAIN;
	}
	if (sendmsg(s->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
		return 0;
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
		return -EAGAIN;
	if (errno == ECONNREFUSED || errno == ENOTCONN || errno == ENOENT) {
		ur_udp_peer_gone(s);
		return -ESRCH;
	}
	return -errno;
}
