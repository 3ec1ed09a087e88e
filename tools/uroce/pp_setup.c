/* uroce pingpong: connect over TCP, open the device that reaches the peer,
 * create the QP and its buffer, exchange addresses and move to RTS. */
#include "dev_open.h"
#include "pp.h"
#include "uroce.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Hello words: what both sides must agree on. */
enum { W_OP, W_QPT, W_SIZE, W_ITERS, W_VALIDATE, W_MTU };

static int open_tcp(struct pp *p)
{
	int lfd;

	if (!p->server) {
		p->fd = ur_tcp_connect(p->o.server, p->o.conn.tcp_port,
				       "start `uroce pingpong` with the same options and without a "
				       "server name on the peer first");
		return p->fd < 0 ? UR_EXIT_FAIL : 0;
	}
	lfd = ur_tcp_listen(p->o.conn.tcp_port);
	if (lfd < 0)
		return UR_EXIT_FAIL;
	p->fd = ur_tcp_accept(lfd, NULL, 0);
	close(lfd);
	return p->fd < 0 ? UR_EXIT_FAIL : 0;
}

/* Remote access the operation needs on the peer's buffer. */
static int access_for(enum pp_op op)
{
	int a = IBV_ACCESS_LOCAL_WRITE;

	if (op == PP_WRITE || op == PP_WRITE_IMM)
		a |= IBV_ACCESS_REMOTE_WRITE;
	else if (op == PP_READ)
		a |= IBV_ACCESS_REMOTE_READ;
	else if (pp_op_atomic(op))
		a |= IBV_ACCESS_REMOTE_ATOMIC;
	return a;
}

static int create_resources(struct pp *p)
{
	size_t rx_len = p->o.size + (p->o.qpt == IBV_QPT_UD ? UR_GRH_BYTES : 0);
	int access = access_for(p->o.op);

	p->cq = ur_cq_new(&p->d, 16);
	if (!p->cq)
		return UR_EXIT_FAIL;
	p->rx_off = ((size_t)p->o.size + 63) & ~(size_t)63;
	p->buf_len = p->rx_off + rx_len;
	p->buf = ur_buf_alloc(p->buf_len);
	if (!p->buf)
		return UR_EXIT_FAIL;
	p->mr = ur_mr_new(&p->d, p->buf, p->buf_len, access);
	if (!p->mr)
		return UR_EXIT_FAIL;
	p->qp = ur_qp_new(&p->d, &(struct ur_qp_cfg){
		.type = p->o.qpt,
		.send_cq = p->cq,
		.recv_cq = p->cq,
		.max_send_wr = 4,
		.max_recv_wr = 4,
		.max_inline = p->o.use_inline ? p->o.size : 0,
		.access = access,
	});
	return p->qp ? 0 : UR_EXIT_FAIL;
}

static void describe(char *s, size_t len, const uint32_t *w)
{
	snprintf(s, len, "--qp %s --op %s -s %u -n %u%s", pp_qpt_name((enum ibv_qp_type)w[W_QPT]),
		 pp_op_name((enum pp_op)w[W_OP]), w[W_SIZE], w[W_ITERS],
		 w[W_VALIDATE] ? " --validate" : "");
}

static int exchange(struct pp *p)
{
	struct ur_hello lh = { .tool = "pingpong" }, rh;
	char mine[128], theirs[128];

	lh.word[W_OP] = p->o.op;
	lh.word[W_QPT] = p->o.qpt;
	lh.word[W_SIZE] = p->o.size;
	lh.word[W_ITERS] = p->o.iters;
	lh.word[W_VALIDATE] = p->o.validate;
	lh.word[W_MTU] = p->o.conn.mtu;
	ur_ep_fill(&p->local, &p->d, p->qp, p->mr);
	if (ur_exchange(p->fd, p->server, &lh, &p->local, &rh, &p->remote, 1))
		return UR_EXIT_FAIL;
	if (memcmp(lh.word, rh.word, sizeof(uint32_t) * W_MTU)) {
		describe(mine, sizeof(mine), lh.word);
		describe(theirs, sizeof(theirs), rh.word);
		fprintf(stderr, "the peer runs with %s, this side with %s: give both sides the same "
				"--op, --qp, -s, -n and --validate\n", theirs, mine);
		return UR_EXIT_FAIL;
	}
	return 0;
}

/* The buffer's content before the first iteration: what the client reads,
 * the word the atomics work on. */
