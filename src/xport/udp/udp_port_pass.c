/* Port 4791 passed from one process to another without a gap: handed on
 * by a router that exits, and held in reserve by another process for a
 * router that dies.
 *
 * Freeing the port (udp_host_port.c) loses two things: the datagrams its
 * sockets hold unread, and all that arrives before another process of
 * the namespace binds the port again (at once on the router's pidfd, or at
 * the next election).  RC sends them again; UC and UD lose them (seen: a
 * UC ping-pong with the kernel's rxe hung while test processes came and
 * went in the host's namespace).  So the sockets themselves, still bound,
 * travel between processes over their unix sockets (SCM_RIGHTS), with the
 * router lock's open file: an flock belongs to the open file, so the lock
 * goes with it and never lapses.  What the sockets hold waits in them for
 * the next reader.
 *
 * Two ways: a router that exits hands them on (ur_udp_port_hand_on), and
 * a router keeps a copy with one other live process, its reserve
 * (ur_udp_port_send_reserve), which reads nothing from them; if the router
 * dies, even by SIGKILL, the sockets and the lock stay open in the reserve
 * holder, which serves them as soon as the router's pidfd says it has
 * ended (udp_host_port.c).  A taker must have as many receive contexts as
 * sockets came (the kernel's steering program counts them); otherwise it
 * closes them, and the next election binds the port anew.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/log.h"
#include "util/proc_sched.h"
#include "wire/roce_hdr.h"
#include "xport/udp/udp_priv.h"

#define UR_PASS_CANDIDATES 16

static int send_port(struct ur_udp *u, pid_t pid, const struct ur_fwd_port *port, const int *fds,
		     unsigned nfds)
{
	union {
		struct cmsghdr align;
		uint8_t buf[CMSG_SPACE(UR_FWD_MAX_FDS * sizeof(int))];
	} ctrl;
	struct ur_fwd_hdr h;
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)port, sizeof(*port) } };
	struct sockaddr_un sun;
	struct msghdr msg = {
		.msg_name = &sun, .msg_iov = iov, .msg_iovlen = 2,
		.msg_control = ctrl.buf, .msg_controllen = CMSG_SPACE(nfds * sizeof(int)),
	};
	struct cmsghdr *c;

	ur_udp_fwd_hdr_msg(&h);
	h.kind = UR_FWD_PORT;
	msg.msg_namelen = ur_udp_fwd_addr(&sun, pid);
	memset(ctrl.buf, 0, sizeof(ctrl.buf));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
	memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	return sendmsg(u->fwd_fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 ? -errno : 0;
}

/* The router's lock and sockets, as a UR_FWD_PORT message carries them:
 * their number (0: nothing to pass). */
static unsigned port_fds(struct ur_udp *u, struct ur_fwd_port *port, int *fds)
{
	unsigned nfds = 0;

	*port = (struct ur_fwd_port){ .pid = (int32_t)getpid() };
	if (u->router_lock_fd < 0 || u->fwd_fd < 0)
		return 0;
	fds[nfds++] = u->router_lock_fd;
	while (port->n4 < u->nrx && u->rx[port->n4]->roce4.fd >= 0)
		fds[nfds++] = u->rx[port->n4++]->roce4.fd;
	while (port->n6 < u->nrx && u->rx[port->n6]->roce6.fd >= 0)
		fds[nfds++] = u->rx[port->n6++]->roce6.fd;
	return port->n4 ? nfds : 0;
}

/* Whether pid can take the port: alive and not stopped (a stopped
 * process would hold it and read nothing). */
static bool can_take(pid_t pid)
{
	return pid > 0 && !ur_proc_stopped(pid);
}

/* Sends the port to the first that takes the message: first, then the
 * namespace's other live processes.  Each is named the router's taker in
 * the lock file before its message goes (udp_lock_file.c), so that no
 * other copy is served once this router has ended; with nobody to take
 * it, the lock file names none.  The pid it went to, or 0. */
static pid_t pass_to_one(struct ur_udp *u, const struct ur_fwd_port *port, const int *fds,
			 unsigned nfds, pid_t first)
{
	pid_t pids[UR_PASS_CANDIDATES + 1];
	int n = 0;

	if (first)
		pids[n++] = first;
	n += ur_registry_live_pids(u->reg, pids + n, UR_PASS_CANDIDATES);
	for (int i = 0; i < n; i++) {
		int ret;

		if ((i && pids[i] == first) || !can_take(pids[i]))
			continue;
		ret = ur_udp_lock_record(u, pids[i]);
		if (!ret)
			ret = send_port(u, pids[i], port, fds, nfds);
		if (!ret)
			return pids[i];
		ur_dbg(NULL, "could not pass UDP port %d to pid %d: %s", UR_ROCE_UDP_PORT,
		       (int)pids[i], strerror(-ret));
	}
	ur_udp_lock_record(u, 0);
	return 0;
}

