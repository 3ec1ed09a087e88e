/* The connection layer, TCP side: listen/accept/connect with errors that say
 * what to do, and the fixed-format exchange of hello and endpoint records
 * (big-endian, versioned, so the two sides need not share a struct layout). */
#include "conn.h"
#include "dev_open.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define UR_WIRE_MAGIC 0x55524f43u /* "UROC" */
#define UR_WIRE_VERSION 1
#define UR_CONNECT_TIMEOUT_MS 10000

/* --- sockets ---------------------------------------------------------------- */

static void set_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* "addr" of a socket address, with IPv4-mapped IPv6 addresses as IPv4. */
static void addr_text(const struct sockaddr_storage *ss, char *ip, size_t len, int *port)
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)ss;

		inet_ntop(AF_INET, &s4->sin_addr, ip, len);
		*port = ntohs(s4->sin_port);
		return;
	}
	const struct sockaddr_in6 *s6 = (const void *)ss;

	if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
		inet_ntop(AF_INET, &s6->sin6_addr.s6_addr[12], ip, len);
	else
		inet_ntop(AF_INET6, &s6->sin6_addr, ip, len);
	*port = ntohs(s6->sin6_port);
}

int ur_tcp_listen(int port)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
				   .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	int one = 1, zero = 0, fd, rc;

	/* One IPv6 socket serves both families; without IPv6, IPv4 alone. */
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		rc = bind(fd, (struct sockaddr *)&a6, sizeof(a6));
	} else {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			fprintf(stderr, "cannot create a TCP socket: %s\n", strerror(errno));
			return -errno;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		rc = bind(fd, (struct sockaddr *)&a4, sizeof(a4));
	}
	if (rc || listen(fd, 1024)) {
		rc = errno;
		if (rc == EADDRINUSE)
			fprintf(stderr, "TCP port %d is already in use (another server running?): "
					"stop it or use -p PORT on both sides\n", port);
		else
			fprintf(stderr, "cannot listen on TCP port %d: %s\n", port, strerror(rc));
		close(fd);
		return -rc;
	}
	return fd;
}

int ur_tcp_accept(int lfd, char *peer, size_t peerlen)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char ip[UR_GID_STRLEN];
	int fd, port;

	do
		fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0) {
		int rc = errno;

		/* Nothing pending on a non-blocking socket is no failure. */
		if (rc != EAGAIN && rc != EWOULDBLOCK && rc != ECONNABORTED)
			fprintf(stderr, "accept failed: %s\n", strerror(rc));
		return -rc;
	}
	set_nodelay(fd);
	if (peer) {
		addr_text(&ss, ip, sizeof(ip), &port);
		snprintf(peer, peerlen, "%s:%d", ip, port);
	}
	return fd;
}

/* Connects one address with a timeout; 0 or the errno. */
static int connect_one(const struct addrinfo *ai, int *out)
{
	int fd, rc = 0, fl;
	socklen_t sl = sizeof(rc);
	struct pollfd p;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
	if (fd < 0)
		return errno;
	fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	if (connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		if (errno != EINPROGRESS) {
			rc = errno;
			goto err_close;
		}
		p = (struct pollfd){ .fd = fd, .events = POLLOUT };
		do
			rc = poll(&p, 1, UR_CONNECT_TIMEOUT_MS);
		while (rc < 0 && errno == EINTR);
		if (rc == 0) {
			rc = ETIMEDOUT;
			goto err_close;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &rc, &sl) || rc)
			goto err_close;
	}
	fcntl(fd, F_SETFL, fl);
	set_nodelay(fd);
	*out = fd;
	return 0;

err_close:
	close(fd);
	return rc ? rc : EIO;
}

int ur_tcp_connect(const char *host, int port, const char *hint)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res;
	char service[16];
	int rc, err = 0, fd = -1;

	snprintf(service, sizeof(service), "%d", port);
	rc = getaddrinfo(host, service, &hints, &res);
	if (rc) {
		fprintf(stderr, "cannot resolve %s: %s\n", host, gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next)
		err = connect_one(ai, &fd);
	freeaddrinfo(res);
	if (fd >= 0)
		return fd;
	if (err == ECONNREFUSED)
		fprintf(stderr, "no server at %s:%d: connection refused; %s\n", host, port,
			hint ? hint : "start the server first");
	else if (err == ETIMEDOUT)
		fprintf(stderr, "no answer from %s:%d within %d s: check the address, the route "
				"and firewalls\n", host, port, UR_CONNECT_TIMEOUT_MS / 1000);
	else
		fprintf(stderr, "cannot connect to %s:%d: %s\n", host, port, strerror(err));
	return -err;
}

