#include "host/netdev.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/array.h"
#include "util/compiler.h"
#include "util/log.h"
#include "util/sys_socket.h"
#include "wire/gid.h"

enum ibv_mtu ur_mtu_from_netdev(unsigned netdev_mtu)
{
	unsigned room = netdev_mtu > 80 ? netdev_mtu - 80 : 0;

	if (room >= 4096)
		return IBV_MTU_4096;
	if (room >= 2048)
		return IBV_MTU_2048;
	if (room >= 1024)
		return IBV_MTU_1024;
	if (room >= 512)
		return IBV_MTU_512;
	return IBV_MTU_256;
}

unsigned ur_mtu_bytes(enum ibv_mtu mtu)
{
	return (mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096) ? 128u << mtu : 0;
}

static int read_speed(const char *ifname)
{
	char path[128];
	FILE *f;
	int speed = -1;

	snprintf(path, sizeof(path), "/sys/class/net/%s/speed", ifname);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%d", &speed) != 1)
		speed = -1;
	fclose(f);
	return speed;
}

/* Closes a socket of a scan's, unless a call on it said EBADF: a program
 * that closed a descriptor twice took it then (see dump_addrs), and the
 * number may be another's by now. */
static void close_own(int fd, int err)
{
	if (err != -EBADF)
		close(fd);
}

/* The interface's MTU, MAC and flags through ioc (an AF_INET socket), and
 * its speed: 0, or -errno when they cannot be read (a scan that fails is
 * retried; one that said the interface was down would be believed). */
static int read_link_info(int ioc, struct ur_netdev *nd)
{
	struct ifreq ifr = { 0 };

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", nd->name);
	if (ioctl(ioc, SIOCGIFMTU, &ifr))
		return -errno;
	nd->mtu = (unsigned)ifr.ifr_mtu;
	if (ioctl(ioc, SIOCGIFHWADDR, &ifr))
		return -errno;
	memcpy(nd->mac, ifr.ifr_hwaddr.sa_data, 6);
	if (ioctl(ioc, SIOCGIFFLAGS, &ifr))
		return -errno;
	nd->flags = (unsigned short)ifr.ifr_flags;
	nd->speed_mbps = read_speed(nd->name);
	return 0;
}

/* The interface of index ifindex in *arr, added (with the name the kernel
 * gives it, through ioc) if new; *out is NULL when the interface went away
 * during the scan.  0 or -errno. */
static int find_or_add(int ioc, struct ur_netdev **arr, unsigned *n, unsigned *cap,
		       unsigned ifindex, struct ur_netdev **out)
{
	struct ifreq ifr = { .ifr_ifindex = (int)ifindex };
	struct ur_netdev *nd;

	*out = NULL;
	for (unsigned i = 0; i < *n; i++)
		if ((*arr)[i].ifindex == ifindex) {
			*out = &(*arr)[i];
			return 0;
		}
	if (ioctl(ioc, SIOCGIFNAME, &ifr))
		return errno == ENODEV ? 0 : -errno;
	if (UR_ARRAY_ROOM(*arr, *cap, *n, 8))
		return -ENOMEM;
	nd = &(*arr)[(*n)++];
	memset(nd, 0, sizeof(*nd));
	snprintf(nd->name, sizeof(nd->name), "%.*s", (int)sizeof(ifr.ifr_name), ifr.ifr_name);
	nd->ifindex = ifindex;
	nd->mtu = 1500;
	nd->speed_mbps = -1;
	*out = nd;
	return 0;
}

static void gid_add(struct ur_netdev *nd, const union ibv_gid *gid, int family)
{
	for (unsigned i = 0; i < nd->ngid; i++) {
		if (!memcmp(&nd->gid[i].gid, gid, sizeof(*gid))) {
			nd->gid[i].valid = true;   /* e.g. the EUI-64 link-local */
			return;
		}
	}
	/* A link-local address that is not the EUI-64 one (stable-privacy
	 * addressing) is the interface's link-local GID 0 until the EUI-64
	 * one turns up. */
	if (!nd->gid[0].valid && family == AF_INET6 && ur_gid_is_link_local(gid)) {
		nd->gid[0].gid = *gid;
		nd->gid[0].valid = true;
		return;
	}
	if (nd->ngid == UR_MAX_GID)
		return;
	nd->gid[nd->ngid].gid = *gid;
	nd->gid[nd->ngid].valid = true;
	nd->gid[nd->ngid].family = family;
	nd->ngid++;
}

