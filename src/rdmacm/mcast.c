/* Multicast for UD ids, as the kernel's rdma_cm joins on RoCE: no subnet
 * administrator, the group's GID made from its IP address (an IPv6 group
 * as it is, an IPv4 one mapped, ::ffff:a.b.c.d, as RoCEv2 carries it), the
 * Q_Key rdma_cm's, and a MULTICAST_JOIN event at once with what a sender
 * needs (the group's address, QP number 0xffffff, the Q_Key).  As
 * rdma-core's librdmacm does, the library attaches the id's QP to the group
 * (not for a send-only member); uroce's attach joins the IP group on the
 * device's interface, so other hosts' datagrams arrive too. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm/cma.h"
#include "util/compiler.h"

#define CMA_MC_QPN 0xffffff
#define CMA_MC_HOP_LIMIT 64

struct cma_mc {
	struct ur_list link;           /* on the id's mcs */
	union ibv_gid mgid;
	bool attached;                 /* the id's QP receives from the group */
};

static int group_gid(const struct sockaddr *sa, union ibv_gid *mgid)
{
	memset(mgid, 0, sizeof(*mgid));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		if (!IN_MULTICAST(ntohl(in->sin_addr.s_addr)))
			return -EINVAL;
		mgid->raw[10] = 0xff;
		mgid->raw[11] = 0xff;
		memcpy(&mgid->raw[12], &in->sin_addr, 4);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		if (!IN6_IS_ADDR_MULTICAST(&in6->sin6_addr))
			return -EINVAL;
		memcpy(mgid->raw, &in6->sin6_addr, 16);
		return 0;
	}
	return -EAFNOSUPPORT;
}

static struct cma_mc *find_mc(struct cma_id *c, const union ibv_gid *mgid)
{
	struct ur_list *l;

	ur_list_for_each(l, &c->mcs) {
		struct cma_mc *mc = ur_list_entry(l, struct cma_mc, link);

		if (!memcmp(&mc->mgid, mgid, sizeof(*mgid)))
			return mc;
	}
	return NULL;
}

static void leave(struct cma_id *c, struct cma_mc *mc)
{
	if (mc->attached && c->id.qp)
		ibv_detach_mcast(c->id.qp, &mc->mgid, 0);
	ur_list_del(&mc->link);
	free(mc);
}

/* The MULTICAST_JOIN event: where and how a member sends to the group. */
static int joined(struct cma_id *c, const struct cma_mc *mc, void *context)
{
	struct cma_event *e;
	int ret = cma_event(c, RDMA_CM_EVENT_MULTICAST_JOIN, 0, NULL, 0, &e);

	if (ret)
		return ret;
	e->ev.param.ud.private_data = context;   /* as rdma-core's librdmacm */
	cma_event_set_ud(e, c, &mc->mgid, CMA_MC_HOP_LIMIT, CMA_MC_QPN, CMA_UDP_QKEY);
	return 0;
}

static int join(struct cma_id *c, const struct sockaddr *addr, uint32_t flags, void *context)
{
	struct cma_mc *mc;
	union ibv_gid mgid;
	int ret;

	if (c->id.qp_type != IBV_QPT_UD || c->dev < 0)
		return -EINVAL;   /* a UD id with its address resolved, as the kernel's */
	if (flags != RDMA_MC_JOIN_FLAG_FULLMEMBER && flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		return -EINVAL;   /* RoCE has no non-member or send-only non-member */
	ret = group_gid(addr, &mgid);
	if (ret)
		return ret;
	if (find_mc(c, &mgid))
		return -EADDRINUSE;
	mc = calloc(1, sizeof(*mc));
	if (!mc)
		return -ENOMEM;
	mc->mgid = mgid;
	if (c->id.qp && flags == RDMA_MC_JOIN_FLAG_FULLMEMBER) {
		ret = ibv_attach_mcast(c->id.qp, &mgid, 0);
		if (ret) {
			free(mc);
			return -ret;
		}
		mc->attached = true;
	}
	ur_list_add_tail(&c->mcs, &mc->link);
	ret = joined(c, mc, context);
	if (ret)
		leave(c, mc);
	return ret;
}

UR_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *attr,
				     void *context)
{
	uint32_t need = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;

	if (!attr || (attr->comp_mask & need) != need || !attr->addr)
		return cma_abi_ret(-EINVAL);
	return cma_locked_abi_call(join(to_cid(id), attr->addr, attr->join_flags, context));
}

UR_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	struct rdma_cm_join_mc_attr_ex attr = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER,
		.addr = addr,
	};

	return rdma_join_multicast_ex(id, &attr, context);
}

UR_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cma_id *c = to_cid(id);
	struct cma_mc *mc;
	union ibv_gid mgid;
	int ret;

	if (!addr)
		return cma_abi_ret(-EINVAL);
	pthread_mutex_lock(&cma.lock);
	ret = group_gid(addr, &mgid);
	mc = ret ? NULL : find_mc(c, &mgid);
	if (mc)
		leave(c, mc);
	pthread_mutex_unlock(&cma.lock);
	if (!mc) {
		errno = EADDRNOTAVAIL;   /* not joined, as the kernel's says */
		return -1;
	}
	return 0;
}

void cma_mc_leave_all(struct cma_id *c)
{
	while (!ur_list_empty(&c->mcs))
		leave(c, ur_list_entry(c->mcs.next, struct cma_mc, link));
}
