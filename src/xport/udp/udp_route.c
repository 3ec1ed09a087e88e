/* Resolving a path: the addresses packets go to and come from, and a
 * check that the kernel has a route there now, as a RoCE device resolves
 * it at RTR. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "host/netdev.h"
#include "wire/gid.h"
#include "wire/roce_hdr.h"
#include "xport/udp/udp_priv.h"
#include "util/sys_socket.h"

int ur_udp_resolve(struct ur_xport *x, const union ibv_gid *sgid, unsigned ifindex,
		   const union ibv_gid *dgid, uint32_t dqpn, struct ur_path *path)
{
	struct ur_udp *u = container_of(x, struct ur_udp, xport);
	struct ur_udp_path *p = ur_udp_path_mut(path);
	int fd, ret = 0;

	p->ifindex = ifindex;
	if (ur_gid_is_v4mapped(sgid)) {
		p->family = AF_INET;
		memcpy(&p->src.v4, &sgid->raw[12], 4);
		p->dst.v4.sin_family = AF_INET;
		p->dst.v4.sin_port = htons(UR_ROCE_UDP_PORT);
		memcpy(&p->dst.v4.sin_addr, &dgid->raw[12], 4);
	} else {
		if (u->own6.fd < 0)
			return -EAFNOSUPPORT;
		p->family = AF_INET6;
		memcpy(&p->src.v6, sgid->raw, 16);
		p->dst.v6.sin6_family = AF_INET6;
		p->dst.v6.sin6_port = htons(UR_ROCE_UDP_PORT);
		memcpy(&p->dst.v6.sin6_addr, dgid->raw, 16);
		if (ur_gid_is_link_local(dgid))
			p->dst.v6.sin6_scope_id = ifindex;
	}
	if (ur_gid_is_multicast(dgid)) {
		/* A group: sent on the device's link, no unicast route needed. */
		p->mcast = true;
		if (p->family == AF_INET6)
			p->dst.v6.sin6_scope_id = ifindex;
		return 0;
	}
	fd = ur_socket(p->family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		if (connect(fd, (struct sockaddr *)&p->dst,
			    p->family == AF_INET ? sizeof(p->dst.v4) : sizeof(p->dst.v6)))
			ret = -errno;
		close(fd);
	}
	if (ret)
		return ret;
	p->local = ur_gid_is_local_addr(dgid);
	return 0;
}
