/* uroce pingpong: the measured loops.  Two-sided operations (and writes,
 * which are followed by a notification) ping-pong: each side answers what
 * it received.  Reads and atomics are driven by the client alone while the
 * server waits at the closing barrier. */
#include "pp.h"
#include "uroce.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

uint8_t pp_pattern(uint32_t iter, size_t i, bool from_server)
{
	/* The iteration term changes every byte from one iteration to the next
	 * (0x9d is odd), so a buffer left from the previous message never
	 * passes; the offset term catches shifted or misplaced data. */
	uint32_t x = (uint32_t)i * 2654435761u;

	return (uint8_t)((x >> 24) ^ (i >> 8) ^ (iter * 0x9du + (from_server ? 0x55u : 0)));
}

void pp_atomic_step(enum pp_op op, uint32_t k, uint64_t cur, uint64_t *compare_add,
		    uint64_t *swap, uint64_t *next)
{
	*swap = 0;
	if (op == PP_FAA) {
		*compare_add = k + 1;
		*next = cur + k + 1;
	} else if (k % 4 == 3) {
		/* Every fourth CAS compares against a wrong value: it must fail,
		 * return the current value and leave it unchanged. */
		*compare_add = cur ^ 0xff00ffull;
		*swap = cur + 0x12345;
		*next = cur;
	} else {
		*compare_add = cur;
		*swap = cur + k + 1;
		*next = *swap;
	}
}

/* --- completions ------------------------------------------------------------- */

static const char *status_hint(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_RETRY_EXC_ERR:
		return "the peer never acknowledged: is it still running, does this GID index "
		       "reach it (`uroce gid`), does the network carry the path MTU?";
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return "the peer had no receive posted";
	case IBV_WC_REM_ACCESS_ERR:
		return "the peer refused access to its buffer (address, length, rkey or the "
		       "region's access rights)";
	case IBV_WC_REM_INV_REQ_ERR:
		return "the peer could not take the request (larger than its receive buffer, "
		       "or an operation its QP does not allow)";
	case IBV_WC_LOC_LEN_ERR:
		return "a message larger than the receive buffer arrived";
	case IBV_WC_WR_FLUSH_ERR:
		return "flushed: the QP went to the error state after an earlier failure";
	default:
		return "";
	}
}

/* The peer closed the TCP connection: it failed and will not answer. */
static bool peer_gone(struct pp *p)
{
	char b;
	ssize_t n;

	if (p->peer_sent)
		return false;
	n = recv(p->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n > 0)
		p->peer_sent = true;   /* its closing barrier: it finished */
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static int say_peer_gone(void)
{
	fprintf(stderr, "the peer closed the connection before the run ended (it failed or was "
			"stopped; see its output)\n");
	return UR_EXIT_FAIL;
}

/* Sleeps until the CQ has an event or the peer closes the connection. */
static int wait_event(struct pp *p)
{
	struct pollfd f[2] = { { .fd = p->d.channel->fd, .events = POLLIN },
			       { .fd = p->fd, .events = POLLIN } };
	int rc;

	do
		rc = poll(f, p->peer_sent ? 1 : 2, -1);
	while (rc < 0 && errno == EINTR);
	if (!(f[0].revents & POLLIN) && peer_gone(p))
		return say_peer_gone();
	if ((f[0].revents & POLLIN) && !ur_cq_wait(&p->d))
		return UR_EXIT_FAIL;
	return 0;
}

/* One successful completion into WC, or an exit code after saying why. */
static int next_wc(struct pp *p, struct ibv_wc *wc)
{
	unsigned empty = 0;
	int n, rc;

	for (;;) {
		n = ibv_poll_cq(p->cq, 1, wc);
		if (n < 0) {
			fprintf(stderr, "polling the CQ failed\n");
			return UR_EXIT_FAIL;
		}
		if (n == 1)
			break;
		if (p->o.events) {
			rc = wait_event(p);
			if (rc)
				return rc;
		} else if (++empty % 4096 == 0 && peer_gone(p)) {
			return say_peer_gone();
		}
	}
	if (wc->status != IBV_WC_SUCCESS) {
		fprintf(stderr, "completion with error: %s (status %d, opcode %d, vendor error "
				"0x%x)%s%s\n",
			ibv_wc_status_str(wc->status), wc->status, wc->opcode, wc->vendor_err,
			*status_hint(wc->status) ? "; " : "", status_hint(wc->status));
		return UR_EXIT_FAIL;
	}
	return 0;
}

/* --- posting ----------------------------------------------------------------------- */

enum { WR_SEND = 1, WR_RECV = 2 };

static int post_recv(struct pp *p)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(p->buf + p->rx_off),
		.length = p->o.size + (p->o.qpt == IBV_QPT_UD ? UR_GRH_BYTES : 0),
		.lkey = p->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = WR_RECV, .sg_list = &sge, .num_sge = 1 }, *bad;
	int rc = ibv_post_recv(p->qp, &wr, &bad);

	if (rc)
		fprintf(stderr, "posting a receive failed: %s\n", strerror(rc));
	return rc ? UR_EXIT_FAIL : 0;
}

