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
 * against a device (host_lost), not only in the transport.  And the
 * port-4791 owner hands packets on in batches on a socket that pushes
 * back: a burst to a busy process arrives whole, and what a process that
 * does not read makes it keep is bounded, the rest counted lost.  And a
 * port handed on by an exiting process is taken only as what it says it
 * is; whatever else came with descriptors has them closed, and one from a
 * process with another number of receive contexts is refused as such.  And
 * the lock file names the router and the process it chose to take the
 * port after it, and reads an older process's record. */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
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
	ur_udp_hand_on(u, u->rx[0], 0x3ffffff0, pkt, sizeof(pkt), &ip, 0, 64);
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

/* A process of the host that reads nothing for a while: a stand-in bound
 * to the abstract name of a pid no process has. */
static int fake_process(pid_t pid)
{
	struct sockaddr_un sun;
	socklen_t len = ur_udp_fwd_addr(&sun, pid);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd >= 0 && bind(fd, (struct sockaddr *)&sun, len)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Reads every datagram waiting on fd; returns the packets they carry. */
static unsigned packets_waiting(int fd)
{
	static uint8_t buf[UR_UDP_BUF + sizeof(struct ur_fwd_hdr)];
	unsigned pkts = 0;
	ssize_t n;

	while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		struct ur_fwd_hdr h;

		memcpy(&h, buf, sizeof(h));
		n -= (ssize_t)sizeof(h);
		pkts += h.seg ? (unsigned)((n + h.seg - 1) / h.seg) : 1;
	}
	return pkts;
}

/* Hands on npkts packets for pid as the router's receive rounds would:
 * eight a round, what a round staged sent at its end. */
static void hand_on_rounds(struct ur_udp *u, pid_t pid, unsigned npkts)
{
	struct ur_roce_ip ip = { .family = AF_INET, .sport = 49153, .dport = 4791 };
	static uint8_t pkt[1024 + 28];

	ip.v4.saddr.s_addr = htonl(0x7f000002);
	ip.v4.daddr.s_addr = htonl(0x7f000001);
	for (unsigned i = 0; i < npkts; i++) {
		ur_udp_hand_on(u, u->rx[0], pid, pkt, sizeof(pkt), &ip, 0, 64);
		if (i % UR_UDP_BATCH == UR_UDP_BATCH - 1)
			ur_udp_hand_on_flush(u, u->rx[0]);
	}
	ur_udp_hand_on_flush(u, u->rx[0]);
}

/* The process reads, the router's sockets drain, until npkts are in or
 * nothing more comes; returns how many came. */
static unsigned read_all(struct ur_udp *u, int fd, unsigned npkts)
{
	unsigned got_pkts = 0;

	for (int idle = 0; idle < 3 && got_pkts < npkts;) {
		unsigned n = packets_waiting(fd);

		got_pkts += n;
		idle = n ? 0 : idle + 1;
		ur_udp_flush_pending(u);
	}
	return got_pkts;
}

/* The port-4791 owner hands four 64-packet messages to a process that is
 * busy: every packet arrives, none is lost to the receiving socket's
 * 10-datagram queue; what it has no room for waits until it reads.
 * (Seen: each packet handed on alone, the same tail was lost on every
 * resend and an RC pair between namespaces ended in RETRY_EXC_ERR.) */
static void test_hand_on_burst_lossless(void)
{
	struct ur_udp *u = container_of(x, struct ur_udp, xport);
	pid_t pid = 0x3ffffff1;
	int fd = fake_process(pid);
	uint64_t lost0 = u->stats.lost, fwd0 = u->stats.forwarded;
	unsigned lost_dev0 = host_lost;

	UT_CHECK(fd >= 0);
	if (fd < 0)
		return;
	hand_on_rounds(u, pid, 4 * 64);
	UT_EQ(read_all(u, fd, 4 * 64), 4 * 64);
	UT_EQ(u->stats.lost, lost0);
	UT_EQ(host_lost, lost_dev0);
	UT_EQ(u->stats.forwarded, fwd0 + 4 * 64);
	close(fd);
}

/* A process that does not read: the router keeps at most
 * UR_HANDON_KEEP_PKTS for it, counts the rest lost against the device
 * they were for, and what it kept arrives once the process reads. */
