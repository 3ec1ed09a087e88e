/* uroce srq-client: open -c RC connections to an srq-server from one
 * process (one CQ for all), send -n numbered messages on each with a window
 * of sends in flight, then tell the server how many (DONE) and wait for its
 * count (the verdict). */
#include "conn.h"
#include "opts.h"
#include "srq.h"
#include "uroce.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define VERDICT_TIMEOUT_S 30

struct cli_opts {
	struct ur_conn_opts conn;       /* -d -i -g -p */
	const char *server;
	uint32_t nconn, msgs, size, window, inflight;
	bool verbose;
};

struct cli_conn {
	uint32_t idx, id;
	int fd;
	struct ibv_qp *qp;
	uint32_t posted, completed, outstanding;
	bool failed, done_sent;
};

struct cli {
	struct cli_opts o;
	struct ur_dev d;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *bufs;
	struct cli_conn *conns;
	uint32_t inflight;      /* sends posted and not completed, all connections */
	uint32_t cursor;        /* where fill_all resumes, for fairness */
};

static const char cli_help[] =
	"usage: uroce srq-client [OPTIONS] SERVER\n"
	"\n"
	"Opens -c RC connections to `uroce srq-server` on SERVER from this one process,\n"
	"sends -n messages on each (client id, sequence number and a pattern the server\n"
	"checks), keeping -w sends in flight per connection, then asks the server how\n"
	"many arrived.  Run several at once to load the server with many processes.\n"
	"\n"
	"options:\n"
	"  -d, --ib-dev=DEV       device (default: the one holding the address that reaches\n"
	"                         SERVER)\n"
	"  -i, --ib-port=PORT     device port (default 1)\n"
	"  -g, --gid-idx=INDEX    GID index (default: the one reaching SERVER)\n"
	"  -p, --port=PORT        the server's TCP port (default 18515)\n"
	"  -c, --connections=N    connections (default 1)\n"
	"  -n, --msgs=N           messages per connection (default 1000)\n"
	"  -s, --size=BYTES       message size, 16 (the header) up to the server's -s\n"
	"                         (default 64)\n"
	"  -w, --window=N         sends in flight per connection (default 8)\n"
	"      --inflight=N       sends in flight in all, this process (default 256)\n"
	"  -v, --verbose          a line per connection\n"
	"  -h, --help             this text\n"
	"\n"
	"Exit status: 0 the server counted every message of every connection; 1 it did\n"
	"not, or a connection failed; 2 bad arguments.\n"
	"\n"
	"examples:\n"
	"  uroce srq-client 10.0.0.1\n"
	"  uroce srq-client -c 250 -n 100 -s 512 10.0.0.1\n";

static int cli_parse(int argc, char **argv, struct cli_opts *o)
{
	static const struct option longs[] = {
		UR_OPT_LONGS_SHARED,
		{ "gid-idx", required_argument, NULL, 'g' },
		{ "connections", required_argument, NULL, 'c' },
		{ "msgs", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "window", required_argument, NULL, 'w' },
		{ "inflight", required_argument, NULL, 'I' },
		{ "verbose", no_argument, NULL, 'v' },
		{ 0 },
	};
	struct ur_optparse p = { .cmd = "srq-client", .help = cli_help, .argc = argc,
				 .argv = argv, .shorts = ":d:i:g:p:c:n:s:w:vh", .longs = longs,
				 .conn = &o->conn };
	int c;

	*o = (struct cli_opts){ .conn = UR_CONN_OPTS_DEFAULT, .nconn = 1, .msgs = 1000, .size = 64,
				.window = 8, .inflight = 256 };
	while ((c = ur_opt_next(&p)) != -1) {
		switch (c) {
		case 'v':
			o->verbose = true;
			break;
		case 'c':
			ur_opt_count(&p, "a number of connections", 1, 1u << 20, &o->nconn);
			break;
		case 'n':
			ur_opt_count(&p, "a number of messages", 1, UINT32_MAX, &o->msgs);
			break;
		case 's':
			srq_opt_size(&p, &o->size);
			break;
		case 'w':
			ur_opt_range(&p, "sends in flight", 1, 4096, &o->window);
			break;
		case 'I':
			ur_opt_count(&p, "sends in flight", 1, 1u << 20, &o->inflight);
			break;
		}
	}
	if (p.rc)       /* help printed, or a usage error */
		return p.rc;
	if (optind != argc - 1)
		return ur_opt_error(&p, "%s", optind < argc ? "one SERVER, no more" : "SERVER missing");
	o->server = argv[optind];
	return 0;
}

/* --- connecting ------------------------------------------------------------------ */

