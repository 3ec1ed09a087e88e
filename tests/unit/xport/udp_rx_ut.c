/* The UDP transport's receive callbacks take a bounded share of the
 * reactor: one readable callback on the unix socket reads one batch of
 * datagrams, however many wait, and returns; the socket, level-triggered,
 * stays readable and the next callback takes the rest.  A callback that
 * read until the socket was empty held the reactor for as long as a peer
 * kept it full (1.2 s under ThreadSanitizer), and the EPOLLOUT that resumes
 * QPs stopped by a full transport, and every timer, waited behind it.
 * And peer_behind says whether datagrams to or from a local peer wait
 * unread (the requester's timer does not count that as silence); and a
 * packet lost between processes of the host (forwarded to a process that
 * has gone, or kept for a full peer when the process exits) is counted
 * against a device (host_lost), not only in the transport. */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "ut.h"
#include "ut_env.h"
#include "engine/engine.h"
#include "wire/gid.h"
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

static unsigned host_lost;
static union ibv_gid lost_gid;

static void on_dropped(void *arg, enum ur_xport_drop why, const union ibv_gid *gid)
{
	(void)arg;
	if (why == UR_XPORT_DROP_HOST_LOST && gid) {
		host_lost++;
		lost_gid = *gid;
	}
}

static bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void test_fwd_read_bounded(void)
{
	struct ur_xport_hooks h = { .rx = on_rx, .local_msg = on_local_msg,
				    .writable = on_writable, .dropped = on_dropped };
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

/* A packet the router hands to a process that has gone, and batches kept
 * for a full peer that will not leave: each packet counted lost in the
 * transport and against a device, the receiver's where known. */
static void test_host_lost_counted(void)
{
	struct ur_udp *u = container_of(x, struct ur_udp, xport);
	struct ur_roce_ip ip = { .family = AF_INET, .sport = 49152, .dport = 4791 };
	static struct tx_batch b;
	uint8_t pkt[64] = { 0 };
	uint64_t lost0 = u->stats.lost;
	union ibv_gid want;

	ip.v4.saddr.s_addr = htonl(0x7f000002);
	ip.v4.daddr.s_addr = htonl(0x7f000001);
	/* No process answers on this pid's socket. */
	ur_udp_forward_to(u, 0x3ffffff0, pkt, sizeof(pkt), &ip, 0, 64);
	UT_EQ(host_lost, 1);
	UT_EQ(u->stats.lost, lost0 + 1);
	ur_gid_from_v4(&want, ip.v4.daddr);
	UT_CHECK(!memcmp(&lost_gid, &want, sizeof(want)));    /* the receiver's device */
	/* Three packets kept for a peer, dropped (as at exit): the sender's. */
	b.d.family = AF_INET;
	b.d.src.v4.s_addr = htonl(0x7f000003);
	b.d.sock = &u->own4;
	b.nseg = 3;
	UT_EQ(ur_udp_park(u, &b), -EAGAIN);
	UT_CHECK(ur_udp_has_pending(&u->own4));
	UT_EQ(ur_udp_drop_pending(u, &u->own4), 3);
	UT_CHECK(!ur_udp_has_pending(&u->own4));
	UT_EQ(host_lost, 4);
	UT_EQ(u->stats.lost, lost0 + 4);
	ur_gid_from_v4(&want, b.d.src.v4);
	UT_CHECK(!memcmp(&lost_gid, &want, sizeof(want)));
	ur_udp_sock_arm(&u->own4, false);
}

int main(void)
{
	ut_env_init("ut0:lo");
	UT_RUN(test_fwd_read_bounded);
	UT_RUN(test_host_lost_counted);
	return UT_DONE();
}
