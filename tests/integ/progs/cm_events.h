/* Helpers of the rdma_cm test programs (header only: every .c here is a
 * program): the next event of a channel, checked, an IPv4 address, an
 * active id routed to a listener, and a main. */
#ifndef UROCE_INTEG_CM_EVENTS_H
#define UROCE_INTEG_CM_EVENTS_H

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <rdma/rdma_cma.h>

#include "vt.h"

/* The next event of ch, within 5 s, if it is want (else NULL, a failure). */
static inline struct rdma_cm_event *cm_next_event(struct rdma_event_channel *ch,
						  enum rdma_cm_event_type want, const char *what)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&p, 1, 5000) != 1) {
		vt_fail("%s: no event within 5 s (wanted %s)", what, rdma_event_str(want));
		return NULL;
	}
	if (rdma_get_cm_event(ch, &ev)) {
		vt_fail("%s: rdma_get_cm_event: %s", what, strerror(errno));
		return NULL;
	}
	if (!vt_check(ev->event == want, "%s: %s (status %d), want %s", what,
		      rdma_event_str(ev->event), ev->status, rdma_event_str(want))) {
		rdma_ack_cm_event(ev);
		return NULL;
	}
	return ev;
}

static inline void cm_ack(struct rdma_cm_event *ev)
{
	if (ev)
		rdma_ack_cm_event(ev);
}

static inline struct sockaddr_in cm_addr(const char *ip, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

/* A listener on 127.0.0.1:port in port space ps (backlog deep; none when
 * listen is NULL), and an active id of ps on ch, resolved and routed to
 * it.  False, after a FAIL: line, when a step fails. */
static inline bool cm_listen_and_route(struct rdma_event_channel *ch, enum rdma_port_space ps,
				       int port, int backlog, struct rdma_cm_id **listen,
				       struct rdma_cm_id **active)
{
	bool udp = ps == RDMA_PS_UDP;
	struct sockaddr_in l = cm_addr("127.0.0.1", port), d = l;
	struct rdma_cm_event *ev;

	if (listen &&
	    !vt_check(!rdma_create_id(ch, listen, NULL, ps) &&
		      !rdma_bind_addr(*listen, (struct sockaddr *)&l) &&
		      !rdma_listen(*listen, backlog),
		      "%slisten on port %d", udp ? "UDP " : "", port))
		return false;
	if (!vt_check(!rdma_create_id(ch, active, NULL, ps) &&
		      !rdma_resolve_addr(*active, NULL, (struct sockaddr *)&d, 2000),
		      "resolve 127.0.0.1%s", udp ? " (UDP id)" : ""))
		return false;
	ev = cm_next_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, "resolve_addr");
	cm_ack(ev);
	if (!ev || !vt_check(!rdma_resolve_route(*active, 2000), "resolve_route"))
		return false;
	ev = cm_next_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, "resolve_route");
	cm_ack(ev);
	return ev != NULL;
}

/* The main of a program of cases that share one event channel, *ch. */
static inline int cm_main(int argc, char **argv, const struct vt_case *cases,
			  struct rdma_event_channel **ch)
{
	*ch = rdma_create_event_channel();
	if (!*ch) {
		perror("rdma_create_event_channel");
		return 2;
	}
	return vt_main(argc, argv, cases);
}

#endif
