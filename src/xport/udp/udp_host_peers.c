/* Packets to processes of this host, without loss.
 *
 * UDP over loopback has no flow control: a receiver that falls behind has
 * datagrams dropped at its socket, which RC pays for with go-back-N and UC
 * and UD with lost messages.  A connected unix datagram socket pushes back
 * instead: when the receiver's queue is full the send fails with EAGAIN,
 * the batch is parked (udp_send.c) and the QP waits for the socket to drain,
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
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "engine/engine.h"
#include "util/log.h"
#include "xport/capture.h"
#include "xport/udp/udp_priv.h"

#define UR_PEER_SNDBUF (4 << 20)   /* room for max_dgram_qlen full batches */

static int peer_connect(struct ur_udp_sock *s, pid_t pid)
{
	struct sockaddr_un sun;
	socklen_t len = ur_udp_fwd_addr(&sun, pid);

	if (connect(s->fd, (struct sockaddr *)&sun, len))
		return -errno;
	__atomic_store_n(&s->stale, false, __ATOMIC_RELEASE);
	return 0;
}

/* A table entry for pid: a free one, or that of a process that died.
 * *why: -errno when there is none. */
static struct ur_udp_peer *peer_new(struct ur_udp *u, pid_t pid, int *why)
{
	struct ur_udp_peer *free_p = NULL, *dead_p = NULL;
	int sz = UR_PEER_SNDBUF, fd;

	for (int i = 0; i < UR_UDP_PEERS && !free_p; i++) {
		struct ur_udp_peer *p = &u->peers[i];

		if (!p->pid && p->sock.fd < 0)
			free_p = p;
		else if (!dead_p && p->pid && !ur_udp_has_pending(&p->sock) && kill(p->pid, 0) &&
			 errno == ESRCH)
			dead_p = p;
	}
	if (!free_p && dead_p) {
		/* The socket stays: connect() points it at the new peer. */
		*why = peer_connect(&dead_p->sock, pid);
		if (*why)
			return NULL;
		__atomic_store_n(&dead_p->pid, pid, __ATOMIC_RELEASE);
		return dead_p;
	}
	if (!free_p) {
		*why = -ENOSPC;
		return NULL;
	}
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		*why = -errno;
		return NULL;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	free_p->sock.fd = fd;
	*why = peer_connect(&free_p->sock, pid);
	if (!*why)
		*why = ur_engine_watch(u->engine, fd, 0, UR_WATCH_INLINE, ur_udp_on_room,
				       &free_p->sock);
	if (*why) {
		close(fd);
		free_p->sock.fd = -1;
		return NULL;
	}
	__atomic_store_n(&free_p->pid, pid, __ATOMIC_RELEASE);
	return free_p;
}

static struct ur_udp_sock *peer_sock(struct ur_udp *u, pid_t pid, int *why)
{
	struct ur_udp_sock *s = NULL;
	struct ur_udp_peer *p;

	*why = 0;
	pthread_mutex_lock(&u->peers_lock);
	for (int i = 0; i < UR_UDP_PEERS && !s; i++) {
		if (u->peers[i].pid != pid)
			continue;
		s = &u->peers[i].sock;
		if (__atomic_load_n(&s->stale, __ATOMIC_ACQUIRE)) {
			*why = peer_connect(s, pid);
			if (*why)
				s = NULL;   /* still gone */
		}
		goto out;
	}
	p = peer_new(u, pid, why);
	s = p ? &p->sock : NULL;
out:
	pthread_mutex_unlock(&u->peers_lock);
	return s;
}

struct ur_udp_sock *ur_udp_peer_sock(struct ur_udp *u, pid_t pid)
{
	int why;

	return peer_sock(u, pid, &why);
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

/* Whether datagrams wait unread in one of our UDP sockets. */
static bool unread(const struct ur_udp_sock *s)
{
	int n = 0;

	return s->fd >= 0 && !ioctl(s->fd, SIOCINQ, &n) && n > 0;
}

enum ur_behind ur_udp_peer_behind(struct ur_xport *x)
{
	struct ur_udp *u = container_of(x, struct ur_udp, xport);
	enum ur_behind most = UR_BEHIND_NONE;
	pid_t self = getpid();
	int waiting = 0;

	/* We are: what local peers (or our own QPs) sent us still waits in
	 * our own socket for the reactor to read it. */
	if (u->fwd_fd >= 0 && !ioctl(u->fwd_fd, SIOCINQ, &waiting) && waiting > 0)
		return UR_BEHIND_SELF;
	/* What the network brought waits in a receive context's socket:
	 * this process reads behind what comes (a program busy with the
	 * other contexts' completions left context 0's answers unread,
	 * megabytes of them, under ThreadSanitizer).  Port 4791's only
	 * while they are ours: an exiting process closes them after raising
	 * leaving and waiting out the dispatch a timer runs in
	 * (udp_host_port.c). */
	if (!__atomic_load_n(&u->leaving, __ATOMIC_ACQUIRE))
		for (unsigned i = 0; i < u->nrx; i++)
			if (unread(&u->rx[i]->roce4) || unread(&u->rx[i]->roce6))
				most = UR_BEHIND_RX;
	if (unread(&u->own4) || unread(&u->own6))
		most = UR_BEHIND_RX;
	for (int i = 0; i < UR_UDP_PEERS; i++) {
		struct ur_udp_sock *s = &u->peers[i].sock;
		pid_t pid = __atomic_load_n(&u->peers[i].pid, __ATOMIC_ACQUIRE);
		int unread = 0;

		if (!pid || s->fd < 0)
			continue;
		/* A unix datagram stays charged to its sender until the
		 * receiver reads it: SIOCOUTQ is what the peer has not read. */
		if (ur_udp_has_pending(s) || (!ioctl(s->fd, SIOCOUTQ, &unread) && unread > 0)) {
			if (pid == self)
				return UR_BEHIND_SELF;
			most = UR_BEHIND_PEER;
		}
	}
	return most;
}

/* A control message: our forwarding header, then the caller's pieces. */
int ur_udp_local_msg(struct ur_xport *x, pid_t pid, const struct iovec *iov, int iovcnt)
{
	struct ur_udp *u = container_of(x, struct ur_udp, xport);
	struct iovec all[1 + UR_LOCAL_MSG_IOV];
	struct msghdr msg = { .msg_iov = all, .msg_iovlen = (size_t)iovcnt + 1 };
	struct ur_fwd_hdr h;
	struct ur_udp_sock *s;
	int why = 0;

	if (iovcnt < 0 || iovcnt > UR_LOCAL_MSG_IOV)
		return -EINVAL;
	ur_udp_fwd_hdr_msg(&h);
	all[0] = (struct iovec){ &h, sizeof(h) };
	memcpy(all + 1, iov, (size_t)iovcnt * sizeof(*iov));
	s = peer_sock(u, pid, &why);
	if (!s) {
		/* No socket by that name: the process is gone, or a zombie
		 * (kill() would still find it). */
		if (why == -ECONNREFUSED || why == -ENOENT)
			return -ESRCH;
		return kill(pid, 0) && errno == ESRCH ? -ESRCH : -EAGAIN;
	}
	if (sendmsg(s->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0) {
		if (ur_capture_on())
			ur_capture_msg(pid, iov, iovcnt);
		return 0;
	}
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
		return -EAGAIN;
	if (errno == ECONNREFUSED || errno == ENOTCONN || errno == ENOENT) {
		ur_udp_sock_stale(s);
		return -ESRCH;
	}
	return -errno;
}
