/* uroce capture: every RoCE packet of this user's uroce processes in this
 * network namespace, shared-memory and local ones included, as pcapng that
 * tshark and Wireshark decode as RoCEv2.
 *
 * It maps the switch file, listens on the abstract seqpacket socket the
 * processes connect to, switches capture on (a new session), and writes
 * each record that passes the filters until SIGINT, SIGTERM or -c.  Then
 * it switches off, takes what is still in flight and reports how many
 * records processes had to drop for lack of room (src/xport/capture.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "../../src/util/host_uid.h"   /* the library's own rule, compiled in */
#include "capture.h"
#include "uroce.h"

#define MAX_FILTER 16
#define MAX_ADDRS 64
#define RCVBUF (8 << 20)
#define DRAIN_MS 200
#define DRAIN_MAX_MS 2000

static const char capture_help[] =
	"usage: uroce capture -w FILE [-c COUNT] [-C MB [-W N]] [-i DEV] [--qp N]... [--pid N]...\n"
	"\n"
	"Writes every RoCE packet of this user's uroce processes in this network\n"
	"namespace as pcapng (raw IP: IPv4/IPv6, UDP port 4791, BTH .. ICRC), for\n"
	"tshark and Wireshark. Packets between processes of this host (shared\n"
	"memory, unix sockets) get the IP/UDP headers and ICRC the wire would\n"
	"carry. Each packet is written once: as it leaves a process, or as it\n"
	"arrives from another host or namespace; the direction is in the packet's\n"
	"flags, the processes in its comment. Runs until SIGINT/SIGTERM or -c.\n"
	"\n"
	"  -w FILE      write here ('-': standard output)\n"
	"  -c COUNT     stop after COUNT packets written\n"
	"  -C MB        a ring of files FILE0, FILE1, ... of up to MB million bytes\n"
	"  -W N         with -C: N files, the oldest overwritten\n"
	"  -i DEV       only packets from or to DEV's addresses (an RDMA device or\n"
	"               a network interface)\n"
	"  --qp N       only packets to QP N (and datagrams from UD QP N);\n"
	"               repeat for both ends of a connection\n"
	"  --pid N      only packets process N sent or received; repeatable\n"
	"  -q           no summary on standard error\n"
	"\n"
	"Processes that cannot hand a packet over (the capture is behind) drop\n"
	"the copy, never the packet, and the count is reported. Off, capture\n"
	"costs each process one load per packet.\n"
	"\n"
	"examples:\n"
	"  uroce capture -w run.pcapng\n"
	"  uroce capture -w ring.pcapng -C 100 -W 8 --pid 4242\n"
	"  tshark -r run.pcapng\n";

struct cap_addr {
	int family;
	uint8_t a[16];
};

struct cap_opts {
	struct cap_out out;
	uint64_t count;                /* 0: until a signal */
	const char *dev;
	uint32_t qps[MAX_FILTER];
	unsigned nqp;
	int32_t pids[MAX_FILTER];
	unsigned npid;
	struct cap_addr addrs[MAX_ADDRS];
	unsigned naddr;
	bool quiet;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || !*s || *end || *s == '-' ? -1 : 0;
}

static int parse(int argc, char **argv, struct cap_opts *o)
{
	static const struct option opts[] = {
		{ "qp", required_argument, NULL, 'Q' },
		{ "pid", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "w:c:C:W:i:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'w':
			o->out.path = optarg;
			break;
		case 'c':
			if (parse_u64(optarg, &o->count) || !o->count)
				goto bad;
			break;
		case 'C':
			if (parse_u64(optarg, &v) || !v || v > 1000000)
				goto bad;
			o->out.limit = v * 1000000u;
			break;
		case 'W':
			if (parse_u64(optarg, &v) || !v || v > 100000)
				goto bad;
			o->out.nfiles = (unsigned)v;
			break;
		case 'i':
			o->dev = optarg;
			break;
		case 'Q':
			if (parse_u64(optarg, &v) || v > 0xffffff || o->nqp == MAX_FILTER)
				goto bad;
			o->qps[o->nqp++] = (uint32_t)v;
			break;
		case 'P':
			if (parse_u64(optarg, &v) || !v || v > 0x7fffffff || o->npid == MAX_FILTER)
				goto bad;
			o->pids[o->npid++] = (int32_t)v;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			fputs(capture_help, stdout);
			return UR_EXIT_OK;
		default:
			goto usage;
		}
	}
	if (optind != argc || !o->out.path)
		goto usage;
	if (o->out.nfiles && !o->out.limit) {
		fprintf(stderr, "uroce capture: -W needs -C\n");
		return UR_EXIT_USAGE;
	}
	if (o->out.limit && !strcmp(o->out.path, "-")) {
		fprintf(stderr, "uroce capture: -C writes files, not standard output\n");
		return UR_EXIT_USAGE;
	}
	return UR_CONTINUE;
bad:
	fprintf(stderr, "uroce capture: bad value '%s' for -%c\n", optarg, c < 'a' ? 'x' : c);
usage:
	fputs(capture_help, stderr);
	return UR_EXIT_USAGE;
}

