/* Multicast group membership.  The fan-out of each datagram that reaches
 * port 4791 to the member processes of the host is udp_rx.c's. */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "wire/gid.h"
#include "util/array.h"
#include "util/log.h"
#include "xport/udp/udp_priv.h"
#include "util/sys_socket.h"

/* Membership is taken by the attaching process on its own socket, at once:
 * the group is then joined on the link for the whole network namespace,
 * and the process serving port 4791 receives its datagrams (multicast goes
 * to every socket bound to the port) and fans them out to the members.
 *
 * The kernel caps the groups one socket may join (net.ipv4.
 * igmp_max_memberships, 20 by default; IPv6 by option memory), far below
 * max_mcast_grp.  Membership needs no particular socket, so when the own
 * socket is full the group is joined on an extra, unbound one; each group
 * remembers its socket so that leaving drops it there. */
#define MEMBER_SOCKS 32

static pthread_mutex_t member_lock = PTHREAD_MUTEX_INITIALIZER;
static int member_fd[2][MEMBER_SOCKS];          /* [IPv6?][i], 0: not open */
static struct membership {
	union ibv_gid gid;
	unsigned ifindex;
	int fd;
} *joined;
static unsigned njoined, joined_cap;

static int set_membership(int fd, const union ibv_gid *gid, unsigned ifindex, bool on)
{
	if (ur_gid_is_v4mapped(gid)) {
		struct ip_mreqn mr = { .imr_ifindex = (int)ifindex };

		memcpy(&mr.imr_multiaddr, &gid->raw[12], 4);
		return setsockopt(fd, IPPROTO_IP, on ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP,
				  &mr, sizeof(mr)) ? -errno : 0;
	} else {
		struct ipv6_mreq mr = { .ipv6mr_interface = ifindex };

		memcpy(&mr.ipv6mr_multiaddr, gid->raw, 16);
		return setsockopt(fd, IPPROTO_IPV6, on ? IPV6_JOIN_GROUP : IPV6_LEAVE_GROUP,
				  &mr, sizeof(mr)) ? -errno : 0;
	}
}

/* member_lock held: joins on the own socket, else on an extra one. */
static int join(struct ur_udp *u, const union ibv_gid *gid, unsigned ifindex, int *used)
{
	bool v6 = !ur_gid_is_v4mapped(gid);
	int fd = v6 ? u->own6.fd : u->own4.fd, ret;

	if (fd < 0)
		return -EAFNOSUPPORT;
	ret = set_membership(fd, gid, ifindex, true);
	for (int i = 0; (ret == -ENOBUFS || ret == -ENOMEM) && i < MEMBER_SOCKS; i++) {
		if (!member_fd[v6][i]) {
			fd = ur_socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
			if (fd < 0)
				return -errno;
			member_fd[v6][i] = fd + 1;
		}
		fd = member_fd[v6][i] - 1;
		ret = set_membership(fd, gid, ifindex, true);
	}
	*used = fd;
	return ret;
}

int ur_udp_mcast(struct ur_xport *x, const union ibv_gid *gid, unsigned ifindex, bool on)
{
	struct ur_udp *u = container_of(x, struct ur_udp, xport);
	int ret = 0, fd = -1;

	pthread_mutex_lock(&member_lock);
	if (on) {
		ret = UR_ARRAY_ROOM(joined, joined_cap, njoined, 16);
		if (ret)
			goto out;
		ret = join(u, gid, ifindex, &fd);
		if (!ret)
			joined[njoined++] = (struct membership){ *gid, ifindex, fd };
		goto out;
	}
	for (unsigned i = 0; i < njoined; i++) {
		if (joined[i].ifindex == ifindex && !memcmp(&joined[i].gid, gid, sizeof(*gid))) {
			ret = set_membership(joined[i].fd, gid, ifindex, false);
			joined[i] = joined[--njoined];
			goto out;
		}
	}
	ret = -ENOENT;
out:
	pthread_mutex_unlock(&member_lock);
	return ret;
}