/* Posts iteration K of a two-sided exchange: one signaled work request
 * (a WRITE is followed by an empty SEND that tells the peer). */
static int post_message(struct pp *p, uint32_t k)
{
	struct ibv_sge sge = { .addr = (uintptr_t)p->buf, .length = p->o.size, .lkey = p->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = WR_SEND, .sg_list = &sge, .num_sge = 1,
				  .send_flags = IBV_SEND_SIGNALED }, note, *bad;
	int rc;

	if (p->o.use_inline)
		wr.send_flags |= IBV_SEND_INLINE;
	switch (p->o.op) {
	case PP_SEND:
		wr.opcode = IBV_WR_SEND;
		break;
	case PP_SEND_IMM:
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		wr.imm_data = htonl(k);
		break;
	case PP_WRITE_IMM:
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htonl(k);
		break;
	case PP_WRITE:
		note = (struct ibv_send_wr){ .wr_id = WR_SEND, .opcode = IBV_WR_SEND,
					     .send_flags = IBV_SEND_SIGNALED };
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.send_flags &= ~(unsigned)IBV_SEND_SIGNALED;
		wr.next = &note;
		break;
	default:
		return UR_EXIT_FAIL;
	}
	if (p->o.op == PP_WRITE || p->o.op == PP_WRITE_IMM) {
		wr.wr.rdma.remote_addr = p->remote.addr + p->rx_off;
		wr.wr.rdma.rkey = p->remote.rkey;
	}
	if (p->o.qpt == IBV_QPT_UD) {
		wr.wr.ud.ah = p->ah;
		wr.wr.ud.remote_qpn = p->remote.qpn;
		wr.wr.ud.remote_qkey = UR_UD_QKEY;
	}
	rc = ibv_post_send(p->qp, &wr, &bad);
	if (rc)
		fprintf(stderr, "posting %s failed: %s\n", pp_op_name(p->o.op), strerror(rc));
	return rc ? UR_EXIT_FAIL : 0;
}

/* --- validation --------------------------------------------------------------------- */

static void fill(struct pp *p, uint8_t *dst, uint32_t k, bool from_server)
{
	for (size_t i = 0; i < p->o.size; i++)
		dst[i] = pp_pattern(k, i, from_server);
}

static int check_bytes(struct pp *p, const uint8_t *got, uint32_t k, bool from_server)
{
	for (size_t i = 0; i < p->o.size; i++) {
		uint8_t want = pp_pattern(k, i, from_server);

		if (got[i] == want)
			continue;
		fprintf(stderr, "data mismatch in iteration %u at byte %zu of %u: expected 0x%02x, "
				"got 0x%02x%s\n",
			k, i, p->o.size, want, got[i],
			k && got[i] == pp_pattern(k - 1, i, from_server) ?
				" (the previous iteration's byte: a stale buffer)" : "");
		return UR_EXIT_FAIL;
	}
	p->validated++;
	return 0;
}

