/* librdmacm's contract where unmodified programs do not reach it: both ends
 * of each connection in this one process, on 127.0.0.1, through uroce's CM
 * (the MADs still go out to UDP 4791 and back).
 *  - channel:  the event channel's fd is pollable, and non-blocking when set
 *              so (EAGAIN with nothing queued);
 *  - privdata: REQ private data up to 56 bytes arrives intact, 57 is EINVAL;
 *              REP private data up to 196 bytes, 197 is EINVAL; the QPs are
 *              INIT at create, RTS once established, ERROR after disconnect,
 *              and both sides get DISCONNECTED;
 *  - reject:   rdma_reject's private data and reason (28, consumer) reach
 *              the active side as REJECTED;
 *  - backlog:  a listener with backlog 1 turns the second pending request
 *              away (REJECTED) instead of queueing it;
 *  - addr:     an address with no route is an ADDR_ERROR event;
 *  - bind:     binding 127.0.0.1, which the device on lo holds, binds the id
 *              to that device; rdma_getaddrinfo with neither node nor
 *              service returns the hints' destination and source addresses
 *              (libfabric's client passes its server's name so);
 *  - unsupported: what is not supported (ECE) fails with EOPNOTSUPP, never pretends
 *              (UD ids' SIDR and multicast: progs/rdmacm_ud.c);
 *  - teardown: a thread inside rdma_get_cm_event when its id and channel
 *              are destroyed (rping's event thread) stays asleep, as on the
 *              kernel's rdma_cm file: it never returns an error or touches
 *              the freed channel, even when the id's dropped event woke it;
 *              nor does one that calls it just after the channel went
 *              (rping's, back from acking DISCONNECTED a moment late).
 *
 *   rdmacm_api DEVICE GID_INDEX [CASE...]   (the device is opened by vt.c)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#include "cm_events.h"
#include "vt.h"

static struct rdma_event_channel *ch;
static int next_port = 29000;

static struct rdma_cm_event *next_event(enum rdma_cm_event_type want, const char *what)
{
	return cm_next_event(ch, want, what);
}

#define ack cm_ack
#define addr_of cm_addr

static struct ibv_cq *cq_of(struct ibv_context *verbs)
{
	return ibv_create_cq(verbs, 16, NULL, NULL, 0);
}

static int qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	return ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) ? -1 : (int)a.qp_state;
}

static bool make_qp(struct rdma_cm_id *id, struct ibv_cq **cq)
{
	struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_RC,
				      .cap = { .max_send_wr = 4, .max_recv_wr = 4,
					       .max_send_sge = 1, .max_recv_sge = 1 } };

	*cq = cq_of(id->verbs);
	a.send_cq = a.recv_cq = *cq;
	return vt_check(*cq && !rdma_create_qp(id, NULL, &a), "rdma_create_qp: %s",
			*cq ? "ok" : "no CQ");
}

struct conn {
	struct rdma_cm_id *listen, *active, *passive;
	struct ibv_cq *acq, *pcq;
	int port;
};

/* A listener and an active id routed to it, with its QP. */
static bool setup(struct conn *c, int backlog)
{
	memset(c, 0, sizeof(*c));
	c->port = next_port++;
	return cm_listen_and_route(ch, RDMA_PS_TCP, c->port, backlog, &c->listen, &c->active) &&
	       make_qp(c->active, &c->acq);
}

static void teardown(struct conn *c)
{
	struct rdma_cm_id *ids[] = { c->active, c->passive, c->listen };

	for (unsigned i = 0; i < 3; i++) {
		if (!ids[i])
			continue;
		if (ids[i]->qp)
			rdma_destroy_qp(ids[i]);
		rdma_destroy_id(ids[i]);
	}
	if (c->acq)
		ibv_destroy_cq(c->acq);
	if (c->pcq)
		ibv_destroy_cq(c->pcq);
}

static void case_channel(struct vt_dev *d)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int fl = fcntl(ch->fd, F_GETFL);

	(void)d;
	VT_EXPECT_EQ("poll with nothing queued", 0, poll(&p, 1, 0));
	fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK);
	vt_check(rdma_get_cm_event(ch, &ev) == -1 && errno == EAGAIN,
		 "non-blocking rdma_get_cm_event with nothing queued: -1/EAGAIN (%s)",
		 strerror(errno));
	fcntl(ch->fd, F_SETFL, fl);
}

