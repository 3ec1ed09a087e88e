/* Unit tests of network devices as RoCE sees them (netdev.c) and of path
 * resolution (route.c): GID helpers, the MTU mapping, the GID table built
 * from a real interface (a tap device with a chosen MAC and addresses, in
 * a private network namespace), and route errors with their advice. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <linux/ipv6.h>
#include <pthread.h>
#include <sys/socket.h>

#include "ut.h"
#include "ut_env.h"
#include "ut_stack.h"

#include "core/device.h"
#include "host/netdev.h"
#include "core/route.h"
#include "xport/udp/udp_priv.h"
#include "util/clock.h"
#include "util/compiler.h"

static union ibv_gid gid_of(const char *text)
{
	union ibv_gid g;
	struct in_addr a4;

	memset(&g, 0, sizeof(g));
	if (inet_pton(AF_INET, text, &a4) == 1)
		ur_gid_from_v4(&g, a4);
	else
		UT_EQ(inet_pton(AF_INET6, text, g.raw), 1);
	return g;
}

static bool gid_is(const union ibv_gid *g, const char *text)
{
	union ibv_gid want = gid_of(text);

	return !memcmp(g, &want, sizeof(want));
}

static void test_gid_helpers(void)
{
	static const uint8_t mac1[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
	static const uint8_t mac2[6] = { 0x00, 0x00, 0x00, 0x00, 0x00, 0x00 };
	static const uint8_t mac3[6] = { 0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee };
	union ibv_gid g;
	char buf[64];

	/* EUI-64: the universal/local bit (0x02 of the first byte) flips,
	 * ff:fe goes in the middle. */
	ur_gid_eui64(&g, mac1);
	UT_CHECK(gid_is(&g, "fe80::5054:ff:fe12:3456"));
	ur_gid_eui64(&g, mac2);
	UT_CHECK(gid_is(&g, "fe80::200:ff:fe00:0"));
	ur_gid_eui64(&g, mac3);
	UT_CHECK(gid_is(&g, "fe80::aa:bbff:fecc:ddee"));
	UT_CHECK(ur_gid_is_link_local(&g));
	UT_CHECK(!ur_gid_is_v4mapped(&g));
	UT_CHECK(!strcmp(ur_gid_str(&g, buf, sizeof(buf)), "fe80::aa:bbff:fecc:ddee"));

	g = gid_of("10.1.2.3");
	UT_CHECK(ur_gid_is_v4mapped(&g));
	UT_CHECK(!ur_gid_is_link_local(&g));
	UT_CHECK(!strcmp(ur_gid_str(&g, buf, sizeof(buf)), "::ffff:10.1.2.3"));
	UT_EQ(g.raw[10], 0xff);
	UT_EQ(g.raw[11], 0xff);
	UT_EQ(g.raw[12], 10);
	UT_EQ(g.raw[15], 3);
	g = gid_of("febf::1");
	UT_CHECK(ur_gid_is_link_local(&g));
	g = gid_of("fec0::1");
	UT_CHECK(!ur_gid_is_link_local(&g));
	memset(&g, 0, sizeof(g));
	UT_CHECK(ur_gid_is_zero(&g));
	g.raw[15] = 1;
	UT_CHECK(!ur_gid_is_zero(&g));
	/* Too small a buffer: still a string. */
	UT_CHECK(strlen(ur_gid_str(&g, buf, 2)) < 2);
}

