/* The UDP transmit path: packets are staged, with their ICRC, in a
 * per-thread buffer and leave as one UDP GSO send (UDP_SEGMENT) when the
 * caller flushes, the destination changes, or the buffer is full: one
 * system call and one trip through the stack for up to 64 packets.  A peer
 * sees ordinary RoCEv2 packets; a uroce receiver on this host with UDP_GRO
 * even gets them as one buffer.
 *
 * GSO needs every segment but the last to have the same size, so a packet
 * of another size (a WRITE's FIRST carries a RETH the MIDDLEs lack) closes
 * the batch.  A batch the socket has no room for is kept, whole and in
 * order, on the socket's pending list (udp_send.c); nothing else is sent on
 * that socket until it has gone.  Batches for a process of this host take the same path to a
 * connected unix socket instead (udp_host_peers.c), which pushes back rather
 * than drops.
 */
#include <errno.h>
#include <netinet/udp.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "wire/gid.h"
#include "util/clock.h"
#include "util/fault_guard.h"
#include "util/log.h"
#include "wire/roce_hdr.h"
#include "host/cm_route.h"
#include "host/registry.h"
#include "xport/udp/udp_priv.h"

static pthread_key_t stage_key;
static pthread_once_t stage_once = PTHREAD_ONCE_INIT;

static void stage_key_init(void)
{
	pthread_key_create(&stage_key, free);
}

static struct tx_batch *stage(void)
{
	struct tx_batch *b;

	pthread_once(&stage_once, stage_key_init);
	b = pthread_getspecific(stage_key);
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (b)
			pthread_setspecific(stage_key, b);
	}
	return b;
}

/* Sends this thread's staged batch.  -EAGAIN: it is parked, will leave
 * when the socket drains, and the caller should wait for that too. */
static int flush_stage(struct ur_udp *u, struct tx_batch *b)
{
	int ret;

	if (!b->nseg)
		return 0;
	ret = ur_udp_has_pending(b->d.sock) ? -EAGAIN : ur_udp_transmit(u, b);
	if (ret == -EAGAIN)
		ret = ur_udp_park(u, b);
	else
		ret = 0;           /* sent, or a loss */
	b->nseg = 0;
	b->len = 0;
	b->closed = false;
	return ret;
}

int ur_udp_flush(struct ur_xport *x)
{
	struct tx_batch *b = stage();

	return b ? flush_stage(container_of(x, struct ur_udp, xport), b) : 0;
}

void ur_udp_drain(struct ur_xport *x, int timeout_ms)
{
	struct ur_udp *u = container_of(x, struct ur_udp, xport);
	uint64_t end = ur_now_ns() + (uint64_t)timeout_ms * 1000000u;
	struct ur_udp_sock *s;
	uint32_t left = 0;
	int i;

	ur_udp_flush(x);
	while (ur_udp_flush_pending(u) == -EAGAIN && ur_now_ns() < end) {
		struct pollfd pfd[2 + UR_UDP_PEERS];
		nfds_t n = 0;

		ur_udp_for_each_sock(u, s, i)
			if (ur_udp_has_pending(s))
				pfd[n++] = (struct pollfd){ .fd = s->fd, .events = POLLOUT };
		if (n)
			poll(pfd, n, 10);
	}
	/* What still waits for room will not leave: a loss, counted and said
	 * (a process that exits while its peers read slowly). */
	ur_udp_for_each_sock(u, s, i)
		if (ur_udp_has_pending(s))
			left += ur_udp_drop_pending(u, s);
	if (left)
		ur_warn(NULL, "exiting: %u packet(s) still waiting after %d ms for room in a peer's "
			"socket were dropped (counted as host_lost)", left, timeout_ms);
}

int ur_udp_flush_kept(struct ur_xport *x)
{
	return ur_udp_flush_pending(container_of(x, struct ur_udp, xport));
}

void ur_udp_want_writable(struct ur_xport *x, bool waiting)
{
	ur_udp_update_writable(container_of(x, struct ur_udp, xport), waiting);
}

static void dest_of(struct ur_udp *u, const struct ur_path *up, const struct ur_tx_pkt *pkt,
		    struct tx_dest *d)
{
	const struct ur_udp_path *path = ur_udp_path_of(up);

