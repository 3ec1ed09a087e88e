/* Every uroce process has an abstract unix datagram socket named after its
 * pid: the port-4791 router hands it the packets for its QPs, processes of
 * the host send it their batches of packets and their control messages.
 * A header says which, and carries what the receiver's ICRC check needs
 * (the addresses and ports UDP would have carried).  Only datagrams from
 * processes of the same user are taken: the kernel tells who sent each. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "xport/udp/udp_priv.h"

socklen_t ur_udp_fwd_addr(struct sockaddr_un *sun, pid_t pid)
{
	int n;

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	/* Abstract names live in the network namespace: exactly our scope. */
	n = snprintf(sun->sun_path + 1, sizeof(sun->sun_path) - 1, "uroce-fwd-%u-%d",
		     (unsigned)getuid(), (int)pid);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

int ur_udp_fwd_open(struct ur_udp *u)
{
	struct sockaddr_un sun;
	socklen_t len = ur_udp_fwd_addr(&sun, getpid());
	int sz = 4 << 20, on = 1;
	int fd;

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Abstract names have no permissions: anyone on the host may send
	 * here.  The kernel attaches each sender's credentials, and only
	 * this user's datagrams are taken (ur_udp_fwd_sender_ok). */
	if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on))) {
		int err = errno;

		close(fd);
		return -err;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (bind(fd, (struct sockaddr *)&sun, len)) {
		int err = errno;

		close(fd);
		return -err;
	}
	u->fwd_fd = fd;
	return 0;
}

bool ur_udp_fwd_sender_ok(const struct msghdr *msg)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR((struct msghdr *)msg, c)) {
		struct ucred cred;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_CREDENTIALS ||
		    c->cmsg_len < CMSG_LEN(sizeof(cred)))
			continue;
		memcpy(&cred, CMSG_DATA(c), sizeof(cred));
		return cred.uid == getuid();
	}
	return false;   /* no credentials: not a datagram we can vouch for */
}

unsigned ur_udp_fwd_fds(const struct msghdr *msg, int *fds, unsigned max)
{
	unsigned n = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR((struct msghdr *)msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
		    c->cmsg_len < CMSG_LEN(0))
			continue;
		for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			if (n < max)
				fds[n++] = fd;
			else
				close(fd);
		}
	}
	return n;
}

void ur_udp_fwd_hdr_packets(struct ur_fwd_hdr *h, const struct ur_roce_ip *ip, uint8_t tclass,
			    uint8_t hop, uint16_t seg)
{
	*h = (struct ur_fwd_hdr){
		.magic = UR_FWD_MAGIC, .version = UR_FWD_VERSION, .kind = UR_FWD_PACKETS,
		.family = (uint16_t)ip->family, .sport = ip->sport, .dport = ip->dport,
		.tclass = tclass, .hop_limit = hop, .seg = seg,
	};
	if (ip->family == AF_INET) {
		memcpy(h->saddr, &ip->v4.saddr, 4);
		memcpy(h->daddr, &ip->v4.daddr, 4);
	} else {
		memcpy(h->saddr, &ip->v6.saddr, 16);
		memcpy(h->daddr, &ip->v6.daddr, 16);
	}
}

void ur_udp_fwd_hdr_msg(struct ur_fwd_hdr *h)
{
	*h = (struct ur_fwd_hdr){
		.magic = UR_FWD_MAGIC, .version = UR_FWD_VERSION, .kind = UR_FWD_MSG,
	};
}

int ur_udp_fwd_hdr_check(const struct ur_fwd_hdr *h, struct ur_roce_ip *ip)
{
	if (h->magic != UR_FWD_MAGIC || h->version != UR_FWD_VERSION)
		return -EINVAL;
	if (h->kind == UR_FWD_MSG || h->kind == UR_FWD_PORT)
		return 0;
	if (h->kind != UR_FWD_PACKETS || (h->family != AF_INET && h->family != AF_INET6))
		return -EINVAL;
	memset(ip, 0, sizeof(*ip));
	ip->family = h->family;
	ip->sport = h->sport;
	ip->dport = h->dport;
	if (h->family == AF_INET) {
		memcpy(&ip->v4.saddr, h->saddr, 4);
		memcpy(&ip->v4.daddr, h->daddr, 4);
	} else {
		memcpy(&ip->v6.saddr, h->saddr, 16);
		memcpy(&ip->v6.daddr, h->daddr, 16);
	}
	return 0;
}

int ur_udp_forward_one(struct ur_udp *u, pid_t pid, const uint8_t *pkt, size_t len,
		       const struct ur_roce_ip *ip, uint8_t tclass, uint8_t hop)
{
	struct ur_fwd_hdr h;
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)pkt, len } };
	struct sockaddr_un sun;
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };

	ur_udp_fwd_hdr_packets(&h, ip, tclass, hop, 0);
	msg.msg_name = &sun;
	msg.msg_namelen = ur_udp_fwd_addr(&sun, pid);
	return sendmsg(u->fwd_fd, &msg, MSG_DONTWAIT) < 0 ? -errno : 0;
}