int ur_tcp_local_ip(int fd, char *ip, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int port;

	if (getsockname(fd, (struct sockaddr *)&ss, &sl))
		return -errno;
	addr_text(&ss, ip, len, &port);
	return 0;
}

int ur_tcp_peer_ip(int fd, char *ip, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int port;

	if (getpeername(fd, (struct sockaddr *)&ss, &sl))
		return -errno;
	addr_text(&ss, ip, len, &port);
	return 0;
}

int ur_tcp_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == ECONNRESET ? -EPIPE : -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int ur_tcp_read_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return -EPIPE;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int say_io(int rc, const char *what)
{
	if (rc == -EPIPE)
		fprintf(stderr, "%s: the peer closed the connection (it failed or was stopped; "
				"see its output)\n", what);
	else if (rc)
		fprintf(stderr, "%s: %s\n", what, strerror(-rc));
	return rc;
}

int ur_tcp_barrier(int fd)
{
	char b = 'B';
	int rc = ur_tcp_write_all(fd, &b, 1);

	if (!rc)
		rc = ur_tcp_read_all(fd, &b, 1);
	return say_io(rc, "synchronizing with the peer");
}

/* --- the wire format ------------------------------------------------------------ */

struct wire {
	uint8_t b[64];
	size_t n;
};

static void put8(struct wire *w, uint8_t v)
{
	w->b[w->n++] = v;
}

static void put16(struct wire *w, uint16_t v)
{
	put8(w, (uint8_t)(v >> 8));
	put8(w, (uint8_t)v);
}

static void put32(struct wire *w, uint32_t v)
{
	put16(w, (uint16_t)(v >> 16));
	put16(w, (uint16_t)v);
}

static void put64(struct wire *w, uint64_t v)
{
	put32(w, (uint32_t)(v >> 32));
	put32(w, (uint32_t)v);
}

static void putn(struct wire *w, const void *p, size_t n)
{
	memcpy(w->b + w->n, p, n);
	w->n += n;
}

static uint8_t get8(struct wire *w)
{
	return w->b[w->n++];
}

static uint16_t get16(struct wire *w)
{
	uint16_t hi = get8(w);

	return (uint16_t)(hi << 8 | get8(w));
}

static uint32_t get32(struct wire *w)
{
	uint32_t hi = get16(w);

	return hi << 16 | get16(w);
}

static uint64_t get64(struct wire *w)
{
	uint64_t hi = get32(w);

	return hi << 32 | get32(w);
}

static void getn(struct wire *w, void *p, size_t n)
{
	memcpy(p, w->b + w->n, n);
	w->n += n;
}

#define HELLO_BYTES (4 + 2 + 2 + 12 + 4 + 4 * UR_HELLO_WORDS)
#define EP_BYTES (2 + 1 + 1 + 4 + 4 + 16 + 8 + 4 + 4)

int ur_hello_send(int fd, const struct ur_hello *h)
{
	struct wire w = { .n = 0 };

	put32(&w, UR_WIRE_MAGIC);
	put16(&w, UR_WIRE_VERSION);
	put16(&w, 0);
	putn(&w, h->tool, sizeof(h->tool));
	put32(&w, h->nep);
	for (int i = 0; i < UR_HELLO_WORDS; i++)
		put32(&w, h->word[i]);
	return say_io(ur_tcp_write_all(fd, w.b, w.n), "sending the connection parameters");
}

