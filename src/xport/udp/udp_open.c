/* The UDP transport's face: its ops, opening it, its housekeeping. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "engine/engine.h"
#include "host/registry.h"
#include "util/atfork.h"
#include "util/log.h"
#include "xport/udp/udp_priv.h"

#define UR_ELECTION_PERIOD_NS 200000000ull   /* 200 ms */

static void udp_tick(struct ur_xport *x, uint64_t now)
{
	struct ur_udp *u = container_of(x, struct ur_udp, xport);

	if (now < u->next_election_ns)
		return;
	u->next_election_ns = now + UR_ELECTION_PERIOD_NS;
	ur_udp_router_elect(u);
	ur_udp_port_send_reserve(u);
}

static void udp_stats(struct ur_xport *x, struct ur_xport_stats *out)
{
	struct ur_udp *u = container_of(x, struct ur_udp, xport);
	const uint64_t *in = (const uint64_t *)&u->stats;
	uint64_t *o = (uint64_t *)out;

	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		o[i] = __atomic_load_n(&in[i], __ATOMIC_RELAXED);
}

/* At exit: how many packets each receive context read, for those who
 * check that the load was spread (UROCE_LOG=info). */
static void udp_drain(struct ur_xport *x, int timeout_ms)
{
	struct ur_udp *u = container_of(x, struct ur_udp, xport);

	for (unsigned i = 0; u->nrx > 1 && i < u->nrx; i++)
		ur_info(NULL, "receive context %u: %llu packets, %llu of them for another "
			"context's QPs", i,
			(unsigned long long)__atomic_load_n(&u->rx[i]->pkts, __ATOMIC_RELAXED),
			(unsigned long long)__atomic_load_n(&u->rx[i]->strays, __ATOMIC_RELAXED));
	ur_udp_drain(x, timeout_ms);
}

static void udp_leave(struct ur_xport *x)
{
	ur_udp_router_leave(container_of(x, struct ur_udp, xport));
}

/* Our own sockets and our unix socket bring packets for this process's
 * QPs only: a polling application thread may read them (INLINE). */
static int watch_own(struct ur_udp *u)
{
	int ret = ur_engine_watch(u->engine, u->own4.fd, EPOLLIN, UR_WATCH_INLINE,
				  ur_udp_on_sock_event, &u->own4);

	if (!ret && u->own6.fd >= 0)
		ret = ur_engine_watch(u->engine, u->own6.fd, EPOLLIN, UR_WATCH_INLINE,
				      ur_udp_on_sock_event, &u->own6);
	if (!ret)
		ret = ur_udp_fwd_open(u);
	if (!ret)
		ret = ur_engine_watch(u->engine, u->fwd_fd, EPOLLIN, UR_WATCH_INLINE,
				      ur_udp_on_fwd_readable, u);
	return ret;
}

static void free_rx(struct ur_udp *u)
{
	for (unsigned i = 0; i < u->nrx; i++) {
		if (!u->rx[i])
			continue;
		free(u->rx[i]->fault);
		free(u->rx[i]->batch);
		free(u->rx[i]);
	}
}

/* One per receive context of the engine; their sockets on port 4791 come
 * with the election (udp_host_port.c). */
static int alloc_rx(struct ur_udp *u)
{
	u->nrx = ur_engine_rx_count(u->engine);
	for (unsigned i = 0; i < u->nrx; i++) {
		struct ur_udp_rx *rx = calloc(1, sizeof(*rx));

		u->rx[i] = rx;
		if (!rx)
			return -ENOMEM;
		rx->index = i;
		rx->roce4.fd = rx->roce6.fd = -1;
		rx->batch = calloc(1, sizeof(*rx->batch));
		if (!rx->batch)
			return -ENOMEM;
		rx->fault = ur_udp_fault_new(i);
	}
	return 0;
}

/* Undoes ur_udp_open: the port and its election first, then our sockets
 * out of the engine's reach, and once no callback reads them, closed. */
static void udp_close(struct ur_xport *x)
{
	struct ur_udp *u = container_of(x, struct ur_udp, xport);

	ur_udp_router_close(u);
	ur_registry_set_ports(u->reg, 0, 0);
	ur_engine_unwatch(u->engine, u->own4.fd);
	if (u->own6.fd >= 0)
		ur_engine_unwatch(u->engine, u->own6.fd);
	ur_engine_unwatch(u->engine, u->fwd_fd);
	ur_engine_quiesce(u->engine);
	ur_udp_peers_close(u);
	ur_udp_close_sock(&u->own6);
	ur_udp_close_sock(&u->own4);
	close(u->fwd_fd);
	free_rx(u);
	free(u);
}

static const struct ur_xport_ops udp_ops = {
	.name = "udp",
	.resolve = ur_udp_resolve,
	.send = ur_udp_send,
	.flush = ur_udp_flush,
	.want_writable = ur_udp_want_writable,
	.flush_kept = ur_udp_flush_kept,
	.peer_behind = ur_udp_peer_behind,
	.mcast = ur_udp_mcast,
	.local_msg = ur_udp_local_msg,
	.tick = udp_tick,
	.drain = udp_drain,
	.leave = udp_leave,
	.close = udp_close,
	.stats = udp_stats,
};

int ur_udp_open(struct ur_engine *e, struct ur_registry *reg, const struct ur_xport_hooks *h,
		struct ur_xport **out)
{
	struct ur_udp *u = calloc(1, sizeof(*u));
	int ret;

	if (!u)
		return -ENOMEM;
	u->xport.ops = &udp_ops;
	u->engine = e;
	u->reg = reg;
	u->hooks = *h;
	u->fwd_fd = -1;
	u->router_lock_fd = -1;
	u->router_pidfd = -1;
	u->gen = ur_fork_generation();
	ret = alloc_rx(u);
	if (ret)
		goto err_free;
	ur_udp_peers_init(u);
	ret = ur_udp_open_sock(&u->own4, u, AF_INET, 0, false);
	if (ret) {
		ur_err(NULL, "cannot open a UDP socket: %s", strerror(-ret));
		goto err_free;
	}
	if (ur_udp_open_sock(&u->own6, u, AF_INET6, 0, false))
		u->own6.fd = -1;         /* IPv6 disabled: IPv4 GIDs still work */
	ret = watch_own(u);
	if (!ret)
		ret = ur_registry_set_ports(u->reg, u->own4.port, u->own6.fd >= 0 ? u->own6.port : 0);
	if (ret) {
		ur_err(NULL, "cannot set up the UDP transport: %s", strerror(-ret));
		goto err_socks;
	}
	ur_udp_router_watch_forks(u);
	ur_udp_router_elect(u);
	*out = &u->xport;
	return 0;

err_socks:
	if (u->fwd_fd >= 0) {
		ur_engine_unwatch(e, u->fwd_fd);
		close(u->fwd_fd);
	}
	ur_udp_close_sock(&u->own6);
	ur_udp_close_sock(&u->own4);
err_free:
	free_rx(u);
	free(u);
	return ret;
}