enum ur_port_left ur_udp_port_hand_on(struct ur_udp *u)
{
	struct ur_fwd_port port;
	int fds[UR_FWD_MAX_FDS];
	unsigned nfds = port_fds(u, &port, fds);
	pid_t to;

	if (!nfds)
		return UR_PORT_FREED;
	to = pass_to_one(u, &port, fds, nfds, u->reserve_pid);
	if (to) {
		ur_info(NULL, "this process exits: UDP port %d, with what its sockets hold, "
			"handed to pid %d", UR_ROCE_UDP_PORT, (int)to);
		return UR_PORT_HANDED;
	}
	/* Nobody took the message, but the reserve holder has it all and
	 * serves it once this process has ended. */
	if (can_take(u->reserve_pid) && !ur_udp_lock_record(u, u->reserve_pid)) {
		ur_info(NULL, "this process exits: UDP port %d stays with pid %d, which holds it in "
			"reserve", UR_ROCE_UDP_PORT, (int)u->reserve_pid);
		return UR_PORT_HANDED;
	}
	return UR_PORT_FREED;
}

void ur_udp_port_send_reserve(struct ur_udp *u)
{
	struct ur_fwd_port port;
	int fds[UR_FWD_MAX_FDS];
	unsigned nfds;

	/* leaving first: an exiting process clears router after raising it
	 * and waiting out the dispatch a tick runs in. */
	if (__atomic_load_n(&u->leaving, __ATOMIC_ACQUIRE) || !u->router || can_take(u->reserve_pid))
		return;
	nfds = port_fds(u, &port, fds);
	if (!nfds)
		return;
	port.flags = UR_FWD_PORT_RESERVE;
	u->reserve_pid = pass_to_one(u, &port, fds, nfds, 0);
	if (u->reserve_pid)
		ur_info(NULL, "UDP port %d held in reserve by pid %d", UR_ROCE_UDP_PORT,
		       (int)u->reserve_pid);
}

void ur_udp_port_drop_reserve(struct ur_udp *u)
{
	unsigned n = u->reserve.nfds;

	/* Closed, never unlocked: the lock is the router's too.  Counted
	 * out first, for the fork handler. */
	u->reserve.nfds = 0;
	for (unsigned i = 0; i < n; i++)
		ur_udp_close_fd(&u->reserve.fds[i]);
	u->reserve.port.pid = 0;
}

const char *ur_udp_port_check(struct ur_udp *u, const uint8_t *buf, size_t len, unsigned nfds,
			      struct ur_fwd_port *port)
{
	struct ur_fwd_hdr h;
	struct ur_roce_ip ip;

	memset(port, 0, sizeof(*port));
	if (len != sizeof(h) + sizeof(*port))
		return "a message of the wrong size";
	memcpy(&h, buf, sizeof(h));
	memcpy(port, buf + sizeof(h), sizeof(*port));
	if (ur_udp_fwd_hdr_check(&h, &ip) || h.kind != UR_FWD_PORT || !port->n4 ||
	    port->n4 > UR_ENGINE_MAX_RX || port->n6 > UR_ENGINE_MAX_RX ||
	    nfds != 1 + port->n4 + port->n6 || (port->flags & ~UR_FWD_PORT_RESERVE))
		return "a malformed message";
	if (port->n4 != u->nrx || (port->n6 && port->n6 != u->nrx))
		return "its receive contexts differ in number (UROCE_RX_THREADS)";
	return NULL;
}

void ur_udp_port_keep(struct ur_udp *u, const struct ur_fwd_port *port, const int *fds,
		      unsigned nfds)
{
	ur_udp_port_drop_reserve(u);
	memcpy(u->reserve.fds, fds, nfds * sizeof(int));
	u->reserve.port = *port;
	__atomic_store_n(&u->reserve.nfds, nfds, __ATOMIC_RELEASE);
}

const char *ur_udp_port_adopt(struct ur_udp *u, const struct ur_fwd_port *port, const int *fds)
{
	unsigned k = 1, done4 = 0, done6 = 0;
	const char *why = NULL;

	for (; done4 < port->n4 && !why; done4++)
		if (ur_udp_adopt_sock(&u->rx[done4]->roce4, u, AF_INET, fds[k++]))
			why = "not sockets bound to the port";
	for (; done6 < port->n6 && !why; done6++)
		if (ur_udp_adopt_sock(&u->rx[done6]->roce6, u, AF_INET6, fds[k++]))
			why = "not sockets bound to the port";
	if (!why)
		return NULL;
	for (unsigned i = 0; i < done4; i++)
		u->rx[i]->roce4.fd = -1;    /* the caller closes every descriptor */
	for (unsigned i = 0; i < done6; i++)
		u->rx[i]->roce6.fd = -1;
	return why;
}
