/* uroce srq-server: the receive side every connection shares -- the device,
 * ONE SRQ with its buffers and ONE CQ, opened with the first client -- and
 * each completion: mapped back to its connection by wc.qp_num, its message
 * checked and counted, its buffer put back on the SRQ.  Below the
 * connections (srq_srv_conn.c), which drain the CQ before they end. */
#include "conn.h"
#include "srq.h"
#include "srq_srv.h"
#include "uroce.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#define POLL_BATCH 64

/* --- the SRQ and its buffers ---------------------------------------------------- */

/* Puts buffer IDX back on the SRQ, in a chain posted by srq_flush. */
static void srq_queue(struct srv *s, uint32_t idx)
{
	struct ibv_recv_wr *wr = &s->rwr[idx];

	wr->next = s->pending;
	s->pending = wr;
}

static int srq_flush(struct srv *s)
{
	struct ibv_recv_wr *bad;
	int rc;

	if (!s->pending)
		return 0;
	for (struct ibv_recv_wr *w = s->pending; w; w = w->next)
		s->reposted++;
	rc = ibv_post_srq_recv(s->srq, s->pending, &bad);
	s->pending = NULL;
	if (rc) {
		fprintf(stderr, "refilling the SRQ failed: %s\n", strerror(rc));
		return UR_EXIT_FAIL;
	}
	return 0;
}

/* Opened with the first client: its address chooses the device and GID. */
int srv_open_device(struct srv *s, int fd)
{
	char local[64] = "", peer[64] = "";
	uint32_t depth = s->o.depth;

	if (fd >= 0) {
		ur_tcp_local_ip(fd, local, sizeof(local));
		ur_tcp_peer_ip(fd, peer, sizeof(peer));
	}
	if (ur_dev_setup(&s->d, &(struct ur_dev_opts){
		    .dev_name = s->o.conn.dev_name, .ib_port = s->o.conn.ib_port,
		    .gid_index = s->o.conn.gid_index, .peer = peer[0] ? peer : NULL,
		    .local_ip = local[0] ? local : NULL, .events = true, .gid_flag = "-g" }))
		return UR_EXIT_FAIL;
	s->dev_open = true;
	if (depth > (uint32_t)s->d.attr.max_srq_wr || depth + 64 > (uint32_t)s->d.attr.max_cqe) {
		fprintf(stderr, "-r %u exceeds what %s allows (max_srq_wr %d, max_cqe %d): use -r %d "
				"or less\n", depth, ur_dev_name(&s->d), s->d.attr.max_srq_wr,
			s->d.attr.max_cqe,
			s->d.attr.max_srq_wr < s->d.attr.max_cqe - 64 ? s->d.attr.max_srq_wr :
									 s->d.attr.max_cqe - 64);
		return UR_EXIT_FAIL;
	}
	/* Every completion is a receive from the SRQ (the QPs send nothing),
	 * so the CQ never holds more than the SRQ's depth. */
	s->cq = ur_cq_new(&s->d, (int)depth + 64);
	if (!s->cq)
		return UR_EXIT_FAIL;
	s->srq = ibv_create_srq(s->d.pd, &(struct ibv_srq_init_attr){
		.attr = { .max_wr = depth, .max_sge = 1 } });
	if (!s->srq) {
		fprintf(stderr, "cannot create an SRQ of %u entries on %s: %s (max_srq %d, "
				"max_srq_wr %d)\n", depth, ur_dev_name(&s->d), strerror(errno),
			s->d.attr.max_srq, s->d.attr.max_srq_wr);
		return UR_EXIT_FAIL;
	}
	s->bufs = ur_buf_alloc((size_t)depth * s->o.max_size);
	s->rwr = calloc(depth, sizeof(*s->rwr));
	s->rsge = calloc(depth, sizeof(*s->rsge));
	if (!s->bufs || !s->rwr || !s->rsge)
		return UR_EXIT_FAIL;
	s->mr = ur_mr_new(&s->d, s->bufs, (size_t)depth * s->o.max_size, IBV_ACCESS_LOCAL_WRITE);
	if (!s->mr)
		return UR_EXIT_FAIL;
	for (uint32_t i = 0; i < depth; i++) {
		s->rsge[i] = (struct ibv_sge){ .addr = (uintptr_t)(s->bufs + (size_t)i * s->o.max_size),
					      .length = s->o.max_size, .lkey = s->mr->lkey };
		s->rwr[i] = (struct ibv_recv_wr){ .wr_id = i, .sg_list = &s->rsge[i], .num_sge = 1 };
		srq_queue(s, i);
	}
	s->reposted -= depth;   /* the first fill is no refill */
	if (srq_flush(s))
		return UR_EXIT_FAIL;
	if (epoll_ctl(s->ep, EPOLL_CTL_ADD, s->d.channel->fd,
		      &(struct epoll_event){ .events = EPOLLIN, .data.ptr = &s->channel_tag })) {
		fprintf(stderr, "epoll: %s\n", strerror(errno));
		return UR_EXIT_FAIL;
	}
	return 0;
}

/* Undoes srv_open_device, whatever part of it was done. */
void srv_close_device(struct srv *s)
{
	if (s->srq)
		ibv_destroy_srq(s->srq);
	if (s->mr)
		ibv_dereg_mr(s->mr);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->dev_open)
		ur_dev_teardown(&s->d);
	free(s->bufs);
	free(s->rwr);
	free(s->rsge);
}

/* --- completions --------------------------------------------------------------------- */

void srv_conn_fail(struct srv_conn *c, const char *fmt, ...)
{
	va_list ap;

	if (c->state == CS_BAD)
		return;   /* the first error is the one worth reading */
	va_start(ap, fmt);
	vsnprintf(c->error, sizeof(c->error), fmt, ap);
	va_end(ap);
	c->state = CS_BAD;
}

static void one_completion(struct srv *s, const struct ibv_wc *wc)
{
	struct srv_conn *c = srq_qpmap_find(&s->map, wc->qp_num);
	const uint8_t *buf = s->bufs + wc->wr_id * s->o.max_size;
	char why[160];

	s->completions++;
	srq_queue(s, (uint32_t)wc->wr_id);
	if (!c) {
		s->stray++;     /* a QP already destroyed: just reuse the buffer */
		return;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		if (wc->status != IBV_WC_WR_FLUSH_ERR && c->state == CS_ACTIVE)
			srv_conn_fail(c, "receive completed with %s", ibv_wc_status_str(wc->status));
		return;
	}
	if (c->state != CS_BAD && !srq_msg_check(buf, wc->byte_len, c->id, (uint32_t)c->msgs, why,
						 sizeof(why)))
		srv_conn_fail(c, "%s", why);
	c->msgs++;
	c->bytes += wc->byte_len;
	s->msgs++;
	s->bytes += wc->byte_len;
}

int srv_drain_cq(struct srv *s)
{
	struct ibv_wc wc[POLL_BATCH];
	int n;

	if (!s->cq)
		return 0;
	do {
		n = ibv_poll_cq(s->cq, POLL_BATCH, wc);
		if (n < 0) {
			fprintf(stderr, "polling the CQ failed\n");
			return UR_EXIT_FAIL;
		}
		for (int i = 0; i < n; i++)
			one_completion(s, &wc[i]);
	} while (n == POLL_BATCH);
	return srq_flush(s);
}
