/* UC and UD between two processes: a stream of SENDs with immediate, each
 * message either delivered whole and intact or counted lost, never
 * delivered corrupted, duplicated (UC) or out of order (UC).
 *
 *   dgram DEVICE GID_INDEX -s PORT                                 the server
 *   dgram DEVICE GID_INDEX -c HOST PORT --type uc|ud [--qps N]
 *         [--messages N | --seconds S] [--max-size BYTES] [--depth D] [--seed S]
 *         [--rate MESSAGES_PER_SECOND]
 *
 * Message i of QP q carries immediate i and len(q, i) bytes of the stream
 * key(q, i) (1 .. max-size bytes, log-uniform; for UD max-size must fit the
 * path MTU).  The client tells the server how many it sent on each QP;
 * the server checks each arrival against what message i must be, and
 * prints how many arrived intact and how many were lost (a receive queue
 * that ran empty drops too: neither transport waits for receives; --rate
 * paces the client so that a receiver can keep up).  UD
 * may deliver a datagram twice (the fault injector duplicates packets, and
 * UD has no sequence to notice): those are counted, not failed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vt.h"
#include "vt_peer.h"

#define DGRAM_MAGIC 0x44475241u
#define MAX_QPS 1024
#define GRH_BYTES 40
#define QKEY 0x11111111u
#define QUIET_SECONDS 1.0     /* nothing more arrives: the rest is lost */
#define STALL_SECONDS 60.0

struct hello {
	uint32_t magic, type, qps, depth, max_size, pad;
	uint64_t seed;
	union ibv_gid gid;
};

static struct hello cfg;
static struct vt_dev dev;
static struct vt_qp *qps;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static uint8_t *area;

static uint32_t len_of(uint32_t q, uint64_t i)
{
	uint64_t h = vt_mix(cfg.seed ^ vt_mix((uint64_t)q << 40 ^ i));
	unsigned bits = 0, e;
	uint64_t lo;

	while ((2ull << bits) <= cfg.max_size)
		bits++;
	e = (unsigned)(h % (bits + 1));
	lo = 1ull << e;
	lo += (h >> 8) % lo;
	return (uint32_t)(lo > cfg.max_size ? cfg.max_size : lo);
}

static uint64_t key_of(uint32_t q, uint64_t i)
{
	return vt_mix(cfg.seed ^ 0xa5a5a5a5ull ^ vt_mix((uint64_t)q << 40 ^ i));
}

static void die(const char *what)
{
	fprintf(stderr, "dgram: %s: %s\n", what, strerror(errno));
	exit(2);
}

static enum ibv_qp_type qp_type(void)
{
	return cfg.type == 'd' ? IBV_QPT_UD : IBV_QPT_UC;
}

/* QPs, one CQ, and one registered area of slots of slot bytes. */
static void setup(uint32_t sq, uint32_t rq, size_t slot)
{
	struct vt_qp_opts o = { .type = qp_type(), .sq = sq, .rq = rq, .max_sge = 1 };
	size_t len = (size_t)cfg.qps * (sq + rq) * slot;

	cq = ibv_create_cq(dev.ctx, (int)(cfg.qps * (sq + rq)), NULL, NULL, 0);
	if (!cq)
		die("ibv_create_cq");
	o.send_cq = o.recv_cq = cq;
	qps = calloc(cfg.qps, sizeof(*qps));
	area = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);
	if (!qps || !area)
		die("calloc");
	mr = ibv_reg_mr(dev.pd, area, len, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	for (uint32_t q = 0; q < cfg.qps; q++)
		vt_qp_create(&qps[q], &dev, &o);
}

static void teardown(void)
{
	for (uint32_t q = 0; q < cfg.qps; q++)
		vt_qp_destroy(&qps[q]);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	free(area);
	free(qps);
}

/* UC: connected to the peer's QP; UD: ready to send to anyone. */
static void connect_all(const uint32_t *peer_qpn, const union ibv_gid *gid)
{
	uint32_t bad;
	int ret = vt_qps_connect_remote(qps, cfg.qps, peer_qpn, gid, &bad);

	if (ret) {
		errno = ret;
		die("connecting a QP");
	}
}

/* ---- the server ------------------------------------------------------------ */

struct rx {
	uint64_t got, dups, last;       /* last: UC's newest message number + 1 */
	uint64_t *seen;                 /* UD: a bit per message number */
	size_t nseen;                   /* words */
};