static void test_mtu_mapping(void)
{
	static const struct { unsigned netdev; enum ibv_mtu ib; } map[] = {
		{ 1500, IBV_MTU_1024 }, { 9000, IBV_MTU_4096 }, { 1100, IBV_MTU_512 },
		{ 1104, IBV_MTU_1024 }, { 1103, IBV_MTU_512 }, { 592, IBV_MTU_512 },
		{ 591, IBV_MTU_256 }, { 576, IBV_MTU_256 }, { 336, IBV_MTU_256 },
		{ 68, IBV_MTU_256 }, { 0, IBV_MTU_256 }, { 2128, IBV_MTU_2048 },
		{ 2127, IBV_MTU_1024 }, { 4176, IBV_MTU_4096 }, { 4175, IBV_MTU_2048 },
		{ 65536, IBV_MTU_4096 }, { UINT32_MAX, IBV_MTU_4096 },
	};

	for (unsigned i = 0; i < UR_ARRAY_SIZE(map); i++) {
		UT_EQ(ur_mtu_from_netdev(map[i].netdev), map[i].ib);
		if (ur_mtu_from_netdev(map[i].netdev) != map[i].ib)
			fprintf(stderr, "  (netdev MTU %u)\n", map[i].netdev);
	}
	UT_EQ(ur_mtu_bytes(IBV_MTU_256), 256);
	UT_EQ(ur_mtu_bytes(IBV_MTU_512), 512);
	UT_EQ(ur_mtu_bytes(IBV_MTU_1024), 1024);
	UT_EQ(ur_mtu_bytes(IBV_MTU_2048), 2048);
	UT_EQ(ur_mtu_bytes(IBV_MTU_4096), 4096);
	UT_EQ(ur_mtu_bytes(0), 0);
	UT_EQ(ur_mtu_bytes(6), 0);
}

/* ---- a tap interface with a known MAC and addresses ------------------------ */

static int tap_fd = -1;

static int ioctl_on(int family, unsigned long req, void *arg)
{
	int s = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0), ret;

	if (s < 0)
		return -errno;
	ret = ioctl(s, req, arg) ? -errno : 0;
	close(s);
	return ret;
}

static int add_v4(const char *ifname, const char *addr)
{
	struct ifreq r = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&r.ifr_addr;

	snprintf(r.ifr_name, sizeof(r.ifr_name), "%s", ifname);
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, addr, &sin->sin_addr);
	return ioctl_on(AF_INET, SIOCSIFADDR, &r);
}

static int add_v6(const char *ifname, const char *addr)
{
	struct in6_ifreq q = { .ifr6_prefixlen = 64 };

	inet_pton(AF_INET6, addr, &q.ifr6_addr);
	q.ifr6_ifindex = (int)if_nametoindex(ifname);
	return ioctl_on(AF_INET6, SIOCSIFADDR, &q);
}

static void sysctl_set(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (write(fd, value, strlen(value)) < 0)
			fprintf(stderr, "%s: %s\n", path, strerror(errno));
		close(fd);
	}
}

/* The kernel finishes setting up new IPv6 addresses in a work queue (even
 * without duplicate address detection): wait until both the link-local
 * and the global address can be used as sources, at most 5 s. */
static int wait_ipv6_usable(void)
{
	static const char *const dst[] = { "fe80::1", "fd00::2" };

	for (int tries = 0; tries < 500; tries++) {
		int ok = 0;

		for (int i = 0; i < 2; i++) {
			struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons(9) };
			int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);

			inet_pton(AF_INET6, dst[i], &a.sin6_addr);
			a.sin6_scope_id = if_nametoindex("uttap0");
			if (fd >= 0 && !connect(fd, (struct sockaddr *)&a, sizeof(a)))
				ok++;
			if (fd >= 0)
				close(fd);
		}
		if (ok == 2)
			return 0;
		usleep(10000);
	}
	return -ETIMEDOUT;
}

static int tap_create(void)
{
	static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
	struct ifreq r = { 0 };
	int ret;

	/* No duplicate address detection: addresses usable at once, not
	 * tentative for a second (this namespace has nobody to collide with). */
	sysctl_set("/proc/sys/net/ipv6/conf/default/accept_dad", "0");
	sysctl_set("/proc/sys/net/ipv6/conf/all/accept_dad", "0");

	tap_fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (tap_fd < 0)
		return -errno;
	r.ifr_flags = IFF_TAP | IFF_NO_PI;
	snprintf(r.ifr_name, sizeof(r.ifr_name), "uttap0");
	if (ioctl(tap_fd, TUNSETIFF, &r))
		return -errno;
	memset(&r, 0, sizeof(r));
	snprintf(r.ifr_name, sizeof(r.ifr_name), "uttap0");
	r.ifr_hwaddr.sa_family = 1;   /* ARPHRD_ETHER */
	memcpy(r.ifr_hwaddr.sa_data, mac, 6);
	ret = ioctl_on(AF_INET, SIOCSIFHWADDR, &r);
	if (!ret)
		ret = ut_if_mtu("uttap0", 1500);
	if (!ret)
		ret = add_v4("uttap0", "10.11.12.13");
	if (!ret)
		ret = ut_if_flags("uttap0", IFF_UP, 0);
	if (!ret)
		ret = add_v6("uttap0", "fd00::1");
	if (!ret)
		ret = wait_ipv6_usable();
	return ret;
}