static int cmp_ifindex(const void *a, const void *b)
{
	const struct ur_netdev *x = a, *y = b;

	return (x->ifindex > y->ifindex) - (x->ifindex < y->ifindex);
}

/* The addresses of this namespace's interfaces, each with its interface's
 * index, in the kernel's order (IPv4 ones first), from an RTM_GETADDR dump.
 *
 * Not getifaddrs(), built on the same dump, for two reasons.  It names an
 * IPv4 address by its label, which is the interface name only by convention
 * ("eth0:1", or anything `ip addr add ... label` sets), so it cannot say
 * which interface an IPv4 address belongs to.  And glibc aborts the process
 * when its netlink socket says EBADF ("Unexpected error 9 on netlink
 * descriptor N"): a program that closes a descriptor twice closes, the
 * second time, whatever another thread opened under that number meanwhile,
 * and uroce's threads scan every second (the engine's port watch, the CM
 * thread's peer check).  iperf3 3.12's server does close its UDP test
 * socket twice; here such a close makes a scan fail, and the next one
 * runs a second later. */
struct if_addr {
	unsigned ifindex;
	int family;                /* AF_INET or AF_INET6 */
	uint8_t addr[16];          /* 4 bytes of it for AF_INET */
};

static int dump_addrs(struct if_addr **out, unsigned *count)
{
	struct {
		struct nlmsghdr nh;
		struct ifaddrmsg ifa;
	} req = {
		.nh = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg)),
			.nlmsg_type = RTM_GETADDR, .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
			.nlmsg_seq = 1 },
		.ifa = { .ifa_family = AF_UNSPEC },
	};
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct if_addr *arr = NULL;
	unsigned n = 0, cap = 0;
	char buf[16384] __attribute__((aligned(4)));
	int fd, ret = 0;
	bool done = false;

	/* The kernel's call: a preloaded librspreload.so would first offer
	 * the socket to rsockets (sys_socket.h). */
	fd = ur_socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (sendto(fd, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ret = -errno;
		goto out;
	}
	while (!done) {
		ssize_t len = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *nh;

		if (len < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			goto out;
		}
		if (len == 0) {
			ret = -EIO;
			goto out;
		}
		for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)len);
		     nh = NLMSG_NEXT(nh, len)) {
			struct ifaddrmsg *ifa = NLMSG_DATA(nh);
			unsigned alen = ifa->ifa_family == AF_INET6 ? 16 : 4;
			struct rtattr *rta;
			unsigned rlen;
			const void *local = NULL, *addr = NULL;

			if (nh->nlmsg_type == NLMSG_DONE) {
				done = true;
				break;
			}
			if (nh->nlmsg_type == NLMSG_ERROR) {
				ret = -EIO;
				goto out;
			}
			if (nh->nlmsg_type != RTM_NEWADDR ||
			    (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6))
				continue;
			rlen = (unsigned)IFA_PAYLOAD(nh);
			for (rta = IFA_RTA(ifa); RTA_OK(rta, rlen); rta = RTA_NEXT(rta, rlen)) {
				if (RTA_PAYLOAD(rta) < alen)
					continue;
				if (rta->rta_type == IFA_LOCAL)
					local = RTA_DATA(rta);
				else if (rta->rta_type == IFA_ADDRESS)
					addr = RTA_DATA(rta);
			}
			if (!local)
				local = addr;   /* as getifaddrs: IFA_LOCAL first */
			if (!local)
				continue;
			ret = UR_ARRAY_ROOM(arr, cap, n, 16);
			if (ret)
				goto out;
			memset(&arr[n], 0, sizeof(arr[n]));
			arr[n].ifindex = ifa->ifa_index;
			arr[n].family = ifa->ifa_family;
			memcpy(arr[n].addr, local, alen);
			n++;
		}
	}
out:
	close_own(fd, ret);
	if (ret) {
		free(arr);
		return ret;
	}
	*out = arr;
	*count = n;
	return 0;
}