/* -i: a network interface, or the interface under an RDMA device. */
static int dev_netdev(const char *dev, char *nd, size_t len)
{
	struct ibv_device **list;
	int n, ret = -1;

	if (if_nametoindex(dev)) {
		snprintf(nd, len, "%s", dev);
		return 0;
	}
	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n && ret; i++) {
		struct ibv_context *ctx;

		if (strcmp(ibv_get_device_name(list[i]), dev))
			continue;
		ctx = ibv_open_device(list[i]);
		if (ctx) {
			ret = ur_port_netdev(ctx, 1, nd, (unsigned long)len);
			ibv_close_device(ctx);
		}
	}
	if (list)
		ibv_free_device_list(list);
	return ret;
}

static int dev_addrs(struct cap_opts *o)
{
	struct ifaddrs *ifa, *i;
	char nd[IF_NAMESIZE + 1];

	if (dev_netdev(o->dev, nd, sizeof(nd))) {
		fprintf(stderr, "uroce capture: no RDMA device or interface '%s'\n", o->dev);
		return -1;
	}
	if (getifaddrs(&ifa))
		return -1;
	for (i = ifa; i && o->naddr < MAX_ADDRS; i = i->ifa_next) {
		struct cap_addr *a = &o->addrs[o->naddr];

		if (!i->ifa_addr || strcmp(i->ifa_name, nd))
			continue;
		if (i->ifa_addr->sa_family == AF_INET) {
			a->family = AF_INET;
			memcpy(a->a, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
			o->naddr++;
		} else if (i->ifa_addr->sa_family == AF_INET6) {
			a->family = AF_INET6;
			memcpy(a->a, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, 16);
			o->naddr++;
		}
	}
	freeifaddrs(ifa);
	return 0;
}

static bool addr_match(const struct cap_opts *o, const struct ur_cap_rec *r)
{
	size_t n = r->family == AF_INET ? 4 : 16;

	for (unsigned i = 0; i < o->naddr; i++)
		if (o->addrs[i].family == r->family &&
		    (!memcmp(o->addrs[i].a, r->saddr, n) || !memcmp(o->addrs[i].a, r->daddr, n)))
			return true;
	return false;
}

static uint32_t be24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

/* The BTH's destination QP, and for a UD datagram the DETH's source QP. */
static bool qp_match(const struct cap_opts *o, const struct ur_cap_rec *r, const uint8_t *b)
{
	uint32_t dqp, sqp = UINT32_MAX;

	if (r->kind != UR_CAP_ROCE || r->len < 12)
		return false;
	dqp = be24(b + 5);
	if ((b[0] >> 5) == 3 && r->len >= 20)     /* UD: BTH, then DETH */
		sqp = be24(b + 17);
	for (unsigned i = 0; i < o->nqp; i++)
		if (o->qps[i] == dqp || o->qps[i] == sqp)
			return true;
	return false;
}

static bool pid_match(const struct cap_opts *o, const struct ur_cap_rec *r)
{
	for (unsigned i = 0; i < o->npid; i++)
		if (o->pids[i] == r->pid || o->pids[i] == r->peer_pid)
			return true;
	return false;
}

static bool wanted(const struct cap_opts *o, const struct ur_cap_rec *r, const uint8_t *b)
{
	return (!o->dev || addr_match(o, r)) && (!o->nqp || qp_match(o, r, b)) &&
	       (!o->npid || pid_match(o, r));
}

/* The switch file, created as the library creates it. */
static struct ur_cap_shared *map_switch(void)
{
	struct ur_cap_shared *m;
	uint32_t zero = 0;
	char path[96];
	struct stat st;
	int fd;

	if (ur_cap_shared_path(path, sizeof(path), (unsigned)ur_host_uid()))
		return NULL;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || fstat(fd, &st) ||
	    ((size_t)st.st_size < sizeof(*m) && ftruncate(fd, sizeof(*m)))) {
		fprintf(stderr, "uroce capture: %s: %s\n", path, strerror(errno));
		goto err_close;
	}
	/* As the library refuses it: someone else's file under our name. */
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		fprintf(stderr, "uroce capture: %s is not this user's alone: remove it\n", path);
		goto err_close;
	}
	m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return NULL;
	__atomic_compare_exchange_n(&m->magic, &zero, UR_CAP_MAGIC, false, __ATOMIC_ACQ_REL,
				    __ATOMIC_RELAXED);
	if (m->magic != UR_CAP_MAGIC || (m->version && m->version != UR_CAP_VERSION)) {
		fprintf(stderr, "uroce capture: %s is not this version's switch file\n", path);
		munmap(m, sizeof(*m));
		return NULL;
	}
	m->version = UR_CAP_VERSION;
	return m;
err_close:
	if (fd >= 0)
		close(fd);
	return NULL;
}