int ur_hello_recv(int fd, struct ur_hello *h, const char *tool)
{
	struct wire w = { .n = 0 };
	uint32_t magic;
	uint16_t version;
	int rc;

	rc = say_io(ur_tcp_read_all(fd, w.b, HELLO_BYTES), "receiving the peer's parameters");
	if (rc)
		return rc;
	magic = get32(&w);
	version = get16(&w);
	get16(&w);
	if (magic != UR_WIRE_MAGIC) {
		char seen[9];

		for (int i = 0; i < 8; i++)
			seen[i] = w.b[i] >= 0x20 && w.b[i] < 0x7f ? (char)w.b[i] : '.';
		seen[8] = '\0';
		fprintf(stderr, "the peer is not a uroce tool (it sent \"%s\"...; ibv_rc_pingpong "
				"and perftest speak their own exchange): run `uroce %s` on both sides\n",
			seen, tool ? tool : "COMMAND");
		return -EPROTO;
	}
	if (version != UR_WIRE_VERSION) {
		fprintf(stderr, "the peer's uroce speaks exchange version %u, this one %u: use "
				"the same uroce version on both sides\n", version, UR_WIRE_VERSION);
		return -EPROTO;
	}
	getn(&w, h->tool, sizeof(h->tool));
	h->tool[sizeof(h->tool) - 1] = '\0';
	h->nep = get32(&w);
	for (int i = 0; i < UR_HELLO_WORDS; i++)
		h->word[i] = get32(&w);
	if (tool && strcmp(h->tool, tool)) {
		fprintf(stderr, "the peer runs `uroce %s`, not `uroce %s`: run the same command "
				"on both sides\n", h->tool, tool);
		return -EPROTO;
	}
	return 0;
}

int ur_eps_send(int fd, const struct ur_ep *eps, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		const struct ur_ep *e = &eps[i];
		struct wire w = { .n = 0 };
		int rc;

		put16(&w, e->lid);
		put8(&w, (uint8_t)e->mtu);
		put8(&w, e->gid_index);
		put32(&w, e->qpn);
		put32(&w, e->psn);
		putn(&w, e->gid.raw, 16);
		put64(&w, e->addr);
		put32(&w, e->rkey);
		put32(&w, e->len);
		rc = say_io(ur_tcp_write_all(fd, w.b, w.n), "sending the QP address");
		if (rc)
			return rc;
	}
	return 0;
}

int ur_eps_recv(int fd, struct ur_ep *eps, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct ur_ep *e = &eps[i];
		struct wire w = { .n = 0 };
		int rc;

		rc = say_io(ur_tcp_read_all(fd, w.b, EP_BYTES), "receiving the peer's QP address");
		if (rc)
			return rc;
		e->lid = get16(&w);
		e->mtu = get8(&w);
		e->gid_index = get8(&w);
		e->qpn = get32(&w);
		e->psn = get32(&w);
		getn(&w, e->gid.raw, 16);
		e->addr = get64(&w);
		e->rkey = get32(&w);
		e->len = get32(&w);
	}
	return 0;
}

/* The peer's hello against ours: the same tool, as many QPs. */
static int check_peer(const struct ur_hello *lh, const struct ur_hello *rh)
{
	if (strcmp(rh->tool, lh->tool)) {
		fprintf(stderr, "the peer runs `uroce %s`, not `uroce %s`: run the same command "
				"on both sides\n", rh->tool, lh->tool);
		return -EPROTO;
	}
	if (rh->nep != lh->nep) {
		fprintf(stderr, "the peer has %u QPs, this side %u: use the same -q on both sides\n",
			rh->nep, lh->nep);
		return -EPROTO;
	}
	return 0;
}

int ur_exchange(int fd, bool server, const struct ur_hello *lh, const struct ur_ep *local,
		struct ur_hello *rh, struct ur_ep *remote, uint32_t nlocal)
{
	struct ur_hello h = *lh;
	int rc;

	h.nep = nlocal;
	if (server) {
		/* Answer with our hello even when they differ, so that both sides
		 * report the mismatch rather than one seeing a closed connection. */
		rc = ur_hello_recv(fd, rh, NULL);
		if (!rc)
			rc = ur_hello_send(fd, &h);
		if (!rc)
			rc = check_peer(&h, rh);
		if (!rc)
			rc = ur_eps_recv(fd, remote, nlocal);
		return rc ? rc : ur_eps_send(fd, local, nlocal);
	}
	rc = ur_hello_send(fd, &h);
	if (!rc)
		rc = ur_hello_recv(fd, rh, NULL);
	if (!rc)
		rc = check_peer(&h, rh);
	if (!rc)
		rc = ur_eps_send(fd, local, nlocal);
	return rc ? rc : ur_eps_recv(fd, remote, nlocal);
}
