/* Port 4791 handed from a process that exits to one that stays.
 *
 * Freeing the port at exit (udp_host_port.c) loses two things: the
 * datagrams its sockets hold unread, and all that arrives before another
 * process of the namespace binds the port again, at its next election
 * (200 ms at most).  RC sends them again; UC and UD lose them (seen: a UC
 * ping-pong with the kernel's rxe hung while test processes came and went
 * in the host's namespace).  So the exiting router sends the sockets
 * themselves, still bound, to another live process of the namespace over
 * its unix socket (SCM_RIGHTS), with the router lock's open file: an
 * flock belongs to the open file, so the lock goes with it and never
 * lapses.  What the sockets hold, and what arrives meanwhile, waits in
 * them for the new router to read.  The taker must have as many receive
 * contexts as sockets came (the kernel's steering program counts them);
 * otherwise it closes them, and the next election binds the port anew.
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

bool ur_udp_port_hand_on(struct ur_udp *u)
{
	struct ur_fwd_port port = { .pid = (int32_t)getpid() };
	pid_t pids[UR_PASS_CANDIDATES];
	int fds[UR_FWD_MAX_FDS];
	unsigned nfds = 0;
	int n;

	if (u->router_lock_fd < 0 || u->fwd_fd < 0)
		return false;
	fds[nfds++] = u->router_lock_fd;
	while (port.n4 < u->nrx && u->rx[port.n4]->roce4.fd >= 0)
		fds[nfds++] = u->rx[port.n4++]->roce4.fd;
	while (port.n6 < u->nrx && u->rx[port.n6]->roce6.fd >= 0)
		fds[nfds++] = u->rx[port.n6++]->roce6.fd;
	if (!port.n4)
		return false;
	n = ur_registry_live_pids(u->reg, pids, UR_PASS_CANDIDATES);
	for (int i = 0; i < n; i++) {
		int ret;

		/* A stopped process would hold the port and read nothing. */
		if (ur_proc_stopped(pids[i]))
			continue;
		ret = send_port(u, pids[i], &port, fds, nfds);
		if (!ret) {
			ur_info(NULL, "this process exits: UDP port %d, with what its sockets hold, "
				"handed to pid %d", UR_ROCE_UDP_PORT, (int)pids[i]);
			return true;
		}
		ur_dbg(NULL, "could not hand UDP port %d to pid %d: %s", UR_ROCE_UDP_PORT,
		       (int)pids[i], strerror(-ret));
	}
	return false;
}

/* Takes the n4 + n6 sockets after the lock (fds[0]) into the receive
 * contexts, all or none: NULL, or why not. */
static const char *adopt_all(struct ur_udp *u, const struct ur_fwd_port *port, const int *fds)
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

const char *ur_udp_port_unpack(struct ur_udp *u, const uint8_t *buf, size_t len, const int *fds,
			       unsigned nfds, struct ur_fwd_port *port)
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
	    nfds != 1 + port->n4 + port->n6)
		return "a malformed message";
	if (port->n4 != u->nrx || (port->n6 && port->n6 != u->nrx))
		return "its receive contexts differ in number (UROCE_RX_THREADS)";
	return adopt_all(u, port, fds);
}