static void case_privdata(struct vt_dev *d)
{
	struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1,
				     .retry_count = 7, .rnr_retry_count = 7 };
	uint8_t req[57], rep[197];
	struct rdma_cm_event *ev;
	struct conn c;

	(void)d;
	for (unsigned i = 0; i < sizeof(req); i++)
		req[i] = (uint8_t)(0x40 + i);
	for (unsigned i = 0; i < sizeof(rep); i++)
		rep[i] = (uint8_t)(0x80 + i);
	if (!setup(&c, 4))
		goto out;
	VT_EXPECT_EQ("QP state after rdma_create_qp (INIT)", IBV_QPS_INIT, qp_state(c.active->qp));
	p.private_data = req;
	p.private_data_len = 57;
	vt_check(rdma_connect(c.active, &p) == -1 && errno == EINVAL,
		 "rdma_connect with 57 bytes of private data: EINVAL (%s)", strerror(errno));
	p.private_data_len = 56;
	if (!vt_check(!rdma_connect(c.active, &p), "rdma_connect with 56 bytes"))
		goto out;
	ev = next_event(RDMA_CM_EVENT_CONNECT_REQUEST, "request");
	if (!ev)
		goto out;
	c.passive = ev->id;
	vt_check(ev->listen_id == c.listen, "the request names its listener");
	vt_check(ev->param.conn.private_data_len >= 56 &&
		 !memcmp(ev->param.conn.private_data, req, 56),
		 "the request's 56 bytes of private data arrive intact");
	ack(ev);
	if (!make_qp(c.passive, &c.pcq))
		goto out;
	p.private_data = rep;
	p.private_data_len = 197;
	vt_check(rdma_accept(c.passive, &p) == -1 && errno == EINVAL,
		 "rdma_accept with 197 bytes of private data: EINVAL (%s)", strerror(errno));
	p.private_data_len = 196;
	if (!vt_check(!rdma_accept(c.passive, &p), "rdma_accept with 196 bytes"))
		goto out;
	ev = next_event(RDMA_CM_EVENT_ESTABLISHED, "established (one side)");
	ack(ev);
	ev = next_event(RDMA_CM_EVENT_ESTABLISHED, "established (other side)");
	ack(ev);
	VT_EXPECT_EQ("active QP state once established (RTS)", IBV_QPS_RTS, qp_state(c.active->qp));
	VT_EXPECT_EQ("passive QP state once established (RTS)", IBV_QPS_RTS,
		     qp_state(c.passive->qp));
	vt_check(!rdma_disconnect(c.active), "rdma_disconnect");
	ev = next_event(RDMA_CM_EVENT_DISCONNECTED, "disconnected (one side)");
	ack(ev);
	ev = next_event(RDMA_CM_EVENT_DISCONNECTED, "disconnected (other side)");
	ack(ev);
	VT_EXPECT_EQ("active QP state after disconnect (ERROR)", IBV_QPS_ERR,
		     qp_state(c.active->qp));
	VT_EXPECT_EQ("passive QP state after disconnect (ERROR)", IBV_QPS_ERR,
		     qp_state(c.passive->qp));
	vt_check(!rdma_disconnect(c.passive), "rdma_disconnect on the side that was told");
out:
	teardown(&c);
}

static void case_reject(struct vt_dev *d)
{
	struct rdma_conn_param p = { .retry_count = 7, .rnr_retry_count = 7 };
	struct rdma_cm_event *ev;
	struct conn c;

	(void)d;
	if (!setup(&c, 4) || !vt_check(!rdma_connect(c.active, &p), "rdma_connect"))
		goto out;
	ev = next_event(RDMA_CM_EVENT_CONNECT_REQUEST, "request");
	if (!ev)
		goto out;
	c.passive = ev->id;
	ack(ev);
	vt_check(!rdma_reject(c.passive, "nope", 5), "rdma_reject with 5 bytes");
	ev = next_event(RDMA_CM_EVENT_REJECTED, "rejected");
	if (ev) {
		VT_EXPECT_EQ("REJECTED's status (consumer reject)", 28, ev->status);
		vt_check(ev->param.conn.private_data_len >= 5 &&
			 !memcmp(ev->param.conn.private_data, "nope", 5),
			 "the REJ's private data arrives");
		ack(ev);
	}
out:
	teardown(&c);
}

