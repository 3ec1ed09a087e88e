/* A socket server that forks a process per connection, as many TCP servers
 * do, and its client: only the socket API, for running under
 * librspreload.so (rsocket(7): fork support needs RDMAV_FORK_SAFE=1 on
 * both sides; the preload moves the accepted connection to rsockets in the
 * child).
 *
 *   fork_echo -s PORT N      accepts N connections on 127.0.0.1:PORT, a
 *                            child each: it reads 1 MiB and answers
 *                            "PID BYTES SUM"
 *   fork_echo -c HOST PORT   sends 1 MiB of a pattern, checks the answer:
 *                            the bytes and their sum, from another process
 *
 * Prints "ok:"/"FAIL:" lines; exits 0 when all held. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define LEN (1u << 20)

static unsigned long sum_of(const unsigned char *p, size_t n)
{
	unsigned long sum = 0;

	for (size_t i = 0; i < n; i++)
		sum += p[i];
	return sum;
}

static void child(int c)
{
	static unsigned char buf[LEN];
	char out[64];
	size_t got = 0;
	int m;

	while (got < LEN) {
		ssize_t n = recv(c, buf + got, LEN - got, 0);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	m = snprintf(out, sizeof(out), "%d %zu %lu", (int)getpid(), got, sum_of(buf, got));
	send(c, out, (size_t)m, 0);
	close(c);
	_exit(0);
}

static int server(int port, int n)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1, status, bad = 0;

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, n)) {
		perror("fork_echo: listen");
		return 2;
	}
	for (int i = 0; i < n; i++) {
		int c = accept(l, NULL, NULL);

		if (c < 0) {
			perror("fork_echo: accept");
			return 2;
		}
		if (!fork()) {
			close(l);
			child(c);
		}
		close(c);
	}
	while (wait(&status) > 0)
		bad += !WIFEXITED(status) || WEXITSTATUS(status);
	printf("%s: fork_echo server: %d children, %d ended badly\n", bad ? "FAIL" : "ok", n, bad);
	return bad ? 1 : 0;
}

static int client(const char *host, int port)
{
	static unsigned char buf[LEN];
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int s = socket(AF_INET, SOCK_STREAM, 0), pid = 0;
	unsigned long want, sum = 0;
	size_t sent = 0, bytes = 0;
	char out[64] = "";
	ssize_t n;

	for (size_t i = 0; i < LEN; i++)
		buf[i] = (unsigned char)(i * 7 + 1);
	want = sum_of(buf, LEN);
	inet_pton(AF_INET, host, &a.sin_addr);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a))) {
		perror("fork_echo: connect");
		return 2;
	}
	while (sent < LEN) {
		n = send(s, buf + sent, LEN - sent, 0);
		if (n <= 0) {
			perror("fork_echo: send");
			return 2;
		}
		sent += (size_t)n;
	}
	n = recv(s, out, sizeof(out) - 1, 0);
	if (n > 0)
		out[n] = '\0';
	close(s);
	if (sscanf(out, "%d %zu %lu", &pid, &bytes, &sum) != 3 || bytes != LEN || sum != want) {
		printf("FAIL: fork_echo: answer '%s', want %u bytes summing to %lu\n", out, LEN, want);
		return 1;
	}
	printf("ok: fork_echo: a child (%d) read the 1 MiB sent, sum %lu\n", pid, sum);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && !strcmp(argv[1], "-s"))
		return server(atoi(argv[2]), atoi(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "-c"))
		return client(argv[2], atoi(argv[3]));
	fprintf(stderr, "usage: %s -s PORT N | -c HOST PORT\n", argv[0]);
	return 2;
}
