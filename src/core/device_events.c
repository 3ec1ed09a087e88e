/* Port and GID events: the interface under a device goes down or up, gains
 * or loses an address, or disappears.  Polled from the engine, since the
 * kernel offers no RDMA events for a software device. */
#include <string.h>

#include "core/context.h"
#include "core/device.h"
#include "core/names.h"
#include "util/log.h"

static void post_all(struct ur_device *dev, enum ibv_event_type type)
{
	struct ibv_async_event ev = { .event_type = type };
	struct ur_list *pos;

	ev.element.port_num = 1;
	ur_list_for_each(pos, &dev->contexts) {
		struct ur_context *ctx = ur_list_entry(pos, struct ur_context, dev_link);

		ur_async_post(&ctx->async, &ev);
	}
	ur_info(dev->ibdev.name, "event: %s", ur_event_type_name(type));
}

static void watch_one(struct ur_device *dev, void *arg)
{
	struct ibv_port_attr port;
	struct ur_netdev nd;
	bool gids_changed, present;

	pthread_mutex_lock(&dev->ctx_lock);
	if (!dev->watched || ur_list_empty(&dev->contexts)) {
		pthread_mutex_unlock(&dev->ctx_lock);
		return;
	}
	ur_port_attr(dev, &port);
	present = ur_device_snapshot(dev, &nd);
	if (!present && dev->last_state != IBV_PORT_NOP) {
		/* The interface is gone: so is the device. */
		post_all(dev, IBV_EVENT_DEVICE_FATAL);
		dev->last_state = IBV_PORT_NOP;
		pthread_mutex_unlock(&dev->ctx_lock);
		return;
	}
	if (port.state != dev->last_state && present) {
		post_all(dev, port.state == IBV_PORT_ACTIVE ? IBV_EVENT_PORT_ACTIVE
							     : IBV_EVENT_PORT_ERR);
		dev->last_state = port.state;
	}
	gids_changed = nd.ngid != dev->last_ngid;
	for (unsigned i = 0; i < nd.ngid && !gids_changed; i++)
		gids_changed = memcmp(&nd.gid[i].gid, &dev->last_gid[i], sizeof(union ibv_gid));
	if (gids_changed && present) {
		post_all(dev, IBV_EVENT_GID_CHANGE);
		dev->last_ngid = nd.ngid;
		for (unsigned i = 0; i < nd.ngid; i++)
			dev->last_gid[i] = nd.gid[i].gid;
	}
	pthread_mutex_unlock(&dev->ctx_lock);
}

void ur_device_watch(void)
{
	ur_device_foreach(watch_one, NULL);
}