static void case_backlog(struct vt_dev *d)
{
	struct rdma_conn_param p = { .retry_count = 7, .rnr_retry_count = 7 };
	struct sockaddr_in dst;
	struct rdma_cm_id *second = NULL;
	struct ibv_cq *cq2 = NULL;
	struct rdma_cm_event *ev;
	struct conn c;

	(void)d;
	if (!setup(&c, 1) || !vt_check(!rdma_connect(c.active, &p), "first rdma_connect"))
		goto out;
	ev = next_event(RDMA_CM_EVENT_CONNECT_REQUEST, "first request");
	if (!ev)
		goto out;
	c.passive = ev->id;
	ack(ev);
	dst = addr_of("127.0.0.1", c.port);
	if (!vt_check(!rdma_create_id(ch, &second, NULL, RDMA_PS_TCP) &&
		      !rdma_resolve_addr(second, NULL, (struct sockaddr *)&dst, 2000), "second id"))
		goto out;
	ack(next_event(RDMA_CM_EVENT_ADDR_RESOLVED, "second resolve_addr"));
	rdma_resolve_route(second, 2000);
	ack(next_event(RDMA_CM_EVENT_ROUTE_RESOLVED, "second resolve_route"));
	if (!make_qp(second, &cq2) || !vt_check(!rdma_connect(second, &p), "second rdma_connect"))
		goto out;
	ev = next_event(RDMA_CM_EVENT_REJECTED, "second request, over the backlog of 1");
	ack(ev);
	rdma_reject(c.passive, NULL, 0);
	ack(next_event(RDMA_CM_EVENT_REJECTED, "the first, rejected now"));
out:
	if (second) {
		if (second->qp)
			rdma_destroy_qp(second);
		rdma_destroy_id(second);
	}
	if (cq2)
		ibv_destroy_cq(cq2);
	teardown(&c);
}

static void case_addr(struct vt_dev *d)
{
	struct sockaddr_in dst = addr_of("203.0.113.1", 7471);   /* TEST-NET-3: no route here */
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;

	(void)d;
	if (!vt_check(!rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), "rdma_create_id"))
		return;
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000) == 0) {
		ev = next_event(RDMA_CM_EVENT_ADDR_ERROR, "an address with no route");
		if (ev)
			vt_check(ev->status < 0, "ADDR_ERROR's status is -errno (%d)", ev->status);
		ack(ev);
	} else {
		vt_fail("rdma_resolve_addr refused at once (%s): the kernel's reports an event",
			strerror(errno));
	}
	rdma_destroy_id(id);
}

static bool same_addr(const struct sockaddr *a, socklen_t alen, const struct sockaddr_in *b)
{
	return a && alen == sizeof(*b) && !memcmp(a, b, sizeof(*b));
}

static void case_bind(struct vt_dev *d)
{
	struct sockaddr_in lo = addr_of("127.0.0.1", (uint16_t)next_port++);
	struct sockaddr_in peer = addr_of("10.1.2.3", 7471), self = addr_of("10.1.2.4", 0);
	struct rdma_addrinfo hints, *res = NULL;
	struct rdma_cm_id *id;
	int r;

	if (!vt_check(!rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), "rdma_create_id"))
		return;
	r = rdma_bind_addr(id, (struct sockaddr *)&lo);
	if (vt_check(!r, "rdma_bind_addr 127.0.0.1%s%s", r ? ": " : "", r ? strerror(errno) : ""))
		vt_check(id->verbs && !strcmp(ibv_get_device_name(id->verbs->device),
					      ibv_get_device_name(d->ctx->device)),
			 "bound to %s, the device that holds 127.0.0.1 (got %s)",
			 ibv_get_device_name(d->ctx->device),
			 id->verbs ? ibv_get_device_name(id->verbs->device) : "none");
	rdma_destroy_id(id);

	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	hints.ai_dst_addr = (struct sockaddr *)&peer;
	hints.ai_dst_len = sizeof(peer);
	r = rdma_getaddrinfo(NULL, NULL, &hints, &res);
	if (vt_check(!r && res, "rdma_getaddrinfo(NULL, NULL, hints with a destination)%s%s",
		     r ? ": " : "", r ? strerror(errno) : "")) {
		vt_check(same_addr(res->ai_dst_addr, res->ai_dst_len, &peer) && !res->ai_src_addr,
			 "it returns the hints' destination, no source");
		vt_check(res->ai_family == AF_INET && res->ai_port_space == RDMA_PS_TCP,
			 "family AF_INET (%d), port space TCP", res->ai_family);
		rdma_freeaddrinfo(res);
	}
	res = NULL;
	hints.ai_src_addr = (struct sockaddr *)&self;
	hints.ai_src_len = sizeof(self);
	r = rdma_getaddrinfo(NULL, NULL, &hints, &res);
	if (vt_check(!r && res, "rdma_getaddrinfo(NULL, NULL, hints with both addresses)%s%s",
		     r ? ": " : "", r ? strerror(errno) : "")) {
		vt_check(same_addr(res->ai_dst_addr, res->ai_dst_len, &peer) &&
			 same_addr(res->ai_src_addr, res->ai_src_len, &self),
			 "it returns both of the hints' addresses");
		rdma_freeaddrinfo(res);
	}
}