static int setup(struct cli *c)
{
	uint32_t depth;

	if (ur_dev_setup(&c->d, &(struct ur_dev_opts){
		    .dev_name = c->o.conn.dev_name, .ib_port = c->o.conn.ib_port,
		    .gid_index = c->o.conn.gid_index, .peer = c->o.server, .gid_flag = "-g" }))
		return UR_EXIT_FAIL;
	/* One CQ for every connection's sends: shrink the window to fit it. */
	if ((uint64_t)c->o.nconn * c->o.window + 16 > (uint64_t)c->d.attr.max_cqe) {
		uint32_t w = (uint32_t)((c->d.attr.max_cqe - 16) / c->o.nconn);

		if (!w) {
			fprintf(stderr, "%u connections need a CQ of at least %u entries; %s allows %d "
					"(max_cqe): use fewer connections per process\n", c->o.nconn,
				c->o.nconn + 16, ur_dev_name(&c->d), c->d.attr.max_cqe);
			return UR_EXIT_FAIL;
		}
		fprintf(stderr, "note: window %u per connection (the CQ's %d entries are shared by "
				"%u connections)\n", w, c->d.attr.max_cqe, c->o.nconn);
		c->o.window = w;
	}
	depth = c->o.nconn * c->o.window + 16;
	c->cq = ur_cq_new(&c->d, (int)depth);
	if (!c->cq)
		return UR_EXIT_FAIL;
	c->bufs = ur_buf_alloc((size_t)c->o.nconn * c->o.window * c->o.size);
	if (!c->bufs)
		return UR_EXIT_FAIL;
	c->mr = ur_mr_new(&c->d, c->bufs, (size_t)c->o.nconn * c->o.window * c->o.size,
			  IBV_ACCESS_LOCAL_WRITE);
	c->conns = calloc(c->o.nconn, sizeof(*c->conns));
	return c->mr && c->conns ? 0 : UR_EXIT_FAIL;
}

static int connect_one(struct cli *c, struct cli_conn *k)
{
	struct ur_hello lh = { .tool = SRQ_TOOL }, rh;
	struct ur_ep local, remote;
	uint32_t id;

	k->fd = ur_tcp_connect(c->o.server, c->o.conn.tcp_port,
			       "start `uroce srq-server` on the server first");
	if (k->fd < 0)
		return UR_EXIT_FAIL;
	k->qp = ur_qp_new(&c->d, &(struct ur_qp_cfg){
		.type = IBV_QPT_RC, .send_cq = c->cq, .recv_cq = c->cq,
		.max_send_wr = c->o.window, .max_recv_wr = 1 });
	if (!k->qp)
		return UR_EXIT_FAIL;
	ur_ep_fill(&local, &c->d, k->qp, NULL);
	lh.word[SRQ_W_SIZE] = c->o.size;
	lh.word[SRQ_W_MSGS] = c->o.msgs;
	if (ur_exchange(k->fd, false, &lh, &local, &rh, &remote, 1))
		return UR_EXIT_FAIL;
	id = rh.word[SRQ_W_ID];
	if (id == UINT32_MAX) {
		fprintf(stderr, "connection %u: the server already serves as many clients as its -q "
				"allows\n", k->idx);
		return UR_EXIT_FAIL;
	}
	if (c->o.size > rh.word[SRQ_W_SIZE]) {
		fprintf(stderr, "-s %u exceeds the server's receive buffers (%u bytes, its -s)\n",
			c->o.size, rh.word[SRQ_W_SIZE]);
		return UR_EXIT_FAIL;
	}
	if (rh.word[SRQ_W_MSGS] && rh.word[SRQ_W_MSGS] != c->o.msgs) {
		fprintf(stderr, "the server expects -n %u messages per client, this client sends "
				"%u\n", rh.word[SRQ_W_MSGS], c->o.msgs);
		return UR_EXIT_FAIL;
	}
	k->id = id;
	if (ur_qp_connect(&c->d, k->qp, &local, &remote, NULL) || ur_tcp_barrier(k->fd))
		return UR_EXIT_FAIL;
	if (c->o.verbose) {
		printf("connection %u (server id %u): ", k->idx, k->id);
		ur_ep_print(stdout, "local", &local, false);
	}
	return 0;
}

/* --- sending --------------------------------------------------------------------------- */

static int post_next(struct cli *c, struct cli_conn *k)
{
	uint32_t slot = k->posted % c->o.window;
	uint8_t *buf = c->bufs + ((size_t)k->idx * c->o.window + slot) * c->o.size;
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = c->o.size, .lkey = c->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = k->idx, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	int rc;

	srq_msg_fill(buf, c->o.size, k->id, k->posted);
	rc = ibv_post_send(k->qp, &wr, &bad);
	if (rc) {
		fprintf(stderr, "connection %u: posting message %u failed: %s\n", k->idx, k->posted,
			strerror(rc));
		k->failed = true;
		return -1;
	}
	k->posted++;
	k->outstanding++;
	c->inflight++;
	return 0;
}

static void fill_window(struct cli *c, struct cli_conn *k)
{
	while (!k->failed && k->posted < c->o.msgs && k->outstanding < c->o.window &&
	       c->inflight < c->o.inflight)
		if (post_next(c, k))
			return;
}

/* Tops up every connection's window, round robin from where the last call
 * stopped, within the process-wide --inflight: hundreds of connections
 * each with a full window would flood the server (and the network) with
 * more than it can take in at once. */