/* Finds the GID in a table; -1 if absent. */
static int find_gid(const struct ur_netdev *nd, const char *text)
{
	for (unsigned i = 0; i < nd->ngid; i++)
		if (gid_is(&nd->gid[i].gid, text))
			return (int)i;
	return -1;
}

static void test_gid_table(void)
{
	struct ur_netdev nd;
	int i4, i6, ll;

	UT_EQ(ur_netdev_get("uttap0", &nd), 0);
	UT_EQ(nd.mtu, 1500);
	UT_EQ(nd.ifindex, if_nametoindex("uttap0"));
	UT_CHECK(nd.flags & IFF_UP);
	UT_EQ(nd.mac[0], 0x52);
	UT_EQ(nd.mac[5], 0x56);
	/* GID 0: the EUI-64 link-local address, listed once (the kernel's own
	 * link-local address is the same GID: configured, not duplicated). */
	UT_CHECK(gid_is(&nd.gid[0].gid, "fe80::5054:ff:fe12:3456"));
	UT_CHECK(nd.gid[0].valid);
	UT_EQ(nd.gid[0].family, AF_INET6);
	ll = 0;
	for (unsigned i = 0; i < nd.ngid; i++)
		ll += gid_is(&nd.gid[i].gid, "fe80::5054:ff:fe12:3456");
	UT_EQ(ll, 1);
	/* Then every IPv4 address, then every IPv6 one. */
	i4 = find_gid(&nd, "10.11.12.13");
	i6 = find_gid(&nd, "fd00::1");
	UT_EQ(i4, 1);
	UT_CHECK(i6 > i4);
	if (i4 > 0) {
		UT_EQ(nd.gid[i4].family, AF_INET);
		UT_CHECK(nd.gid[i4].valid);
	}
	if (i6 > 0)
		UT_EQ(nd.gid[i6].family, AF_INET6);
	for (unsigned i = nd.ngid; i < UR_MAX_GID; i++)
		UT_CHECK(!nd.gid[i].valid);
	/* Addresses of this namespace, and not. */
	{
		union ibv_gid g = gid_of("10.11.12.13");

		UT_CHECK(ur_gid_is_local_addr(&g));
		g = gid_of("10.11.12.99");
		UT_CHECK(!ur_gid_is_local_addr(&g));
		g = gid_of("fd00::1");
		UT_CHECK(ur_gid_is_local_addr(&g));
		g = gid_of("fd00::2");
		UT_CHECK(!ur_gid_is_local_addr(&g));
	}
	UT_EQ(ur_netdev_get("nosuchif0", &nd), -ENODEV);
}

/* An IPv4 address added as an alias (ifconfig uttap0:1, ip addr ... label
 * uttap0:1) belongs to uttap0: getifaddrs names it by its label, which
 * must not make a second interface. */
static void test_gid_table_alias(void)
{
	struct ur_netdev *all, nd;
	unsigned n, with_colon = 0;

	UT_EQ(add_v4("uttap0:1", "10.11.12.14"), 0);
	UT_EQ(ur_netdev_scan(&all, &n), 0);
	for (unsigned i = 0; i < n; i++)
		if (strchr(all[i].name, ':')) {
			with_colon++;
			fprintf(stderr, "  interface \"%s\" (ifindex %u)\n", all[i].name, all[i].ifindex);
		}
	UT_EQ(with_colon, 0);
	free(all);
	UT_EQ(ur_netdev_get("uttap0", &nd), 0);
	UT_CHECK(find_gid(&nd, "10.11.12.13") > 0);
	UT_CHECK(find_gid(&nd, "10.11.12.14") > 0);
	UT_CHECK(find_gid(&nd, "10.11.12.14") < find_gid(&nd, "fd00::1"));

}

