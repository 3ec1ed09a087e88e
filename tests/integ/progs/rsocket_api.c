/* rsockets' socket contract where the rdmacm-utils programs do not reach it:
 * both ends of each connection in this one process, on 127.0.0.1, through
 * uroce's CM and an RC QP (a client connects without blocking, then the
 * listener accepts).
 *  - connect:  EINPROGRESS, then POLLOUT and SO_ERROR 0; the names of both
 *              ends agree; a second connect is EISCONN;
 *  - refused:  nobody listening: ECONNREFUSED from a blocking connect, and
 *              POLLOUT|POLLERR with SO_ERROR ECONNREFUSED without blocking;
 *  - data:     4 MiB through a reader thread, byte for byte; rwritev/rreadv,
 *              MSG_PEEK (leaves the data), MSG_WAITALL (waits for all);
 *  - smallbuf: SO_SNDBUF/SO_RCVBUF of 1 KiB: 1 MiB still goes through;
 *  - eagain:   a non-blocking receive with nothing there is EAGAIN, rpoll
 *              times out with 0; non-blocking sends stop with EAGAIN when the
 *              peer reads nothing, and POLLOUT comes back once it reads;
 *  - close:    the peer's rclose: what it sent first is read, then 0, then
 *              rsend is EPIPE and rpoll says POLLHUP;
 *  - shutdown: SHUT_WR: the peer reads 0 and still sends back;
 *  - poll:     rpoll and rselect over an rsocket and a pipe together;
 *  - options:  the options rdma-core's rsockets take, set and read back;
 *              an unknown one is ENOPROTOOPT; rfcntl's F_GETFL/F_SETFL;
 *  - keepalive: SO_KEEPALIVE with TCP_KEEPIDLE 1: the connection still
 *              carries data after 3 s of keepalive writes;
 *  - iomap:    riomap(PROT_WRITE) on one side, riowrite of 64 KiB into it
 *              from the other, then a message: the mapped buffer holds the
 *              data when the message arrives; riowrite to an offset the
 *              peer did not map is EINVAL, riomap beyond the peer's
 *              RDMA_IOMAPSIZE ENOMEM, PROT_READ EINVAL, riounmap of what
 *              was not mapped EINVAL;
 *  - errors:   EBADF, EAFNOSUPPORT, EPROTONOSUPPORT (a stream socket of
 *              UDP), ENOTCONN for data calls and shutdown before a connection;
 *              rgetsockname with a NULL address and a length of 0 (EFAULT
 *              with more);
 *  - config:   (by name, alone) the defaults an administrator sets in
 *              /etc/rdma/rsocket, as the test writes them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/uio.h>
#include <unistd.h>
#include <rdma/rsocket.h>

#include "vt.h"

static int next_port = 18500;
static int iomap_size;   /* RDMA_IOMAPSIZE for the next pair() */
static int buf_size;     /* SO_SNDBUF and SO_RCVBUF for the next pair(), 0: default */

static void set_bufs(int s)
{
	if (!buf_size)
		return;
	rsetsockopt(s, SOL_SOCKET, SO_SNDBUF, &buf_size, sizeof(buf_size));
	rsetsockopt(s, SOL_SOCKET, SO_RCVBUF, &buf_size, sizeof(buf_size));
}