static bool seen_before(struct rx *r, uint64_t n)
{
	size_t w = n / 64;

	if (w >= r->nseen) {
		size_t grow = w + 1 + r->nseen;
		uint64_t *p = realloc(r->seen, grow * sizeof(*p));

		if (!p)
			die("realloc");
		memset(p + r->nseen, 0, (grow - r->nseen) * sizeof(*p));
		r->seen = p;
		r->nseen = grow;
	}
	if (r->seen[w] >> (n % 64) & 1)
		return true;
	r->seen[w] |= 1ull << (n % 64);
	return false;
}

/* UD: the numbers below sent that never arrived, as at most 8 ranges
 * ("lost on QP 0: 1503-1775 1890"), so that a loss says when it was. */
static void print_lost(uint32_t q, const struct rx *r, uint64_t sent)
{
	unsigned ranges = 0;

	for (uint64_t n = 0; n < sent && ranges < 8;) {
		uint64_t end = n;

		while (end < sent && !(end / 64 < r->nseen && (r->seen[end / 64] >> (end % 64) & 1)))
			end++;
		if (end > n) {
			if (!ranges++)
				printf("dgram: lost on QP %u:", q);
			if (end - n > 1)
				printf(" %llu-%llu", (unsigned long long)n, (unsigned long long)end - 1);
			else
				printf(" %llu", (unsigned long long)n);
		}
		n = end + 1;
	}
	if (ranges)
		printf("\n");
}

/* What the server's steps share. */
static struct {
	uint32_t rq;                       /* receives per QP */
	size_t slot;                       /* bytes per receive */
	uint64_t *count;                   /* per QP: messages sent (the client says) */
	uint64_t sent, got, dups, bad;
	struct rx *rx;
	bool counts_known;
	double last;                       /* when something last happened */
} srv;

/* One receive completion: a whole, intact message, in order on UC, a
 * duplicate counted on UD; its receive is posted again.  Returns 1 after
 * 10 wrong arrivals, else 0. */
static int take_datagram(const struct ibv_wc *wc)
{
	uint32_t q = (uint32_t)(wc->wr_id >> 32), s = (uint32_t)wc->wr_id;
	uint8_t *buf = area + ((size_t)q * (srv.rq + 1) + s) * srv.slot;
	uint32_t off = qp_type() == IBV_QPT_UD ? GRH_BYTES : 0;
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = (uint32_t)srv.slot,
			       .lkey = mr->lkey };
	uint64_t i = ntohl(wc->imm_data);
	long d;

	if (wc->status != IBV_WC_SUCCESS) {
		vt_fail("server: QP %u: a receive completed with %s", q,
			ibv_wc_status_str(wc->status));
		srv.bad++;
	} else if (!(wc->wc_flags & IBV_WC_WITH_IMM) ||
		   wc->byte_len != off + len_of(q, i) ||
		   (d = vt_stream_diff(buf + off, len_of(q, i), key_of(q, i), 0)) >= 0) {
		vt_fail("server: QP %u: message %llu arrived wrong (%u bytes, %u expected)",
			q, (unsigned long long)i, wc->byte_len, off + len_of(q, i));
		srv.bad++;
	} else if (qp_type() == IBV_QPT_UC && srv.rx[q].got && i < srv.rx[q].last) {
		vt_fail("server: QP %u: UC message %llu after %llu", q,
			(unsigned long long)i, (unsigned long long)srv.rx[q].last - 1);
		srv.bad++;
	} else if (qp_type() == IBV_QPT_UD && seen_before(&srv.rx[q], i)) {
		srv.rx[q].dups++;
		srv.dups++;
	} else {
		srv.rx[q].got++;
		srv.rx[q].last = i + 1;
		srv.got++;
	}
	if (srv.bad >= 10) {
		vt_fail("server: 10 wrong arrivals: giving up");
		return 1;
	}
	if (vt_post_recv(&qps[q], wc->wr_id, &sge, 1))
		die("ibv_post_recv");
	return 0;
}

/* Receives and checks until the client has said how many it sent (over
 * fd) and all came, or nothing more came for QUIET_SECONDS.  Returns 0
 * then, else the exit code. */