/* The table holds at most UR_MAX_GID entries, whatever the interface has. */
static void test_gid_table_full(void)
{
	struct ur_netdev nd;
	char addr[32];

	for (int i = 0; i < 20; i++) {
		snprintf(addr, sizeof(addr), "fd00::1:%x", i + 1);
		UT_EQ(add_v6("uttap0", addr), 0);
	}
	UT_EQ(ur_netdev_get("uttap0", &nd), 0);
	UT_EQ(nd.ngid, UR_MAX_GID);
	/* IPv4 entries come first, so they are never crowded out. */
	UT_EQ(find_gid(&nd, "10.11.12.13"), 1);
}

/* ---- a program's stale close ---------------------------------------------- */

/* A program that closes a descriptor twice (iperf3 3.12's server closes its
 * UDP test socket at TEST_END and again when it cleans up) closes, the
 * second time, whatever the process opened under that number meanwhile.
 * uroce's threads scan the interfaces every second (the engine's port
 * watch, the CM thread's peer check), each scan opening sockets of its own:
 * such a close may make a scan fail, and must not take the process down
 * (glibc's getifaddrs aborts on EBADF from its netlink socket: "Unexpected
 * error 9 on netlink descriptor N").  Here a thread closes the number the
 * next descriptor gets, over and over, while scans run. */
static int stale_fd;
static bool stale_stop;
static unsigned long stale_hits;

/* Closes stale_fd whenever it is open, a little later each time (0 to 15
 * us after it saw it open), so that the closes land all along the scans. */
