/* A datagram rsocket's resources: the UDP socket and its buffers, a UD QP
 * per local address (made on the first datagram to or from a destination
 * that address serves), the destinations and their address handles. */
#include <errno.h>
#include <fcntl.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "rsocket/dgram_wire.h"
#include "rsocket/rsocket.h"
#include "rsocket/dgram_priv.h"
#include "util/fd.h"
#include "util/sys_socket.h"

int rs_ds_new(int domain, int type, struct rsock **out)
{
	struct rsock *rs = calloc(1, sizeof(*rs));
	struct rs_dgram *dg = calloc(1, sizeof(*dg));
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	int ret;

	if (!rs || !dg) {
		free(rs);
		free(dg);
		return -ENOMEM;
	}
	pthread_mutex_init(&rs->lock, NULL);
	rs->type = SOCK_DGRAM;
	rs->dg = dg;
	rs->domain = domain;
	rs->state = RS_IDLE;
	rs_config_sizes(rs);
	rs->fd_flags = O_RDWR;
	dg->epfd = dg->evfd = -1;
	rs->fd = ur_socket(domain, SOCK_DGRAM | (type & SOCK_CLOEXEC), 0);
	if (rs->fd < 0)
		goto err;
	dg->epfd = epoll_create1(EPOLL_CLOEXEC);
	dg->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (dg->epfd < 0 || dg->evfd < 0 || epoll_ctl(dg->epfd, EPOLL_CTL_ADD, dg->evfd, &ev))
		goto err;
	*out = rs;
	return 0;
err:
	ret = -errno;
	rs_ds_free(rs);
	return ret;
}

static void free_qp(struct rs_dgram *dg, struct rs_ds_qp *qp)
{
	if (qp->cc)
		epoll_ctl(dg->epfd, EPOLL_CTL_DEL, qp->cc->fd, NULL);
	rs_free_queues(qp->id, qp->cq, qp->cc);
	if (qp->smr)
		ibv_dereg_mr(qp->smr);
	if (qp->rmr)
		ibv_dereg_mr(qp->rmr);
	free(qp->rbuf);
	if (qp->id)
		rdma_destroy_id(qp->id);
	free(qp);
}

static void free_dest(void *p)
{
	struct rs_ds_dest *d = p;

	if (d->ah)
		ibv_destroy_ah(d->ah);
	free(d);
}

/* Frees everything; rs is out of the table and the UDP thread's set. */
void rs_ds_free(struct rsock *rs)
{
	struct rs_dgram *dg = rs->dg;

	if (dg) {
		tdestroy(dg->dests, free_dest);
		for (unsigned i = 0; i < dg->n_old_ahs; i++)
			ibv_destroy_ah(dg->old_ahs[i]);
		free(dg->old_ahs);
		while (dg->qps) {
			struct rs_ds_qp *qp = dg->qps;

			dg->qps = qp->next;
			free_qp(dg, qp);
		}
		if (dg->ring)
			for (unsigned i = 0; i <= (unsigned)rs->rq_size; i++)
				free(dg->ring[i].copy);
		free(dg->ring);
		free(dg->sbuf);
		free(dg->free_slots);
		if (dg->epfd >= 0)
			close(dg->epfd);
		if (dg->evfd >= 0)
			close(dg->evfd);
		free(dg);
	}
	if (rs->fd >= 0)
		close(rs->fd);
	pthread_mutex_destroy(&rs->lock);
	free(rs);
}

/* The buffers, sized as rdma-core's (a slot of RS_SNDLOWAT per queue
 * entry, the queues no longer than the buffers allow), and the UDP thread
 * reading our socket: on the first bind, connect or send. */
int rs_ds_ready(struct rsock *rs)
{
	struct rs_dgram *dg = rs->dg;
	int ret;

	if (dg->ready)
		return 0;
	if (rs->rq_size > rs->rbuf_size / RS_SNDLOWAT)
		rs->rq_size = (uint16_t)(rs->rbuf_size / RS_SNDLOWAT);
	if (rs->sq_size > rs->sbuf_size / RS_SNDLOWAT)
		rs->sq_size = (uint16_t)(rs->sbuf_size / RS_SNDLOWAT);
	if (rs->rq_size < 2)
		rs->rq_size = 2;
	if (rs->sq_size < 2)
		rs->sq_size = 2;
	rs->rbuf_size = rs->rq_size * RS_SNDLOWAT;
	rs->sbuf_size = rs->sq_size * RS_SNDLOWAT;
	dg->sbuf = calloc(rs->sq_size, RS_SNDLOWAT);
	dg->free_slots = calloc(rs->sq_size, sizeof(*dg->free_slots));
	dg->ring = calloc(rs->rq_size + 1u, sizeof(*dg->ring));
	if (!dg->sbuf || !dg->free_slots || !dg->ring)
		return -ENOMEM;
	for (int i = 0; i < rs->sq_size; i++)
		dg->free_slots[i] = (uint16_t)i;
	dg->sqe_avail = rs->sq_size;
	dg->rqe_avail = rs->rq_size;
	ret = rs_ds_svc_add(rs->fd);
	if (ret)
		return ret;
	dg->ready = true;
	return 0;
}

