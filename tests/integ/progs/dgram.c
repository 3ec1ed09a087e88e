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
#include <poll.h>
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
	for (uint32_t q = 0; q < cfg.qps; q++) {
		int ret = vt_qp_connect_remote(&qps[q], peer_qpn[q], gid);

		if (ret) {
			errno = ret;
			die("connecting a QP");
		}
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

static int serve(const char *port)
{
	int fd = vt_tcp_accept(port);
	uint32_t rq, *qpn, *peer_qpn, fails;
	size_t slot;
	uint64_t *count, sent = 0, got = 0, dups = 0, bad = 0;
	struct rx *rx;
	bool counts_known = false;
	double last;

	vt_xfer(fd, &cfg, sizeof(cfg), false);
	if (cfg.magic != DGRAM_MAGIC || !cfg.qps || cfg.qps > MAX_QPS || !cfg.depth ||
	    !cfg.max_size || cfg.max_size > (1u << 24) || (cfg.type != 'c' && cfg.type != 'd')) {
		fprintf(stderr, "dgram: a client spoke nonsense\n");
		return 2;
	}
	rq = 4 * cfg.depth;
	slot = cfg.max_size + GRH_BYTES;
	setup(1, rq, slot);
	qpn = calloc(cfg.qps, sizeof(*qpn));
	peer_qpn = calloc(cfg.qps, sizeof(*peer_qpn));
	count = calloc(cfg.qps, sizeof(*count));
	rx = calloc(cfg.qps, sizeof(*rx));
	if (!qpn || !peer_qpn || !count || !rx)
		die("calloc");
	vt_xfer(fd, peer_qpn, cfg.qps * sizeof(*peer_qpn), false);
	connect_all(peer_qpn, &cfg.gid);
	for (uint32_t q = 0; q < cfg.qps; q++) {
		qpn[q] = qps[q].qp->qp_num;
		for (uint32_t s = 0; s < rq; s++) {
			struct ibv_sge sge = { .addr = (uintptr_t)(area + ((size_t)q * (rq + 1) + s) * slot),
					       .length = (uint32_t)slot, .lkey = mr->lkey };

			if (vt_post_recv(&qps[q], (uint64_t)q << 32 | s, &sge, 1))
				die("ibv_post_recv");
		}
	}
	vt_xfer(fd, &dev.gid, sizeof(dev.gid), true);
	vt_xfer(fd, qpn, cfg.qps * sizeof(*qpn), true);

	last = vt_now();
	for (;;) {
		struct ibv_wc wc[64];
		int n = ibv_poll_cq(cq, 64, wc);
		double now = vt_now();

		for (int k = 0; k < n; k++) {
			uint32_t q = (uint32_t)(wc[k].wr_id >> 32), s = (uint32_t)wc[k].wr_id;
			uint8_t *buf = area + ((size_t)q * (rq + 1) + s) * slot;
			uint32_t off = qp_type() == IBV_QPT_UD ? GRH_BYTES : 0;
			struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = (uint32_t)slot,
					       .lkey = mr->lkey };
			uint64_t i = ntohl(wc[k].imm_data);
			long d;

			if (wc[k].status != IBV_WC_SUCCESS) {
				vt_fail("server: QP %u: a receive completed with %s", q,
					ibv_wc_status_str(wc[k].status));
				bad++;
			} else if (!(wc[k].wc_flags & IBV_WC_WITH_IMM) ||
				   wc[k].byte_len != off + len_of(q, i) ||
				   (d = vt_stream_diff(buf + off, len_of(q, i), key_of(q, i), 0)) >= 0) {
				vt_fail("server: QP %u: message %llu arrived wrong (%u bytes, %u expected)",
					q, (unsigned long long)i, wc[k].byte_len, off + len_of(q, i));
				bad++;
			} else if (qp_type() == IBV_QPT_UC && rx[q].got && i < rx[q].last) {
				vt_fail("server: QP %u: UC message %llu after %llu", q,
					(unsigned long long)i, (unsigned long long)rx[q].last - 1);
				bad++;
			} else if (qp_type() == IBV_QPT_UD && seen_before(&rx[q], i)) {
				rx[q].dups++;
				dups++;
			} else {
				rx[q].got++;
				rx[q].last = i + 1;
				got++;
			}
			if (bad >= 10) {
				vt_fail("server: 10 wrong arrivals: giving up");
				return 1;
			}
			if (vt_post_recv(&qps[q], wc[k].wr_id, &sge, 1))
				die("ibv_post_recv");
		}
		if (n > 0)
			last = now;
		if (!counts_known && !n) {
			struct pollfd pfd = { .fd = fd, .events = POLLIN };

			if (poll(&pfd, 1, 0) == 1) {
				vt_xfer(fd, count, cfg.qps * sizeof(*count), false);
				counts_known = true;
				for (uint32_t q = 0; q < cfg.qps; q++)
					sent += count[q];
				last = now;
			}
		}
		if (counts_known && (got == sent || now - last > QUIET_SECONDS))
			break;
		if (now - last > STALL_SECONDS) {
			vt_fail("server: nothing arrived for %.0f s and the client said nothing",
				STALL_SECONDS);
			return 1;
		}
	}
	for (uint32_t q = 0; q < cfg.qps; q++) {
		if (rx[q].last > count[q]) {
			vt_fail("server: QP %u: message %llu arrived, but only %llu were sent", q,
				(unsigned long long)rx[q].last - 1, (unsigned long long)count[q]);
			bad++;
		}
		free(rx[q].seen);
	}
	vt_check(!bad && got <= sent, "server: %s: %llu messages sent, %llu arrived whole and intact, "
		 "%llu lost (%.2f %%), %llu duplicates; none corrupted%s",
		 qp_type() == IBV_QPT_UD ? "UD" : "UC", (unsigned long long)sent,
		 (unsigned long long)got, (unsigned long long)(sent - got),
		 sent ? 100.0 * (double)(sent - got) / (double)sent : 0.0,
		 (unsigned long long)dups, qp_type() == IBV_QPT_UC ? ", duplicated or out of order" : "");
	vt_check(got > 0, "server: messages arrived (%llu)", (unsigned long long)got);
	fails = (uint32_t)vt_failures;
	vt_xfer(fd, &fails, sizeof(fails), true);
	close(fd);
	teardown();
	free(qpn);
	free(peer_qpn);
	free(count);
	free(rx);
	return vt_failures ? 1 : 0;
}