static void *stale_closer(void *arg)
{
	unsigned lag = 0;

	(void)arg;
	while (!__atomic_load_n(&stale_stop, __ATOMIC_RELAXED)) {
		int fd = __atomic_load_n(&stale_fd, __ATOMIC_RELAXED);
		uint64_t until;

		if (fcntl(fd, F_GETFD) < 0)
			continue;
		until = ur_now_ns() + 1000u * (lag++ % 16);
		while (ur_now_ns() < until)
			;
		if (!close(fd))
			__atomic_add_fetch(&stale_hits, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* Scans until 200 of their descriptors were closed under them (10 s at
 * most: the closer needs a core of its own now and then). */
static void test_stale_close(void)
{
	union ibv_gid g = gid_of("10.11.12.13");
	uint64_t end = ur_now_ns() + 10 * 1000000000ull;
	unsigned scans = 0, failed = 0, n;
	struct ur_netdev *all, nd;
	unsigned long hits;
	pthread_t t;
	int fd;

	/* The closes are the race this test makes: ThreadSanitizer reports
	 * each one that lands on a descriptor a scan opened (a close racing
	 * with the socket() that made it), which is what is tested here. */
	if (UT_TSAN) {
		fprintf(stderr, "  skipped under ThreadSanitizer: its closes race on purpose\n");
		return;
	}
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	UT_CHECK(fd >= 0);
	close(fd);
	__atomic_store_n(&stale_fd, fd, __ATOMIC_RELAXED);
	UT_EQ(pthread_create(&t, NULL, stale_closer, NULL), 0);
	while (__atomic_load_n(&stale_hits, __ATOMIC_RELAXED) < 200 && ur_now_ns() < end) {
		if (ur_netdev_scan(&all, &n))
			failed++;
		else
			free(all);
		ur_gid_is_local_addr(&g);
		scans++;
	}
	__atomic_store_n(&stale_stop, true, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	hits = __atomic_load_n(&stale_hits, __ATOMIC_RELAXED);
	fprintf(stderr, "  %lu descriptors closed under %u scans, %u of them failed\n",
		hits, scans, failed);
	UT_CHECK(hits > 0);   /* the closes did hit the scans' descriptors */
	/* Once the closes stop, the scans see the interface as before. */
	UT_EQ(ur_netdev_get("uttap0", &nd), 0);
	UT_EQ(find_gid(&nd, "10.11.12.13"), 1);
	UT_CHECK(find_gid(&nd, "fd00::1") > 1);
	UT_CHECK(ur_gid_is_local_addr(&g));
}

/* ---- route resolution --------------------------------------------------- */

static struct ibv_ah_attr av(const char *dgid, unsigned sgid_index)
{
	struct ibv_ah_attr a = { .is_global = 1, .port_num = 1 };

	a.grh.dgid = gid_of(dgid);
	a.grh.sgid_index = (uint8_t)sgid_index;
	a.grh.hop_limit = 64;
	a.grh.traffic_class = 0x20;
	return a;
}

/* A context on dev, for resolving routes as a QP on it would. */
static struct ur_context *ctx_on(struct ur_device *dev)
{
	static struct ur_context *open[2];
	static struct ur_device *devs[2];

	for (int i = 0; i < 2; i++) {
		if (devs[i] == dev)
			return open[i];
		if (!devs[i]) {
			devs[i] = dev;
			open[i] = ut_context_open(dev);
			return open[i];
		}
	}
	return NULL;
}

static void expect_err(struct ur_device *dev, struct ibv_ah_attr a, int err, const char *part1,
		       const char *part2)
{
	struct ur_path path;
	char why[256] = "";

	UT_EQ(ur_route_resolve(ctx_on(dev), &a, 0x123, &path, why, sizeof(why)), err);
	if (!why[0]) fprintf(stderr, "  (expected: %s)\n", part1);
	UT_CHECK(strstr(why, part1) != NULL);
	if (part2)
		UT_CHECK(strstr(why, part2) != NULL);
	if (!strstr(why, part1) || (part2 && !strstr(why, part2)))
		fprintf(stderr, "  got: %s\n", why);
}

static void expect_why(struct ur_device *dev, struct ibv_ah_attr a, const char *part1,
		       const char *part2)
{
	expect_err(dev, a, -EINVAL, part1, part2);
}

static void test_route_lo(void)
{
	struct ur_device *dev = ur_device_by_name("ut0");
	const struct ur_udp_path *up;
	struct ur_netdev nd;
	struct ur_path path;
	char why[256] = "";
	struct ibv_ah_attr a;

	if (!dev) {
		UT_CHECK(dev != NULL);
		return;
	}
	ur_device_snapshot(dev, &nd);
	/* lo has no link-local address (fe80::200:ff:fe00:0 would be its
	 * EUI-64): GID 0 is a copy of its first IPv6 address. */
	UT_CHECK(gid_is(&nd.gid[0].gid, "::1"));
	UT_CHECK(nd.gid[0].valid && nd.gid[0].copy);
	UT_EQ(nd.gid[0].family, AF_INET6);
	UT_CHECK(gid_is(&nd.gid[1].gid, "127.0.0.1"));
	UT_CHECK(gid_is(&nd.gid[2].gid, "::1"));

	/* Success: IPv4 to ourselves. */
	a = av("127.0.0.1", 1);
	UT_EQ(ur_route_resolve(ctx_on(dev), &a, 0x123, &path, why, sizeof(why)), 0);
	/* The UDP transport resolved it: its view of the path, white-box. */
	up = ur_udp_path_of(&path);
	UT_CHECK(path.xport != NULL && !strcmp(path.xport->ops->name, "udp"));
	UT_EQ(up->family, AF_INET);
	UT_EQ(ntohs(up->dst.v4.sin_port), 4791);
	UT_EQ(ntohl(up->dst.v4.sin_addr.s_addr), INADDR_LOOPBACK);
	UT_EQ(ntohl(up->src.v4.s_addr), INADDR_LOOPBACK);
	UT_EQ(path.traffic_class, 0x20);
	UT_EQ(path.hop_limit, 64);
	UT_CHECK(up->local);
	UT_CHECK(!up->mcast);
	a = av("::1", 2);
	UT_EQ(ur_route_resolve(ctx_on(dev), &a, 0x123, &path, why, sizeof(why)), 0);
	UT_EQ(up->family, AF_INET6);

	/* GID 0 on lo works (the copy of ::1); for an IPv4 peer the message
	 * names the IPv4 index. */
	a = av("::1", 0);
	UT_EQ(ur_route_resolve(ctx_on(dev), &a, 0x123, &path, why, sizeof(why)), 0);
	UT_EQ(up->family, AF_INET6);
	expect_why(dev, av("127.0.0.1", 0), "source GID index 0 is IPv6 but the peer's GID is IPv4",
		   "use GID index 1 (::ffff:127.0.0.1)");
	expect_why(dev, av("127.0.0.1", 9), "GID index 9 is empty on lo", "use GID index 1");
	expect_why(dev, av("127.0.0.1", 255), "GID index 255 is empty", NULL);
	expect_why(dev, av("::1", 1), "source GID index 1 is IPv4 but the peer's GID is IPv6",
		   "use GID index 2 (::1)");
	expect_why(dev, av("127.0.0.1", 2), "is IPv6 but the peer's GID is IPv4", "use GID index 1");
	expect_why(dev, av("::", 1), "the destination GID is all zeros", NULL);
	a = av("127.0.0.1", 1);
	a.is_global = 0;
	expect_why(dev, a, "no GRH", NULL);
	a = av("127.0.0.1", 1);
	a.port_num = 2;
	expect_why(dev, a, "port 2 does not exist", NULL);
	/* No route: the lookup's error, as the kernel's. */
	expect_err(dev, av("198.51.100.7", 1), -ENETUNREACH,
		   "no route from ::ffff:127.0.0.1 to ::ffff:198.51.100.7", NULL);
}

/* The tap device: routes from its addresses, and its MTU on the port. */
static void test_route_tap(void)
{
	struct ur_device *dev = ur_device_by_name("ut1");
	struct ibv_port_attr port;
	struct ur_path path;
	struct ibv_ah_attr a;
	char why[256] = "";

	if (!dev) {
		UT_CHECK(dev != NULL);
		return;
	}
	ur_port_attr(dev, &port);
	UT_EQ(port.active_mtu, IBV_MTU_1024);
	UT_EQ(port.state, IBV_PORT_ACTIVE);
	UT_EQ(port.link_layer, IBV_LINK_LAYER_ETHERNET);
	a = av("10.11.12.77", 1);                /* on the tap's subnet */
	UT_EQ(ur_route_resolve(ctx_on(dev), &a, 0x123, &path, why, sizeof(why)), 0);
	UT_EQ(ntohl(ur_udp_path_of(&path)->src.v4.s_addr), 0x0a0b0c0d);
	UT_CHECK(!ur_udp_path_of(&path)->local);
	/* GID 0 is configured here: the kernel gave the tap that address. */
	a = av("fe80::1", 0);
	UT_EQ(ur_route_resolve(ctx_on(dev), &a, 0x123, &path, why, sizeof(why)), 0);
	if (why[0])
		fprintf(stderr, "  got: %s\n", why);
	UT_EQ(ur_udp_path_of(&path)->family, AF_INET6);
	UT_EQ(ur_udp_path_of(&path)->dst.v6.sin6_scope_id, if_nametoindex("uttap0"));
}

/* The interface going down takes the port down (at the next refresh of
 * the device's view), and up again.  Last: IPv6 addresses go with it. */
static void test_port_state(void)
{
	struct ur_device *dev = ur_device_by_name("ut1");
	struct ibv_port_attr port;

	if (!dev) {
		UT_CHECK(dev != NULL);
		return;
	}
	UT_EQ(ut_if_flags("uttap0", 0, IFF_UP), 0);
	dev->refreshed_ns = 0;
	ur_port_attr(dev, &port);
	UT_EQ(port.state, IBV_PORT_DOWN);
	UT_EQ(ut_if_flags("uttap0", IFF_UP, 0), 0);
	dev->refreshed_ns = 0;
	ur_port_attr(dev, &port);
	UT_EQ(port.state, IBV_PORT_ACTIVE);
}

int main(void)
{
	int ret;

	ut_env_init("ut0:lo,ut1:uttap0");
	UT_RUN(test_gid_helpers);
	UT_RUN(test_mtu_mapping);
	ret = tap_create();
	if (ret) {
		fprintf(stderr, "cannot set up a tap interface: %s\n", strerror(-ret));
		return 1;
	}
	UT_RUN(test_gid_table);
	UT_RUN(test_stale_close);
	UT_RUN(test_route_lo);
	UT_RUN(test_route_tap);
	UT_RUN(test_gid_table_alias);
	UT_RUN(test_gid_table_full);
	UT_RUN(test_port_state);
	close(tap_fd);
	return UT_DONE();
}
