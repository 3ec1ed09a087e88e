#include "host/netdev.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
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

static void read_link_info(struct ur_netdev *nd)
{
	struct ifreq ifr = { 0 };
	int fd = ur_socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	nd->mtu = 1500;
	if (fd < 0)
		return;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", nd->name);
	if (!ioctl(fd, SIOCGIFMTU, &ifr))
		nd->mtu = (unsigned)ifr.ifr_mtu;
	if (!ioctl(fd, SIOCGIFHWADDR, &ifr))
		memcpy(nd->mac, ifr.ifr_hwaddr.sa_data, 6);
	if (!ioctl(fd, SIOCGIFFLAGS, &ifr))
		nd->flags = (unsigned short)ifr.ifr_flags;
	close(fd);
	nd->speed_mbps = read_speed(nd->name);
}

static struct ur_netdev *find_or_add(struct ur_netdev **arr, unsigned *n,
				     unsigned *cap, const char *name)
{
	struct ur_netdev *nd;

	for (unsigned i = 0; i < *n; i++)
		if (!strcmp((*arr)[i].name, name))
			return &(*arr)[i];
	if (UR_ARRAY_ROOM(*arr, *cap, *n, 8))
		return NULL;
	nd = &(*arr)[(*n)++];
	memset(nd, 0, sizeof(*nd));
	snprintf(nd->name, sizeof(nd->name), "%s", name);
	nd->ifindex = if_nametoindex(name);
	return nd;
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

/* IPv4 addresses with the index of their interface, in the kernel's order.
 * getifaddrs() names an IPv4 address by its label, which is the interface
 * name only by convention ("eth0:1", or anything `ip addr add ... label`
 * sets), so it cannot say which interface an IPv4 address belongs to; the
 * RTM_GETADDR dump it is built on can. */
struct v4_addr {
	unsigned ifindex;
	struct in_addr addr;
};

static int dump_v4_addrs(struct v4_addr **out, unsigned *count)
{
	struct {
		struct nlmsghdr nh;
		struct ifaddrmsg ifa;
	} req = {
		.nh = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg)),
			.nlmsg_type = RTM_GETADDR, .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
			.nlmsg_seq = 1 },
		.ifa = { .ifa_family = AF_INET },
	};
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct v4_addr *arr = NULL;
	unsigned n = 0, cap = 0;
	char buf[16384] __attribute__((aligned(4)));
	int fd, ret = 0;
	bool done = false;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
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
		for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)len);
		     nh = NLMSG_NEXT(nh, len)) {
			struct ifaddrmsg *ifa = NLMSG_DATA(nh);
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
			if (nh->nlmsg_type != RTM_NEWADDR || ifa->ifa_family != AF_INET)
				continue;
			rlen = (unsigned)IFA_PAYLOAD(nh);
			for (rta = IFA_RTA(ifa); RTA_OK(rta, rlen); rta = RTA_NEXT(rta, rlen)) {
				if (RTA_PAYLOAD(rta) < 4)
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
			arr[n].ifindex = ifa->ifa_index;
			memcpy(&arr[n].addr, local, 4);
			n++;
		}
	}
out:
	close(fd);
	if (ret) {
		free(arr);
		return ret;
	}
	*out = arr;
	*count = n;
	return 0;
}

static struct ur_netdev *find_or_add_index(struct ur_netdev **arr, unsigned *n,
					   unsigned *cap, unsigned ifindex)
{
	char name[IF_NAMESIZE];

	for (unsigned i = 0; i < *n; i++)
		if ((*arr)[i].ifindex == ifindex)
			return &(*arr)[i];
	if (!if_indextoname(ifindex, name))
		return NULL;   /* gone meanwhile */
	return find_or_add(arr, n, cap, name);
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
 * in; see fill_gid0 for an interface without a link-local address.  IPv6 addresses come
 * from getifaddrs, which names them by interface; IPv4 ones from the
 * netlink dump, which gives their interface index (see dump_v4_addrs). */
int ur_netdev_scan(struct ur_netdev **out, unsigned *count)
{
	struct ifaddrs *ifa_list, *ifa;
	struct ur_netdev *arr = NULL, *nd;
	struct v4_addr *v4 = NULL;
	unsigned n = 0, cap = 0, nv4 = 0;
	union ibv_gid gid;
	int ret;

	ret = dump_v4_addrs(&v4, &nv4);
	if (ret)
		return ret;
	if (getifaddrs(&ifa_list)) {
		ret = -errno;
		free(v4);
		return ret;
	}

	for (ifa = ifa_list; ifa; ifa = ifa->ifa_next) {
		if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != AF_INET6)
			continue;
		if (!find_or_add(&arr, &n, &cap, ifa->ifa_name))
			goto err_nomem;
	}
	for (unsigned i = 0; i < nv4; i++)
		find_or_add_index(&arr, &n, &cap, v4[i].ifindex);
	for (unsigned i = 0; i < n; i++) {
		nd = &arr[i];
		read_link_info(nd);
		ur_gid_eui64(&gid, nd->mac);
		nd->gid[0].gid = gid;
		nd->gid[0].valid = false;   /* until the interface lists it */
		nd->gid[0].family = AF_INET6;
		nd->ngid = 1;
	}
	for (unsigned i = 0; i < nv4; i++) {
		nd = NULL;
		for (unsigned k = 0; k < n && !nd; k++)
			if (arr[k].ifindex == v4[i].ifindex)
				nd = &arr[k];
		if (!nd)
			continue;   /* its interface vanished during the scan */
		ur_gid_from_v4(&gid, v4[i].addr);
		gid_add(nd, &gid, AF_INET);
	}
	for (ifa = ifa_list; ifa; ifa = ifa->ifa_next) {
		if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != AF_INET6)
			continue;
		nd = find_or_add(&arr, &n, &cap, ifa->ifa_name);
		if (!nd)
			goto err_nomem;
		memcpy(gid.raw, &((struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr, 16);
		gid_add(nd, &gid, AF_INET6);
	}
	for (unsigned i = 0; i < n; i++)
		fill_gid0(&arr[i]);
	freeifaddrs(ifa_list);
	free(v4);
	qsort(arr, n, sizeof(*arr), cmp_ifindex);
	*out = arr;
	*count = n;
	return 0;

err_nomem:
	freeifaddrs(ifa_list);
	free(v4);
	free(arr);
	return -ENOMEM;
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
	struct ifaddrs *ifa_list, *ifa;
	bool found = false;

	if (getifaddrs(&ifa_list))
		return false;
	for (ifa = ifa_list; ifa && !found; ifa = ifa->ifa_next) {
		if (!ifa->ifa_addr)
			continue;
		if (ifa->ifa_addr->sa_family == AF_INET && ur_gid_is_v4mapped(gid))
			found = !memcmp(&gid->raw[12],
					&((struct sockaddr_in *)ifa->ifa_addr)->sin_addr, 4);
		else if (ifa->ifa_addr->sa_family == AF_INET6)
			found = !memcmp(gid->raw,
					&((struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr, 16);
	}
	freeifaddrs(ifa_list);
	return found;
}
