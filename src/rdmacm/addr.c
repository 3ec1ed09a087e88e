/* From IP addresses to uroce devices and GIDs: rdma_resolve_addr picks the
 * source address the kernel would route from and the device whose GID
 * table holds it (host/netdev.c's tables, as ibv_query_gid shows them);
 * rdma_resolve_route fills the path; rdma_getaddrinfo wraps getaddrinfo. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmacm/cma.h"
#include "util/compiler.h"
#include "util/sys_socket.h"

int cma_bind_any(struct cma_id *c, int family);

static socklen_t sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) :
	       sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : 0;
}

static void gid_of(const struct sockaddr *sa, union ibv_gid *g)
{
	memset(g, 0, sizeof(*g));
	if (sa->sa_family == AF_INET) {
		g->raw[10] = g->raw[11] = 0xff;
		memcpy(&g->raw[12], &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else {
		memcpy(g->raw, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	}
}

/* The address the kernel would send from to reach dst. */
static int route_src(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	socklen_t len = sizeof(*src);
	int fd = ur_socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0), ret = 0;

	if (fd < 0)
		return -errno;
	if (connect(fd, dst, sa_len(dst)) || getsockname(fd, (struct sockaddr *)src, &len))
		ret = -errno;
	close(fd);
	return ret;
}

int cma_resolve(struct cma_id *c, const struct sockaddr *src, const struct sockaddr *dst)
{
	struct sockaddr_storage from;
	union ibv_gid g;
	uint16_t port;
	int ret, dev, idx;

	if (!dst || !sa_len(dst))
		return -EINVAL;
	if (src && sa_len(src) && !c->bound) {
		ret = cma_bind_any(c, src->sa_family);
		if (ret)
			return ret;
		memcpy(&c->src, src, sa_len(src));
	}
	if (!c->bound && (ret = cma_bind_any(c, dst->sa_family)))
		return ret;
	port = cma_port_of((struct sockaddr *)&c->src);
	memset(&c->dst, 0, sizeof(c->dst));
	memcpy(&c->dst, dst, sa_len(dst));
	memcpy(&c->id.route.addr.dst_addr, dst, sa_len(dst));
	if (c->dev < 0) {
		ret = route_src(dst, &from);
		if (ret)
			return ret;
		if (from.ss_family == AF_INET)
			((struct sockaddr_in *)&from)->sin_port = htons(port);
		else
			((struct sockaddr_in6 *)&from)->sin6_port = htons(port);
		gid_of((struct sockaddr *)&from, &g);
		dev = cma_dev_of_gid(&g, &idx);
		if (dev < 0)
			return -ENODEV;   /* routed through an interface uroce has no GID on */
		memcpy(&c->src, &from, sizeof(from));
		memcpy(&c->id.route.addr.src_addr, &from, sa_len((struct sockaddr *)&from));
		cma_id_set_dev(c, dev);
		c->gid_index = idx;
		c->sgid = g;
	}
	gid_of(dst, &c->dgid);
	c->id.route.addr.addr.ibaddr.sgid = c->sgid;
	c->id.route.addr.addr.ibaddr.dgid = c->dgid;
	c->id.route.addr.addr.ibaddr.pkey = htons(0xffff);
	return 0;
}

void cma_fill_route(struct cma_id *c)
{
	struct ibv_sa_path_rec *p = &c->path;

	memset(p, 0, sizeof(*p));
	p->dgid = c->dgid;
	p->sgid = c->sgid;
	p->pkey = htons(0xffff);
	p->hop_limit = 64;
	p->traffic_class = c->tos;
	p->mtu = (uint8_t)cma.devs[c->dev].mtu;
	p->mtu_selector = 2;
	p->rate = IBV_RATE_10_GBPS;
	p->packet_life_time = 14;
	p->reversible = 1;
	p->numb_path = 1;
	c->id.route.path_rec = p;
	c->id.route.num_paths = 1;
}

UR_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
				struct sockaddr *dst_addr, int timeout_ms)
{
	struct cma_id *c = to_cid(id);
	struct rdma_cm_event *ev = NULL;
	int ret;

	(void)timeout_ms;
	pthread_mutex_lock(&cma.lock);
	ret = cma_resolve(c, src_addr, dst_addr);
	if (ret == -EINVAL || ret == -ENOMEM) {
		pthread_mutex_unlock(&cma.lock);
		errno = -ret;
		return -1;
	}
	/* As the kernel's: the outcome is an event, an error one if the
	 * destination has no route through a uroce device. */
	if (ret)
		cma_event(c, RDMA_CM_EVENT_ADDR_ERROR, ret, NULL, 0, NULL);
	else
		cma_event(c, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL, 0, NULL);
	if (c->chan->sync) {
		ret = cma_wait_event(c, RDMA_CM_EVENT_ADDR_RESOLVED, &ev);
		if (ev)
			cma_keep_event(c, ev);
		pthread_mutex_unlock(&cma.lock);
		return cma_abi_ret(ret);
	}
	pthread_mutex_unlock(&cma.lock);
	return 0;
}