static void test_hand_on_kept_bounded(void)
{
	struct ur_udp *u = container_of(x, struct ur_udp, xport);
	pid_t pid = 0x3ffffff2;
	int fd = fake_process(pid);
	unsigned total = UR_HANDON_KEEP_PKTS + 512, got_pkts, lost;
	uint64_t lost0 = u->stats.lost;
	unsigned lost_dev0 = host_lost;
	struct ur_udp_sock *s;
	union ibv_gid want;

	UT_CHECK(fd >= 0);
	if (fd < 0)
		return;
	hand_on_rounds(u, pid, total);
	s = ur_udp_peer_sock(u, pid);
	UT_CHECK(s && s->pending_pkts <= UR_HANDON_KEEP_PKTS);
	lost = (unsigned)(u->stats.lost - lost0);
	UT_CHECK(lost > 0);
	UT_EQ(host_lost - lost_dev0, lost);
	ur_gid_from_v4(&want, (struct in_addr){ htonl(0x7f000001) });
	UT_CHECK(!memcmp(&lost_gid, &want, sizeof(want)));   /* the receiver's device */
	got_pkts = read_all(u, fd, total);
	UT_EQ(got_pkts + lost, total);     /* each packet arrived or was counted */
	UT_CHECK(s && !ur_udp_has_pending(s) && s->pending_pkts == 0);
	close(fd);
}

/* A datagram from the network unread in one of this process's UDP
 * sockets: the process is behind what comes (UR_BEHIND_RX), and once it
 * is read, not.  (A program busy with the other receive contexts'
 * completions left context 0's answers unread, megabytes of them, and
 * its QPs counted retries for them until RETRY_EXC_ERR.) */
static void test_behind_on_unread_network(void)
{
	struct ur_udp *u = container_of(x, struct ur_udp, xport);
	struct sockaddr_in to;
	socklen_t len = sizeof(to);
	uint8_t d[32] = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	UT_CHECK(fd >= 0 && u->own4.fd >= 0);
	if (fd < 0 || u->own4.fd < 0)
		return;
	UT_EQ(ur_udp_peer_behind(x), UR_BEHIND_NONE);
	UT_EQ(getsockname(u->own4.fd, (struct sockaddr *)&to, &len), 0);
	to.sin_addr.s_addr = htonl(0x7f000001);
	UT_EQ(sendto(fd, d, sizeof(d), 0, (struct sockaddr *)&to, sizeof(to)), (ssize_t)sizeof(d));
	UT_CHECK(readable(u->own4.fd) || poll(&(struct pollfd){ u->own4.fd, POLLIN, 0 }, 1, 1000) == 1);
	UT_EQ(ur_udp_peer_behind(x), UR_BEHIND_RX);
	while (recv(u->own4.fd, d, sizeof(d), MSG_DONTWAIT) > 0)
		;
	UT_EQ(ur_udp_peer_behind(x), UR_BEHIND_NONE);
	close(fd);
}

/* Port 4791 handed on by an exiting process (udp_port_pass.c): a
 * descriptor is taken as the port's socket only if it is one. */
static void test_adopt_checks_the_socket(void)
{
	struct ur_udp *u = container_of(x, struct ur_udp, xport);
	struct ur_udp_sock s = { .fd = -1 };
	int p[2], fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	UT_EQ(pipe(p), 0);
	UT_EQ(ur_udp_adopt_sock(&s, u, AF_INET, p[0]), -EINVAL);       /* not a socket */
	UT_EQ(ur_udp_adopt_sock(&s, u, AF_INET, fd), -EINVAL);         /* not bound to 4791 */
	UT_EQ(ur_udp_adopt_sock(&s, u, AF_INET6, u->own4.fd), -EINVAL); /* not the family said */
	UT_EQ(s.fd, -1);
	close(p[0]);
	close(p[1]);
	close(fd);
}

/* A message on our unix socket that carries descriptors: a port handed on
 * that is not what it says (its "sockets" a pipe, or fewer than it
 * counts), or another kind of message: every descriptor it brought is
 * closed, the receive contexts are as they were, and a message that is
 * not a port's is counted malformed and not delivered. */
