/* CM ids: creating, binding, listening, options, moving between channels,
 * destroying. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "rdmacm/cma.h"
#include "util/compiler.h"
#include "verbs/cm_abi.h"

/* rdma_cm's timing: 4.096 us * 2^18 (about 1 s) between sends, as many
 * sends as a REQ allows (15), so an unreachable peer is reported in about
 * 16 s, as the kernel's rdma_cm does with its larger timeout. */
#define CMA_CM_TIMEOUT_NS (4096ull << 18)
#define CMA_CM_RETRIES 15

static void conn_send(struct ur_cm_conn *conn, const struct ur_cm_msg *m)
{
	cma_send(container_of(conn, struct cma_id, conn), m);
}

static const struct ur_cm_ops conn_ops = { .send = conn_send };

static uint16_t ps_of(const struct cma_id *c)
{
	switch (c->id.ps) {
	case RDMA_PS_UDP:
		return UR_CMA_PS_UDP;
	case RDMA_PS_IB:
		return UR_CMA_PS_IB;
	default:
		return UR_CMA_PS_TCP;
	}
}

uint64_t cma_service_id(const struct cma_id *c)
{
	const struct sockaddr *sa = (const struct sockaddr *)(c->listening || !c->connect_sent ?
							     &c->src : &c->dst);

	return ur_cma_service_id(ps_of(c), cma_port_of(sa));
}

int cma_id_new(struct cma_channel *ch, void *context, enum rdma_port_space ps,
	       enum ibv_qp_type qpt, struct cma_id **out)
{
	struct cma_id *c = calloc(1, sizeof(*c));
	uint32_t num, gen = 0;
	int ret;

	if (!c)
		return -ENOMEM;
	ret = uroce_cm_id_alloc(&num);
	if (ret) {
		free(c);
		return ret;
	}
	/* The comm ID: the number the host routes to us, and 8 bits that
	 * differ between its uses, so a stale message does not match. */
	while (!(gen & 0xff))
		if (getrandom(&gen, sizeof(gen), 0) < 0)
			gen = (uint32_t)cma_now();
	c->comm_num = num;
	ur_cm_init(&c->conn, &conn_ops, (gen & 0xff) << 24 | num, CMA_CM_TIMEOUT_NS,
		   CMA_CM_RETRIES);
	c->chan = ch;
	ur_list_init(&c->mcs);
	c->dev = -1;
	c->ack_timeout = 14;
	c->id.channel = &ch->ch;
	c->id.context = context;
	c->id.ps = ps;
	c->id.qp_type = qpt;
	c->id.route.path_rec = &c->path;
	ur_list_add_tail(&cma.ids, &c->link);
	*out = c;
	return 0;
}

void cma_id_free(struct cma_id *c)
{
	ur_list_del(&c->link);
	cma_mc_leave_all(c);
	cma_drop_kept(c);
	cma_channel_drop(c->chan, c);
	uroce_cm_id_free(c->comm_num);
	if (c->own_chan)
		cma_channel_close(c->chan);
	free(c->ep_attr);
	free(c);
}

UR_EXPORT int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
			     void *context, enum rdma_port_space ps)
{
	enum ibv_qp_type qpt = ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD : IBV_QPT_RC;
	struct cma_channel *ch;
	struct cma_id *c;
	int ret = cma_init();

	if (ret)
		goto fail;
	if (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IB) {
		ret = -EINVAL;
		goto fail;
	}
	if (channel)
		ch = container_of(channel, struct cma_channel, ch);
	else if ((ret = cma_channel_open(true, &ch)))
		goto fail;
	pthread_mutex_lock(&cma.lock);
	ret = cma_id_new(ch, context, ps, qpt, &c);
	if (!ret)
		c->own_chan = !channel;
	pthread_mutex_unlock(&cma.lock);
	if (ret) {
		if (!channel) {
			pthread_mutex_lock(&cma.lock);
			cma_channel_close(ch);
			pthread_mutex_unlock(&cma.lock);
		}
		goto fail;
	}
	*id = &c->id;
	return 0;
fail:
	errno = -ret;
	return -1;
}

