/* Event channels: the fd is an eventfd counting queued events (semaphore
 * mode: each read takes one), so it polls, blocks and goes non-blocking as
 * the kernel's rdma_cm device file does, and, like that file, closing it
 * does not wake a thread blocked reading it (rping's event thread). */
#include <errno.h>
#include <sys/eventfd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmacm/cma.h"
#include "util/compiler.h"
#include "util/enum_name.h"
#include "util/wakeup.h"

static void count_one(struct cma_channel *ch)
{
	uint64_t one = 1;

	if (write(ch->ch.fd, &one, sizeof(one)) < 0) {
		/* Only at 2^64 - 1 events queued. */
	}
}

int cma_channel_open(bool sync, struct cma_channel **out)
{
	struct cma_channel *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (c->ch.fd < 0) {
		int err = errno;

		free(c);
		return -err;
	}
	c->sync = sync;
	ur_list_init(&c->events);
	*out = c;
	return 0;
}

void cma_channel_drop(struct cma_channel *ch, struct cma_id *c)
{
	struct ur_list *l, *t;

	ur_list_for_each_safe(l, t, &ch->events) {
		struct cma_event *e = ur_list_entry(l, struct cma_event, link);

		if (to_cid(e->ev.id) == c || (e->ev.listen_id && to_cid(e->ev.listen_id) == c)) {
			ur_list_del(&e->link);
			free(e);
		}
	}
}

void cma_channel_move(struct cma_channel *from, struct cma_channel *to, struct cma_id *c)
{
	struct ur_list *l, *t;

	ur_list_for_each_safe(l, t, &from->events) {
		struct cma_event *e = ur_list_entry(l, struct cma_event, link);

		if (to_cid(e->ev.id) != c)
			continue;
		ur_list_del(&e->link);
		ur_list_add_tail(&to->events, &e->link);
		count_one(to);
	}
}

/* An application's channel, once destroyed, is kept (its fd closed) on
 * this list, never freed: rping's event thread acks the DISCONNECTED event
 * that main's rdma_destroy_id waits for and calls rdma_get_cm_event again
 * while main destroys the channel.  With the kernel that thread is nearly
 * always already blocked in read() by then, and stays blocked (the file
 * outlives its fd); a thread that comes later here finds the channel
 * closed and blocks the same way, instead of reading freed memory or
 * failing with EBADF (rping exits 255 on that).  A few dozen bytes per
 * channel an application destroys. */
static struct ur_list buried = UR_LIST_INIT(buried);

static void bury(struct cma_channel *c)
{
	close(c->ch.fd);
	c->ch.fd = -1;
	if (c->sync) {
		free(c);        /* the library's own: no application thread reads it */
		return;
	}
	ur_list_add_tail(&buried, &c->buried);
}

/* Called with cma.lock held.  A thread may still be inside
 * rdma_get_cm_event on this channel: it never returns, as the kernel's
 * reader of a file whose fd was closed, so the last reader out buries it,
 * and a reader woken by the count of an event dropped with its id goes
 * back to sleep rather than deliver it. */
void cma_channel_close(struct cma_channel *c)
{
	struct cma_event *e;

	while ((e = ur_list_pop_entry(&c->events, struct cma_event, link)))
		free(e);
	c->closed = true;
	if (!c->readers)
		bury(c);
}

int cma_event(struct cma_id *c, enum rdma_cm_event_type type, int status, const void *priv,
	      size_t len, struct cma_event **out)
{
	struct cma_event *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->ev.id = &c->id;
	e->ev.event = type;
	e->ev.status = status;
	if (len > sizeof(e->priv))
		len = sizeof(e->priv);
	if (len) {
		memcpy(e->priv, priv, len);
		e->ev.param.conn.private_data = e->priv;
		e->ev.param.conn.private_data_len = (uint8_t)len;
	}
	ur_list_add_tail(&c->chan->events, &e->link);
	count_one(c->chan);
	if (out)
		*out = e;
	return 0;
}

/* Takes the next queued event (the caller read its byte). */
static struct cma_event *take(struct cma_channel *ch)
{
	struct cma_event *e;

	e = ur_list_pop_entry(&ch->events, struct cma_event, link);
	if (!e)
		return NULL;
	/* Handed out: the id (and a request's listener) cannot go before it
	 * is acked, as with the kernel's rdma_cm. */
	to_cid(e->ev.id)->events_out++;
	if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && e->ev.listen_id)
		to_cid(e->ev.listen_id)->events_out++;
	return e;
}

static int get_event(struct cma_channel *ch, struct rdma_cm_event **out)
{
	struct cma_event *e = NULL;
	int fd, ret = 0;
	uint64_t b;

	pthread_mutex_lock(&cma.lock);
	if (ch->closed) {
		/* Destroyed before this call (see bury): never returns. */
		pthread_mutex_unlock(&cma.lock);
		for (;;)
			pause();
	}
	ch->readers++;
	fd = ch->ch.fd;
	pthread_mutex_unlock(&cma.lock);
	for (;;) {
		ret = ur_wakeup_read(fd, &b, sizeof(b));
		if (ret)
			break;
		pthread_mutex_lock(&cma.lock);
		/* A destroyed channel delivers nothing more. */
		e = ch->closed ? NULL : take(ch);
		pthread_mutex_unlock(&cma.lock);
		if (e)
			break;
	}
	pthread_mutex_lock(&cma.lock);
	if (--ch->readers == 0 && ch->closed)
		bury(ch);
	pthread_mutex_unlock(&cma.lock);
	if (ret)
		return ret;
	*out = &e->ev;
	return 0;
}

