/* uroce bench: connect over TCP, open the device that reaches the peer,
 * create each thread's CQ, QPs and buffer, exchange one endpoint record per
 * QP and move every QP to RTS (conn.h does the work). */
#include "bench.h"
#include "dev_open.h"
#include "uroce.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Hello words: what both sides must agree on. */
enum { W_OP, W_LAT, W_QPT, W_QPS, W_THREADS, W_ITERS, W_SIZE, W_FLAGS };

static int open_tcp(struct bench *b)
{
	char hint[160];
	int lfd;

	if (!b->server) {
		snprintf(hint, sizeof(hint), "start `uroce bench %s` (same options, no server name) "
			 "on %s first, or give its -p", bench_op_name(b->o.op), b->o.server);
		b->fd = ur_tcp_connect(b->o.server, b->o.conn.tcp_port, hint);
		return b->fd < 0 ? UR_EXIT_FAIL : 0;
	}
	lfd = ur_tcp_listen(b->o.conn.tcp_port);
	if (lfd < 0)
		return UR_EXIT_FAIL;
	fprintf(b->out, "\n************************************\n"
	       "* Waiting for client to connect... *\n"
	       "************************************\n");
	fflush(b->out);
	b->fd = ur_tcp_accept(lfd, NULL, 0);
	close(lfd);
	return b->fd < 0 ? UR_EXIT_FAIL : 0;
}

static int open_device(struct bench *b)
{
	char local_ip[UR_GID_STRLEN] = "", client_ip[UR_GID_STRLEN] = "";

	if (b->server) {
		ur_tcp_local_ip(b->fd, local_ip, sizeof(local_ip));
		ur_tcp_peer_ip(b->fd, client_ip, sizeof(client_ip));
	}
	return ur_dev_setup(&b->d, &(struct ur_dev_opts){
		.dev_name = b->o.conn.dev_name,
		.ib_port = b->o.conn.ib_port,
		.gid_index = b->o.conn.gid_index,
		.peer = b->server ? (client_ip[0] ? client_ip : NULL) : b->o.server,
		.local_ip = local_ip[0] ? local_ip : NULL,
		.gid_flag = "-x",
	}) ? UR_EXIT_FAIL : 0;
}

static int qp_access(const struct bench *b)
{
	if (b->o.qpt == IBV_QPT_UD)
		return 0;
	if (b->o.qpt == IBV_QPT_UC)
		return IBV_ACCESS_REMOTE_WRITE;
	return IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
}

static struct ibv_cq *thread_cq(struct bench *b, struct bench_thread *t, int depth)
{
	struct ibv_cq *cq;

	if (!b->o.events)
		return ur_cq_new(&b->d, depth);
	/* One completion channel per thread, so each thread sleeps on its own
	 * CQ; ur_cq_new takes the channel from the device, lent for the call. */
	t->channel = ibv_create_comp_channel(b->d.ctx);
	if (!t->channel) {
		fprintf(stderr, "cannot create a completion channel: %s\n", strerror(errno));
		return NULL;
	}
	b->d.channel = t->channel;
	cq = ur_cq_new(&b->d, depth);
	b->d.channel = NULL;
	return cq;
}