static struct sockaddr_in sin_of(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

static int listener(int port)
{
	struct sockaddr_in a = sin_of(port);
	int one = 1, l = rsocket(AF_INET, SOCK_STREAM, 0);

	if (l < 0)
		return -1;
	rsetsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	rsetsockopt(l, SOL_RDMA, RDMA_IOMAPSIZE, &iomap_size, sizeof(iomap_size));
	set_bufs(l);
	if (rbind(l, (struct sockaddr *)&a, sizeof(a)) || rlisten(l, 4)) {
		rclose(l);
		return -1;
	}
	return l;
}

/* A connected pair c (client) and s (accepted), both blocking; 0 on success. */
static int pair(int *c, int *s)
{
	int port = next_port++, l = listener(port), err = -1;
	struct sockaddr_in a = sin_of(port);
	struct pollfd p;
	socklen_t len = sizeof(err);

	*c = *s = -1;
	if (l < 0) {
		vt_fail("listener on 127.0.0.1:%d: %s", port, strerror(errno));
		return -1;
	}
	*c = rsocket(AF_INET, SOCK_STREAM, 0);
	rsetsockopt(*c, SOL_RDMA, RDMA_IOMAPSIZE, &iomap_size, sizeof(iomap_size));
	set_bufs(*c);
	rfcntl(*c, F_SETFL, O_NONBLOCK);
	if (rconnect(*c, (struct sockaddr *)&a, sizeof(a)) == 0 || errno != EINPROGRESS) {
		vt_fail("non-blocking rconnect: -1/EINPROGRESS expected (%s)", strerror(errno));
		goto fail;
	}
	*s = raccept(l, NULL, NULL);
	if (*s < 0) {
		vt_fail("raccept: %s", strerror(errno));
		goto fail;
	}
	p.fd = *c;
	p.events = POLLOUT;
	if (rpoll(&p, 1, 5000) != 1 || !(p.revents & POLLOUT)) {
		vt_fail("rpoll POLLOUT after the connect: revents 0x%x", p.revents);
		goto fail;
	}
	rgetsockopt(*c, SOL_SOCKET, SO_ERROR, &err, &len);
	if (err) {
		vt_fail("SO_ERROR after the connect: %s", strerror(err));
		goto fail;
	}
	rfcntl(*c, F_SETFL, 0);
	rclose(l);
	return 0;
fail:
	if (*c >= 0)
		rclose(*c);
	if (*s >= 0)
		rclose(*s);
	rclose(l);
	*c = *s = -1;
	return -1;
}

static void case_connect(struct vt_dev *d)
{
	struct sockaddr_in cn, cp, sn, sp;
	socklen_t len;
	int c, s;

	(void)d;
	if (pair(&c, &s))
		return;
	vt_ok("non-blocking connect: EINPROGRESS, POLLOUT, SO_ERROR 0");
	len = sizeof(cn);
	rgetsockname(c, (struct sockaddr *)&cn, &len);
	len = sizeof(cp);
	rgetpeername(c, (struct sockaddr *)&cp, &len);
	len = sizeof(sn);
	rgetsockname(s, (struct sockaddr *)&sn, &len);
	len = sizeof(sp);
	rgetpeername(s, (struct sockaddr *)&sp, &len);
	vt_check(cp.sin_port == sn.sin_port && sp.sin_port == cn.sin_port &&
		 cp.sin_addr.s_addr == htonl(INADDR_LOOPBACK),
		 "names agree: client %d -> %d, server %d <- %d", ntohs(cn.sin_port),
		 ntohs(cp.sin_port), ntohs(sn.sin_port), ntohs(sp.sin_port));
	cp = sin_of(next_port);
	VT_EXPECT_ERRNO(rconnect(c, (struct sockaddr *)&cp, sizeof(cp)), EISCONN, "a second rconnect");
	rclose(c);
	rclose(s);
}

static void case_refused(struct vt_dev *d)
{
	struct sockaddr_in a = sin_of(next_port++);
	int c = rsocket(AF_INET, SOCK_STREAM, 0), err = 0, n;
	socklen_t len = sizeof(err);
	struct pollfd p;
	double t0 = vt_now();

	(void)d;
	VT_EXPECT_ERRNO(rconnect(c, (struct sockaddr *)&a, sizeof(a)), ECONNREFUSED,
		  "blocking rconnect with nobody listening");
	/* No time bound: ECONNREFUSED itself says a REJ ended it (the CM's
	 * own timeout would be ETIMEDOUT).  Nominally about 1.5 s (the CM
	 * asks again that long in case the listener is late, cm.h), one
	 * response timeout more if a REJ is lost; a host loaded 20-fold once
	 * took over 5 s. */
	printf("note: refused: after %.2f s\n", vt_now() - t0);
	fflush(stdout);
	rclose(c);

	c = rsocket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	VT_EXPECT_ERRNO(rconnect(c, (struct sockaddr *)&a, sizeof(a)), EINPROGRESS, "non-blocking rconnect");
	p.fd = c;
	p.events = POLLOUT;
	p.revents = 0;
	n = rpoll(&p, 1, 60000);   /* the same wait; bounded only to end a hang */
	vt_check(n == 1 && (p.revents & POLLOUT) && (p.revents & POLLERR),
		 "rpoll: POLLOUT|POLLERR (%d, revents 0x%x)", n, p.revents);
	rgetsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len);
	vt_check(err == ECONNREFUSED, "SO_ERROR: ECONNREFUSED (%s)", strerror(err));
	rgetsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len);
	vt_check(err == 0, "SO_ERROR read once is cleared (%d)", err);
	rclose(c);
}