int cma_wait_event(struct cma_id *c, enum rdma_cm_event_type want, struct rdma_cm_event **out)
{
	struct rdma_cm_event *ev;
	int ret;

	pthread_mutex_unlock(&cma.lock);
	ret = get_event(c->chan, &ev);
	pthread_mutex_lock(&cma.lock);
	if (ret)
		return ret;
	if (ev->event != want) {
		int status = ev->status;

		*out = ev;
		return status < 0 ? status : -ECONNREFUSED;
	}
	*out = ev;
	return 0;
}

UR_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct cma_channel *c;
	int ret = cma_init();

	if (!ret)
		ret = cma_channel_open(false, &c);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return &c->ch;
}

UR_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	pthread_mutex_lock(&cma.lock);
	cma_channel_close(container_of(channel, struct cma_channel, ch));
	pthread_mutex_unlock(&cma.lock);
}

UR_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	int ret;

	if (!event)
		return cma_abi_ret(-EINVAL);
	ret = get_event(container_of(channel, struct cma_channel, ch), event);
	return cma_abi_ret(ret);
}

/* An event's count against its id (and a request's against its
 * listener) ends: cma.lock held. */
static void uncount(struct rdma_cm_event *event)
{
	to_cid(event->id)->events_out--;
	/* A CONNECT_REQUEST's listener had an event out too. */
	if (event->event == RDMA_CM_EVENT_CONNECT_REQUEST && event->listen_id)
		to_cid(event->listen_id)->events_out--;
	pthread_cond_broadcast(&cma.acked);
}

void cma_event_set_ud(struct cma_event *e, const struct cma_id *c, const union ibv_gid *dgid,
		      uint8_t hop_limit, uint32_t qpn, uint32_t qkey)
{
	struct ibv_ah_attr *ah = &e->ev.param.ud.ah_attr;

	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	ah->port_num = c->id.port_num ? c->id.port_num : 1;
	ah->grh.dgid = *dgid;
	ah->grh.sgid_index = (uint8_t)c->gid_index;
	ah->grh.hop_limit = hop_limit;
	ah->grh.traffic_class = c->tos;
	e->ev.param.ud.qp_num = qpn;
	e->ev.param.ud.qkey = qkey;
}

UR_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	if (!event)
		return cma_abi_ret(-EINVAL);
	pthread_mutex_lock(&cma.lock);
	uncount(event);
	pthread_mutex_unlock(&cma.lock);
	free(container_of(event, struct cma_event, ev));
	return 0;
}

void cma_keep_event(struct cma_id *c, struct rdma_cm_event *ev)
{
	uncount(ev);
	cma_drop_kept(c);
	c->id.event = ev;
}

void cma_drop_kept(struct cma_id *c)
{
	if (c->id.event)
		free(container_of(c->id.event, struct cma_event, ev));
	c->id.event = NULL;
}

static const char *const event_names[] = {
	UR_ENUM_SPELLING(RDMA_CM_EVENT_ADDR_RESOLVED),
	UR_ENUM_SPELLING(RDMA_CM_EVENT_ADDR_ERROR),
	UR_ENUM_SPELLING(RDMA_CM_EVENT_ROUTE_RESOLVED),
	UR_ENUM_SPELLING(RDMA_CM_EVENT_ROUTE_ERROR),
	UR_ENUM_SPELLING(RDMA_CM_EVENT_CONNECT_REQUEST),
	UR_ENUM_SPELLING(RDMA_CM_EVENT_CONNECT_RESPONSE),
	UR_ENUM_SPELLING(RDMA_CM_EVENT_CONNECT_ERROR),
	UR_ENUM_SPELLING(RDMA_CM_EVENT_UNREACHABLE),
	UR_ENUM_SPELLING(RDMA_CM_EVENT_REJECTED),
	UR_ENUM_SPELLING(RDMA_CM_EVENT_ESTABLISHED),
	UR_ENUM_SPELLING(RDMA_CM_EVENT_DISCONNECTED),
	UR_ENUM_SPELLING(RDMA_CM_EVENT_DEVICE_REMOVAL),
	UR_ENUM_SPELLING(RDMA_CM_EVENT_MULTICAST_JOIN),
	UR_ENUM_SPELLING(RDMA_CM_EVENT_MULTICAST_ERROR),
	UR_ENUM_SPELLING(RDMA_CM_EVENT_ADDR_CHANGE),
	UR_ENUM_SPELLING(RDMA_CM_EVENT_TIMEWAIT_EXIT),
};

UR_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	if ((unsigned)event < UR_ARRAY_SIZE(event_names) && event_names[event])
		return event_names[event];
	return "UNKNOWN EVENT";
}
