/* Helpers of the rdma_cm test programs (header only: every .c here is a
 * program): the next event of a channel, checked, and an IPv4 address. */
#ifndef UROCE_INTEG_CM_EVENTS_H
#define UROCE_INTEG_CM_EVENTS_H

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
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

#endif