struct reader {
	int s;
	size_t len;
	uint8_t *buf;
	size_t got;
};

static void *read_all(void *arg)
{
	struct reader *r = arg;

	while (r->got < r->len) {
		ssize_t n = rrecv(r->s, r->buf + r->got, r->len - r->got, 0);

		if (n <= 0)
			break;
		r->got += (size_t)n;
	}
	return NULL;
}

/* Sends r->len bytes of pattern seed (written into src) through c in one
 * rsend while a thread reads them from s into r->buf; checks they all
 * came, unchanged: "<what> N, read M, same bytes". */
static void send_through(int c, int s, uint8_t *src, struct reader *r, uint8_t seed,
			 const char *what)
{
	pthread_t t;
	ssize_t n;

	for (size_t i = 0; i < r->len; i++)
		src[i] = vt_pattern(seed, i);
	r->s = s;
	pthread_create(&t, NULL, read_all, r);
	n = rsend(c, src, r->len, 0);
	pthread_join(t, NULL);
	vt_check(n == (ssize_t)r->len && r->got == r->len && !memcmp(src, r->buf, r->len),
		 "%s %zd, read %zu, same bytes", what, n, r->got);
}

static void case_data(struct vt_dev *d)
{
	const size_t len = 4u << 20;
	uint8_t *src = malloc(len), small[64], got[64];
	struct reader r = { .len = len, .buf = malloc(len) };
	struct iovec iov[3];
	pthread_t t;
	ssize_t n;
	int c, s;

	(void)d;
	if (pair(&c, &s))
		goto out;
	send_through(c, s, src, &r, 7, "4 MiB in one rsend: sent");

	for (size_t i = 0; i < sizeof(small); i++)
		small[i] = (uint8_t)i;
	iov[0] = (struct iovec){ small, 10 };
	iov[1] = (struct iovec){ small + 10, 30 };
	iov[2] = (struct iovec){ small + 40, 24 };
	vt_check(rwritev(c, iov, 3) == 64, "rwritev of 3 pieces: 64");
	memset(got, 0, sizeof(got));
	n = rrecv(s, got, 16, MSG_PEEK);
	vt_check(n == 16 && !memcmp(got, small, 16), "MSG_PEEK: 16 bytes, the first ones");
	memset(got, 0, sizeof(got));
	iov[0] = (struct iovec){ got, 5 };
	iov[1] = (struct iovec){ got + 5, 59 };
	n = rreadv(s, iov, 2);
	vt_check(n == 64 && !memcmp(got, small, 64), "rreadv after the peek: all 64 (%zd)", n);

	r.len = 1000;
	r.got = 0;
	rsend(c, src, 300, 0);
	pthread_create(&t, NULL, read_all, &r);
	vt_sleep(0.05);
	rsend(c, src + 300, 700, 0);
	pthread_join(t, NULL);
	rsend(c, src, 500, 0);
	rsend(c, src + 500, 500, 0);
	n = rrecv(s, r.buf, 1000, MSG_WAITALL);
	vt_check(n == 1000 && !memcmp(r.buf, src, 1000),
		 "MSG_WAITALL: 1000 bytes sent in two pieces, one receive (%zd)", n);
	rclose(c);
	rclose(s);
out:
	free(src);
	free(r.buf);
}

