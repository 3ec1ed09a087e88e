/* Listeners and the children their requests make (REQ in conn_rx.c, SIDR_REQ
 * in sidr.c): finding them, and a child's id, addresses and route from
 * the request, as the kernel's rdma_cm fills them. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "rdmacm/cma.h"

struct cma_id *cma_find_listener(uint64_t service_id, int dev)
{
	struct ur_list *l;

	ur_list_for_each(l, &cma.ids) {
		struct cma_id *c = ur_list_entry(l, struct cma_id, link);

		if (c->listening && cma_service_id(c) == service_id && (c->dev < 0 || c->dev == dev))
			return c;
	}
	return NULL;
}

struct cma_id *cma_find_child(const struct ur_cm_msg *req, const union ibv_gid *from)
{
	struct ur_list *l;

	ur_list_for_each(l, &cma.ids) {
		struct cma_id *c = ur_list_entry(l, struct cma_id, link);

		if ((c->listener || c->req.attr == req->attr) &&
		    c->conn.remote_id == req->local_comm_id && !memcmp(&c->dgid, from, sizeof(*from)))
			return c;
	}
	return NULL;
}

static void set_addr(struct sockaddr_storage *ss, uint8_t ipv, const uint8_t *a, uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (ipv == 4) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, a + 12, 4);
		in->sin_port = htons(port);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_family = AF_INET6;
		memcpy(&in6->sin6_addr, a, 16);
		in6->sin6_port = htons(port);
	}
}

int cma_child_new(struct cma_id *l, const struct ur_cm_msg *m, const struct ur_cma_hdr *h,
		  int dev, int gid_index, const union ibv_gid *from, struct cma_id **out)
{
	struct cma_id *c;

	if (l->pending >= l->backlog || cma_id_new(l->chan, l->id.context, l->id.ps,
						   l->id.qp_type, &c))
		return -ENOSPC;
	c->listener = l;
	l->pending++;
	c->req = *m;
	c->gid_index = gid_index;
	c->dgid = *from;
	c->sgid = *from;
	ibv_query_gid(cma.devs[dev].verbs, 1, gid_index, &c->sgid);
	cma_id_set_dev(c, dev);
	c->bound = true;
	set_addr(&c->src, h->ip_version, h->dst, cma_port_of((struct sockaddr *)&l->src));
	set_addr(&c->dst, h->ip_version, h->src, h->src_port);
	memcpy(&c->id.route.addr.src_addr, &c->src, sizeof(struct sockaddr_in6));
	memcpy(&c->id.route.addr.dst_addr, &c->dst, sizeof(struct sockaddr_in6));
	c->id.route.addr.addr.ibaddr.sgid = c->sgid;
	c->id.route.addr.addr.ibaddr.dgid = c->dgid;
	c->id.route.addr.addr.ibaddr.pkey = htons(0xffff);
	cma_fill_route(c);
	*out = c;
	return 0;
}

void cma_child_event(struct cma_id *c, struct cma_event *e)
{
	if (e)
		e->ev.listen_id = &c->listener->id;
}