	memset(d, 0, sizeof(*d));
	d->family = path->family;
	d->sock = path->family == AF_INET ? &u->own4 : &u->own6;
	d->sport = d->sock->port;
	memcpy(&d->dst, &path->dst, sizeof(d->dst));
	memcpy(&d->src, &path->src, sizeof(d->src));
	if (path->mcast || (path->family == AF_INET6 &&
			    ur_gid_is_link_local((const union ibv_gid *)&path->src.v6)))
		d->ifindex = path->ifindex;
	if (path->local) {
		/* A process of this host: straight to its own socket. */
		struct ur_reg_owner o;

		uint32_t dqpn = bth_qpn(pkt->hdr);
		/* A CM MAD goes straight to the process it is for, as the
		 * port-4791 owner would hand it on, but without its lossy
		 * hop: a burst of connections loses nothing to a full queue. */
		int found = dqpn == UR_GSI_QPN && pkt->niov == 1 ?
			ur_host_cm_mad_owner(u->reg, pkt->iov[0].iov_base, pkt->iov[0].iov_len, &o) :
			ur_registry_lookup(u->reg, dqpn, &o);

		if (!found) {
			uint16_t port = path->family == AF_INET ? o.port4 : o.port6;
			struct ur_udp_sock *peer = ur_udp_peer_sock(u, o.pid);

			if (port) {
				if (path->family == AF_INET)
					d->dst.v4.sin_port = htons(port);
				else
					d->dst.v6.sin6_port = htons(port);
			}
			if (peer)
				d->sock = peer;   /* lossless; else UDP to its port */
		}
	}
}

int ur_udp_send(struct ur_xport *x, const struct ur_path *path, const struct ur_tx_pkt *pkt)
{
	struct ur_udp *u = container_of(x, struct ur_udp, xport);
	uint32_t size = pkt->hdr_len + pkt->paylen + pkt->pad + UR_ICRC_BYTES;
	struct ur_roce_ip ip = { .family = ur_udp_path_of(path)->family, .ip_id = 0, .df = true };
	struct tx_batch *b = stage();
	struct tx_dest d;
	struct iovec iov;
	uint8_t *p;
	int ret;

	if (pkt->placed)
		return -EPROTO;         /* a packet without its payload: never on the wire */
	if (!b)
		return -ENOMEM;
	dest_of(u, path, pkt, &d);
	if (d.sock->fd < 0)
		return -EAFNOSUPPORT;
	if (b->nseg && (b->closed || !ur_udp_same_dest(&b->d, &d) || size > b->seg ||
			b->nseg == UR_GSO_MAX_SEGS || b->len + size > UR_GSO_MAX_BYTES)) {
		ret = flush_stage(u, b);
		if (ret)
			return ret;
	}
	if (!b->nseg) {
		if (ur_udp_has_pending(d.sock) && ur_udp_flush_pending_sock(u, d.sock))
			return -EAGAIN;      /* order: nothing overtakes a parked batch */
		b->d = d;
		b->seg = size;
	} else if (size < b->seg) {
		b->closed = true;            /* a shorter packet ends a GSO batch */
	}

	/* Lay the packet out whole: headers, payload, pad, ICRC. */
	p = b->buf + b->len;
	memcpy(p, pkt->hdr, pkt->hdr_len);
	p += pkt->hdr_len;
	for (int i = 0; i < pkt->niov; i++) {
		/* Not staged until b->len moves: a fault leaves no trace. */
		if (!ur_guarded_copy(p, pkt->iov[i].iov_base, pkt->iov[i].iov_len))
			return -EFAULT;
		p += pkt->iov[i].iov_len;
	}
	memset(p, 0, pkt->pad);
	p += pkt->pad;
	/* Linux gives an unconnected socket's DF datagram IP ID 0 and numbers
	 * GSO segments from there: segment i leaves with ID i, which the ICRC
	 * covers.  (IPv6 has no ID.) */
	ip.ip_id = (uint16_t)b->nseg;
	ip.sport = d.sport;
	if (d.family == AF_INET) {
		ip.v4.saddr = d.src.v4;
		ip.v4.daddr = d.dst.v4.sin_addr;
		ip.dport = ntohs(d.dst.v4.sin_port);
	} else {
		ip.v6.saddr = d.src.v6;
		ip.v6.daddr = d.dst.v6.sin6_addr;
		ip.dport = ntohs(d.dst.v6.sin6_port);
	}
	iov = (struct iovec){ b->buf + b->len, size - UR_ICRC_BYTES };
	ur_put_le32(p, ur_icrc_calc(&ip, &iov, 1, size - UR_ICRC_BYTES));
	b->len += size;
	b->nseg++;
	return 0;
}
