#include "vt_peer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vt.h"

void vt_xfer(int fd, void *buf, size_t len, bool out)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t r = out ? write(fd, p, len) : read(fd, p, len);

		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			fprintf(stderr, "the TCP exchange broke: %s\n",
				r ? strerror(errno) : "peer closed");
			exit(2);
		}
		p += r;
		len -= (size_t)r;
	}
}

int vt_tcp_accept(const char *port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_addr = in6addr_any };
	int one = 1, ls = socket(AF_INET6, SOCK_STREAM, 0), fd;

	a.sin6_port = htons((uint16_t)atoi(port));
	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 1)) {
		fprintf(stderr, "cannot listen on TCP port %s: %s\n", port, strerror(errno));
		exit(2);
	}
	fd = accept(ls, NULL, NULL);
	close(ls);
	if (fd < 0) {
		fprintf(stderr, "accept: %s\n", strerror(errno));
		exit(2);
	}
	return fd;
}

int vt_tcp_connect(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	double end = vt_now() + 10;
	int fd, ret = getaddrinfo(host, port, &hints, &res);

	if (ret) {
		fprintf(stderr, "%s: %s\n", host, gai_strerror(ret));
		exit(2);
	}
	for (;;) {      /* the server may not be listening yet */
		fd = socket(res->ai_family, SOCK_STREAM, 0);
		if (fd >= 0 && !connect(fd, res->ai_addr, res->ai_addrlen))
			break;
		if (fd >= 0)
			close(fd);
		if (vt_now() > end) {
			fprintf(stderr, "cannot connect to %s port %s: %s\n", host, port,
				strerror(errno));
			exit(2);
		}
		vt_sleep(0.05);
	}
	freeaddrinfo(res);
	return fd;
}

uint64_t vt_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint8_t vt_stream_byte(uint64_t key, uint64_t off)
{
	return (uint8_t)(vt_mix(key + off / 8) >> (8 * (off % 8)));
}

void vt_stream_fill(uint8_t *p, size_t len, uint64_t key, uint64_t start)
{
	size_t i = 0;

	if (start % 8 == 0)
		for (; i + 8 <= len; i += 8) {
			uint64_t w = vt_mix(key + (start + i) / 8);

			memcpy(p + i, &w, 8);
		}
	for (; i < len; i++)
		p[i] = vt_stream_byte(key, start + i);
}

long vt_stream_diff(const uint8_t *p, size_t len, uint64_t key, uint64_t start)
{
	size_t i = 0;

	/* Whole words where the stream is word-aligned: the common case. */
	if (start % 8 == 0)
		for (; i + 8 <= len; i += 8) {
			uint64_t w = vt_mix(key + (start + i) / 8), got;

			memcpy(&got, p + i, 8);
			if (got != w)
				break;
		}
	for (; i < len; i++)
		if (p[i] != vt_stream_byte(key, start + i))
			return (long)i;
	return -1;
}

void vt_peer_hello(int fd, void *hello, size_t hello_len, uint32_t *qpn, void *answer,
		   size_t answer_len, uint32_t *peer_qpn, uint32_t n)
{
	vt_xfer(fd, hello, hello_len, true);
	vt_xfer(fd, qpn, n * sizeof(*qpn), true);
	vt_xfer(fd, answer, answer_len, false);
	vt_xfer(fd, peer_qpn, n * sizeof(*peer_qpn), false);
}

bool vt_peer_spoke(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1;
}

void vt_peer_verdict_send(int fd)
{
	uint32_t fails = (uint32_t)vt_failures;

	vt_xfer(fd, &fails, sizeof(fails), true);
	close(fd);
}

void vt_peer_verdict_check(int fd)
{
	uint32_t server_fails;

	vt_xfer(fd, &server_fails, sizeof(server_fails), false);
	vt_check(!server_fails, "client: the server found %u failures", server_fails);
	close(fd);
}