static int receive_until_quiet(int fd)
{
	srv.last = vt_now();
	for (;;) {
		struct ibv_wc wc[64];
		int n = ibv_poll_cq(cq, 64, wc);
		double now = vt_now();

		for (int k = 0; k < n; k++)
			if (take_datagram(&wc[k]))
				return 1;
		if (n > 0)
			srv.last = now;
		if (!srv.counts_known && !n && vt_peer_spoke(fd)) {
			vt_xfer(fd, srv.count, cfg.qps * sizeof(*srv.count), false);
			srv.counts_known = true;
			for (uint32_t q = 0; q < cfg.qps; q++)
				srv.sent += srv.count[q];
			srv.last = now;
		}
		if (srv.counts_known && (srv.got == srv.sent || now - srv.last > QUIET_SECONDS))
			return 0;
		if (now - srv.last > STALL_SECONDS) {
			vt_fail("server: nothing arrived for %.0f s and the client said nothing",
				STALL_SECONDS);
			return 1;
		}
	}
}

static int serve(const char *port)
{
	int fd = vt_tcp_accept(port);
	uint32_t *qpn, *peer_qpn;
	int ret;

	vt_xfer(fd, &cfg, sizeof(cfg), false);
	if (cfg.magic != DGRAM_MAGIC || !cfg.qps || cfg.qps > MAX_QPS || !cfg.depth ||
	    !cfg.max_size || cfg.max_size > (1u << 24) || (cfg.type != 'c' && cfg.type != 'd')) {
		fprintf(stderr, "dgram: a client spoke nonsense\n");
		return 2;
	}
	srv.rq = 4 * cfg.depth;
	srv.slot = cfg.max_size + GRH_BYTES;
	setup(1, srv.rq, srv.slot);
	qpn = calloc(cfg.qps, sizeof(*qpn));
	peer_qpn = calloc(cfg.qps, sizeof(*peer_qpn));
	srv.count = calloc(cfg.qps, sizeof(*srv.count));
	srv.rx = calloc(cfg.qps, sizeof(*srv.rx));
	if (!qpn || !peer_qpn || !srv.count || !srv.rx)
		die("calloc");
	vt_xfer(fd, peer_qpn, cfg.qps * sizeof(*peer_qpn), false);
	connect_all(peer_qpn, &cfg.gid);
	for (uint32_t q = 0; q < cfg.qps; q++) {
		qpn[q] = qps[q].qp->qp_num;
		for (uint32_t s = 0; s < srv.rq; s++) {
			struct ibv_sge sge = { .addr = (uintptr_t)(area + ((size_t)q * (srv.rq + 1) + s) * srv.slot),
					       .length = (uint32_t)srv.slot, .lkey = mr->lkey };

			if (vt_post_recv(&qps[q], (uint64_t)q << 32 | s, &sge, 1))
				die("ibv_post_recv");
		}
	}
	vt_xfer(fd, &dev.gid, sizeof(dev.gid), true);
	vt_xfer(fd, qpn, cfg.qps * sizeof(*qpn), true);

	ret = receive_until_quiet(fd);
	if (ret)
		return ret;
	for (uint32_t q = 0; q < cfg.qps; q++) {
		if (srv.rx[q].last > srv.count[q]) {
			vt_fail("server: QP %u: message %llu arrived, but only %llu were sent", q,
				(unsigned long long)srv.rx[q].last - 1, (unsigned long long)srv.count[q]);
			srv.bad++;
		}
		if (qp_type() == IBV_QPT_UD)
			print_lost(q, &srv.rx[q], srv.count[q]);
		free(srv.rx[q].seen);
	}
	vt_check(!srv.bad && srv.got <= srv.sent,
		 "server: %s: %llu messages sent, %llu arrived whole and intact, "
		 "%llu lost (%.2f %%), %llu duplicates; none corrupted%s",
		 qp_type() == IBV_QPT_UD ? "UD" : "UC", (unsigned long long)srv.sent,
		 (unsigned long long)srv.got, (unsigned long long)(srv.sent - srv.got),
		 srv.sent ? 100.0 * (double)(srv.sent - srv.got) / (double)srv.sent : 0.0,
		 (unsigned long long)srv.dups, qp_type() == IBV_QPT_UC ? ", duplicated or out of order" : "");
	vt_check(srv.got > 0, "server: messages arrived (%llu)", (unsigned long long)srv.got);
	vt_peer_verdict_send(fd);
	teardown();
	free(qpn);
	free(peer_qpn);
	free(srv.count);
	free(srv.rx);
	return vt_failures ? 1 : 0;
}

/* ---- the client ------------------------------------------------------------ */

