#include "core/netdev.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/if_packet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/log.h"

bool ur_gid_is_v4mapped(const union ibv_gid *gid)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(gid->raw, prefix, sizeof(prefix));
}

bool ur_gid_is_zero(const union ibv_gid *gid)
{
	static const union ibv_gid zero;

	return !memcmp(gid, &zero, sizeof(zero));
}

bool ur_gid_is_link_local(const union ibv_gid *gid)
{
	return gid->raw[0] == 0xfe && (gid->raw[1] & 0xc0) == 0x80;
}

void ur_gid_from_v4(union ibv_gid *gid, struct in_addr a)
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = 0xff;
	gid->raw[11] = 0xff;
	memcpy(&gid->raw[12], &a, 4);
}

/* fe80::/64 + modified EUI-64 of the MAC (U/L bit flipped, ff:fe inserted). */
void ur_gid_eui64(union ibv_gid *gid, const uint8_t mac[6])
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[0] = 0xfe;
	gid->raw[1] = 0x80;
	gid->raw[8] = mac[0] ^ 2;
	gid->raw[9] = mac[1];
	gid->raw[10] = mac[2];
	gid->raw[11] = 0xff;
	gid->raw[12] = 0xfe;
	gid->raw[13] = mac[3];
	gid->raw[14] = mac[4];
	gid->raw[15] = mac[5];
}

const char *ur_gid_str(const union ibv_gid *gid, char *buf, size_t len)
{
	if (!inet_ntop(AF_INET6, gid->raw, buf, len))
		snprintf(buf, len, "?");
	return buf;
}

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
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

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
				     unsigned *cap, const char *ifa_name)
{
	char name[IF_NAMESIZE];
	struct ur_netdev *nd;

	/* getifaddrs names an IPv4 address by its label, "eth0:1" for an
	 * alias: it is still eth0's (':' cannot occur in an interface name). */
	snprintf(name, sizeof(name), "%.*s", (int)strcspn(ifa_name, ":"), ifa_name);

	for (unsigned i = 0; i < *n; i++)
		if (!strcmp((*arr)[i].name, name))
			return &(*arr)[i];
	if (*n == *cap) {
		unsigned ncap = *cap ? *cap * 2 : 8;
		struct ur_netdev *na = realloc(*arr, ncap * sizeof(*na));

		if (!na)
			return NULL;
		*arr = na;
		*cap = ncap;
	}
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
			nd->gid[i].configured = true;   /* e.g. the EUI-64 link-local */
			return;
		}
	}
	if (nd->ngid == UR_MAX_GID)
		return;
	nd->gid[nd->ngid].gid = *gid;
	nd->gid[nd->ngid].valid = true;
	nd->gid[nd->ngid].configured = true;
	nd->gid[nd->ngid].family = family;
	nd->ngid++;
}

static int cmp_ifindex(const void *a, const void *b)
{
	const struct ur_netdev *x = a, *y = b;

	return (x->ifindex > y->ifindex) - (x->ifindex < y->ifindex);
}

/* Two passes over getifaddrs so that the table order is GID 0, then every
 * IPv4 address, then every IPv6 address, whatever order the kernel lists. */
int ur_netdev_scan(struct ur_netdev **out, unsigned *count)
{
	struct ifaddrs *ifa_list, *ifa;
	struct ur_netdev *arr = NULL, *nd;
	unsigned n = 0, cap = 0;
	union ibv_gid gid;

	if (getifaddrs(&ifa_list))
		return -errno;

	for (ifa = ifa_list; ifa; ifa = ifa->ifa_next) {
		if (!ifa->ifa_addr || (ifa->ifa_addr->sa_family != AF_INET &&
				       ifa->ifa_addr->sa_family != AF_INET6))
			continue;
		nd = find_or_add(&arr, &n, &cap, ifa->ifa_name);
		if (!nd)
			goto err_nomem;
	}
	for (unsigned i = 0; i < n; i++) {
		nd = &arr[i];
		read_link_info(nd);
		ur_gid_eui64(&gid, nd->mac);
		nd->gid[0].gid = gid;
		nd->gid[0].valid = true;
		nd->gid[0].family = AF_INET6;
		nd->ngid = 1;
	}
	for (int pass = 0; pass < 2; pass++) {
		int fam = pass ? AF_INET6 : AF_INET;

		for (ifa = ifa_list; ifa; ifa = ifa->ifa_next) {
			if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != fam)
				continue;
			nd = find_or_add(&arr, &n, &cap, ifa->ifa_name);
			if (!nd)
				goto err_nomem;
			if (fam == AF_INET) {
				ur_gid_from_v4(&gid, ((struct sockaddr_in *)ifa->ifa_addr)->sin_addr);
			} else {
				memcpy(gid.raw, &((struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr, 16);
			}
			gid_add(nd, &gid, fam);
		}
	}
	freeifaddrs(ifa_list);
	qsort(arr, n, sizeof(*arr), cmp_ifindex);
	*out = arr;
	*count = n;
	return 0;

err_nomem:
	freeifaddrs(ifa_list);
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