/* Sends what the peer must hear when an id goes away mid-connection. */
static void farewell(struct cma_id *c)
{
	switch (c->conn.state) {
	case UR_CM_ESTABLISHED:
		ur_cm_send_dreq(&c->conn, NULL, 0, cma_now());
		break;
	case UR_CM_REQ_SENT:
	case UR_CM_REQ_RCVD:
	case UR_CM_REP_SENT:
	case UR_CM_REP_RCVD:
		ur_cm_send_rej(&c->conn, UR_REJ_CONSUMER, NULL, 0);
		break;
	default:
		break;
	}
	c->conn.deadline_ns = 0;
}

UR_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct cma_id *c = to_cid(id);

	pthread_mutex_lock(&cma.lock);
	/* As the kernel's: every event of the id is acked first. */
	while (c->events_out > 0)
		pthread_cond_wait(&cma.acked, &cma.lock);
	if (c->listening)
		uroce_cm_listen(cma_service_id(c), 0);
	if (c->listener)
		c->listener->pending--;
	farewell(c);
	/* A child not yet got keeps no pointer to its listener: ids are
	 * destroyed children first by every sane program, and a listener
	 * destroyed first leaves its children to their own destroy. */
	{
		struct ur_list *l;

		ur_list_for_each(l, &cma.ids) {
			struct cma_id *o = ur_list_entry(l, struct cma_id, link);

			if (o->listener == c)
				o->listener = NULL;
		}
	}
	cma_id_free(c);
	pthread_mutex_unlock(&cma.lock);
	return 0;
}

static bool is_loopback(const struct sockaddr *addr)
{
	if (addr->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)addr)->sin_addr.s_addr) >> 24) == 127;
	return !memcmp(&((const struct sockaddr_in6 *)addr)->sin6_addr, &in6addr_loopback, 16);
}

static int bind_addr(struct cma_id *c, const struct sockaddr *addr)
{
	socklen_t len = addr->sa_family == AF_INET ? sizeof(struct sockaddr_in) :
			addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : 0;
	bool any;

	if (!len || c->bound)
		return -EINVAL;
	memset(&c->src, 0, sizeof(c->src));
	memcpy(&c->src, addr, len);
	if (!cma_port_of(addr)) {
		uint16_t port;

		/* The kernel's rdma_cm port space is its own: an ephemeral
		 * port that no listener of the host has. */
		do {
			if (getrandom(&port, sizeof(port), 0) < 0)
				port = (uint16_t)cma_now();
			port = (uint16_t)(32768 + port % 28232);
		} while (uroce_cm_listen_check(ur_cma_service_id(UR_CMA_PS_TCP, port)));
		if (addr->sa_family == AF_INET)
			((struct sockaddr_in *)&c->src)->sin_port = htons(port);
		else
			((struct sockaddr_in6 *)&c->src)->sin6_port = htons(port);
	}
	any = addr->sa_family == AF_INET ?
		((const struct sockaddr_in *)addr)->sin_addr.s_addr == htonl(INADDR_ANY) :
		!memcmp(&((const struct sockaddr_in6 *)addr)->sin6_addr, &in6addr_any, 16);
	if (!any) {
		union ibv_gid g;
		int dev, idx;

		memset(&g, 0, sizeof(g));
		if (addr->sa_family == AF_INET) {
			g.raw[10] = g.raw[11] = 0xff;
			memcpy(&g.raw[12], &((const struct sockaddr_in *)addr)->sin_addr, 4);
		} else {
			memcpy(g.raw, &((const struct sockaddr_in6 *)addr)->sin6_addr, 16);
		}
		dev = cma_dev_of_gid(&g, &idx);
		/* A loopback address that no device holds (uroce0, on lo,
		 * holds them unless UROCE_DEVICES leaves it out) binds to no
		 * device, like the wildcard, as the kernel's rdma_cm binds
		 * every loopback address: libfabric's verbs provider binds
		 * "localhost" and keeps the devices it is given, all when none. */
		if (dev < 0 && !is_loopback(addr))
			return -EADDRNOTAVAIL;
		if (dev >= 0) {
			cma_id_set_dev(c, dev);
			c->gid_index = idx;
			c->sgid = g;
		}
	}
	c->bound = true;
	memcpy(&c->id.route.addr.src_addr, &c->src, len);
	return 0;
}