static void prepare_buffer(struct pp *p)
{
	uint8_t *rx = p->buf + p->rx_off;

	if (p->o.op == PP_READ && p->server)
		for (size_t i = 0; i < p->o.size; i++)
			rx[i] = pp_pattern(0, i, true);
	if (pp_op_atomic(p->o.op) && p->server)
		memcpy(rx, &(uint64_t){ PP_ATOMIC_INIT }, 8);
}

static int open_device(struct pp *p)
{
	char local_ip[UR_GID_STRLEN] = "", client_ip[UR_GID_STRLEN] = "";

	/* The server learns who the client is and which of its own addresses
	 * the client reached only once connected: they choose its device
	 * and GID. */
	if (p->server) {
		ur_tcp_local_ip(p->fd, local_ip, sizeof(local_ip));
		ur_tcp_peer_ip(p->fd, client_ip, sizeof(client_ip));
	}
	return ur_dev_setup(&p->d, &(struct ur_dev_opts){
		.dev_name = p->o.conn.dev_name,
		.ib_port = p->o.conn.ib_port,
		.gid_index = p->o.conn.gid_index,
		.peer = p->server ? (client_ip[0] ? client_ip : NULL) : p->o.server,
		.local_ip = local_ip[0] ? local_ip : NULL,
		.events = p->o.events,
		.gid_flag = "-g",
	}) ? UR_EXIT_FAIL : 0;
}

int pp_setup(struct pp *p)
{
	bool rdma;
	int rc;

	p->fd = -1;
	if (p->server) {
		rc = ur_dev_check(p->o.conn.dev_name, p->o.conn.ib_port, p->o.conn.gid_index) ?
			     UR_EXIT_FAIL : 0;
		if (!rc)
			rc = open_tcp(p);
		if (!rc)
			rc = open_device(p);
	} else {
		rc = open_device(p);
		if (!rc)
			rc = open_tcp(p);
	}
	if (rc)
		return rc;
	rc = create_resources(p);
	if (rc)
		return rc;
	prepare_buffer(p);
	rc = exchange(p);
	if (rc)
		return rc;
	rdma = p->o.op != PP_SEND && p->o.op != PP_SEND_IMM;
	ur_ep_print(stdout, "local", &p->local, rdma);
	ur_ep_print(stdout, "remote", &p->remote, rdma);
	fflush(stdout);

	p->path_mtu = ur_path_mtu(&p->d, &p->remote, p->o.conn.mtu);
	if (!p->path_mtu)
		return UR_EXIT_FAIL;
	if (p->o.qpt == IBV_QPT_UD && p->o.size > (uint32_t)ur_mtu_bytes(p->path_mtu)) {
		fprintf(stderr, "a UD message is one packet: -s %u exceeds the path MTU %d (the "
				"smaller of both ports' active MTU): use -s %d or less\n",
			p->o.size, ur_mtu_bytes(p->path_mtu), ur_mtu_bytes(p->path_mtu));
		return UR_EXIT_USAGE;
	}
	if (p->remote.len < p->o.size) {
		fprintf(stderr, "the peer's buffer holds %u bytes, fewer than -s %u\n", p->remote.len,
			p->o.size);
		return UR_EXIT_FAIL;
	}
	if (ur_qp_connect(&p->d, p->qp, &p->local, &p->remote,
			  &(struct ur_qp_tune){ .mtu = p->path_mtu }))
		return UR_EXIT_FAIL;
	if (p->o.qpt == IBV_QPT_UD) {
		p->ah = ur_ah_new(&p->d, &p->remote);
		if (!p->ah)
			return UR_EXIT_FAIL;
	}
	return 0;
}

void pp_teardown(struct pp *p)
{
	if (p->ah)
		ibv_destroy_ah(p->ah);
	if (p->qp)
		ibv_destroy_qp(p->qp);
	if (p->mr)
		ibv_dereg_mr(p->mr);
	if (p->cq)
		ibv_destroy_cq(p->cq);
	free(p->buf);
	ur_dev_teardown(&p->d);
	if (p->fd >= 0)
		close(p->fd);
}

int cmd_pingpong(int argc, char **argv)
{
	struct pp p = { .fd = -1 };
	int rc;

	rc = pp_parse(argc, argv, &p.o);
	if (rc)
		return rc < 0 ? UR_EXIT_OK : rc;
	p.server = !p.o.server;
	rc = pp_setup(&p);
	if (!rc)
		rc = pp_run(&p);
	pp_teardown(&p);
	return rc;
}