/* What the client's steps share. */
static struct {
	uint32_t *peer_qpn, *out;          /* per QP: the server's QPN, sends in flight */
	uint64_t *next;                    /* per QP: the next message's number */
	uint64_t total, done, bytes;       /* sends posted, completed; bytes posted */
	struct ibv_ah *ah;                 /* UD: to the server */
	uint32_t first;                    /* the QP whose turn it is to post first */
} cli;

/* UD: the address handle to the server. */
static struct ibv_ah *server_ah(const union ibv_gid *peer_gid)
{
	struct ibv_ah_attr a = { .is_global = 1, .port_num = dev.port };
	struct ibv_ah *ah;

	a.grh.dgid = *peer_gid;
	a.grh.sgid_index = (uint8_t)dev.gid_index;
	a.grh.hop_limit = 64;
	ah = ibv_create_ah(dev.pd, &a);
	if (!ah)
		die("ibv_create_ah");
	return ah;
}

/* Posts on every QP, the QPs taking turns to go first, while it has room,
 * messages are left and fewer than allowed were posted in all.  Returns 1
 * if a post fails, else 0. */
static int post_paced(uint64_t allowed, uint64_t messages)
{
	for (uint32_t k = 0; k < cfg.qps; k++) {
		uint32_t q = (cli.first + k) % cfg.qps;

		while (cli.out[q] < cfg.depth && (!messages || cli.next[q] < messages / cfg.qps) &&
		       cli.total < allowed) {
			uint64_t i = cli.next[q];
			uint8_t *buf = area + ((size_t)q * (cfg.depth + 1) + i % cfg.depth) *
					      cfg.max_size;
			struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len_of(q, i),
					       .lkey = mr->lkey };
			struct ibv_send_wr wr = vt_wr((uint64_t)q << 32 | (i & 0xffffffffu),
						      IBV_WR_SEND_WITH_IMM, &sge);
			int ret;

			vt_stream_fill(buf, sge.length, key_of(q, i), 0);
			wr.imm_data = htonl((uint32_t)i);
			if (cli.ah) {
				wr.wr.ud.ah = cli.ah;
				wr.wr.ud.remote_qpn = cli.peer_qpn[q];
				wr.wr.ud.remote_qkey = QKEY;
			}
			ret = vt_post_send(&qps[q], &wr);
			if (ret) {
				vt_fail("client: ibv_post_send: %s", strerror(ret));
				return 1;
			}
			cli.next[q]++;
			cli.out[q]++;
			cli.total++;
			cli.bytes += sge.length;
		}
	}
	return 0;
}

/* Send completions: all must succeed.  Returns 1 if one did not, else 0. */
static int take_sends(const struct ibv_wc *wc, int n)
{
	for (int k = 0; k < n; k++) {
		uint32_t q = (uint32_t)(wc[k].wr_id >> 32);

		if (wc[k].status != IBV_WC_SUCCESS) {
			vt_fail("client: QP %u: a send completed with %s", q,
				ibv_wc_status_str(wc[k].status));
			return 1;
		}
		cli.out[q]--;
		cli.done++;
	}
	return 0;
}