static int create_thread(struct bench *b, struct bench_thread *t)
{
	uint32_t depth = b->o.tx_depth + b->rx_depth;
	int cqe = (int)(depth * b->o.qps + 16);
	int access = IBV_ACCESS_LOCAL_WRITE | qp_access(b);

	if (cqe > b->d.attr.max_cqe)
		cqe = b->d.attr.max_cqe;
	t->cq = thread_cq(b, t, cqe);
	if (!t->cq)
		return UR_EXIT_FAIL;
	t->rx_off = ((size_t)b->max_size + 4095) & ~(size_t)4095;
	t->buf_len = 2 * t->rx_off + 4096;     /* + the GRH in front of UD receives */
	t->buf = ur_buf_alloc(t->buf_len);
	if (!t->buf)
		return UR_EXIT_FAIL;
	t->mr = ur_mr_new(&b->d, t->buf, t->buf_len, access);
	if (!t->mr)
		return UR_EXIT_FAIL;
	for (unsigned i = 0; i < b->o.qps; i++) {
		t->qp[i] = ur_qp_new(&b->d, &(struct ur_qp_cfg){
			.type = b->o.qpt,
			.send_cq = t->cq,
			.recv_cq = t->cq,
			.max_send_wr = b->o.tx_depth + 1,
			.max_recv_wr = b->rx_depth,
			.max_inline = b->o.inline_size,
			.access = qp_access(b),
		});
		if (!t->qp[i])
			return UR_EXIT_FAIL;
		ur_ep_fill(&t->local[i], &b->d, t->qp[i], t->mr);
		/* the peer writes, reads, and adds into the receive half */
		t->local[i].addr = (uintptr_t)(t->buf + t->rx_off);
		t->local[i].len = (uint32_t)(t->buf_len - t->rx_off);
	}
	return 0;
}

/* The options a hello carries, as the command line would say them. */
static void describe(char *s, size_t len, const uint32_t *w)
{
	int n = snprintf(s, len, "%s %s -c %s -q %u -T %u -n %u",
			 bench_op_name((enum bench_op)w[W_OP]), w[W_LAT] ? "--lat" : "--bw",
			 bench_qpt_name((enum ibv_qp_type)w[W_QPT]), w[W_QPS], w[W_THREADS],
			 w[W_ITERS]);

	if (n < 0 || (size_t)n >= len)
		return;
	snprintf(s + n, len - (size_t)n, "%s%s%s", w[W_FLAGS] & 4 ? " -a" : "",
		 w[W_FLAGS] & 1 ? " -b" : "", w[W_FLAGS] & 2 ? " -A CMP_AND_SWAP" : "");
	if (!(w[W_FLAGS] & 4))
		snprintf(s + strlen(s), len - strlen(s), " -s %u", w[W_SIZE]);
}

static int exchange(struct bench *b)
{
	struct ur_hello lh = { .tool = "bench" }, rh;
	static struct ur_ep local[BENCH_MAX_THREADS * BENCH_MAX_QPS];
	static struct ur_ep remote[BENCH_MAX_THREADS * BENCH_MAX_QPS];
	unsigned n = b->o.threads * b->o.qps;
	char mine[160], theirs[160];

	lh.word[W_OP] = b->o.op;
	lh.word[W_LAT] = b->o.lat;
	lh.word[W_QPT] = b->o.qpt;
	lh.word[W_QPS] = b->o.qps;
	lh.word[W_THREADS] = b->o.threads;
	lh.word[W_ITERS] = b->o.iters;
	lh.word[W_SIZE] = b->o.all_sizes ? 0 : b->o.sizes[0];
	lh.word[W_FLAGS] = b->o.bidir | (b->o.atomic == BENCH_CAS) << 1 | b->o.all_sizes << 2;
	for (unsigned k = 0; k < n; k++)
		local[k] = b->th[k / b->o.qps].local[k % b->o.qps];
	if (ur_exchange(b->fd, b->server, &lh, local, &rh, remote, n))
		return UR_EXIT_FAIL;
	if (memcmp(lh.word, rh.word, sizeof(lh.word))) {
		describe(mine, sizeof(mine), lh.word);
		describe(theirs, sizeof(theirs), rh.word);
		fprintf(stderr, "the peer runs `bench %s`, this side `bench %s`: give both sides "
				"the same operation and options\n", theirs, mine);
		return UR_EXIT_FAIL;
	}
	for (unsigned k = 0; k < n; k++)
		b->th[k / b->o.qps].remote[k % b->o.qps] = remote[k];
	return 0;
}