static socklen_t addr_len(const struct sockaddr *a)
{
	return a->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static bool is_any(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)a)->sin6_addr);
	return ((const struct sockaddr_in *)a)->sin_addr.s_addr == htonl(INADDR_ANY);
}

static uint16_t port_of(const struct sockaddr_storage *a)
{
	return a->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)a)->sin6_port
					: ((const struct sockaddr_in *)a)->sin_port;
}

static void set_port(struct sockaddr_storage *a, uint16_t port)
{
	if (a->ss_family == AF_INET6)
		((struct sockaddr_in6 *)a)->sin6_port = port;
	else
		((struct sockaddr_in *)a)->sin_port = port;
}

bool rs_ds_is_v4(const struct sockaddr_storage *a)
{
	return a->ss_family == AF_INET ||
	       (a->ss_family == AF_INET6 &&
		IN6_IS_ADDR_V4MAPPED(&((const struct sockaddr_in6 *)a)->sin6_addr));
}

void rs_ds_map_v4(const struct rsock *rs, struct sockaddr_storage *a, socklen_t *len)
{
	struct sockaddr_in v4;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)a;

	if (rs->domain != AF_INET6 || a->ss_family != AF_INET)
		return;
	memcpy(&v4, a, sizeof(v4));
	memset(v6, 0, sizeof(*v6));
	v6->sin6_family = AF_INET6;
	v6->sin6_port = v4.sin_port;
	v6->sin6_addr.s6_addr[10] = v6->sin6_addr.s6_addr[11] = 0xff;
	memcpy(v6->sin6_addr.s6_addr + 12, &v4.sin_addr, 4);
	*len = sizeof(*v6);
}

/* family, port and address: the key of a destination, and how a local
 * address is matched (its port is the UDP socket's, always the same). */