/* GID 0 has to be usable: rdma-core's tests and programs run without a
 * GID index take index 0 as always valid.  On an interface without a
 * link-local address it is a copy of the interface's first IPv6 address
 * (lo: ::1), else of its first IPv4 one (IPv6 off), rather than a
 * link-local GID that no socket could send from or receive on; the other
 * indexes keep their places (IPv4 first from index 1). */
static void fill_gid0(struct ur_netdev *nd)
{
	unsigned pick = 1;

	if (nd->gid[0].valid)
		return;
	if (nd->ngid < 2) {
		memset(&nd->gid[0].gid, 0, sizeof(nd->gid[0].gid));
		return;
	}
	for (unsigned i = nd->ngid; i-- > 1;)
		if (nd->gid[i].family == AF_INET6)
			pick = i;
	nd->gid[0] = nd->gid[pick];
	nd->gid[0].copy = true;
}

/* The table order is GID 0 (the link-local address), then every IPv4
 * address, then every IPv6 address, whatever order the kernel lists them
 * in; see fill_gid0 for an interface without a link-local address. */
int ur_netdev_scan(struct ur_netdev **out, unsigned *count)
{
	static const int families[] = { AF_INET, AF_INET6 };
	struct ur_netdev *arr = NULL, *nd;
	struct if_addr *a = NULL;
	unsigned n = 0, cap = 0, na = 0;
	union ibv_gid gid;
	int ioc, ret;

	ret = dump_addrs(&a, &na);
	if (ret)
		return ret;
	ioc = ur_socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (ioc < 0) {
		ret = -errno;
		free(a);
		return ret;
	}
	for (unsigned i = 0; i < na && !ret; i++)
		ret = find_or_add(ioc, &arr, &n, &cap, a[i].ifindex, &nd);
	for (unsigned i = 0; i < n && !ret; i++) {
		nd = &arr[i];
		ret = read_link_info(ioc, nd);
		if (ret == -ENODEV)
			ret = 0;   /* gone meanwhile: the next scan drops it */
		ur_gid_eui64(&gid, nd->mac);
		nd->gid[0].gid = gid;
		nd->gid[0].valid = false;   /* until the interface lists it */
		nd->gid[0].family = AF_INET6;
		nd->ngid = 1;
	}
	close_own(ioc, ret);
	if (ret)
		goto err;
	for (unsigned f = 0; f < UR_ARRAY_SIZE(families); f++) {
		for (unsigned i = 0; i < na; i++) {
			if (a[i].family != families[f])
				continue;
			nd = NULL;
			for (unsigned k = 0; k < n && !nd; k++)
				if (arr[k].ifindex == a[i].ifindex)
					nd = &arr[k];
			if (!nd)
				continue;   /* its interface vanished during the scan */
			if (a[i].family == AF_INET) {
				struct in_addr v4;

				memcpy(&v4, a[i].addr, 4);
				ur_gid_from_v4(&gid, v4);
			} else {
				memcpy(gid.raw, a[i].addr, 16);
			}
			gid_add(nd, &gid, a[i].family);
		}
	}
	for (unsigned i = 0; i < n; i++)
		fill_gid0(&arr[i]);
	free(a);
	qsort(arr, n, sizeof(*arr), cmp_ifindex);
	*out = arr;
	*count = n;
	return 0;

err:
	free(a);
	free(arr);
	return ret;
}

int ur_netdev_get(const char *name, struct ur_netdev *out)
{
	struct ur_netdev *arr;
	unsigned n;
	int ret = ur_netdev_scan(&arr, &n);

	if (ret)
		return ret;
	ret = -ENODEV;
	for (unsigned i = 0; i < n; i++) {
		if (!strcmp(arr[i].name, name)) {
			*out = arr[i];
			ret = 0;
			break;
		}
	}
	free(arr);
	return ret;
}

bool ur_gid_is_local_addr(const union ibv_gid *gid)
{
	bool v4 = ur_gid_is_v4mapped(gid), found = false;
	struct if_addr *a;
	unsigned n;

	if (dump_addrs(&a, &n))
		return false;
	for (unsigned i = 0; i < n && !found; i++) {
		if (a[i].family == AF_INET && v4)
			found = !memcmp(&gid->raw[12], a[i].addr, 4);
		else if (a[i].family == AF_INET6)
			found = !memcmp(gid->raw, a[i].addr, 16);
	}
	free(a);
	return found;
}
