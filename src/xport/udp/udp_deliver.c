/* The last step of every received RoCE packet: its ICRC is checked and it
 * goes to the hooks, or it is dropped and counted.  Reached from the
 * receive side (udp_rx.c) directly, or through the fault injector
 * (udp_fault.c) when it is on. */
#include <string.h>

#include "util/log.h"
#include "wire/gid.h"
#include "wire/icrc.h"
#include "xport/udp/udp_priv.h"

void ur_udp_ip_gids(const struct ur_roce_ip *ip, union ibv_gid *sgid, union ibv_gid *dgid)
{
	if (ip->family == AF_INET) {
		ur_gid_from_v4(sgid, ip->v4.saddr);
		ur_gid_from_v4(dgid, ip->v4.daddr);
	} else {
		memcpy(sgid->raw, &ip->v6.saddr, 16);
		memcpy(dgid->raw, &ip->v6.daddr, 16);
	}
}

void ur_udp_lost_on_device(struct ur_udp *u, const union ibv_gid *gid, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		u->hooks.dropped(u->hooks.arg, UR_XPORT_DROP_HOST_LOST, gid);
}

void ur_udp_host_lost(struct ur_udp *u, const union ibv_gid *gid, uint32_t n)
{
	UR_UDP_COUNT(u, lost, n);
	ur_udp_lost_on_device(u, gid, n);
}

void ur_udp_batch_gid(const struct tx_batch *b, union ibv_gid *gid)
{
	/* Ours: the sender's device; handed on: the receiver's. */
	if (b->d.family == AF_INET)
		ur_gid_from_v4(gid, b->handed_on ? b->d.dst.v4.sin_addr : b->d.src.v4);
	else
		memcpy(gid->raw, b->handed_on ? &b->d.dst.v6.sin6_addr : &b->d.src.v6, 16);
}

void ur_udp_batch_lost(struct ur_udp *u, const struct tx_batch *b)
{
	union ibv_gid gid;

	ur_udp_batch_gid(b, &gid);
	ur_udp_host_lost(u, &gid, b->nseg);
}

void ur_udp_deliver(struct ur_udp *u, const uint8_t *pkt, size_t len, const struct ur_roce_ip *ip,
		    uint8_t tclass, uint8_t hop)
{
	struct ur_rx_meta meta = { .traffic_class = tclass, .hop_limit = hop };

	UR_UDP_COUNT(u, rcvd_pkts, 1);
	ur_udp_ip_gids(ip, &meta.sgid, &meta.dgid);
	meta.ipv6 = ip->family != AF_INET;
	if (ur_icrc_check(ip, pkt, len, NULL)) {
		UR_UDP_COUNT(u, icrc_errors, 1);
		ur_dbg(NULL, "dropped a %zu byte packet: ICRC mismatch", len);
		u->hooks.dropped(u->hooks.arg, UR_XPORT_DROP_ICRC, &meta.dgid);
		return;
	}
	u->hooks.rx(u->hooks.arg, pkt, len, &meta);
}
