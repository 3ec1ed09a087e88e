/* The host's port 4791.
 *
 * Exactly one process per host (network namespace) binds 4791: whoever
 * holds an exclusive flock on the router lock file.  When it exits, the
 * kernel drops its lock and the next process to try (every tick) takes
 * over, so a dead peer never leaves the port orphaned; the others watch the
 * router's exit too (its pid in the lock file, a pidfd), so the port is
 * taken at once rather than at the next tick.  What arrives there
 * for another process's QP is handed to that process's unix socket
 * (udp_rx.c, udp_fwd.c).
 *
 * With several receive contexts (engine.h), each binds a socket of an
 * SO_REUSEPORT group on the port, and a classic BPF program tells the
 * kernel which one takes a datagram: the destination QP number in the BTH,
 * modulo the number of contexts, as a NIC's RSS spreads by flow.  A QP's
 * packets thus stay on one context (one thread at a time, in order) and
 * different QPs' are received on different cores.  Groups and QP1 go to
 * context 0, which serves the multicast fan-out and the CM.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "engine/engine.h"
#include "util/atfork.h"
#include "util/fd.h"
#include "util/log.h"
#include "wire/roce_hdr.h"
#include "host/registry.h"
#include "xport/udp/udp_priv.h"

/* The group's program: the BTH's destination QP (bytes 5..7 of the UDP
 * payload, which is where the kernel points it) modulo n; QP1 and the
 * multicast QP to 0.  A datagram too short to load from gets 0 too. */
static int steer_by_qpn(int fd, unsigned n)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xffffff),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, UR_GSI_QPN, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, UR_MCAST_QPN, 2, 0),
		BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, n),
		BPF_STMT(BPF_RET | BPF_A, 0),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = { .len = UR_ARRAY_SIZE(code), .filter = code };

	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof(prog)) ?
		       -errno : 0;
}

/* Context i's socket s on the port, now bound: watched by its thread. */
static int port_watch(struct ur_udp *u, unsigned i, struct ur_udp_sock *s)
{
	s->rx = u->rx[i];
	/* What arrives there is the host's, not only this process's; a
	 * polling application thread takes it too (and forwards the other
	 * processes' share), as it takes its own socket's: between hosts,
	 * every packet comes here, and waking the engine thread for each
	 * costs more than the work. */
	return ur_engine_watch_rx(u->engine, i, s->fd, EPOLLIN, ur_udp_on_sock_event, s);
}

/* Context i's socket on the port: 0 or -errno. */
static int bind_one(struct ur_udp *u, unsigned i, int family)
{
	struct ur_udp_rx *rx = u->rx[i];
	struct ur_udp_sock *s = family == AF_INET ? &rx->roce4 : &rx->roce6;
	int ret = ur_udp_open_sock(s, u, family, UR_ROCE_UDP_PORT, u->nrx > 1);

	if (ret)
		return ret;
	ret = port_watch(u, i, s);
	if (ret)
		ur_udp_close_sock(s);
	return ret;
}

/* Tells n sockets of family's group that the kernel steers over them. */
static void port_spread(struct ur_udp *u, int family, unsigned n)
{
	/* Told after the sockets are watched: their threads may be reading. */
	for (unsigned i = 0; n > 1 && i < n; i++)
		__atomic_store_n(&(family == AF_INET ? &u->rx[i]->roce4 : &u->rx[i]->roce6)->spread,
				 n, __ATOMIC_RELAXED);
}

/* One family's group: context 0's socket or an error; the others' as far
 * as they go (a datagram the program sends past the last is hashed). */
static int bind_family(struct ur_udp *u, int family)
{
	struct ur_udp_sock *first = family == AF_INET ? &u->rx[0]->roce4 : &u->rx[0]->roce6;
	unsigned n = 1;
	int ret = bind_one(u, 0, family);

	if (ret)
		return ret;
	while (n < u->nrx && !(ret = bind_one(u, n, family)))
		n++;
	if (n < u->nrx)
		ur_warn(NULL, "UDP port %d: %u receive contexts of %u (%s)", UR_ROCE_UDP_PORT, n,
			u->nrx, strerror(-ret));
	if (n > 1 && (ret = steer_by_qpn(first->fd, n))) {
		ur_warn(NULL, "UDP port %d: the kernel spreads packets by address, not by QP (%s)",
			UR_ROCE_UDP_PORT, strerror(-ret));
		return 0;
	}
	port_spread(u, family, n);
	return 0;
}