static int check_arrival(struct pp *p, const struct ibv_wc *wc, uint32_t k)
{
	bool ud = p->o.qpt == IBV_QPT_UD;
	bool imm = p->o.op == PP_SEND_IMM || p->o.op == PP_WRITE_IMM;
	enum ibv_wc_opcode want = p->o.op == PP_WRITE_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;

	if (wc->opcode != want) {
		fprintf(stderr, "iteration %u: a receive completed with opcode %d, expected %d\n", k,
			wc->opcode, want);
		return UR_EXIT_FAIL;
	}
	if (imm && (!(wc->wc_flags & IBV_WC_WITH_IMM) || ntohl(wc->imm_data) != k)) {
		fprintf(stderr, "iteration %u: immediate data %s0x%x, expected 0x%x\n", k,
			wc->wc_flags & IBV_WC_WITH_IMM ? "" : "missing, ", ntohl(wc->imm_data), k);
		return UR_EXIT_FAIL;
	}
	if ((p->o.op == PP_SEND || p->o.op == PP_SEND_IMM) &&
	    wc->byte_len != p->o.size + (ud ? UR_GRH_BYTES : 0)) {
		fprintf(stderr, "iteration %u: received %u bytes, expected %u%s\n", k, wc->byte_len,
			p->o.size + (ud ? UR_GRH_BYTES : 0), ud ? " (40 of GRH included)" : "");
		return UR_EXIT_FAIL;
	}
	if (ud && (!(wc->wc_flags & IBV_WC_GRH) || wc->src_qp != p->remote.qpn)) {
		fprintf(stderr, "iteration %u: UD message from QPN 0x%06x%s, expected 0x%06x\n", k,
			wc->src_qp, wc->wc_flags & IBV_WC_GRH ? "" : " without GRH", p->remote.qpn);
		return UR_EXIT_FAIL;
	}
	return check_bytes(p, p->buf + p->rx_off + (ud ? UR_GRH_BYTES : 0), k, !p->server);
}

/* --- the loops ------------------------------------------------------------------------ */

/* Waits until the send of this iteration completed and, if WANT_RECV, the
 * peer's message arrived (checked with --validate); reposts the receive. */
static int collect(struct pp *p, uint32_t k, bool want_send, bool want_recv)
{
	struct ibv_wc wc;
	int rc;

	while (want_send || want_recv) {
		if (want_recv && p->early) {
			wc = p->early_wc;
			p->early = false;
		} else if ((rc = next_wc(p, &wc))) {
			return rc;
		}
		if (wc.wr_id == WR_SEND) {
			want_send = false;
			continue;
		}
		if (!want_recv) {
			/* Ping-pong: at most one message of the peer's runs ahead. */
			if (p->early) {
				fprintf(stderr, "iteration %u: a second message from the peer before "
					"this iteration's send completed\n", k);
				return UR_EXIT_FAIL;
			}
			p->early = true;
			p->early_wc = wc;
			continue;
		}
		want_recv = false;
		if (p->o.validate) {
			rc = check_arrival(p, &wc, k);
			if (rc)
				return rc;
		}
		/* Before answering, so the peer's next message finds it. */
		if (k + 1 < p->o.iters && (rc = post_recv(p)))
			return rc;
	}
	return 0;
}

static int two_sided(struct pp *p)
{
	int rc;

	for (uint32_t k = 0; k < p->o.iters; k++) {
		if (p->server && (rc = collect(p, k, false, true)))
			return rc;
		if (p->o.validate)
			fill(p, p->buf, k, p->server);
		rc = post_message(p, k);
		if (!rc)
			rc = collect(p, k, true, !p->server);
		if (rc)
			return rc;
	}
	return 0;
}

