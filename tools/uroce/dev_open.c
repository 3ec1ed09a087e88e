#include "dev_open.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct ibv_context *ur_dev_open(const char *name)
{
	struct ibv_device **list, *dev = NULL;
	struct ibv_context *ctx;
	int n, i;

	list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		fprintf(stderr, "no RDMA devices found: run under `uroce run --` (or with uroce's "
				"libibverbs.so.1 on LD_LIBRARY_PATH) to use uroce's software device\n");
		if (list)
			ibv_free_device_list(list);
		return NULL;
	}
	for (i = 0; i < n && !dev; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name))
			dev = list[i];
	if (!dev) {
		fprintf(stderr, "device '%s' not found; devices here:", name);
		for (i = 0; i < n; i++)
			fprintf(stderr, " %s", ibv_get_device_name(list[i]));
		fprintf(stderr, " (see `uroce devices`)\n");
		ibv_free_device_list(list);
		return NULL;
	}
	ctx = ibv_open_device(dev);
	if (!ctx)
		fprintf(stderr, "cannot open device %s: %s\n", ibv_get_device_name(dev),
			strerror(errno));
	ibv_free_device_list(list);
	return ctx;
}

void ur_gid_to_str(const union ibv_gid *gid, char *buf, size_t len)
{
	if (!inet_ntop(AF_INET6, gid->raw, buf, len) && len)
		buf[0] = '\0';
}

int ur_gid_parse(const char *text, union ibv_gid *gid)
{
	struct in_addr a4;

	if (inet_pton(AF_INET6, text, gid->raw) == 1)
		return 0;
	if (inet_pton(AF_INET, text, &a4) == 1) {
		memset(gid->raw, 0, 10);
		gid->raw[10] = gid->raw[11] = 0xff;
		memcpy(gid->raw + 12, &a4, 4);
		return 0;
	}
	return -EINVAL;
}

static bool gid_is_v4mapped(const union ibv_gid *gid)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(gid->raw, prefix, sizeof(prefix));
}

int ur_gid_to_ip(const union ibv_gid *gid, char *buf, size_t len, bool *ipv4)
{
	*ipv4 = gid_is_v4mapped(gid);
	if (*ipv4)
		return inet_ntop(AF_INET, gid->raw + 12, buf, len) ? 0 : -EINVAL;
	return inet_ntop(AF_INET6, gid->raw, buf, len) ? 0 : -EINVAL;
}

const char *ur_gid_type_str(uint32_t type)
{
	switch (type) {
	case IBV_GID_TYPE_IB:
		return "IB";
	case IBV_GID_TYPE_ROCE_V1:
		return "RoCE v1";
	case IBV_GID_TYPE_ROCE_V2:
		return "RoCE v2";
	}
	return "unknown";
}

int ur_gid_table(struct ibv_context *ctx, uint8_t port, struct ur_gid_info *out, int max)
{
	struct ibv_gid_entry ents[256];
	struct ibv_port_attr pa;
	ssize_t n;

	if (max > 256)
		max = 256;
	n = ibv_query_gid_table(ctx, ents, (size_t)max, 0);
	if (n < 0)
		return (int)n;
	int k = 0;
	for (ssize_t i = 0; i < n; i++) {
		struct ur_gid_info *g = &out[k];

		if (ents[i].port_num != port)
			continue;
		memset(g, 0, sizeof(*g));
		g->e = ents[i];
		if (!ents[i].ndev_ifindex || !if_indextoname(ents[i].ndev_ifindex, g->netdev))
			g->netdev[0] = '\0';
		if (ents[i].gid_type != IBV_GID_TYPE_IB)
			ur_gid_to_ip(&ents[i].gid, g->ip, sizeof(g->ip), &g->ipv4);
		k++;
	}
	if (k == 0 && ibv_query_port(ctx, port, &pa))
		return -EINVAL;   /* no such port */
	return k;
}

int ur_gid_default(struct ibv_context *ctx, uint8_t port)
{
	struct ur_gid_info t[64];
	int n = ur_gid_table(ctx, port, t, 64), first_v2 = -1;

	for (int i = 0; i < n; i++) {
		if (t[i].e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		if (t[i].ipv4)
			return (int)t[i].e.gid_index;
		if (first_v2 < 0)
			first_v2 = (int)t[i].e.gid_index;
	}
	return first_v2 >= 0 ? first_v2 : 0;
}

int ur_route_source(const char *peer, char *ip, size_t iplen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_DGRAM }, *res;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd, rc;

	rc = getaddrinfo(peer, "4791", &hints, &res);
	if (rc)
		return -EHOSTUNREACH;
	fd = socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	/* connect() on a UDP socket sends nothing: it asks the routing table
	 * which source address the kernel would use. */
	rc = fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) ||
	     getsockname(fd, (struct sockaddr *)&ss, &sl) ? -errno : 0;
	if (fd >= 0)
		close(fd);
	freeaddrinfo(res);
	if (rc)
		return rc;
	if (ss.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, ip, iplen);
	else
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, ip, iplen);
	return 0;
}

/* Which other device holds ADDR as a RoCE v2 GID, for the hint. */
static void device_holding(const char *addr, char *out, size_t len)
{
	struct ibv_device **list;
	int n;

	out[0] = '\0';
	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n && !out[0]; i++) {
		struct ibv_context *c = ibv_open_device(list[i]);
		struct ur_gid_info t[64];
		int m = c ? ur_gid_table(c, 1, t, 64) : 0;

		for (int j = 0; j < m; j++)
			if (t[j].e.gid_type == IBV_GID_TYPE_ROCE_V2 && !strcmp(t[j].ip, addr)) {
				snprintf(out, len, "%s GID index %u", ibv_get_device_name(list[i]),
					 t[j].e.gid_index);
				break;
			}
		if (c)
			ibv_close_device(c);
	}
	if (list)
		ibv_free_device_list(list);
}

int ur_gid_for_peer(struct ibv_context *ctx, uint8_t port, const char *peer, char *why,
		    size_t whylen)
{
	char src[UR_GID_STRLEN], other[96];
	struct ur_gid_info t[64];
	int n, rc;

	rc = ur_route_source(peer, src, sizeof(src));
	if (rc) {
		snprintf(why, whylen, "cannot route to %s: %s", peer, strerror(-rc));
		return rc;
	}
	n = ur_gid_table(ctx, port, t, 64);
	for (int i = 0; i < n; i++)
		if (t[i].e.gid_type == IBV_GID_TYPE_ROCE_V2 && !strcmp(t[i].ip, src))
			return (int)t[i].e.gid_index;
	device_holding(src, other, sizeof(other));
	if (other[0])
		snprintf(why, whylen, "%s is reached from local address %s, which is not in %s's "
			 "GID table: use %s", peer, src, ibv_get_device_name(ctx->device), other);
	else
		snprintf(why, whylen, "%s is reached from local address %s, which no RDMA device "
			 "has as a RoCE v2 GID", peer, src);
	return -ENOENT;
}