static int bind_roce_port(struct ur_udp *u)
{
	int ret = bind_family(u, AF_INET);

	if (ret)
		return ret;
	if (u->own6.fd >= 0)
		bind_family(u, AF_INET6);
	return 0;
}

/* The router writes its pid in the lock file for the others to watch
 * (udp_lock_file.c), naming no taker yet. */
static void publish_router_pid(struct ur_udp *u)
{
	int ret = ur_udp_lock_record(u, 0);

	if (ret)
		ur_warn(NULL, "cannot write this process's pid in the port %d lock file: %s; "
			"the others take the port over at their next election only",
			UR_ROCE_UDP_PORT, strerror(-ret));
}

/* Stops watching; router_pid stays, naming the router last seen. */
static void unwatch_router(struct ur_udp *u)
{
	if (u->router_pidfd < 0)
		return;
	ur_engine_unwatch(u->engine, u->router_pidfd);
	close(u->router_pidfd);
	u->router_pidfd = -1;
}

/* The router has ended (its pidfd is readable once it has, and its lock is
 * gone by then): elect now.  A peer's packets to 4791 are lost until the
 * port is bound again, and on a loaded host the next election can come
 * after a QP's retries are spent. */
static bool serve_reserve(struct ur_udp *u, pid_t ended);

static void on_router_exit(void *arg, uint32_t events)
{
	struct ur_udp *u = arg;

	(void)events;
	unwatch_router(u);
	if (!serve_reserve(u, u->router_pid))
		ur_udp_router_elect(u);
}

/* The router the lock file names, or 0. */
static int lock_file_pid(struct ur_udp *u)
{
	pid_t router, taker;

	ur_udp_lock_read(u, &router, &taker);
	return (int)router;
}

/* Watches the router the lock file names, if not the one last seen (watched
 * now, or ended: its successor has not written its pid yet).  Without a
 * pid (an older router) or a pidfd (gone already, or a kernel before 5.3),
 * the ticks still elect. */
static void watch_router(struct ur_udp *u)
{
	int pid = lock_file_pid(u), fd;

	if (!pid || pid == (int)getpid() || pid == u->router_pid)
		return;
	unwatch_router(u);
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return;
	if (ur_engine_watch(u->engine, fd, EPOLLIN, UR_WATCH_ENGINE, on_router_exit, u)) {
		close(fd);
		return;
	}
	u->router_pidfd = fd;
	u->router_pid = pid;
}

/* This process holds the router lock now (lock_fd, which it keeps):
 * stops watching the last router and publishes its pid. */
static void router_became(struct ur_udp *u, int lock_fd)
{
	if (u->router_lock_fd != lock_fd)
		ur_udp_close_fd(&u->router_lock_fd);   /* ours, never locked: the lock is on lock_fd's */
	u->router_lock_fd = lock_fd;
	u->router = true;
	unwatch_router(u);
	u->router_pid = 0;
	publish_router_pid(u);
}

