/* Datagram rsockets' contract where udpong does not reach it: both ends in
 * this one process, on 127.0.0.1 (and ::1), through uroce's UD QPs and the
 * UDP side channel.
 *  - sizes:    ping-pong of 0 B to the largest datagram (2032 B), each byte
 *              checked, the source address each side reads being the
 *              other's bound address; one byte more is EMSGSIZE;
 *  - connected: rconnect, then rsend/rrecv; rgetpeername names the peer;
 *              an unconnected socket's rsend is EDESTADDRREQ;
 *  - nonblock: rrecv with MSG_DONTWAIT and on a SOCK_NONBLOCK socket with
 *              nothing there is EAGAIN; rpoll with timeout 0 says 0 (POLLOUT
 *              only for POLLOUT), then POLLIN once a datagram came; a
 *              thread blocked in rrecvfrom wakes for one;
 *  - peek:     MSG_PEEK leaves the datagram; a short buffer truncates it,
 *              MSG_TRUNC returns its whole length;
 *  - wire:     a plain UDP socket speaking the protocol by hand: its first
 *              datagram (a UDP header naming a QP, then bytes) is read by
 *              rrecvfrom with the plain socket's address, and the rsocket
 *              answers on UDP with its own header (the tag, version 4, op
 *              control, length 16, a QP number, 127.0.0.1);
 *  - garbage:  UDP datagrams without an rsocket header (too short, a wrong
 *              tag, a wrong length) are dropped: nothing to read, and the
 *              socket still carries datagrams;
 *  - ipv6:     the ping-pong over ::1;
 *  - errors:   EOPNOTSUPP for rlisten, raccept, rshutdown and riomap;
 *              EAFNOSUPPORT for an IPv6 destination of an IPv4 socket;
 *              EINVAL for a short address; EPROTONOSUPPORT for
 *              SOCK_DGRAM with IPPROTO_TCP.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <rdma/rsocket.h>

#include "vt.h"

#define MAX_V4 2032   /* RS_SNDLOWAT less the UDP side channel's header */

static int next_port = 18700;