static int check_sizes(struct bench *b)
{
	uint32_t mtu = (uint32_t)ur_mtu_bytes(b->path_mtu);

	if (b->o.qpt != IBV_QPT_UD)
		return 0;
	if (b->o.all_sizes) {
		while (b->o.nsizes > 1 && b->o.sizes[b->o.nsizes - 1] > mtu)
			b->o.nsizes--;      /* the sweep stops at the path MTU */
		return 0;
	}
	if (b->o.sizes[0] > mtu) {
		fprintf(stderr, "a UD message is one packet: -s %u exceeds the path MTU %u (the "
				"smaller of both ports' active MTU): use -s %u or less\n",
			b->o.sizes[0], mtu, mtu);
		return UR_EXIT_USAGE;
	}
	return 0;
}

static int connect_qps(struct bench *b)
{
	for (unsigned k = 0; k < b->o.threads; k++) {
		struct bench_thread *t = &b->th[k];

		for (unsigned i = 0; i < b->o.qps; i++) {
			if (ur_qp_connect(&b->d, t->qp[i], &t->local[i], &t->remote[i],
					  &(struct ur_qp_tune){ .mtu = b->path_mtu }))
				return UR_EXIT_FAIL;
			if (b->o.qpt == IBV_QPT_UD) {
				t->ah[i] = ur_ah_new(&b->d, &t->remote[i]);
				if (!t->ah[i])
					return UR_EXIT_FAIL;
			}
		}
	}
	return 0;
}

int bench_setup(struct bench *b)
{
	int rc;

	b->fd = -1;
	b->max_size = 8;
	for (unsigned i = 0; i < b->o.nsizes; i++)
		if (b->o.sizes[i] > b->max_size)
			b->max_size = b->o.sizes[i];
	if (b->server) {
		rc = ur_dev_check(b->o.conn.dev_name, b->o.conn.ib_port, b->o.conn.gid_index) ?
			     UR_EXIT_FAIL : 0;
		if (!rc)
			rc = open_tcp(b);
		if (!rc)
			rc = open_device(b);
	} else {
		rc = open_device(b);
		if (!rc)
			rc = open_tcp(b);
	}
	if (rc)
		return rc;
	b->rx_depth = b->o.op != BENCH_SEND ? 1 : b->o.lat ? 8 : 512;
	if (b->rx_depth > (uint32_t)b->d.attr.max_qp_wr)
		b->rx_depth = (uint32_t)b->d.attr.max_qp_wr;
	if (b->o.tx_depth + 1 > (uint32_t)b->d.attr.max_qp_wr) {
		fprintf(stderr, "-t %u: the device queues at most %d work requests per QP (max_qp_wr)\n",
			b->o.tx_depth, b->d.attr.max_qp_wr);
		return UR_EXIT_USAGE;
	}
	for (unsigned k = 0; k < b->o.threads; k++) {
		b->th[k].b = b;
		b->th[k].index = k;
		rc = create_thread(b, &b->th[k]);
		if (rc)
			return rc;
	}
	rc = exchange(b);
	if (rc)
		return rc;
	b->path_mtu = ur_path_mtu(&b->d, &b->th[0].remote[0], b->o.conn.mtu);
	if (!b->path_mtu)
		return UR_EXIT_FAIL;
	rc = check_sizes(b);
	if (rc)
		return rc;
	bench_print_header(b->out, b);
	rc = connect_qps(b);
	if (rc)
		return rc;
	return ur_tcp_barrier(b->fd) ? UR_EXIT_FAIL : 0;
}

void bench_teardown(struct bench *b)
{
	for (unsigned k = 0; k < b->o.threads; k++) {
		struct bench_thread *t = &b->th[k];

		for (unsigned i = 0; i < b->o.qps; i++) {
			if (t->ah[i])
				ibv_destroy_ah(t->ah[i]);
			if (t->qp[i])
				ibv_destroy_qp(t->qp[i]);
		}
		if (t->mr)
			ibv_dereg_mr(t->mr);
		if (t->cq)
			ibv_destroy_cq(t->cq);
		if (t->channel)
			ibv_destroy_comp_channel(t->channel);
		free(t->buf);
		free(t->lat);
	}
	ur_dev_teardown(&b->d);
	if (b->fd >= 0)
		close(b->fd);
}