UR_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	if (!addr)
		return cma_abi_ret(-EINVAL);
	return cma_locked_abi_call(bind_addr(to_cid(id), addr));
}

int cma_bind_any(struct cma_id *c, int family);
int cma_bind_any(struct cma_id *c, int family)
{
	struct sockaddr_storage ss;

	memset(&ss, 0, sizeof(ss));
	ss.ss_family = (sa_family_t)family;
	return bind_addr(c, (struct sockaddr *)&ss);
}

UR_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct cma_id *c = to_cid(id);
	int ret = 0;

	pthread_mutex_lock(&cma.lock);
	if (!c->bound)
		ret = cma_bind_any(c, AF_INET);
	if (!ret && c->listening)
		ret = -EINVAL;
	if (!ret)
		ret = uroce_cm_listen_check(ur_cma_service_id(ps_of(c), cma_port_of(
			(struct sockaddr *)&c->src)));
	if (!ret) {
		c->listening = true;
		c->backlog = backlog > 0 ? backlog : 1024;
		ret = uroce_cm_listen(cma_service_id(c), 1);
		if (ret)
			c->listening = false;
	}
	pthread_mutex_unlock(&cma.lock);
	return cma_abi_ret(ret);
}

UR_EXPORT int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct cma_id *c = to_cid(id);
	struct cma_channel *to;
	int ret = 0;

	if (channel)
		to = container_of(channel, struct cma_channel, ch);
	else if ((ret = cma_channel_open(true, &to))) {
		errno = -ret;
		return -1;
	}
	pthread_mutex_lock(&cma.lock);
	/* As the kernel's: the id's events move with it once acked. */
	while (c->events_out > 0)
		pthread_cond_wait(&cma.acked, &cma.lock);
	cma_channel_move(c->chan, to, c);
	if (c->own_chan)
		cma_channel_close(c->chan);
	c->own_chan = !channel;
	c->chan = to;
	c->id.channel = &to->ch;
	pthread_mutex_unlock(&cma.lock);
	return 0;
}

UR_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
			      size_t optlen)
{
	struct cma_id *c = to_cid(id);
	int ret = 0;

	if (!optval)
		return cma_abi_ret(-EINVAL);
	pthread_mutex_lock(&cma.lock);
	if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_TOS && optlen == sizeof(uint8_t)) {
		c->tos = *(uint8_t *)optval;
		c->tos_set = true;
	} else if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_REUSEADDR &&
		   optlen == sizeof(int)) {
		c->reuseaddr = *(int *)optval;
	} else if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_ACK_TIMEOUT &&
		   optlen == sizeof(uint8_t)) {
		c->ack_timeout = *(uint8_t *)optval;
	} else if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_AFONLY &&
		   optlen == sizeof(int)) {
		/* Our listeners are per port and family already. */
	} else {
		ret = level == RDMA_OPTION_ID || level == RDMA_OPTION_IB ? -ENOSYS : -EINVAL;
	}
	pthread_mutex_unlock(&cma.lock);
	return cma_abi_ret(ret);
}

UR_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return htons(cma_port_of(&id->route.addr.src_addr));
}

UR_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return htons(cma_port_of(&id->route.addr.dst_addr));
}
