/* The port-4791 owner handing packets on to the process whose QP they are
 * for, without loss while that process reads.
 *
 * Between network namespaces, or from another host, every RoCE packet for
 * this host arrives on the one socket bound to port 4791, read by one
 * process, the router (udp_host_port.c).  Handed on one datagram each into
 * the owner's unix socket, whose queue holds ten datagrams however small,
 * a 64-packet message to a process busy for a moment lost all but its
 * first ten packets; go-back-N sent it again and the same tail was lost
 * again, until the requester's retries ran out.  So the packets of one
 * receive round are staged per process and flow and leave as one batch
 * (the framing a process's own sends to a local peer use), on the
 * connected socket to that process, which pushes back: a batch it has no
 * room for is kept, in order, until it drains (udp_send.c), up to
 * UR_HANDON_KEEP_PKTS a process; only past that, or when the process has
 * gone, is a packet lost, and counted (host_lost).
 */
#include <errno.h>
#include <string.h>

#include "util/compiler.h"
#include "xport/udp/udp_priv.h"

/* The addresses a handed-on packet arrived with, kept for the receiver's
 * ICRC check and its GRH: ours as the destination, the sender's as the
 * source. */
static void dest_of(struct tx_dest *d, struct ur_udp_sock *s, const struct ur_roce_ip *ip)
{
	memset(d, 0, sizeof(*d));
	d->family = ip->family;
	d->sock = s;
	d->sport = ip->sport;
	if (ip->family == AF_INET) {
		d->dst.v4.sin_family = AF_INET;
		d->dst.v4.sin_addr = ip->v4.daddr;
		d->dst.v4.sin_port = htons(ip->dport);
		d->src.v4 = ip->v4.saddr;
	} else {
		d->dst.v6.sin6_family = AF_INET6;
		d->dst.v6.sin6_addr = ip->v6.daddr;
		d->dst.v6.sin6_port = htons(ip->dport);
		d->src.v6 = ip->v6.saddr;
	}
}

/* The same batch: the same process and addresses, and the header's class
 * and hop limit, which every packet of a batch shares. */
static bool same_flow(const struct tx_batch *b, const struct tx_dest *d, uint8_t tclass,
		      uint8_t hop)
{
	return b->tclass == tclass && b->hop_limit == hop && b->d.sport == d->sport &&
	       ur_udp_same_dest(&b->d, d);
}

/* The connected socket to pid: the staged batch's when it is pid's. */
static struct ur_udp_sock *sock_of(struct ur_udp *u, const struct tx_batch *b, pid_t pid)
{
	if (b->nseg && container_of(b->d.sock, struct ur_udp_peer, sock)->pid == pid &&
	    !__atomic_load_n(&b->d.sock->stale, __ATOMIC_ACQUIRE))
		return b->d.sock;
	return ur_udp_peer_sock(u, pid);
}

void ur_udp_hand_on_flush(struct ur_udp *u, struct ur_udp_rx *rx)
{
	struct tx_batch *b = &rx->batch->handon;
	struct ur_udp_sock *s = b->d.sock;
	int ret;

	if (!b->nseg)
		return;
	/* Nothing overtakes what the socket keeps. */
	if (ur_udp_has_pending(s) && ur_udp_flush_pending_sock(u, s))
		ret = -EAGAIN;
	else
		ret = ur_udp_transmit(u, b);
	if (ret == -EAGAIN)
		ret = ur_udp_park(u, b);
	if (ret && ret != -EAGAIN) {
		/* Gone, or past what is kept for it: the transport counted
		 * the loss; the device of the address it was for does too. */
		union ibv_gid gid;

		ur_udp_batch_gid(b, &gid);
		ur_udp_lost_on_device(u, &gid, b->nseg);
	}
	b->nseg = 0;
	b->len = 0;
	b->closed = false;
}

void ur_udp_hand_on(struct ur_udp *u, struct ur_udp_rx *rx, pid_t pid, const uint8_t *pkt,
		    size_t len, const struct ur_roce_ip *ip, uint8_t tclass, uint8_t hop)
{
	struct tx_batch *b = &rx->batch->handon;
	struct ur_udp_sock *s = sock_of(u, b, pid);
	struct tx_dest d;

	if (!s || len > UR_GSO_MAX_BYTES) {
		/* No connected socket (the process has gone, or the table of
		 * peers is full): one datagram, as UDP would carry it. */
		union ibv_gid src, dst;

		if (!ur_udp_forward_one(u, pid, pkt, len, ip, tclass, hop)) {
			UR_UDP_COUNT(u, forwarded, 1);
			return;
		}
		ur_udp_ip_gids(ip, &src, &dst);
		ur_udp_host_lost(u, &dst, 1);   /* against the receiver's device */
		return;
	}
	dest_of(&d, s, ip);
	if (b->nseg && (b->closed || !same_flow(b, &d, tclass, hop) || len > b->seg ||
			b->nseg == UR_GSO_MAX_SEGS || b->len + len > UR_GSO_MAX_BYTES))
		ur_udp_hand_on_flush(u, rx);
	if (!b->nseg) {
		b->d = d;
		b->seg = (uint32_t)len;
		b->handed_on = true;
		b->tclass = tclass;
		b->hop_limit = hop;
	} else if (len < b->seg) {
		b->closed = true;       /* a shorter packet ends a batch */
	}
	memcpy(b->buf + b->len, pkt, len);
	b->len += (uint32_t)len;
	b->nseg++;
}