static uint32_t fill_all(struct cli *c)
{
	uint32_t failed = 0;

	for (uint32_t n = 0; n < c->o.nconn && c->inflight < c->o.inflight; n++) {
		struct cli_conn *k = &c->conns[c->cursor];
		bool was = k->failed;

		fill_window(c, k);
		failed += !was && k->failed;
		if (k->outstanding >= c->o.window || k->posted == c->o.msgs || k->failed)
			c->cursor = (c->cursor + 1) % c->o.nconn;
	}
	return failed;
}

static void send_done(struct cli *c, struct cli_conn *k)
{
	uint8_t b[SRQ_DONE_BYTES];

	srq_done_pack(b, k->completed, (uint64_t)k->completed * c->o.size);
	if (ur_tcp_write_all(k->fd, b, sizeof(b))) {
		fprintf(stderr, "connection %u: the server closed the connection\n", k->idx);
		k->failed = true;
		return;
	}
	k->done_sent = true;
}

static int send_all(struct cli *c)
{
	struct ibv_wc wc[64];
	uint32_t left = c->o.nconn;
	int n;

	left -= fill_all(c);
	while (left) {
		n = ibv_poll_cq(c->cq, 64, wc);
		if (n < 0) {
			fprintf(stderr, "polling the CQ failed\n");
			return UR_EXIT_FAIL;
		}
		for (int i = 0; i < n; i++) {
			struct cli_conn *k = &c->conns[wc[i].wr_id];

			k->outstanding--;
			c->inflight--;
			if (k->failed)
				continue;
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "connection %u (server id %u): message %u failed: %s%s\n",
					k->idx, k->id, k->completed, ibv_wc_status_str(wc[i].status),
					wc[i].status == IBV_WC_RETRY_EXC_ERR ?
						" (the server stopped answering)" : "");
				k->failed = true;
				left--;
				continue;
			}
			if (++k->completed == c->o.msgs) {
				send_done(c, k);
				left--;
			}
		}
		if (n)
			left -= fill_all(c);
	}
	return 0;
}

static bool read_verdict(struct cli *c, struct cli_conn *k)
{
	struct timeval tv = { .tv_sec = VERDICT_TIMEOUT_S };
	uint8_t v[SRQ_VERDICT_BYTES];
	uint64_t bytes;
	uint32_t msgs;
	bool ok;

	setsockopt(k->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (ur_tcp_read_all(k->fd, v, sizeof(v)) || !srq_verdict_unpack(v, &ok, &msgs, &bytes)) {
		fprintf(stderr, "connection %u (server id %u): no count from the server\n", k->idx,
			k->id);
		return false;
	}
	if (!ok || msgs != k->completed)
		fprintf(stderr, "connection %u (server id %u): sent %u messages, the server counted "
				"%u%s\n", k->idx, k->id, k->completed, msgs,
			ok ? "" : " and found a fault (see its table)");
	return ok && msgs == k->completed;
}

static void teardown(struct cli *c)
{
	for (uint32_t i = 0; c->conns && i < c->o.nconn; i++) {
		if (c->conns[i].qp)
			ibv_destroy_qp(c->conns[i].qp);
		if (c->conns[i].fd > 0)
			close(c->conns[i].fd);
	}
	free(c->conns);
	if (c->mr)
		ibv_dereg_mr(c->mr);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	free(c->bufs);
	if (c->d.ctx)
		ur_dev_teardown(&c->d);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int cmd_srq_client(int argc, char **argv)
{
	struct cli c = { 0 };
	uint32_t confirmed = 0;
	uint64_t sent = 0;
	double t0, secs;
	int rc;

	rc = cli_parse(argc, argv, &c.o);
	if (rc)
		return rc < 0 ? UR_EXIT_OK : rc;
	signal(SIGPIPE, SIG_IGN);
	rc = setup(&c);
	for (uint32_t i = 0; !rc && i < c.o.nconn; i++) {
		c.conns[i] = (struct cli_conn){ .idx = i, .fd = -1 };
		rc = connect_one(&c, &c.conns[i]);
		if (rc)
			fprintf(stderr, "connection %u of %u failed (see above)\n", i, c.o.nconn);
	}
	if (rc) {
		teardown(&c);
		return rc;
	}
	t0 = now_s();
	rc = send_all(&c);
	secs = now_s() - t0;
	for (uint32_t i = 0; !rc && i < c.o.nconn; i++) {
		sent += c.conns[i].completed;
		if (c.conns[i].done_sent && read_verdict(&c, &c.conns[i]))
			confirmed++;
	}
	if (!rc) {
		printf("srq-client: %u connections, %llu messages (%llu bytes) sent in %.2f seconds "
		       "= %.2f Mbit/sec; the server confirmed %u of %u connections\n",
		       c.o.nconn, (unsigned long long)sent,
		       (unsigned long long)(sent * c.o.size), secs,
		       secs > 0 ? (double)sent * c.o.size * 8 / secs / 1e6 : 0.0, confirmed,
		       c.o.nconn);
		rc = confirmed == c.o.nconn ? UR_EXIT_OK : UR_EXIT_FAIL;
	}
	teardown(&c);
	return rc;
}