static int post_one_sided(struct pp *p, uint32_t k, uint64_t *cur)
{
	struct ibv_sge sge = { .addr = (uintptr_t)p->buf, .length = p->o.size, .lkey = p->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = WR_SEND, .sg_list = &sge, .num_sge = 1,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	uint64_t next;
	int rc;

	if (p->o.op == PP_READ) {
		sge.addr = (uintptr_t)(p->buf + p->rx_off);
		wr.opcode = IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = p->remote.addr + p->rx_off;
		wr.wr.rdma.rkey = p->remote.rkey;
	} else {
		wr.opcode = p->o.op == PP_CAS ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr = p->remote.addr + p->rx_off;
		wr.wr.atomic.rkey = p->remote.rkey;
		pp_atomic_step(p->o.op, k, *cur, &wr.wr.atomic.compare_add, &wr.wr.atomic.swap,
			       &next);
	}
	rc = ibv_post_send(p->qp, &wr, &bad);
	if (rc)
		fprintf(stderr, "posting %s failed: %s\n", pp_op_name(p->o.op), strerror(rc));
	return rc ? UR_EXIT_FAIL : 0;
}

/* The client's loop for read, cas and faa. */
static int one_sided(struct pp *p)
{
	uint64_t cur = PP_ATOMIC_INIT, cmp, swap, next, got;
	uint8_t *rx = p->buf + p->rx_off;
	int rc;

	for (uint32_t k = 0; k < p->o.iters; k++) {
		/* Poison the destination so a READ that moved nothing fails. */
		if (p->o.validate && p->o.op == PP_READ)
			for (size_t i = 0; i < p->o.size; i++)
				rx[i] = (uint8_t)~pp_pattern(0, i, true);
		rc = post_one_sided(p, k, &cur);
		if (!rc)
			rc = collect(p, k, true, false);
		if (rc)
			return rc;
		if (!p->o.validate)
			continue;
		if (p->o.op == PP_READ) {
			rc = check_bytes(p, rx, 0, true);
			if (rc)
				return rc;
			continue;
		}
		pp_atomic_step(p->o.op, k, cur, &cmp, &swap, &next);
		memcpy(&got, p->buf, 8);
		if (got != cur) {
			fprintf(stderr, "%s iteration %u returned 0x%016llx, expected the word's value "
					"0x%016llx\n", pp_op_name(p->o.op), k,
				(unsigned long long)got, (unsigned long long)cur);
			return UR_EXIT_FAIL;
		}
		p->validated++;
		cur = next;
	}
	return 0;
}

/* The server after a run of atomics: the word holds what the client's
 * sequence of operations leaves. */
static int check_atomic_word(struct pp *p)
{
	uint64_t cur = PP_ATOMIC_INIT, cmp, swap, got;

	for (uint32_t k = 0; k < p->o.iters; k++)
		pp_atomic_step(p->o.op, k, cur, &cmp, &swap, &cur);
	memcpy(&got, p->buf + p->rx_off, 8);
	if (got != cur) {
		fprintf(stderr, "after %u %s operations the word holds 0x%016llx, expected 0x%016llx\n",
			p->o.iters, pp_op_name(p->o.op), (unsigned long long)got,
			(unsigned long long)cur);
		return UR_EXIT_FAIL;
	}
	p->validated++;
	return 0;
}

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

int pp_run(struct pp *p)
{
	bool passive = pp_op_one_sided(p->o.op) && p->server;
	double t0, usec;
	uint64_t bytes;
	int rc = 0;

	if (!pp_op_one_sided(p->o.op) && (rc = post_recv(p)))
		return rc;
	/* Both QPs are in RTR and the first receive is posted. */
	if (ur_tcp_barrier(p->fd))
		return UR_EXIT_FAIL;
	t0 = now_us();
	if (!passive)
		rc = pp_op_one_sided(p->o.op) ? one_sided(p) : two_sided(p);
	if (rc)
		return rc;
	if (ur_tcp_barrier(p->fd))
		return UR_EXIT_FAIL;
	usec = now_us() - t0;
	if (passive && p->o.validate && pp_op_atomic(p->o.op) && (rc = check_atomic_word(p)))
		return rc;

	bytes = (uint64_t)p->o.size * p->o.iters * (pp_op_one_sided(p->o.op) ? 1 : 2);
	printf("%llu bytes in %.2f seconds = %.2f Mbit/sec\n", (unsigned long long)bytes,
	       usec / 1e6, (double)bytes * 8 / usec);
	printf("%u iters in %.2f seconds = %.2f usec/iter\n", p->o.iters, usec / 1e6,
	       usec / p->o.iters);
	if (p->o.validate && !(passive && p->o.op == PP_READ))
		printf("validated: %llu %s, every byte as expected\n",
		       (unsigned long long)p->validated,
		       passive ? "final atomic word" : pp_op_atomic(p->o.op) ? "atomic results" :
		       "messages");
	return 0;
}