static int drive(const char *host, const char *port, uint64_t messages, double seconds,
		 double rate)
{
	int fd = vt_tcp_connect(host, port);
	uint32_t *qpn;
	union ibv_gid peer_gid;
	double t0, stop, t, last;
	bool posting = true, paced_out = false;

	setup(cfg.depth, 1, cfg.max_size);
	qpn = calloc(cfg.qps, sizeof(*qpn));
	cli.peer_qpn = calloc(cfg.qps, sizeof(*cli.peer_qpn));
	cli.next = calloc(cfg.qps, sizeof(*cli.next));
	cli.out = calloc(cfg.qps, sizeof(*cli.out));
	if (!qpn || !cli.peer_qpn || !cli.next || !cli.out)
		die("calloc");
	for (uint32_t q = 0; q < cfg.qps; q++)
		qpn[q] = qps[q].qp->qp_num;
	cfg.gid = dev.gid;
	vt_peer_hello(fd, &cfg, sizeof(cfg), qpn, &peer_gid, sizeof(peer_gid), cli.peer_qpn, cfg.qps);
	connect_all(cli.peer_qpn, &peer_gid);
	if (qp_type() == IBV_QPT_UD)
		cli.ah = server_ah(&peer_gid);
	vt_ok("client: %u %s QP%s; messages of 1 .. %u bytes, %u in flight per QP", cfg.qps,
	      cli.ah ? "UD" : "UC", cfg.qps > 1 ? "s" : "", cfg.max_size, cfg.depth);

	t0 = last = vt_now();
	stop = seconds > 0 ? t0 + seconds : 0;
	for (;;) {
		struct ibv_wc wc[64];
		int n;

		if (posting) {
			/* Paced: no more than rate x the time since the start,
			 * the QPs taking turns to go first. */
			uint64_t allowed = rate > 0 ? (uint64_t)((vt_now() - t0) * rate) + 1 : UINT64_MAX;

			if (post_paced(allowed, messages))
				return 1;
			cli.first = (cli.first + 1) % cfg.qps;
			paced_out = cli.total >= allowed;
			posting = stop ? vt_now() < stop : cli.total < messages / cfg.qps * cfg.qps;
		}
		n = ibv_poll_cq(cq, 64, wc);
		if (take_sends(wc, n))
			return 1;
		t = vt_now();
		if (n || (paced_out && cli.done == cli.total))
			last = t;       /* waiting for the pace is no stall */
		if (!posting && cli.done == cli.total)
			break;
		if (paced_out && !n)
			usleep(100);    /* leaves the cores to the receiver */
		if (t - last > STALL_SECONDS) {
			vt_fail("client: no send completed for %.0f s", STALL_SECONDS);
			return 1;
		}
	}
	t = vt_now() - t0;
	vt_ok("client: %llu sends completed successfully", (unsigned long long)cli.done);
	printf("dgram: %llu messages on %u QPs, %.1f MB in %.2f s: %.3f Gb/s, %.0f messages/s\n",
	       (unsigned long long)cli.done, cfg.qps, cli.bytes / 1e6, t, cli.bytes * 8 / t / 1e9,
	       cli.done / t);
	vt_xfer(fd, cli.next, cfg.qps * sizeof(*cli.next), true);
	vt_peer_verdict_check(fd);
	if (cli.ah)
		ibv_destroy_ah(cli.ah);
	teardown();
	free(qpn);
	free(cli.peer_qpn);
	free(cli.next);
	free(cli.out);
	return vt_failures ? 1 : 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: dgram DEVICE GID_INDEX -s PORT\n"
		"       dgram DEVICE GID_INDEX -c HOST PORT --type uc|ud [--qps N]\n"
		"             [--messages N | --seconds S] [--max-size BYTES] [--depth D] [--seed S]\n"
		"             [--rate MESSAGES_PER_SECOND]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "type", required_argument, NULL, 'T' },
		{ "qps", required_argument, NULL, 'q' },
		{ "messages", required_argument, NULL, 'n' },
		{ "seconds", required_argument, NULL, 't' },
		{ "max-size", required_argument, NULL, 'm' },
		{ "depth", required_argument, NULL, 'd' },
		{ "seed", required_argument, NULL, 'S' },
		{ "rate", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t messages = 0;
	double seconds = 0, rate = 0;
	bool server = false, client = false;
	int c, ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	vt_case = "dgram";
	cfg = (struct hello){ .magic = DGRAM_MAGIC, .qps = 1, .depth = 16, .max_size = 1024,
			      .seed = 1 };
	while ((c = getopt_long(argc, argv, "sc", opts, NULL)) != -1) {
		switch (c) {
		case 's': server = true; break;
		case 'c': client = true; break;
		case 'T':
			if (strcmp(optarg, "uc") && strcmp(optarg, "ud"))
				usage();
			cfg.type = (uint32_t)optarg[1];
			break;
		case 'q': cfg.qps = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'n': messages = strtoull(optarg, NULL, 0); break;
		case 't': seconds = atof(optarg); break;
		case 'm': cfg.max_size = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'd': cfg.depth = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'S': cfg.seed = strtoull(optarg, NULL, 0); break;
		case 'r': rate = atof(optarg); break;
		default: usage();
		}
	}
	if (server == client || argc - optind != (server ? 3 : 4) ||
	    (client && (!cfg.type || (!messages && seconds <= 0))) || !cfg.qps ||
	    cfg.qps > MAX_QPS || !cfg.depth || !cfg.max_size || cfg.max_size > (1u << 24))
		usage();
	vt_dev_open(&dev, argv[optind], atoi(argv[optind + 1]));
	ret = server ? serve(argv[optind + 2])
		     : drive(argv[optind + 2], argv[optind + 3], messages, seconds, rate);
	vt_dev_close(&dev);
	fprintf(stderr, "dgram: %d checks, %d failed\n", vt_checks, vt_failures);
	return ret ? ret : vt_failures ? 1 : 0;
}
