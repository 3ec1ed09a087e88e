/* Network interfaces as RoCE sees them: name, MTU, MAC, and the GID table
 * derived from their addresses the way Linux rxe derives it. */
#ifndef UROCE_HOST_NETDEV_H
#define UROCE_HOST_NETDEV_H

#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "wire/gid.h"

#define UR_MAX_GID 16

struct ur_gid_entry {
	union ibv_gid gid;
	/* The address is assigned to the interface, so it can be a source;
	 * an empty entry is all zeros and not valid. */
	bool valid;
	/* GID 0 of an interface without a link-local address: a copy of its
	 * first IPv6 (else IPv4) address, so that index 0 works as rdma-core
	 * expects. */
	bool copy;
	int family;            /* AF_INET (IPv4-mapped) or AF_INET6 */
};

struct ur_netdev {
	char name[IF_NAMESIZE];
	unsigned ifindex;
	unsigned mtu;
	unsigned flags;        /* IFF_* */
	uint8_t mac[6];
	int speed_mbps;        /* -1 when the interface does not say */
	unsigned ngid;
	struct ur_gid_entry gid[UR_MAX_GID];
};

/* All interfaces with at least one IP address, sorted by ifindex.
 * *out is malloc'ed; 0 or -errno. */
int ur_netdev_scan(struct ur_netdev **out, unsigned *count);

/* One interface by name, with its GID table; -ENODEV if absent. */
int ur_netdev_get(const char *name, struct ur_netdev *out);

/* Is this GID (IPv4-mapped or IPv6) an address of some interface of this
 * network namespace?  false too when the addresses cannot be read. */
bool ur_gid_is_local_addr(const union ibv_gid *gid);

/* IB MTU enum from an interface MTU, as rxe derives it: minus 80 bytes of
 * Ethernet/IP/UDP/BTH/ICRC overhead, rounded down, capped at 4096. */
enum ibv_mtu ur_mtu_from_netdev(unsigned netdev_mtu);
unsigned ur_mtu_bytes(enum ibv_mtu mtu);

#endif