static void case_unsupported(struct vt_dev *d)
{
	struct ibv_ece ece = { 0 };
	int r;

	(void)d;
	errno = 0;
	r = rdma_set_local_ece(NULL, &ece);
	vt_check(r == -1 && errno == EOPNOTSUPP, "rdma_set_local_ece: -1/EOPNOTSUPP (%s)",
		 strerror(errno));
	errno = 0;
	r = rdma_get_remote_ece(NULL, &ece);
	vt_check(r == -1 && errno == EOPNOTSUPP, "rdma_get_remote_ece: -1/EOPNOTSUPP (%s)",
		 strerror(errno));
}

static atomic_int reader_errors, reader_errno, reader_in;

/* One rdma_get_cm_event: an event is acked; an error is counted. */
static void *one_reader(void *arg)
{
	struct rdma_event_channel *c = arg;
	struct rdma_cm_event *ev;

	atomic_store(&reader_in, 1);
	if (rdma_get_cm_event(c, &ev)) {
		atomic_store(&reader_errno, errno);
		atomic_fetch_add(&reader_errors, 1);
		return NULL;
	}
	rdma_ack_cm_event(ev);
	return NULL;
}

static void case_teardown(struct vt_dev *d)
{
	struct sockaddr_in dst = addr_of("127.0.0.1", 7471);
	const int rounds = 300;
	int made = 0;

	(void)d;
	for (int i = 0; i < rounds; i++) {
		struct rdma_event_channel *c = rdma_create_event_channel();
		struct rdma_cm_id *id;
		pthread_t t;

		if (!c || rdma_create_id(c, &id, NULL, RDMA_PS_TCP)) {
			vt_fail("round %d: channel or id: %s", i, strerror(errno));
			break;
		}
		if (pthread_create(&t, NULL, one_reader, c)) {
			vt_fail("round %d: pthread_create", i);
			break;
		}
		pthread_detach(t);
		/* The reader asleep in rdma_get_cm_event (as rping's is long
		 * before the end), an event to wake it, then the id (and the
		 * event, if not yet taken) and the channel go at once. */
		while (!atomic_exchange(&reader_in, 0))
			usleep(100);
		usleep(1000);
		rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000);
		rdma_destroy_id(id);
		rdma_destroy_event_channel(c);
		made++;
	}
	usleep(200000);
	vt_check(atomic_load(&reader_errors) == 0,
		 "%d channels destroyed under a reader: %d readers returned an error (%s)", made,
		 atomic_load(&reader_errors), strerror(atomic_load(&reader_errno)));
	/* Late: the channel is gone before the reader comes. */
	made = 0;
	for (int i = 0; i < 50; i++) {
		struct rdma_event_channel *c = rdma_create_event_channel();
		pthread_t t;

		if (!c) {
			vt_fail("late round %d: channel: %s", i, strerror(errno));
			break;
		}
		rdma_destroy_event_channel(c);
		if (pthread_create(&t, NULL, one_reader, c)) {
			vt_fail("late round %d: pthread_create", i);
			break;
		}
		pthread_detach(t);
		made++;
	}
	usleep(200000);
	vt_check(atomic_load(&reader_errors) == 0,
		 "%d readers come after their channel was destroyed: %d returned an error (%s)",
		 made, atomic_load(&reader_errors), strerror(atomic_load(&reader_errno)));
}

static const struct vt_case cases[] = {
	{ "channel", case_channel },
	{ "privdata", case_privdata },
	{ "reject", case_reject },
	{ "backlog", case_backlog },
	{ "addr", case_addr },
	{ "bind", case_bind },
	{ "unsupported", case_unsupported },
	{ "teardown", case_teardown },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return cm_main(argc, argv, cases, &ch);
}