static void send_with_fds(uint8_t kind, uint32_t n4, const int *fds, unsigned nfds)
{
	union {
		struct cmsghdr align;
		uint8_t buf[CMSG_SPACE(4 * sizeof(int))];
	} ctrl = { 0 };
	struct ur_fwd_hdr h;
	struct ur_fwd_port port = { .n4 = n4, .pid = getpid() };
	struct iovec iov[2] = { { &h, sizeof(h) }, { &port, sizeof(port) } };
	struct sockaddr_un sun;
	struct msghdr msg = { .msg_name = &sun, .msg_iov = iov, .msg_iovlen = 2,
			      .msg_control = ctrl.buf, .msg_controllen = CMSG_SPACE(nfds * sizeof(int)) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	ur_udp_fwd_hdr_msg(&h);
	h.kind = kind;
	msg.msg_namelen = ur_udp_fwd_addr(&sun, getpid());
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
	memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	UT_EQ(sendmsg(fd, &msg, 0), (ssize_t)(sizeof(h) + sizeof(port)));
	close(fd);
}

static void test_port_take_refuses(void)
{
	struct ur_udp *u = container_of(x, struct ur_udp, xport);
	int was4 = u->rx[0]->roce4.fd;
	bool was_router = u->router;
	struct {
		uint8_t kind;
		uint32_t n4;
		unsigned nfds;
		bool malformed;
	} cases[] = {
		{ UR_FWD_PORT, 1, 2, false },   /* the lock and a "socket": a pipe */
		{ UR_FWD_PORT, 2, 2, false },   /* counts two sockets, brings one */
		{ UR_FWD_MSG, 0, 2, true },     /* a message has no descriptors */
	};

	signal(SIGPIPE, SIG_IGN);
	for (unsigned i = 0; i < UR_ARRAY_SIZE(cases); i++) {
		uint64_t bad = u->stats.malformed;
		unsigned msgs = got;
		int p[2], fds[2];

		UT_EQ(pipe(p), 0);
		fds[0] = fds[1] = p[0];
		send_with_fds(cases[i].kind, cases[i].n4, fds, cases[i].nfds);
		close(p[0]);
		ur_udp_on_fwd_readable(u, EPOLLIN);
		/* No reader left: every copy that came was closed. */
		UT_CHECK(write(p[1], "x", 1) < 0 && errno == EPIPE);
		UT_EQ(u->rx[0]->roce4.fd, was4);
		UT_EQ(u->router, was_router);
		UT_EQ(got, msgs);
		UT_EQ(u->stats.malformed, bad + (cases[i].malformed ? 1 : 0));
		close(p[1]);
	}
}

/* A port message is checked before any descriptor is used: one from a
 * process with another number of receive contexts (UROCE_RX_THREADS) is
 * refused for that reason, however well formed. */
static void test_port_check_contexts(void)
{
	struct ur_udp *u = container_of(x, struct ur_udp, xport);
	uint8_t buf[sizeof(struct ur_fwd_hdr) + sizeof(struct ur_fwd_port)];
	struct ur_fwd_hdr h;
	struct ur_fwd_port port, seen;
	const char *why;

	ur_udp_fwd_hdr_msg(&h);
	h.kind = UR_FWD_PORT;
	memcpy(buf, &h, sizeof(h));
	port = (struct ur_fwd_port){ .n4 = u->nrx, .pid = getpid() };
	memcpy(buf + sizeof(h), &port, sizeof(port));
	UT_CHECK(ur_udp_port_check(u, buf, sizeof(buf), 1 + port.n4, &seen) == NULL);
	UT_EQ(seen.n4, u->nrx);
	UT_CHECK(ur_udp_port_check(u, buf, sizeof(buf), 2 + port.n4, &seen) != NULL);

	port.n4 = u->nrx + 1;                       /* more contexts than ours */
	memcpy(buf + sizeof(h), &port, sizeof(port));
	why = ur_udp_port_check(u, buf, sizeof(buf), 1 + port.n4, &seen);
	UT_CHECK(why && strstr(why, "UROCE_RX_THREADS"));

	port.n4 = u->nrx;                           /* IPv6 sockets in another number */
	port.n6 = u->nrx + 1;
	memcpy(buf + sizeof(h), &port, sizeof(port));
	why = ur_udp_port_check(u, buf, sizeof(buf), 1 + port.n4 + port.n6, &seen);
	UT_CHECK(why && strstr(why, "UROCE_RX_THREADS"));
}

/* The lock file's record (udp_lock_file.c): this process and its taker,
 * read back as written; an older process's "PID" reads as a router that
 * names no taker; an empty file names nobody. */
static void test_lock_record(void)
{
	struct ur_udp *u = container_of(x, struct ur_udp, xport);
	pid_t router, taker;

	UT_CHECK(u->router_lock_fd >= 0);
	UT_EQ(ur_udp_lock_record(u, 4242), 0);
	ur_udp_lock_read(u, &router, &taker);
	UT_EQ(router, getpid());
	UT_EQ(taker, 4242);

	UT_EQ(ftruncate(u->router_lock_fd, 0), 0);
	UT_EQ(pwrite(u->router_lock_fd, "777\n", 4, 0), 4);
	ur_udp_lock_read(u, &router, &taker);
	UT_EQ(router, 777);
	UT_EQ(taker, 0);

	UT_EQ(ftruncate(u->router_lock_fd, 0), 0);
	ur_udp_lock_read(u, &router, &taker);
	UT_EQ(router, 0);
	UT_EQ(taker, 0);

	UT_EQ(ur_udp_lock_record(u, 0), 0);         /* as the router wrote it */
	ur_udp_lock_read(u, &router, &taker);
	UT_EQ(router, getpid());
	UT_EQ(taker, 0);
}

int main(void)
{
	ut_env_init("ut0:lo");
	UT_RUN(test_fwd_read_bounded);       /* makes the transport */
	UT_RUN(test_behind_on_unread_network);
	UT_RUN(test_host_lost_counted);
	UT_RUN(test_hand_on_burst_lossless);
	UT_RUN(test_hand_on_kept_bounded);
	UT_RUN(test_adopt_checks_the_socket);
	UT_RUN(test_port_take_refuses);
	UT_RUN(test_port_check_contexts);
	UT_RUN(test_lock_record);
	return UT_DONE();
}
