#include "core/route.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "core/context.h"
#include "core/device.h"

/* The first GID of the family the peer uses, copies aside: the fix to
 * suggest when the chosen index cannot work. */
static int suggest_index(const struct ur_netdev *nd, const union ibv_gid *dgid)
{
	int want = ur_gid_is_v4mapped(dgid) ? AF_INET : AF_INET6;

	for (unsigned i = 0; i < nd->ngid; i++)
		if (nd->gid[i].valid && !nd->gid[i].copy && nd->gid[i].family == want)
			return (int)i;
	for (unsigned i = 0; i < nd->ngid; i++)
		if (nd->gid[i].valid && !nd->gid[i].copy &&
		    nd->gid[i].family == AF_INET)
			return (int)i;
	return -1;
}

static void hint(char *why, size_t len, const struct ur_netdev *nd,
		 const union ibv_gid *dgid, const char *what)
{
	char g[64];
	int s = suggest_index(nd, dgid);

	if (s >= 0)
		snprintf(why, len, "%s; use GID index %d (%s)", what, s,
			 ur_gid_str(&nd->gid[s].gid, g, sizeof(g)));
	else
		snprintf(why, len, "%s; interface %s has no usable address", what, nd->name);
}

int ur_route_resolve(struct ur_context *ctx, const struct ibv_ah_attr *ah,
		     uint32_t dqpn, struct ur_path *path, char *why, size_t whylen)
{
	struct ur_device *dev = ctx->dev;
	const struct ibv_global_route *grh = &ah->grh;
	struct ur_netdev nd;
	const struct ur_gid_entry *sg;
	char s1[64], s2[80];
	int ret;

	ur_device_snapshot(dev, &nd);
	if (ah->port_num != 1) {
		snprintf(why, whylen, "port %u does not exist (the device has port 1)",
			 ah->port_num);
		return -EINVAL;
	}
	if (!ah->is_global) {
		snprintf(why, whylen, "a RoCE port routes by GID but the address vector "
			 "has no GRH (is_global=0): give the peer's GID and a source "
			 "GID index (e.g. -g/-x GID_INDEX)");
		return -EINVAL;
	}
	if (grh->sgid_index >= nd.ngid || !nd.gid[grh->sgid_index].valid) {
		snprintf(s2, sizeof(s2), "GID index %u is empty on %s",
			 grh->sgid_index, nd.name);
		hint(why, whylen, &nd, &grh->dgid, s2);
		return -EINVAL;
	}
	sg = &nd.gid[grh->sgid_index];
	if (ur_gid_is_zero(&grh->dgid)) {
		snprintf(why, whylen, "the destination GID is all zeros: the peer sent "
			 "no GID (it needs a GID index too)");
		return -EINVAL;
	}
	if (ur_gid_is_v4mapped(&grh->dgid) != (sg->family == AF_INET)) {
		snprintf(s2, sizeof(s2), "source GID index %u is %s but the peer's GID is %s",
			 grh->sgid_index, sg->family == AF_INET ? "IPv4" : "IPv6",
			 ur_gid_is_v4mapped(&grh->dgid) ? "IPv4" : "IPv6");
		hint(why, whylen, &nd, &grh->dgid, s2);
		return -EINVAL;
	}
	if (!ctx->xports) {
		snprintf(why, whylen, "the progress engine could not start: %s",
			 strerror(-ctx->stack_err));
		return ctx->stack_err;
	}
	/* The kernel resolves the route here too (ib_resolve_eth_dmac at
	 * modify or create AH) and fails with the lookup's error, ENETUNREACH
	 * when there is no route: the same error, from a route lookup alone. */
	ret = ur_xports_resolve(ctx->xports, &sg->gid, nd.ifindex, &grh->dgid, dqpn, path);
	if (ret) {
		snprintf(why, whylen, "no route from %s to %s: %s",
			 ur_gid_str(&sg->gid, s1, sizeof(s1)),
			 ur_gid_str(&grh->dgid, s2, sizeof(s2)), strerror(-ret));
		return ret;
	}
	path->traffic_class = grh->traffic_class;
	path->hop_limit = grh->hop_limit;
	return 0;
}
