/* Multicast on the wire: group membership, and fan-out of each datagram
 * that reaches port 4791 to every member process of the host. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "core/netdev.h"
#include "engine/mcast.h"
#include "util/log.h"
#include "xport/registry.h"
#include "xport/udp/udp_priv.h"

/* Membership is taken by the attaching process on its own socket, at once:
 * the group is then joined on the link for the whole network namespace,
 * and the process serving port 4791 receives its datagrams (multicast goes
 * to every socket bound to the port) and fans them out to the members. */
int ur_udp_mcast(struct ur_xport *x, const union ibv_gid *gid, unsigned ifindex, bool join)
{
	struct ur_udp *u = container_of(x, struct ur_udp, xport);

	if (ur_gid_is_v4mapped(gid)) {
		struct ip_mreqn mr = { .imr_ifindex = (int)ifindex };

		memcpy(&mr.imr_multiaddr, &gid->raw[12], 4);
		return setsockopt(u->own4.fd, IPPROTO_IP, join ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP,
				  &mr, sizeof(mr)) ? -errno : 0;
	} else {
		struct ipv6_mreq mr = { .ipv6mr_interface = ifindex };

		if (u->own6.fd < 0)
			return -EAFNOSUPPORT;
		memcpy(&mr.ipv6mr_multiaddr, gid->raw, 16);
		return setsockopt(u->own6.fd, IPPROTO_IPV6, join ? IPV6_JOIN_GROUP : IPV6_LEAVE_GROUP,
				  &mr, sizeof(mr)) ? -errno : 0;
	}
}

void ur_udp_mcast_fanout(struct ur_udp *u, const uint8_t *pkt, size_t len,
			 const struct ur_roce_ip *ip, uint8_t tclass, uint8_t hop)
{
	struct ur_reg_owner members[64];
	union ibv_gid dgid;
	int n;

	if (ip->family == AF_INET)
		ur_gid_from_v4(&dgid, ip->v4.daddr);
	else
		memcpy(dgid.raw, &ip->v6.daddr, 16);
	n = ur_registry_mcast_members(&dgid, members, (int)UR_ARRAY_SIZE(members));
	for (int i = 0; i < n; i++) {
		if (members[i].self)
			ur_udp_deliver(u, pkt, len, ip, tclass, hop);
		else
			ur_udp_forward_to(u, members[i].pid, pkt, len, ip, tclass, hop);
	}
}