static int listen_sock(void)
{
	struct sockaddr_un sun;
	socklen_t len = ur_cap_sock_addr(&sun, (unsigned)ur_host_uid());
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sun, len) || listen(fd, SOMAXCONN)) {
		fprintf(stderr, "uroce capture: %s\n", errno == EADDRINUSE ?
			"another capture of this user runs in this network namespace" :
			strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

struct cap_run {
	struct cap_opts *o;
	int ep, lfd;
	uint8_t *buf;
	uint64_t written, filtered, bad;
	int err;
};

static void accept_all(struct cap_run *c)
{
	int fd, sz = RCVBUF;

	while ((fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
		if (epoll_ctl(c->ep, EPOLL_CTL_ADD, fd, &ev))
			close(fd);
	}
}

static void read_conn(struct cap_run *c, int fd)
{
	const struct ur_cap_rec *r = (const struct ur_cap_rec *)c->buf;

	for (;;) {
		ssize_t n = recv(fd, c->buf, UR_CAP_REC_MAX, MSG_DONTWAIT);

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			epoll_ctl(c->ep, EPOLL_CTL_DEL, fd, NULL);
			close(fd);
			return;
		}
		if (n < 0)
			return;
		if ((size_t)n < sizeof(*r) || r->magic != UR_CAP_MAGIC ||
		    r->version != UR_CAP_VERSION || r->len != (size_t)n - sizeof(*r)) {
			c->bad++;
			continue;
		}
		if (c->o->count && c->written >= c->o->count)
			return;
		if (!wanted(c->o, r, c->buf + sizeof(*r))) {
			c->filtered++;
			continue;
		}
		if (cap_out_write(&c->o->out, r, c->buf + sizeof(*r))) {
			c->err = -EIO;
			stop = 1;
			return;
		}
		c->written++;
		if (c->o->count && c->written >= c->o->count)
			stop = 1;
	}
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* One round of events: false when nothing came within ms. */
static bool poll_once(struct cap_run *c, int ms)
{
	struct epoll_event ev[32];
	int n = epoll_wait(c->ep, ev, 32, ms);

	for (int i = 0; i < n; i++) {
		if (ev[i].data.fd == c->lfd)
			accept_all(c);
		else
			read_conn(c, ev[i].data.fd);
	}
	return n > 0;
}

static int run(struct cap_opts *o, struct ur_cap_shared *sw)
{
	struct cap_run c = { .o = o, .lfd = listen_sock() };
	struct epoll_event ev = { .events = EPOLLIN };
	struct sigaction sa = { .sa_handler = on_signal };
	uint64_t dropped0;
	int ret = UR_EXIT_FAIL;

	if (c.lfd < 0)
		return UR_EXIT_FAIL;
	c.buf = malloc(UR_CAP_REC_MAX);
	c.ep = epoll_create1(EPOLL_CLOEXEC);
	ev.data.fd = c.lfd;
	if (!c.buf || c.ep < 0 || epoll_ctl(c.ep, EPOLL_CTL_ADD, c.lfd, &ev))
		goto out;
	if ((c.err = cap_out_open(&o->out))) {
		fprintf(stderr, "uroce capture: %s: %s\n", o->out.path, strerror(-c.err));
		goto out;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	dropped0 = __atomic_load_n(&sw->dropped, __ATOMIC_RELAXED);
	__atomic_add_fetch(&sw->session, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&sw->on, 1, __ATOMIC_RELEASE);
	if (!o->quiet)
		fprintf(stderr, "uroce capture: capturing this user's uroce packets in this "
			"network namespace to %s\n", o->out.path);
	while (!stop)
		poll_once(&c, 1000);
	/* Off, then what is still on its way, until the connections are quiet
	 * (or DRAIN_MAX_MS have passed: a process still sending must not hold
	 * the exit).  With -c met there is nothing more to write. */
	__atomic_store_n(&sw->on, 0, __ATOMIC_RELEASE);
	stop = o->count && c.written >= o->count;
	for (uint64_t end = now_ms() + DRAIN_MAX_MS; !stop && now_ms() < end;)
		if (!poll_once(&c, DRAIN_MS))
			break;
	ret = cap_out_close(&o->out) || c.err ? UR_EXIT_FAIL : UR_EXIT_OK;
	if (!o->quiet || ret)
		fprintf(stderr, "uroce capture: %llu packets written, %llu filtered out, "
			"%llu dropped by processes (capture behind)%s\n",
			(unsigned long long)c.written, (unsigned long long)c.filtered,
			(unsigned long long)(__atomic_load_n(&sw->dropped, __ATOMIC_RELAXED) -
					     dropped0),
			ret ? "; writing failed" : "");
out:
	__atomic_store_n(&sw->on, 0, __ATOMIC_RELEASE);
	if (c.ep >= 0)
		close(c.ep);
	close(c.lfd);
	free(c.buf);
	return ret;
}

int cmd_capture(int argc, char **argv)
{
	struct cap_opts o;
	struct ur_cap_shared *sw;
	int rc;

	memset(&o, 0, sizeof(o));
	rc = parse(argc, argv, &o);
	if (rc != UR_CONTINUE)
		return rc;
	if (o.dev && dev_addrs(&o))
		return UR_EXIT_FAIL;
	sw = map_switch();
	if (!sw)
		return UR_EXIT_FAIL;
	return run(&o, sw);
}