/* SO_SNDBUF/SO_RCVBUF of 1 KiB: the queues still hold the control
 * messages and data beside them, and 1 MiB goes through byte for byte. */
static void case_smallbuf(struct vt_dev *d)
{
	const size_t len = 1u << 20;
	uint8_t *src = malloc(len);
	struct reader r = { .len = len, .buf = malloc(len) };
	int c, s;

	(void)d;
	buf_size = 1024;
	if (pair(&c, &s))
		goto out;
	send_through(c, s, src, &r, 9, "1 KiB buffers: 1 MiB sent");
	rclose(c);
	rclose(s);
out:
	buf_size = 0;
	free(src);
	free(r.buf);
}

static void case_eagain(struct vt_dev *d)
{
	uint8_t buf[65536];
	struct pollfd p;
	double t0;
	double least = 1;
	size_t sent = 0;
	ssize_t n = 0;
	int c, s, e = 0, early = 0;

	(void)d;
	if (pair(&c, &s))
		return;
	rfcntl(s, F_SETFL, O_NONBLOCK);
	VT_EXPECT_ERRNO(rrecv(s, buf, sizeof(buf), 0), EAGAIN, "non-blocking rrecv, nothing sent");
	VT_EXPECT_ERRNO(rrecv(c, buf, sizeof(buf), MSG_DONTWAIT), EAGAIN,
		  "MSG_DONTWAIT on a blocking socket");
	p.fd = s;
	p.events = POLLIN;
	t0 = vt_now();
	n = rpoll(&p, 1, 200);
	t0 = vt_now() - t0;
	vt_check(n == 0 && t0 >= 0.19, "rpoll POLLIN, nothing sent: 0 after its 200 ms (%zd, %.3f s)",
		 n, t0);
	/* A short timeout is one too: udpong resends after rpoll(1) says
	 * nothing came, and a poll that gave up early made it resend. */
	for (int i = 0; i < 1000; i++) {
		t0 = vt_now();
		n = rpoll(&p, 1, 1);
		t0 = vt_now() - t0;
		early += n != 0 || t0 < 0.001;
		if (t0 < least)
			least = t0;
	}
	vt_check(!early, "rpoll POLLIN with 1 ms, 1000 times: 0 after at least 1 ms each "
		 "(%d early, the shortest %.3f ms)", early, least * 1e3);

	memset(buf, 1, sizeof(buf));
	rfcntl(c, F_SETFL, O_NONBLOCK);
	for (int i = 0; i < 1000; i++) {
		n = rsend(c, buf, sizeof(buf), 0);
		e = errno;
		if (n < 0)
			break;
		sent += (size_t)n;
	}
	vt_check(n == -1 && e == EAGAIN && sent > 0,
		 "non-blocking rsend to a peer that reads nothing: EAGAIN after %zu bytes (%s)",
		 sent, strerror(e));
	p.fd = c;
	p.events = POLLOUT;
	vt_check(rpoll(&p, 1, 0) == 0, "rpoll POLLOUT meanwhile: 0");
	for (size_t got = 0; got < sent;) {
		struct pollfd q = { .fd = s, .events = POLLIN };

		if (rpoll(&q, 1, 5000) != 1)
			break;
		n = rrecv(s, buf, sizeof(buf), 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	n = rpoll(&p, 1, 5000);
	vt_check(n == 1 && (p.revents & POLLOUT), "POLLOUT once the peer read it all (%zd, 0x%x)",
		 n, p.revents);
	rclose(c);
	rclose(s);
}

static void case_close(struct vt_dev *d)
{
	char buf[100];
	struct pollfd p;
	ssize_t n;
	int c, s;

	(void)d;
	if (pair(&c, &s))
		return;
	rsend(s, "last words", 10, 0);
	rclose(s);
	n = rrecv(c, buf, sizeof(buf), MSG_WAITALL);
	vt_check(n == 10 && !memcmp(buf, "last words", 10),
		 "what the peer sent before rclose is read (%zd)", n);
	n = rrecv(c, buf, sizeof(buf), 0);
	vt_check(n == 0, "then rrecv returns 0 (%zd, %s)", n, n < 0 ? strerror(errno) : "");
	vt_check(rread(c, buf, sizeof(buf)) == 0, "and rread 0 again");
	p.fd = c;
	p.events = POLLIN | POLLOUT;
	n = rpoll(&p, 1, 1000);
	vt_check(n == 1 && (p.revents & POLLHUP), "rpoll: POLLHUP (%zd, revents 0x%x)", n, p.revents);
	VT_EXPECT_ERRNO(rsend(c, "x", 1, 0), EPIPE, "rsend to the closed peer");
	vt_check(rshutdown(c, SHUT_RDWR) == 0, "rshutdown after the peer left: 0");
	rclose(c);
}

static void case_shutdown(struct vt_dev *d)
{
	char buf[100];
	ssize_t n;
	int c, s;

	(void)d;
	if (pair(&c, &s))
		return;
	rsend(c, "request", 7, 0);
	vt_check(rshutdown(c, SHUT_WR) == 0, "rshutdown(SHUT_WR): 0");
	VT_EXPECT_ERRNO(rsend(c, "x", 1, 0), EPIPE, "rsend after SHUT_WR");
	n = rrecv(s, buf, sizeof(buf), MSG_WAITALL);
	vt_check(n == 7, "the peer reads the request (%zd)", n);
	n = rrecv(s, buf, sizeof(buf), 0);
	vt_check(n == 0, "then 0: no more comes (%zd)", n);
	vt_check(rsend(s, "reply", 5, 0) == 5, "the peer still sends");
	n = rrecv(c, buf, 5, MSG_WAITALL);
	vt_check(n == 5 && !memcmp(buf, "reply", 5), "and the half-closed side reads it (%zd)", n);
	VT_EXPECT_ERRNO(rshutdown(c, 99), EINVAL, "rshutdown(99)");
	rclose(s);
	rclose(c);
}

static void case_poll(struct vt_dev *d)
{
	struct pollfd p[2];
	int pp[2], c, s, n;
	struct timeval tv = { 0, 100000 };
	fd_set rd;
	char b;

	(void)d;
	if (pair(&c, &s))
		return;
	if (pipe(pp)) {
		vt_fail("pipe");
		return;
	}
	p[0] = (struct pollfd){ .fd = s, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = pp[0], .events = POLLIN };
	vt_check(rpoll(p, 2, 100) == 0, "rpoll of an idle rsocket and an empty pipe: 0");
	if (write(pp[1], "x", 1) != 1)
		vt_fail("write to the pipe");
	n = rpoll(p, 2, 1000);
	vt_check(n == 1 && p[1].revents == POLLIN && !p[0].revents,
		 "the pipe written: 1, the pipe POLLIN (%d: 0x%x 0x%x)", n, p[0].revents,
		 p[1].revents);
	if (read(pp[0], &b, 1) != 1)
		vt_fail("read from the pipe");
	rsend(c, "y", 1, 0);
	n = rpoll(p, 2, 1000);
	vt_check(n == 1 && p[0].revents == POLLIN && !p[1].revents,
		 "data sent: 1, the rsocket POLLIN (%d: 0x%x 0x%x)", n, p[0].revents,
		 p[1].revents);
	FD_ZERO(&rd);
	FD_SET(s, &rd);
	FD_SET(pp[0], &rd);
	n = rselect((s > pp[0] ? s : pp[0]) + 1, &rd, NULL, NULL, &tv);
	vt_check(n == 1 && FD_ISSET(s, &rd) && !FD_ISSET(pp[0], &rd),
		 "rselect: the rsocket readable, the pipe not (%d)", n);
	rrecv(s, &b, 1, 0);
	FD_ZERO(&rd);
	FD_SET(s, &rd);
	tv = (struct timeval){ 0, 50000 };
	vt_check(rselect(s + 1, &rd, NULL, NULL, &tv) == 0, "rselect once read: 0 after its timeout");
	close(pp[0]);
	close(pp[1]);
	rclose(c);
	rclose(s);
}

static int get_int(int s, int level, int name)
{
	int v = -1;
	socklen_t len = sizeof(v);

	if (rgetsockopt(s, level, name, &v, &len))
		return -1000 - errno;
	return v;
}

static void case_options(struct vt_dev *d)
{
	int s = rsocket(AF_INET, SOCK_STREAM, 0), v, fl;
	socklen_t len = sizeof(v);

	(void)d;
	v = 1;
	vt_check(!rsetsockopt(s, IPPROTO_TCP, TCP_NODELAY, &v, sizeof(v)) &&
		 get_int(s, IPPROTO_TCP, TCP_NODELAY) == 1, "TCP_NODELAY set and read back");
	vt_check(!rsetsockopt(s, SOL_SOCKET, SO_REUSEADDR, &v, sizeof(v)) &&
		 get_int(s, SOL_SOCKET, SO_REUSEADDR) == 1, "SO_REUSEADDR");
	vt_check(!rsetsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof(v)) &&
		 get_int(s, SOL_SOCKET, SO_KEEPALIVE) == 1, "SO_KEEPALIVE");
	v = 30;
	vt_check(!rsetsockopt(s, IPPROTO_TCP, TCP_KEEPIDLE, &v, sizeof(v)) &&
		 get_int(s, IPPROTO_TCP, TCP_KEEPIDLE) == 30, "TCP_KEEPIDLE");
	v = 1 << 18;
	vt_check(!rsetsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)) &&
		 get_int(s, SOL_SOCKET, SO_RCVBUF) == 1 << 19, "SO_RCVBUF: doubled, as Linux does");
	vt_check(!rsetsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)) &&
		 get_int(s, SOL_SOCKET, SO_SNDBUF) == 1 << 19, "SO_SNDBUF: doubled");
	v = 64;
	vt_check(!rsetsockopt(s, SOL_RDMA, RDMA_SQSIZE, &v, sizeof(v)) &&
		 get_int(s, SOL_RDMA, RDMA_SQSIZE) == 64, "RDMA_SQSIZE");
	vt_check(!rsetsockopt(s, SOL_RDMA, RDMA_RQSIZE, &v, sizeof(v)) &&
		 get_int(s, SOL_RDMA, RDMA_RQSIZE) == 64, "RDMA_RQSIZE");
	v = 128;
	vt_check(!rsetsockopt(s, SOL_RDMA, RDMA_INLINE, &v, sizeof(v)) &&
		 get_int(s, SOL_RDMA, RDMA_INLINE) == 128, "RDMA_INLINE");
	v = 16;
	vt_check(!rsetsockopt(s, SOL_RDMA, RDMA_IOMAPSIZE, &v, sizeof(v)) &&
		 get_int(s, SOL_RDMA, RDMA_IOMAPSIZE) == 16, "RDMA_IOMAPSIZE");
	vt_check(get_int(s, SOL_SOCKET, SO_TYPE) == SOCK_STREAM, "SO_TYPE: SOCK_STREAM");
	VT_EXPECT_ERRNO(rsetsockopt(s, SOL_SOCKET, SO_BROADCAST, &v, sizeof(v)), ENOPROTOOPT,
		  "an option rsockets do not have");
	VT_EXPECT_ERRNO(rgetsockopt(s, IPPROTO_TCP, TCP_INFO, &v, &len), ENOPROTOOPT, "TCP_INFO");
	VT_EXPECT_ERRNO(rsetsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &v, 1), EINVAL,
		  "an option value too short");
	fl = rfcntl(s, F_GETFL);
	vt_check(!(fl & O_NONBLOCK) && rfcntl(s, F_SETFL, fl | O_NONBLOCK) == 0 &&
		 (rfcntl(s, F_GETFL) & O_NONBLOCK), "rfcntl F_SETFL O_NONBLOCK, read back by F_GETFL");
	VT_EXPECT_ERRNO(rfcntl(s, F_GETFD), EOPNOTSUPP, "rfcntl F_GETFD");
	rclose(s);
}