static struct sockaddr_in sin_of(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* A datagram rsocket bound to 127.0.0.1 (its port in *port). */
static int bound(int *port, int type_flags)
{
	int s = rsocket(AF_INET, SOCK_DGRAM | type_flags, 0);
	struct sockaddr_in a;

	if (s < 0) {
		vt_fail("rsocket(SOCK_DGRAM): %s", strerror(errno));
		return -1;
	}
	*port = next_port++;
	a = sin_of(*port);
	if (rbind(s, (struct sockaddr *)&a, sizeof(a))) {
		vt_fail("rbind(127.0.0.1:%d): %s", *port, strerror(errno));
		rclose(s);
		return -1;
	}
	return s;
}

/* Waits (rpoll, up to 5 s) for a datagram on s. */
static bool readable(int s, int ms)
{
	struct pollfd p = { .fd = s, .events = POLLIN };

	return rpoll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

static bool same_addr(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
	return a->sin_family == b->sin_family && a->sin_port == b->sin_port &&
	       a->sin_addr.s_addr == b->sin_addr.s_addr;
}

/* len bytes (pattern seed) from s to d, read back at d: the bytes and the
 * source address (s_port's) checked. */
static bool one_way(int s, int d, int s_port, int d_port, size_t len, uint8_t seed)
{
	static uint8_t out[4096], in[4096];
	struct sockaddr_in to = sin_of(d_port), from, want = sin_of(s_port);
	socklen_t flen = sizeof(from);
	ssize_t n;

	for (size_t i = 0; i < len; i++)
		out[i] = vt_pattern(seed, i);
	n = rsendto(s, out, len, 0, (struct sockaddr *)&to, sizeof(to));
	if (n != (ssize_t)len)
		return vt_check(false, "rsendto %zu B: %zd (%s)", len, n, strerror(errno));
	if (!readable(d, 5000))
		return vt_check(false, "a datagram of %zu B arrives within 5 s", len);
	memset(in, 0, sizeof(in));
	n = rrecvfrom(d, in, sizeof(in), 0, (struct sockaddr *)&from, &flen);
	if (n != (ssize_t)len || memcmp(in, out, len) || flen != sizeof(from) || !same_addr(&from, &want))
		return vt_check(false, "rrecvfrom %zu B: got %zd B, %s, from port %u", len, n,
				n == (ssize_t)len && !memcmp(in, out, len) ? "same bytes" : "other bytes",
				ntohs(from.sin_port));
	return true;
}

static void case_sizes(struct vt_dev *d)
{
	static const size_t sizes[] = { 0, 1, 7, 8, 100, 1000, 1024, 2000, MAX_V4 };
	static uint8_t big[MAX_V4 + 1];
	struct sockaddr_in to;
	int a, b, pa, pb, bad = 0;

	(void)d;
	if ((a = bound(&pa, 0)) < 0 || (b = bound(&pb, 0)) < 0)
		return;
	for (int round = 0; round < 3; round++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			bad += !one_way(a, b, pa, pb, sizes[i], (uint8_t)(i + round));
			bad += !one_way(b, a, pb, pa, sizes[i], (uint8_t)(i + 7 * round));
		}
	vt_check(!bad, "3 rounds of datagrams of 0 B to %d B both ways: bytes and sources",
		 MAX_V4);
	to = sin_of(pb);
	VT_EXPECT_ERRNO(rsendto(a, big, sizeof(big), 0, (struct sockaddr *)&to, sizeof(to)), EMSGSIZE,
		  "a datagram of 2033 B");
	rclose(a);
	rclose(b);
}

static void case_connected(struct vt_dev *d)
{
	struct sockaddr_in to, peer;
	socklen_t plen = sizeof(peer);
	char buf[16];
	int a, b, pa, pb;

	(void)d;
	if ((a = bound(&pa, 0)) < 0 || (b = bound(&pb, 0)) < 0)
		return;
	VT_EXPECT_ERRNO(rsend(a, "x", 1, 0), EDESTADDRREQ, "rsend on an unconnected socket");
	to = sin_of(pb);
	vt_check(rconnect(a, (struct sockaddr *)&to, sizeof(to)) == 0, "rconnect: 0");
	vt_check(rgetpeername(a, (struct sockaddr *)&peer, &plen) == 0 && same_addr(&peer, &to),
		 "rgetpeername names the peer");
	for (int i = 0; i < 50; i++) {
		struct sockaddr_in back = sin_of(pa);

		if (rsend(a, "ping", 5, 0) != 5 || !readable(b, 5000) ||
		    rrecv(b, buf, sizeof(buf), 0) != 5 || strcmp(buf, "ping") ||
		    rsendto(b, "pong", 5, 0, (struct sockaddr *)&back, sizeof(back)) != 5 ||
		    !readable(a, 5000) || rrecv(a, buf, sizeof(buf), 0) != 5 || strcmp(buf, "pong")) {
			vt_fail("connected ping-pong %d: %s", i, strerror(errno));
			break;
		}
		if (i == 49)
			vt_ok("50 connected rsend/rrecv ping-pongs");
	}
	rclose(a);
	rclose(b);
}

static void *blocked_recv(void *arg)
{
	int s = *(int *)arg;
	char buf[8];

	return (void *)(intptr_t)rrecvfrom(s, buf, sizeof(buf), 0, NULL, NULL);
}

static void case_nonblock(struct vt_dev *d)
{
	struct pollfd p;
	struct sockaddr_in to;
	pthread_t t;
	void *got;
	char buf[8];
	int a, b, pa, pb, n;

	(void)d;
	if ((a = bound(&pa, 0)) < 0 || (b = bound(&pb, SOCK_NONBLOCK)) < 0)
		return;
	VT_EXPECT_ERRNO(rrecv(a, buf, sizeof(buf), MSG_DONTWAIT), EAGAIN, "rrecv(MSG_DONTWAIT), nothing there");
	VT_EXPECT_ERRNO(rrecv(b, buf, sizeof(buf), 0), EAGAIN, "rrecv on SOCK_NONBLOCK, nothing there");
	p = (struct pollfd){ .fd = b, .events = POLLIN | POLLOUT };
	n = rpoll(&p, 1, 0);
	vt_check(n == 1 && p.revents == POLLOUT, "rpoll(0): POLLOUT alone (%d, %#x)", n, p.revents);
	p.events = POLLIN;
	vt_check(rpoll(&p, 1, 0) == 0, "rpoll(POLLIN, 0): 0");
	to = sin_of(pb);
	rsendto(a, "hello", 6, 0, (struct sockaddr *)&to, sizeof(to));
	vt_check(readable(b, 5000), "rpoll: POLLIN once a datagram came");
	vt_check(rrecv(b, buf, sizeof(buf), 0) == 6 && !strcmp(buf, "hello"),
		 "the non-blocking socket reads it");

	pthread_create(&t, NULL, blocked_recv, &a);
	vt_sleep(0.3);   /* asleep in rrecvfrom by now */
	to = sin_of(pa);
	rsendto(b, "wake", 5, 0, (struct sockaddr *)&to, sizeof(to));
	pthread_join(t, &got);
	vt_check((intptr_t)got == 5, "a thread blocked in rrecvfrom wakes for a datagram (%ld)",
		 (long)(intptr_t)got);
	rclose(a);
	rclose(b);
}

static void case_peek(struct vt_dev *d)
{
	struct sockaddr_in to;
	char buf[32];
	int a, b, pa, pb;

	(void)d;
	if ((a = bound(&pa, 0)) < 0 || (b = bound(&pb, 0)) < 0)
		return;
	to = sin_of(pb);
	for (int i = 0; i < 2; i++)
		rsendto(a, "0123456789", 10, 0, (struct sockaddr *)&to, sizeof(to));
	vt_check(readable(b, 5000), "two datagrams sent");
	vt_check(rrecv(b, buf, sizeof(buf), MSG_PEEK) == 10 && !memcmp(buf, "0123456789", 10),
		 "MSG_PEEK reads the first");
	vt_check(rrecv(b, buf, 4, 0) == 4 && !memcmp(buf, "0123", 4),
		 "then a 4-byte buffer takes its first 4 bytes, the rest is gone");
	while (!readable(b, 5000))
		;
	vt_check(rrecv(b, buf, 4, MSG_TRUNC) == 10, "MSG_TRUNC returns the second's whole length");
	vt_check(!readable(b, 200), "nothing more to read");
	rclose(a);
	rclose(b);
}

/* The protocol by hand from a plain UDP socket (rdma-core's ds_udp_header:
 * tag, version, op, length, reserved, QPN, address). */
static void case_wire(struct vt_dev *d)
{
	uint8_t msg[16 + 5] = { 0x55, 0x55, 0x55, 0x55, 4, 0 /* data */, 16, 0,
				0x00, 0xab, 0xcd, 0xef, 127, 0, 0, 1, 'h', 'e', 'l', 'l', 'o' };
	struct sockaddr_in to, from, mine;
	socklen_t flen = sizeof(from), mlen = sizeof(mine);
	struct pollfd p;
	uint8_t ans[64];
	char buf[16];
	int b, pb, u;
	ssize_t n;

	(void)d;
	if ((b = bound(&pb, 0)) < 0)
		return;
	u = socket(AF_INET, SOCK_DGRAM, 0);
	mine = sin_of(0);
	bind(u, (struct sockaddr *)&mine, sizeof(mine));
	getsockname(u, (struct sockaddr *)&mine, &mlen);
	to = sin_of(pb);
	sendto(u, msg, sizeof(msg), 0, (struct sockaddr *)&to, sizeof(to));
	vt_check(readable(b, 5000), "a datagram by UDP with an rsocket header arrives");
	n = rrecvfrom(b, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen);
	vt_check(n == 5 && !memcmp(buf, "hello", 5) && same_addr(&from, &mine),
		 "rrecvfrom: its 5 bytes, from the plain socket's address (%zd)", n);
	p = (struct pollfd){ .fd = u, .events = POLLIN };
	n = poll(&p, 1, 5000) == 1 ? recv(u, ans, sizeof(ans), 0) : -1;
	vt_check(n == 16 && ans[0] == 0x55 && ans[1] == 0x55 && ans[2] == 0x55 && ans[3] == 0x55 &&
		 ans[4] == 4 && ans[5] == 7 && ans[6] == 16 && ans[7] == 0 &&
		 (ans[9] | ans[10] | ans[11]) && ans[12] == 127 && ans[15] == 1,
		 "the answer on UDP: tag, version 4, op control, length 16, our QPN %06x, 127.0.0.1",
		 n >= 12 ? (unsigned)(ans[9] << 16 | ans[10] << 8 | ans[11]) : 0);
	close(u);
	rclose(b);
}

static void case_garbage(struct vt_dev *d)
{
	uint8_t junk[3][20] = {
		{ 1, 2, 3 },
		{ 0x55, 0x55, 0x55, 0x54, 4, 0, 16, 0, 0, 0, 0, 1, 127, 0, 0, 1, 'x' },
		{ 0x55, 0x55, 0x55, 0x55, 4, 0, 28, 0, 0, 0, 0, 1, 127, 0, 0, 1, 'x' },
	};
	const size_t len[3] = { 3, 17, 17 };
	struct sockaddr_in to;
	int a, b, pa, pb, u;

	(void)d;
	if ((a = bound(&pa, 0)) < 0 || (b = bound(&pb, 0)) < 0)
		return;
	u = socket(AF_INET, SOCK_DGRAM, 0);
	to = sin_of(pb);
	for (int i = 0; i < 3; i++)
		sendto(u, junk[i], len[i], 0, (struct sockaddr *)&to, sizeof(to));
	vt_check(!readable(b, 300), "3 UDP datagrams without a good rsocket header: nothing to read");
	vt_check(one_way(a, b, pa, pb, 64, 9) && one_way(b, a, pb, pa, 64, 10),
		 "the socket still carries datagrams both ways");
	close(u);
	rclose(a);
	rclose(b);
}

static void case_ipv6(struct vt_dev *d)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr_in6 sb = sa, from;
	socklen_t flen = sizeof(from);
	char buf[64];
	int a, b, ok = 1;

	(void)d;
	a = rsocket(AF_INET6, SOCK_DGRAM, 0);
	b = rsocket(AF_INET6, SOCK_DGRAM, 0);
	sa.sin6_port = htons((uint16_t)next_port++);
	sb.sin6_port = htons((uint16_t)next_port++);
	if (rbind(a, (struct sockaddr *)&sa, sizeof(sa)) || rbind(b, (struct sockaddr *)&sb, sizeof(sb))) {
		vt_fail("rbind ::1: %s", strerror(errno));
		goto out;
	}
	for (int i = 0; i < 20 && ok; i++) {
		ok = rsendto(a, "six", 4, 0, (struct sockaddr *)&sb, sizeof(sb)) == 4 &&
		     readable(b, 5000) &&
		     rrecvfrom(b, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen) == 4 &&
		     !strcmp(buf, "six") && from.sin6_port == sa.sin6_port &&
		     rsendto(b, "back", 5, 0, (struct sockaddr *)&from, flen) == 5 && readable(a, 5000) &&
		     rrecv(a, buf, sizeof(buf), 0) == 5 && !strcmp(buf, "back");
	}
	vt_check(ok, "20 ping-pongs over ::1, the source port the sender's");
out:
	rclose(a);
	rclose(b);
}

static void case_errors(struct vt_dev *d)
{
	struct sockaddr_in6 six = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT,
				    .sin6_port = htons(9) };
	struct sockaddr_in to = sin_of(9);
	char buf[64];
	int a, pa;

	(void)d;
	VT_EXPECT_ERRNO(rsocket(AF_INET, SOCK_DGRAM, IPPROTO_TCP), EPROTONOSUPPORT,
		  "rsocket(SOCK_DGRAM, IPPROTO_TCP)");
	if ((a = bound(&pa, 0)) < 0)
		return;
	VT_EXPECT_ERRNO(rlisten(a, 1), EOPNOTSUPP, "rlisten on a datagram socket");
	VT_EXPECT_ERRNO(raccept(a, NULL, NULL), EOPNOTSUPP, "raccept on a datagram socket");
	VT_EXPECT_ERRNO(rshutdown(a, SHUT_RDWR), EOPNOTSUPP, "rshutdown on a datagram socket");
	VT_EXPECT_ERRNO(riomap(a, buf, sizeof(buf), PROT_WRITE, 0, -1), EOPNOTSUPP,
		  "riomap on a datagram socket");
	VT_EXPECT_ERRNO(rsendto(a, "x", 1, 0, (struct sockaddr *)&six, sizeof(six)), EAFNOSUPPORT,
		  "an IPv6 destination of an IPv4 socket");
	VT_EXPECT_ERRNO(rsendto(a, "x", 1, 0, (struct sockaddr *)&to, 4), EINVAL, "a 4-byte address");
	rclose(a);
}

static const struct vt_case cases[] = {
	{ "sizes", case_sizes },
	{ "connected", case_connected },
	{ "nonblock", case_nonblock },
	{ "peek", case_peek },
	{ "wire", case_wire },
	{ "garbage", case_garbage },
	{ "ipv6", case_ipv6 },
	{ "errors", case_errors },
	{ NULL, NULL },
};

VT_MAIN(cases)
