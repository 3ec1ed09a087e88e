/* The host's port 4791.
 *
 * Exactly one process per host (network namespace) binds 4791: whoever
 * holds an exclusive flock on the router lock file.  When it exits, the
 * kernel drops its lock and the next process to try (every tick) takes
 * over, so a dead peer never leaves the port orphaned.  What arrives there
 * for another process's QP is handed to that process's unix socket
 * (udp_rx.c, udp_fwd.c).
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
#include "util/log.h"
#include "wire/roce_hdr.h"
#include "host/registry.h"
#include "xport/udp/udp_priv.h"

static int bind_roce_port(struct ur_udp *u)
{
	int ret = ur_udp_open_sock(&u->roce4, u, AF_INET, UR_ROCE_UDP_PORT);

	if (ret)
		return ret;
	/* What arrives there is the host's, not only this process's; a
	 * polling application thread takes it too (and forwards the other
	 * processes' share), as it takes its own socket's: between hosts,
	 * every packet comes here, and waking the engine thread for each
	 * costs more than the work. */
	ret = ur_engine_watch(u->engine, u->roce4.fd, EPOLLIN, UR_WATCH_INLINE,
			      ur_udp_on_sock_event, &u->roce4);
	if (ret) {
		ur_udp_close_sock(&u->roce4);
		return ret;
	}
	if (u->own6.fd >= 0 && !ur_udp_open_sock(&u->roce6, u, AF_INET6, UR_ROCE_UDP_PORT))
		ur_engine_watch(u->engine, u->roce6.fd, EPOLLIN, UR_WATCH_INLINE,
				ur_udp_on_sock_event, &u->roce6);
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
