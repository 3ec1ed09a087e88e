/* The CM side of a stream rsocket, never blocking: its channel's fd is
 * non-blocking, and each event moves the connection one step (resolve the
 * address, the route, send the request with our connection data, take the
 * peer's from the reply).  Callers that block sleep on the fd (data.c). */
#include <errno.h>
#include <poll.h>
#include <string.h>

#include "rsocket/rsocket.h"

#define RS_RESOLVE_MS 2000

static void connect_failed(struct rsock *rs, int err)
{
	rs->state = RS_CONNECT_ERROR;
	rs->err = err;
}

static void fill_param(struct rdma_conn_param *p, struct rs_conn_data *cd)
{
	memset(p, 0, sizeof(*p));
	p->private_data = cd;
	p->private_data_len = sizeof(*cd);
	p->flow_control = 1;
	p->retry_count = 7;
	p->rnr_retry_count = 7;   /* credits leave control messages to RNR retries */
}

static void route_resolved(struct rsock *rs)
{
	struct rdma_conn_param p;
	struct rs_conn_data cd;
	int ret = rs_create_ep(rs);

	if (ret) {
		connect_failed(rs, -ret);
		return;
	}
	rs_format_conn_data(rs, &cd);
	fill_param(&p, &cd);
	if (rdma_connect(rs->id, &p)) {
		connect_failed(rs, errno);
		return;
	}
	rs->state = RS_CONNECTING;
}

static void established(struct rsock *rs, const struct rdma_cm_event *ev)
{
	if (rs->state == RS_CONNECTING) {
		int ret = rs_save_conn_data(rs, ev->param.conn.private_data,
					    ev->param.conn.private_data_len);

		if (ret) {
			rdma_disconnect(rs->id);
			connect_failed(rs, -ret);
			return;
		}
	} else if (rs->state != RS_ACCEPTING) {
		return;
	}
	rs->state = RS_CONNECTED;
	rs->rd_open = rs->wr_open = true;
}

/* What connect(2) would have said for the event that ended an attempt. */
static int failed_errno(enum rdma_cm_event_type e)
{
	if (e == RDMA_CM_EVENT_ADDR_ERROR || e == RDMA_CM_EVENT_ROUTE_ERROR)
		return EHOSTUNREACH;
	return e == RDMA_CM_EVENT_UNREACHABLE ? ETIMEDOUT : ECONNREFUSED;
}

static void on_event(struct rsock *rs, struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rs->state != RS_RESOLVING_ADDR)
			break;
		if (rdma_resolve_route(rs->id, RS_RESOLVE_MS))
			connect_failed(rs, errno);
		else
			rs->state = RS_RESOLVING_ROUTE;
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (rs->state == RS_RESOLVING_ROUTE)
			route_resolved(rs);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		established(rs, ev);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		connect_failed(rs, failed_errno(ev->event));
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (rs->state == RS_CONNECTED || rs->state == RS_ACCEPTING) {
			rs->state = RS_DISCONNECTED;
			rs->rd_open = rs->wr_open = false;
		}
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		rs->state = RS_ERROR;
		rs->err = ENODEV;
		break;
	default:
		break;
	}
}

void rs_cm_events(struct rsock *rs)
{
	struct rdma_cm_event *ev;

	if (rs->state == RS_LISTENING)
		return;   /* its requests wait for raccept */
	while (rdma_get_cm_event(rs->ch, &ev) == 0) {
		on_event(rs, ev);
		rdma_ack_cm_event(ev);
	}
}

int rs_start_connect(struct rsock *rs, const struct sockaddr *dst)
{
	struct sockaddr *src = NULL;

	if (rs->state == RS_BOUND)
		src = rdma_get_local_addr(rs->id);
	if (rdma_resolve_addr(rs->id, src, (struct sockaddr *)dst, RS_RESOLVE_MS))
		return -errno;
	rs->state = RS_RESOLVING_ADDR;
	return 0;
}

bool rs_listen_ready(struct rsock *l)
{
	struct pollfd p = { .fd = l->ch->fd, .events = POLLIN };

	return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

int rs_take_request(struct rsock *l, struct rdma_cm_event **out)
{
	struct rdma_cm_event *ev;

	while (rdma_get_cm_event(l->ch, &ev) == 0) {
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			*out = ev;
			return 0;
		}
		rdma_ack_cm_event(ev);
	}
	return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN : -errno;
}

static void inherit(struct rsock *rs, const struct rsock *l)
{
	rs->sbuf_size = l->sbuf_size;
	rs->rbuf_size = l->rbuf_size;
	rs->sq_size = l->sq_size;
	rs->rq_size = l->rq_size;
	rs->sq_inline = l->sq_inline;
	rs->target_iomap_size = l->target_iomap_size;
	rs->nodelay = l->nodelay;
	rs->keepalive = l->keepalive;
	rs->keepidle = l->keepidle;
}

int rs_accept_req(struct rsock *l, struct rdma_cm_event *ev, struct rsock **out)
{
	struct rdma_cm_id *id = ev->id;
	uint8_t priv[sizeof(struct rs_conn_data)];
	uint8_t len = ev->param.conn.private_data_len;
	struct rdma_conn_param p;
	struct rs_conn_data cd;
	struct rsock *rs;
	int ret;

	if (len > sizeof(priv))
		len = sizeof(priv);
	if (ev->param.conn.private_data)
		memcpy(priv, ev->param.conn.private_data, len);
	else
		len = 0;
	/* Acked first: the id moves to a channel of its own, which waits
	 * for its events on the old one to be acked. */
	rdma_ack_cm_event(ev);

	ret = rs_new(l->domain, &rs);
	if (ret)
		goto err_reject;
	inherit(rs, l);
	if (rdma_migrate_id(id, rs->ch)) {
		ret = -errno;
		goto err_free;
	}
	rs->id = id;
	id->context = rs;
	ret = rs_create_ep(rs);
	if (ret)
		goto err_free;
	ret = rs_save_conn_data(rs, priv, len);
	if (ret)
		goto err_free;
	rs_format_conn_data(rs, &cd);
	fill_param(&p, &cd);
	if (rdma_accept(id, &p)) {
		ret = -errno;
		goto err_free;
	}
	rs->state = RS_ACCEPTING;
	*out = rs;
	return 0;

err_free:
	if (rs->id) {
		rdma_reject(id, NULL, 0);
		rs_free(rs);      /* destroys the id */
		return ret;
	}
	rs_free(rs);
err_reject:
	rdma_reject(id, NULL, 0);
	rdma_destroy_id(id);
	return ret;
}