/* Run alone, with /etc/rdma/rsocket holding (tests/integ/rsocket.test.sh)
 * mem_default 300000, wmem_default 200000, sqsize_default 100,
 * rqsize_default 120, inline_default 96, iomap_size 8, polling_time 5 and
 * wake_up_interval 20: a new rsocket starts with those, as rdma-core's
 * (rsocket(7)), and a connection made with them carries 1 MiB. */
static void case_config(struct vt_dev *d)
{
	int s = rsocket(AF_INET, SOCK_STREAM, 0), c, srv;
	const size_t len = 1u << 20;
	uint8_t *src = malloc(len);
	struct reader r = { .len = len, .buf = malloc(len) };

	(void)d;
	VT_EXPECT_EQ("SO_RCVBUF from mem_default", 300000, get_int(s, SOL_SOCKET, SO_RCVBUF));
	VT_EXPECT_EQ("SO_SNDBUF from wmem_default", 200000, get_int(s, SOL_SOCKET, SO_SNDBUF));
	VT_EXPECT_EQ("RDMA_SQSIZE from sqsize_default", 100, get_int(s, SOL_RDMA, RDMA_SQSIZE));
	VT_EXPECT_EQ("RDMA_RQSIZE from rqsize_default", 120, get_int(s, SOL_RDMA, RDMA_RQSIZE));
	VT_EXPECT_EQ("RDMA_INLINE from inline_default", 96, get_int(s, SOL_RDMA, RDMA_INLINE));
	VT_EXPECT_EQ("RDMA_IOMAPSIZE from iomap_size", 8, get_int(s, SOL_RDMA, RDMA_IOMAPSIZE));
	rclose(s);
	s = rsocket(AF_INET, SOCK_DGRAM, 0);
	VT_EXPECT_EQ("a datagram socket's RDMA_SQSIZE too", 100, get_int(s, SOL_RDMA, RDMA_SQSIZE));
	rclose(s);
	if (pair(&c, &srv))
		goto out;
	send_through(c, srv, src, &r, 7, "with those defaults, 1 MiB sent");
	rclose(c);
	rclose(srv);
out:
	free(src);
	free(r.buf);
}