/* ---- the client ------------------------------------------------------------ */

static int drive(const char *host, const char *port, uint64_t messages, double seconds,
		 double rate)
{
	int fd = vt_tcp_connect(host, port);
	uint32_t *qpn, *peer_qpn, server_fails, *out;
	uint64_t *next, total = 0, done = 0, bytes = 0;
	union ibv_gid peer_gid;
	struct ibv_ah *ah = NULL;
	double t0, stop, t, last;
	bool posting = true, paced_out = false;
	uint32_t first = 0;

	setup(cfg.depth, 1, cfg.max_size);
	qpn = calloc(cfg.qps, sizeof(*qpn));
	peer_qpn = calloc(cfg.qps, sizeof(*peer_qpn));
	next = calloc(cfg.qps, sizeof(*next));
	out = calloc(cfg.qps, sizeof(*out));
	if (!qpn || !peer_qpn || !next || !out)
		die("calloc");
	for (uint32_t q = 0; q < cfg.qps; q++)
		qpn[q] = qps[q].qp->qp_num;
	cfg.gid = dev.gid;
	vt_xfer(fd, &cfg, sizeof(cfg), true);
	vt_xfer(fd, qpn, cfg.qps * sizeof(*qpn), true);
	vt_xfer(fd, &peer_gid, sizeof(peer_gid), false);
	vt_xfer(fd, peer_qpn, cfg.qps * sizeof(*peer_qpn), false);
	connect_all(peer_qpn, &peer_gid);
	if (qp_type() == IBV_QPT_UD) {
		struct ibv_ah_attr a = { .is_global = 1, .port_num = dev.port };

		a.grh.dgid = peer_gid;
		a.grh.sgid_index = (uint8_t)dev.gid_index;
		a.grh.hop_limit = 64;
		ah = ibv_create_ah(dev.pd, &a);
		if (!ah)
			die("ibv_create_ah");
	}
	vt_ok("client: %u %s QP%s; messages of 1 .. %u bytes, %u in flight per QP", cfg.qps,
	      ah ? "UD" : "UC", cfg.qps > 1 ? "s" : "", cfg.max_size, cfg.depth);

	t0 = last = vt_now();
	stop = seconds > 0 ? t0 + seconds : 0;
	for (;;) {
		struct ibv_wc wc[64];
		int n;

		if (posting) {
			/* Paced: no more than rate x the time since the start,
			 * the QPs taking turns to go first. */
			uint64_t allowed = rate > 0 ? (uint64_t)((vt_now() - t0) * rate) + 1 : UINT64_MAX;

			for (uint32_t k = 0; k < cfg.qps; k++) {
				uint32_t q = (first + k) % cfg.qps;

				while (out[q] < cfg.depth && (!messages || next[q] < messages / cfg.qps) &&
				       total < allowed) {
					uint64_t i = next[q];
					uint8_t *buf = area + ((size_t)q * (cfg.depth + 1) + i % cfg.depth) *
							      cfg.max_size;
					struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len_of(q, i),
							       .lkey = mr->lkey };
					struct ibv_send_wr wr = vt_wr((uint64_t)q << 32 | (i & 0xffffffffu),
								      IBV_WR_SEND_WITH_IMM, &sge);
					int ret;

					vt_stream_fill(buf, sge.length, key_of(q, i), 0);
					wr.imm_data = htonl((uint32_t)i);
					if (ah) {
						wr.wr.ud.ah = ah;
						wr.wr.ud.remote_qpn = peer_qpn[q];
						wr.wr.ud.remote_qkey = QKEY;
					}
					ret = vt_post_send(&qps[q], &wr);
					if (ret) {
						vt_fail("client: ibv_post_send: %s", strerror(ret));
						return 1;
					}
					next[q]++;
					out[q]++;
					total++;
					bytes += sge.length;
				}
			}
			first = (first + 1) % cfg.qps;
			paced_out = total >= allowed;
			posting = stop ? vt_now() < stop : total < messages / cfg.qps * cfg.qps;
		}
		n = ibv_poll_cq(cq, 64, wc);
		for (int k = 0; k < n; k++) {
			uint32_t q = (uint32_t)(wc[k].wr_id >> 32);

			if (wc[k].status != IBV_WC_SUCCESS) {
				vt_fail("client: QP %u: a send completed with %s", q,
					ibv_wc_status_str(wc[k].status));
				return 1;
			}
			out[q]--;
			done++;
		}
		t = vt_now();
		if (n || (paced_out && done == total))
			last = t;       /* waiting for the pace is no stall */
		if (!posting && done == total)
			break;
		if (paced_out && !n)
			usleep(100);    /* leaves the cores to the receiver */
		if (t - last > STALL_SECONDS) {
			vt_fail("client: no send completed for %.0f s", STALL_SECONDS);
			return 1;
		}
	}
	t = vt_now() - t0;
	vt_ok("client: %llu sends completed successfully", (unsigned long long)done);
	printf("dgram: %llu messages on %u QPs, %.1f MB in %.2f s: %.3f Gb/s, %.0f messages/s\n",
	       (unsigned long long)done, cfg.qps, bytes / 1e6, t, bytes * 8 / t / 1e9, done / t);
	vt_xfer(fd, next, cfg.qps * sizeof(*next), true);
	vt_xfer(fd, &server_fails, sizeof(server_fails), false);
	vt_check(!server_fails, "client: the server found %u failures", server_fails);
	close(fd);
	if (ah)
		ibv_destroy_ah(ah);
	teardown();
	free(qpn);
	free(peer_qpn);
	free(next);
	free(out);
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