void ur_udp_router_elect(struct ur_udp *u)
{
	char path[128];
	int ret;

	if (__atomic_load_n(&u->leaving, __ATOMIC_ACQUIRE) ||
	    (u->router && u->rx[0]->roce4.fd >= 0))
		return;
	if (u->router_lock_fd < 0) {
		ur_registry_router_lock_path(path, sizeof(path));
		ret = ur_registry_open_private(path);
		if (ret < 0) {
			static bool warned;

			if (ret == -EPERM && !__atomic_exchange_n(&warned, true, __ATOMIC_RELAXED))
				ur_err(NULL, "%s is not this user's alone (another user created it, "
				       "or may read or write it): this process will not serve UDP "
				       "port %d; remove it", path, UR_ROCE_UDP_PORT);
			return;
		}
		u->router_lock_fd = ret;
	}
	if (!u->router) {
		if (flock(u->router_lock_fd, LOCK_EX | LOCK_NB)) {
			watch_router(u);
			return;
		}
		if (u->router_pid)
			ur_info(NULL, "the process that served UDP port %d, pid %d, has ended: "
				"this one takes the port over", UR_ROCE_UDP_PORT, u->router_pid);
		/* A copy held in reserve is bound to the port: gone first. */
		ur_udp_port_drop_reserve(u);
		router_became(u, u->router_lock_fd);
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

static void watch_all(struct ur_udp *u, const struct ur_fwd_port *port)
{
	for (unsigned i = 0; i < port->n4 + port->n6; i++) {
		unsigned ctx = i < port->n4 ? i : i - port->n4;
		struct ur_udp_sock *s = i < port->n4 ? &u->rx[ctx]->roce4 : &u->rx[ctx]->roce6;
		int ret = port_watch(u, ctx, s);

		if (ret) {
			ur_warn(NULL, "UDP port %d: receive context %u cannot read its socket (%s): "
				"what the kernel steers there is lost", UR_ROCE_UDP_PORT, ctx,
				strerror(-ret));
			ur_udp_close_sock(s);
		}
	}
	port_spread(u, AF_INET, port->n4);
	port_spread(u, AF_INET6, port->n6);
}

void ur_udp_router_take(struct ur_udp *u, const uint8_t *buf, size_t len, int *fds, unsigned nfds)
{
	struct ur_fwd_port port;
	const char *why = ur_udp_port_check(u, buf, len, nfds, &port);

	if (!why && __atomic_load_n(&u->leaving, __ATOMIC_ACQUIRE))
		why = "this process exits too";
	else if (!why && u->router)
		why = "this process serves the port already";
	if (!why && (port.flags & UR_FWD_PORT_RESERVE)) {
		ur_udp_port_keep(u, &port, fds, nfds);
		ur_dbg(NULL, "holding UDP port %d in reserve for pid %d", UR_ROCE_UDP_PORT,
		       (int)port.pid);
		return;
	}
	if (!why) {
		ur_udp_port_drop_reserve(u);    /* copies of what came */
		why = ur_udp_port_adopt(u, &port, fds);
	}
	if (why) {
		ur_fds_close(fds, nfds);
		ur_info(NULL, "did not take UDP port %d from pid %d: %s", UR_ROCE_UDP_PORT,
			(int)port.pid, why);
		ur_udp_router_elect(u);
		return;
	}
	router_became(u, fds[0]);
	watch_all(u, &port);
	ur_info(NULL, "pid %d handed this process UDP port %d as it exited: this one serves it "
		"for the host now", (int)port.pid, UR_ROCE_UDP_PORT);
}

/* The router "ended" has ended and this process holds its port in reserve:
 * serves it, sockets and what they hold, lock and all, if the router chose
 * this process to (the lock file names that router and this process as its
 * taker: udp_lock_file.c) and nobody has taken it since (the lock is still
 * the one this copy holds).  Whether it does.  A copy of the router the
 * lock file names, if that is not the one ended, is kept: a router's end
 * is seen late (its pidfd is readable once its namespaces are torn down,
 * 0.5 s and more), when its successor may have given this process a copy
 * of its own, and serving that would make a second reader of a live
 * router's sockets.  Any other copy is dropped: kept, it would hold the
 * port bound and locked with nobody reading it. */
static bool serve_reserve(struct ur_udp *u, pid_t ended)
{
	const char *why = NULL;
	pid_t was = u->reserve.port.pid, router, taker;

	if (!u->reserve.nfds)
		return false;
	ur_udp_lock_read(u, &router, &taker);
	if (was != ended && router == was)
		return false;
	if (__atomic_load_n(&u->leaving, __ATOMIC_ACQUIRE) || u->router)
		why = "not now";
	else if (router != was)
		why = "another process serves the port since";
	else if (taker != getpid())
		why = "the router chose another process to take it since";
	else if (flock(u->reserve.fds[0], LOCK_EX | LOCK_NB))
		why = "its lock is another's now";
	else
		why = ur_udp_port_adopt(u, &u->reserve.port, u->reserve.fds);
	if (why) {
		ur_dbg(NULL, "the copy of UDP port %d held for pid %d is not served: %s",
		       UR_ROCE_UDP_PORT, (int)was, why);
		ur_udp_port_drop_reserve(u);
		return false;
	}
	router_became(u, u->reserve.fds[0]);
	watch_all(u, &u->reserve.port);
	u->reserve.nfds = 0;               /* the router's own now */
	ur_info(NULL, "the process that served UDP port %d, pid %d, has ended: this one takes "
		"the port over, with its sockets held here in reserve (what they held is not lost)",
		UR_ROCE_UDP_PORT, (int)was);
	return true;
}

/* A process's files (its sockets, the lock) are released by the kernel only
 * once the process is all but gone: after its mount namespace is torn
 * down, where it had one of its own ("ip netns exec" makes one for each
 * command), which took 0.5 s and more on a busy 2-core host: longer than
 * a QP's whole retry budget (ibv_rc_pingpong: 7 x 67 ms), for every pair
 * that this process served the port for.  So a router that exits hands
 * the port on itself: its sockets, still bound, with what they hold, and
 * its lock, to another process of the namespace (udp_port_pass.c), so
 * that nothing is lost; with nobody to take them, it frees the port for
 * the next election (a tick, 200 ms at most), and what arrives until
 * then is lost.  A fork child leaves its parent's port alone: the lock is
 * the parent's too. */
void ur_udp_router_leave(struct ur_udp *u)
{
	if (u->gen != ur_fork_generation())
		return;
	__atomic_store_n(&u->leaving, true, __ATOMIC_RELEASE);
	ur_engine_quiesce(u->engine);       /* an election in progress ends */
	ur_udp_port_drop_reserve(u);
	if (!u->router)
		return;
	for (unsigned i = 0; i < u->nrx; i++) {
		if (u->rx[i]->roce4.fd >= 0)
			ur_engine_unwatch(u->engine, u->rx[i]->roce4.fd);
		if (u->rx[i]->roce6.fd >= 0)
			ur_engine_unwatch(u->engine, u->rx[i]->roce6.fd);
	}
	ur_engine_quiesce(u->engine);       /* no callback reads them any more */
	if (ur_udp_port_hand_on(u) == UR_PORT_HANDED) {
		/* The lock is the open file's, which the message holds now. */
		ur_udp_close_fd(&u->router_lock_fd);
	} else {
		if (ftruncate(u->router_lock_fd, 0) || flock(u->router_lock_fd, LOCK_UN))
			ur_warn(NULL, "cannot release the port %d lock: %s", UR_ROCE_UDP_PORT,
				strerror(errno));
		ur_info(NULL, "this process exits: UDP port %d is free for the host's next process",
			UR_ROCE_UDP_PORT);
	}
	for (unsigned i = 0; i < u->nrx; i++) {
		ur_udp_close_sock(&u->rx[i]->roce4);
		ur_udp_close_sock(&u->rx[i]->roce6);
	}
	u->router = false;
}

/* The process's transport, for the fork handler (one stack a process). */
static struct ur_udp *port_user;

/* In a child of fork(): its copies of port 4791's sockets, of the router
 * lock and of a reserve are closed, so that a child that outlives its
 * parent does not keep the port bound, or locked, with nobody reading it.
 * Closes only (a child hook may not lock or free); the fields never name
 * a closed descriptor (ur_udp_close_fd), so what a parent's thread was
 * changing at the fork is at worst left open, as before. */
static void child_lets_port_go(void)
{
	struct ur_udp *u = __atomic_load_n(&port_user, __ATOMIC_ACQUIRE);
	unsigned n;

	if (!u)
		return;
	for (unsigned i = 0; i < u->nrx; i++) {
		ur_udp_close_fd(&u->rx[i]->roce4.fd);
		ur_udp_close_fd(&u->rx[i]->roce6.fd);
	}
	ur_udp_close_fd(&u->router_lock_fd);
	n = __atomic_load_n(&u->reserve.nfds, __ATOMIC_ACQUIRE);
	u->reserve.nfds = 0;
	for (unsigned i = 0; i < n && i < UR_FWD_MAX_FDS; i++)
		ur_udp_close_fd(&u->reserve.fds[i]);
	u->router = false;
}

void ur_udp_router_watch_forks(struct ur_udp *u)
{
	static const struct ur_atfork_hooks hooks = { .child = child_lets_port_go };

	__atomic_store_n(&port_user, u, __ATOMIC_RELEASE);
	ur_atfork_register(UR_ATFORK_UDP_PORT, &hooks);
}

void ur_udp_router_close(struct ur_udp *u)
{
	struct ur_udp *was = u;

	__atomic_compare_exchange_n(&port_user, &was, NULL, false, __ATOMIC_ACQ_REL,
				    __ATOMIC_RELAXED);
	ur_udp_router_leave(u);
	unwatch_router(u);
	ur_engine_quiesce(u->engine);       /* on_router_exit is over */
	ur_udp_close_fd(&u->router_lock_fd);
}