UR_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct cma_id *c = to_cid(id);
	struct rdma_cm_event *ev = NULL;
	int ret = 0;

	(void)timeout_ms;
	pthread_mutex_lock(&cma.lock);
	if (c->dev < 0 || !c->dst.ss_family)
		ret = -EINVAL;
	if (!ret) {
		cma_fill_route(c);
		cma_event(c, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL, 0, NULL);
		if (c->chan->sync)
			ret = cma_wait_event(c, RDMA_CM_EVENT_ROUTE_RESOLVED, &ev);
		if (ev)
			cma_keep_event(c, ev);
	}
	pthread_mutex_unlock(&cma.lock);
	return cma_abi_ret(ret);
}

static int copy_addr(struct sockaddr **to, socklen_t *len, const struct sockaddr *from,
		     socklen_t from_len)
{
	*to = malloc(from_len);
	if (!*to)
		return -ENOMEM;
	memcpy(*to, from, from_len);
	*len = from_len;
	return 0;
}

/* Neither node nor service: what the hints give (their destination and
 * source addresses), as rdma-core's does. pyverbs' AddrInfo(src=...) asks
 * so, and libfabric's verbs provider passes a peer's address this way. */
static int from_hints(const struct rdma_addrinfo *hints, struct rdma_addrinfo *r)
{
	int ret = 0;

	if (!hints)
		return -EINVAL;
	r->ai_family = hints->ai_family;
	if (hints->ai_dst_addr && hints->ai_dst_len) {
		ret = copy_addr(&r->ai_dst_addr, &r->ai_dst_len, hints->ai_dst_addr,
				hints->ai_dst_len);
		if (!r->ai_family)
			r->ai_family = hints->ai_dst_addr->sa_family;
	}
	if (!ret && hints->ai_src_addr && hints->ai_src_len) {
		ret = copy_addr(&r->ai_src_addr, &r->ai_src_len, hints->ai_src_addr,
				hints->ai_src_len);
		if (!r->ai_family)
			r->ai_family = hints->ai_src_addr->sa_family;
	}
	return ret;
}

UR_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
			       const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	struct addrinfo ai_hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	struct rdma_addrinfo *r;
	int ret;

	if (!res || (!node && !service && !hints))
		return cma_abi_ret(-EINVAL);
	if (hints) {
		if (hints->ai_flags & RAI_PASSIVE)
			ai_hints.ai_flags |= AI_PASSIVE;
		if (hints->ai_flags & RAI_NUMERICHOST)
			ai_hints.ai_flags |= AI_NUMERICHOST;
		if (hints->ai_family == AF_IB) {
			errno = EOPNOTSUPP;   /* no native InfiniBand addresses on RoCE */
			return -1;
		}
		ai_hints.ai_family = hints->ai_family;
	}
	if (node || service) {
		ret = getaddrinfo(node, service, &ai_hints, &ai);
		if (ret) {
			errno = ret == EAI_SYSTEM ? errno : ENOENT;
			return ret;
		}
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		if (ai)
			freeaddrinfo(ai);
		errno = ENOMEM;
		return -1;
	}
	r->ai_flags = hints ? hints->ai_flags : 0;
	r->ai_port_space = hints && hints->ai_port_space ? hints->ai_port_space : RDMA_PS_TCP;
	r->ai_qp_type = hints && hints->ai_qp_type ? hints->ai_qp_type :
			r->ai_port_space == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC;
	if (!ai) {
		ret = from_hints(hints, r);
	} else {
		r->ai_family = ai->ai_family;
		if (r->ai_flags & RAI_PASSIVE)
			ret = copy_addr(&r->ai_src_addr, &r->ai_src_len, ai->ai_addr, ai->ai_addrlen);
		else
			ret = copy_addr(&r->ai_dst_addr, &r->ai_dst_len, ai->ai_addr, ai->ai_addrlen);
		if (!ret && hints && !(r->ai_flags & RAI_PASSIVE) && hints->ai_src_addr)
			ret = copy_addr(&r->ai_src_addr, &r->ai_src_len, hints->ai_src_addr,
					hints->ai_src_len);
		freeaddrinfo(ai);
	}
	if (ret) {
		rdma_freeaddrinfo(r);
		errno = -ret;
		return -1;
	}
	*res = r;
	return 0;
}

UR_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = next;
	}
}

UR_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	int ret = cma_init();

	if (ret) {
		errno = -ret;
		return NULL;
	}
	if (num_devices)
		*num_devices = cma.ndev;
	/* Ours for the process's life, as librdmacm's are. */
	return cma.verbs_list;
}

UR_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	(void)list;
}
