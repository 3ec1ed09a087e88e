/* The UDP transport's receive callbacks take a bounded share of the
 * reactor: one readable callback on the unix socket reads one batch of
 * datagrams, however many wait, and returns; the socket, level-triggered,
 * stays readable and the next callback takes the rest.  A callback that
 * read until the socket was empty held the reactor for as long as a peer
 * kept it full (1.2 s under ThreadSanitizer), and the EPOLLOUT that resumes
 * QPs stopped by a full transport, and every timer, waited behind it.
 * And peer_behind says whether datagrams to or from a local peer wait
 * unread (the requester's timer does not count that as silence). */
#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "ut.h"
#include "ut_env.h"
#include "engine/engine.h"
#include "xport/udp/udp_priv.h"

static unsigned got;
/* A transport lives as long as its process (it has no close): kept here,
 * reachable, as a stack keeps it, so LeakSanitizer does not count it. */
static struct ur_engine *e;
/* The transport's view of the host registry: its own, handed to it as the
 * stack hands it the process's. */
static struct ur_registry reg = UR_REGISTRY_INIT;
static struct ur_xport *x;

static void on_local_msg(void *arg, const uint8_t *msg, size_t len)
{
	(void)arg, (void)msg, (void)len;
	got++;
}

static void on_rx(void *arg, const uint8_t *pkt, size_t len, const struct ur_rx_meta *meta)
{
	(void)arg, (void)pkt, (void)len, (void)meta;
}

static void on_writable(void *arg)
{
	(void)arg;
}

static bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void test_fwd_read_bounded(void)
{
	struct ur_xport_hooks h = { .rx = on_rx, .local_msg = on_local_msg,
				    .writable = on_writable };
	struct ur_udp *u;
	char m[16] = "one message";
	struct iovec iov = { m, sizeof(m) };
	unsigned sent = 0, calls = 0;

	UT_EQ(ur_registry_attach(&reg), 0);
	UT_EQ(ur_engine_create(UR_ENGINE_NO_THREAD, "ut", &e), 0);
	UT_EQ(ur_udp_open(e, &reg, &h, &x), 0);
	if (ut_failures)
		return;
	u = container_of(x, struct ur_udp, xport);
	/* To ourselves, until our socket's queue is full. */
	while (sent < 4 * UR_UDP_BATCH && ur_udp_local_msg(x, getpid(), &iov, 1) == 0)
		sent++;
	UT_CHECK(sent > UR_UDP_BATCH * UR_FWD_RX_ROUNDS);
	UT_EQ(ur_udp_peer_behind(x), UR_BEHIND_SELF);  /* unread, both ways (ourselves) */
	ur_udp_on_fwd_readable(u, EPOLLIN);
	UT_EQ(got, UR_UDP_BATCH * UR_FWD_RX_ROUNDS);
	UT_CHECK(readable(u->fwd_fd));    /* the rest is announced again */
	while (got < sent && calls++ < sent)
		ur_udp_on_fwd_readable(u, EPOLLIN);
	UT_EQ(got, sent);
	UT_CHECK(!readable(u->fwd_fd));
	UT_EQ(ur_udp_peer_behind(x), UR_BEHIND_NONE);  /* all read: nobody is behind */
}

int main(void)
{
	ut_env_init("ut0:lo");
	UT_RUN(test_fwd_read_bounded);
	return UT_DONE();
}