int rs_ds_addr_cmp(const void *x, const void *y)
{
	const struct sockaddr_storage *a = x, *b = y;

	if (a->ss_family != b->ss_family)
		return a->ss_family < b->ss_family ? -1 : 1;
	if (port_of(a) != port_of(b))
		return port_of(a) < port_of(b) ? -1 : 1;
	if (a->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			      &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
	return memcmp(&((const struct sockaddr_in *)a)->sin_addr,
		      &((const struct sockaddr_in *)b)->sin_addr, 4);
}

/* The address our datagrams to dst leave from: the socket's own when it
 * is bound to one, else the one the kernel's routing picks for dst, with
 * the socket's port (it is bound to an ephemeral one first if need be). */
static int local_addr_for(struct rsock *rs, const struct sockaddr *dst,
			  struct sockaddr_storage *local)
{
	socklen_t len = sizeof(*local);
	uint16_t port;
	int s, ret = 0;

	if (getsockname(rs->fd, (struct sockaddr *)local, &len))
		return -errno;
	if (!port_of(local)) {
		struct sockaddr_storage any = { .ss_family = (sa_family_t)rs->domain };

		if (bind(rs->fd, (struct sockaddr *)&any, addr_len((struct sockaddr *)&any)))
			return -errno;
		len = sizeof(*local);
		if (getsockname(rs->fd, (struct sockaddr *)local, &len))
			return -errno;
	}
	if (!is_any(local))
		return 0;
	port = port_of(local);
	s = ur_socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	len = sizeof(*local);
	if (connect(s, dst, addr_len(dst)) || getsockname(s, (struct sockaddr *)local, &len))
		ret = -errno;
	close(s);
	set_port(local, port);
	return ret;
}

static int post_recv(struct rsock *rs, struct rs_ds_qp *qp, uint32_t offset)
{
	struct ibv_sge sge[2] = {
		{ (uintptr_t)qp->rbuf + rs->rbuf_size, 40, qp->rmr->lkey },   /* the GRH, unread */
		{ (uintptr_t)qp->rbuf + offset, RS_SNDLOWAT, qp->rmr->lkey },
	};
	struct ibv_recv_wr wr = { .wr_id = RS_DS_WR_RECV | offset, .sg_list = sge, .num_sge = 2 };
	struct ibv_recv_wr *bad;

	return -ibv_post_recv(qp->id->qp, &wr, &bad);
}

void rs_ds_repost(struct rsock *rs, struct rs_ds_qp *qp, uint32_t offset)
{
	post_recv(rs, qp, offset);
}

static int make_qp(struct rsock *rs, const struct sockaddr_storage *local, struct rs_ds_qp **out)
{
	struct rs_dgram *dg = rs->dg;
	struct rs_ds_qp *qp = calloc(1, sizeof(*qp));
	struct sockaddr_storage bind_addr = *local;
	struct ibv_qp_init_attr attr;
	struct ibv_port_attr port;
	struct epoll_event ev = { .events = EPOLLIN };
	int ret;

	if (!qp)
		return -ENOMEM;
	qp->local = *local;
	qp->hdr_len = (uint8_t)rs_ds_hdr_write(qp->hdr, (const struct sockaddr *)local);
	/* The id's port means nothing to the protocol (the headers carry the
	 * UDP socket's): any free one, so no two sockets' ids collide. */
	set_port(&bind_addr, 0);
	if (rdma_create_id(NULL, &qp->id, qp, RDMA_PS_UDP) ||
	    rdma_bind_addr(qp->id, (struct sockaddr *)&bind_addr))
		goto err_errno;
	if (!qp->id->verbs || !qp->id->pd) {
		ret = -EADDRNOTAVAIL;   /* no RDMA device has the address */
		goto err;
	}
	if (ibv_query_port(qp->id->verbs, qp->id->port_num, &port))
		goto err_errno;
	qp->mtu = 128u << port.active_mtu;
	qp->rbuf = calloc(1, rs->rbuf_size + 40);
	if (!qp->rbuf) {
		ret = -ENOMEM;
		goto err;
	}
	qp->smr = ibv_reg_mr(qp->id->pd, dg->sbuf, rs->sbuf_size, IBV_ACCESS_LOCAL_WRITE);
	qp->rmr = ibv_reg_mr(qp->id->pd, qp->rbuf, rs->rbuf_size + 40, IBV_ACCESS_LOCAL_WRITE);
	qp->cc = ibv_create_comp_channel(qp->id->verbs);
	if (!qp->smr || !qp->rmr || !qp->cc)
		goto err_errno;
	ret = ur_fd_set_nonblock(qp->cc->fd);
	if (ret)
		goto err;
	qp->cq = ibv_create_cq(qp->id->verbs, rs->sq_size + rs->rq_size, qp, qp->cc, 0);
	if (!qp->cq)
		goto err_errno;
	memset(&attr, 0, sizeof(attr));
	attr.qp_context = qp;
	attr.send_cq = attr.recv_cq = qp->cq;
	attr.qp_type = IBV_QPT_UD;
	attr.sq_sig_all = 1;
	attr.cap.max_send_wr = rs->sq_size;
	attr.cap.max_recv_wr = rs->rq_size;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 2;
	attr.cap.max_inline_data = rs->sq_inline;
	if (rdma_create_qp(qp->id, qp->id->pd, &attr))   /* RTS, rdma_cm's Q_Key */
		goto err_errno;
	if (attr.cap.max_inline_data < rs->sq_inline)
		rs->sq_inline = (uint16_t)attr.cap.max_inline_data;
	ev.data.ptr = qp;
	if (epoll_ctl(dg->epfd, EPOLL_CTL_ADD, qp->cc->fd, &ev))
		goto err_errno;
	for (uint32_t i = 0; i < rs->rq_size; i++) {
		ret = post_recv(rs, qp, i * RS_SNDLOWAT);
		if (ret)
			goto err;
	}
	qp->next = dg->qps;
	dg->qps = qp;
	*out = qp;
	return 0;
err_errno:
	ret = errno ? -errno : -ENOMEM;
err:
	free_qp(dg, qp);
	return ret;
}

static int qp_for(struct rsock *rs, const struct sockaddr_storage *local, struct rs_ds_qp **out)
{
	for (struct rs_ds_qp *qp = rs->dg->qps; qp; qp = qp->next)
		if (!rs_ds_addr_cmp(&qp->local, local)) {
			*out = qp;
			return 0;
		}
	return make_qp(rs, local, out);
}

int rs_ds_dest(struct rsock *rs, const struct sockaddr *addr, socklen_t len,
	       struct rs_ds_dest **out)
{
	struct rs_dgram *dg = rs->dg;
	struct sockaddr_storage key = { 0 }, local;
	struct rs_ds_dest *d, **found;
	int ret;

	if (!addr || len < addr_len(addr) || len > sizeof(key) ||
	    (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return -EINVAL;
	if (addr->sa_family != rs->domain)
		return -EAFNOSUPPORT;
	memcpy(&key, addr, addr_len(addr));
	if (addr->sa_family == AF_INET6)   /* the key is family, port, address */
		((struct sockaddr_in6 *)&key)->sin6_flowinfo =
			((struct sockaddr_in6 *)&key)->sin6_scope_id = 0;
	found = tfind(&key, &dg->dests, rs_ds_addr_cmp);
	if (found) {
		*out = *found;
		return 0;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->addr = key;
	ret = local_addr_for(rs, addr, &local);
	if (!ret)
		ret = qp_for(rs, &local, &d->qp);
	if (!ret && !tsearch(d, &dg->dests, rs_ds_addr_cmp))
		ret = -ENOMEM;
	if (ret) {
		free(d);
		return ret;
	}
	*out = d;
	return 0;
}

static uint8_t gid_index(struct ibv_context *ctx, uint8_t port, const union ibv_gid *gid)
{
	struct ibv_port_attr pa;
	union ibv_gid g;

	if (ibv_query_port(ctx, port, &pa))
		return 0;
	for (int i = 0; i < pa.gid_tbl_len; i++)
		if (!ibv_query_gid(ctx, port, i, &g) && !memcmp(&g, gid, sizeof(g)))
			return (uint8_t)i;
	return 0;
}

/* d's QP is qpn: an address handle to it, from the path rdma_cm resolves
 * between d's local address and d. */
int rs_ds_set_peer(struct rsock *rs, struct rs_ds_dest *d, uint32_t qpn)
{
	struct rs_dgram *dg = rs->dg;
	struct sockaddr_storage src = d->qp->local;
	struct rdma_cm_id *id;
	struct ibv_ah_attr a;
	struct ibv_ah *ah;
	int ret = 0;

	if (d->ah && d->qpn == qpn)
		return 0;
	set_port(&src, 0);
	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_UDP))
		return -errno;
	if (rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&d->addr, 2000) ||
	    rdma_resolve_route(id, 2000)) {
		ret = -errno;
		goto out;
	}
	memset(&a, 0, sizeof(a));
	a.is_global = 1;
	a.grh.dgid = id->route.path_rec->dgid;
	a.grh.flow_label = be32toh(id->route.path_rec->flow_label);
	a.grh.hop_limit = id->route.path_rec->hop_limit;
	a.grh.traffic_class = id->route.path_rec->traffic_class;
	a.grh.sgid_index = gid_index(d->qp->id->verbs, d->qp->id->port_num,
				     &id->route.path_rec->sgid);
	a.sl = id->route.path_rec->sl;
	a.port_num = d->qp->id->port_num;
	ah = ibv_create_ah(d->qp->id->pd, &a);
	if (!ah) {
		ret = errno ? -errno : -ENOMEM;
		goto out;
	}
	if (d->ah) {
		/* The peer's QP changed (it restarted): sends in flight may
		 * still name the old handle. */
		struct ibv_ah **old = realloc(dg->old_ahs, (dg->n_old_ahs + 1) * sizeof(*old));

		if (!old) {
			ibv_destroy_ah(ah);
			ret = -ENOMEM;
			goto out;
		}
		dg->old_ahs = old;
		old[dg->n_old_ahs++] = d->ah;
	}
	d->ah = ah;
	d->qpn = qpn;
out:
	rdma_destroy_id(id);
	return ret;
}

int rs_ds_bind(struct rsock *rs, const struct sockaddr *addr, socklen_t len)
{
	int ret;

	if (!addr || len < sizeof(struct sockaddr_in))
		return -EINVAL;
	if (bind(rs->fd, addr, len))
		return -errno;
	ret = rs_ds_ready(rs);
	if (!ret)
		rs->state = RS_BOUND;
	return ret;
}

int rs_ds_connect(struct rsock *rs, const struct sockaddr *addr, socklen_t len)
{
	int ret = rs_ds_ready(rs);

	if (ret)
		return ret;
	if (connect(rs->fd, addr, len))
		return -errno;
	ret = rs_ds_dest(rs, addr, len, &rs->dg->conn_dest);
	if (!ret)
		rs->state = RS_CONNECTED;
	return ret;
}
