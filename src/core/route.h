/* From an address vector (port, GID index, destination GID) to a path:
 * the checks a RoCE device applies before it can reach a peer. */
#ifndef UROCE_CORE_ROUTE_H
#define UROCE_CORE_ROUTE_H

#include <stdint.h>
#include <infiniband/verbs.h>

#include "xport/xport.h"

struct ur_context;

/* 0, or -EINVAL with a one-line reason and fix in why (e.g. "source GID
 * index 2 is IPv6 but the peer's GID is IPv4; use GID index 1
 * (::ffff:127.0.0.1)"); when the kernel has no route to the peer, the
 * route lookup's error (-ENETUNREACH), as the kernel's verbs return.  No
 * packet is sent to find out. */
int ur_route_resolve(struct ur_context *ctx, const struct ibv_ah_attr *ah,
		     uint32_t dqpn, struct ur_path *path, char *why, size_t whylen);

#endif