static void case_keepalive(struct vt_dev *d)
{
	int c, s, one = 1, idle = 1;
	char buf[8];

	(void)d;
	if (pair(&c, &s))
		return;
	rsetsockopt(c, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	rsetsockopt(c, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	vt_sleep(3.2);
	vt_check(rsend(c, "alive", 5, 0) == 5 && rrecv(s, buf, 5, MSG_WAITALL) == 5 &&
		 !memcmp(buf, "alive", 5), "after 3 s of keepalives the connection carries data");
	rclose(c);
	rclose(s);
}

static void case_errors(struct vt_dev *d)
{
	char buf[4];
	socklen_t len;
	int s, ret;

	(void)d;
	VT_EXPECT_ERRNO(rsend(12345, "x", 1, 0), EBADF, "rsend on no rsocket");
	VT_EXPECT_ERRNO(rclose(12345), EBADF, "rclose on no rsocket");
	VT_EXPECT_ERRNO(rsocket(AF_UNIX, SOCK_STREAM, 0), EAFNOSUPPORT, "rsocket(AF_UNIX)");
	VT_EXPECT_ERRNO(rsocket(AF_INET, SOCK_STREAM, IPPROTO_UDP), EPROTONOSUPPORT,
		  "rsocket(SOCK_STREAM, IPPROTO_UDP)");
	s = rsocket(AF_INET, SOCK_STREAM, 0);
	VT_EXPECT_ERRNO(rsend(s, "x", 1, 0), ENOTCONN, "rsend unconnected");
	VT_EXPECT_ERRNO(rrecv(s, buf, 1, 0), ENOTCONN, "rrecv unconnected");
	VT_EXPECT_ERRNO(rshutdown(s, SHUT_RDWR), ENOTCONN, "rshutdown unconnected");
	VT_EXPECT_ERRNO(rgetpeername(s, (struct sockaddr *)buf, &(socklen_t){ 4 }), ENOTCONN,
		  "rgetpeername unconnected");
	VT_EXPECT_ERRNO(riowrite(s, buf, sizeof(buf), 0, 0), ENOTCONN, "riowrite unconnected");
	/* As getsockname(2): with a length of 0 the address may be NULL and
	 * the length comes back (librspreload learns a socket's family so). */
	len = 0;
	ret = rgetsockname(s, NULL, &len);
	vt_check(!ret && len == sizeof(struct sockaddr_in),
		 "rgetsockname(s, NULL, &0): 0 and the length (%d, %u)", ret, (unsigned)len);
	len = 4;
	VT_EXPECT_ERRNO(rgetsockname(s, NULL, &len), EFAULT, "rgetsockname(s, NULL, &4)");
	rclose(s);
	s = rsocket(AF_INET6, SOCK_STREAM, 0);
	len = 0;
	ret = rgetsockname(s, NULL, &len);
	vt_check(!ret && len == sizeof(struct sockaddr_in6),
		 "an IPv6 rsocket, not bound: its length (%d, %u)", ret, (unsigned)len);
	rclose(s);
}

static void case_iomap(struct vt_dev *d)
{
	const size_t len = 65536;
	uint8_t *target = calloc(1, len), *src = malloc(len), *other = malloc(len), msg[4];
	off_t off;
	int c, s;

	(void)d;
	iomap_size = 1;
	if (pair(&c, &s))
		goto out;
	for (size_t i = 0; i < len; i++)
		src[i] = vt_pattern(3, i);
	off = riomap(s, target, len, PROT_WRITE, 0, 4096);
	vt_check(off == 4096, "riomap(PROT_WRITE, offset 4096): 4096 (%lld)", (long long)off);
	VT_EXPECT_ERRNO(riomap(s, other, len, PROT_WRITE, 0, 0), ENOMEM,
		  "a second PROT_WRITE mapping with the peer's RDMA_IOMAPSIZE 1");
	VT_EXPECT_ERRNO(riomap(s, other, len, PROT_READ, 0, 0), EINVAL, "riomap(PROT_READ)");
	rsend(s, "map", 4, 0);                    /* carries the mapping before it */
	vt_check(rrecv(c, msg, 4, MSG_WAITALL) == 4, "the message after riomap arrives");
	vt_check(riowrite(c, src, len, 4096, 0) == len, "riowrite of 64 KiB at offset 4096");
	VT_EXPECT_ERRNO(riowrite(c, src, 16, 4096 + len, 0), EINVAL,
		  "riowrite past the peer's mapping");
	rsend(c, "done", 4, 0);
	vt_check(rrecv(s, msg, 4, MSG_WAITALL) == 4 && !memcmp(target, src, len),
		 "the mapped buffer holds the 64 KiB when the next message arrives");
	VT_EXPECT_ERRNO(riounmap(s, other, len), EINVAL, "riounmap of a buffer not mapped");
	vt_check(riounmap(s, target, len) == 0, "riounmap: 0");
	rclose(c);
	rclose(s);
out:
	iomap_size = 0;
	free(target);
	free(src);
	free(other);
}

static const struct vt_case cases[] = {
	{ "connect", case_connect },
	{ "refused", case_refused },
	{ "data", case_data },
	{ "smallbuf", case_smallbuf },
	{ "eagain", case_eagain },
	{ "close", case_close },
	{ "shutdown", case_shutdown },
	{ "poll", case_poll },
	{ "options", case_options },
	{ "keepalive", case_keepalive },
	{ "iomap", case_iomap },
	{ "errors", case_errors },
	{ "config", case_config, true },
	{ NULL, NULL },
};

VT_MAIN(cases)
