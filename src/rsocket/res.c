/* What a stream rsocket's connection needs: its id and channel, buffers and
 * their registrations, the CQ and QP, the receives, and the connection data
 * the CM carries (rs_proto.h). */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "rsocket/dgram.h"
#include "rsocket/rsocket.h"
#include "util/fd.h"

#define RS_WR_RECV (1ull << 63)
/* Past sbuf's end: a slot per control message in flight, for target SGEs
 * when they cannot go inline. */
#define RS_CTRL_SLOTS (sizeof(struct rs_sge) * RS_QP_CTRL_SIZE)

static bool host_is_net(void)
{
	return __BYTE_ORDER == __BIG_ENDIAN;
}

int rs_new(int domain, struct rsock **out)
{
	struct rsock *rs = calloc(1, sizeof(*rs));
	int ret;

	if (!rs)
		return -ENOMEM;
	pthread_mutex_init(&rs->lock, NULL);
	rs->domain = domain;
	rs->type = SOCK_STREAM;
	rs->fd = -1;
	rs->state = RS_IDLE;
	rs_config_sizes(rs);
	rs->target_iomap_size = rs_config()->iomap_size;
	rs->keepidle = 7200;
	rs->ctrl_max_seqno = RS_QP_CTRL_SIZE;
	rs->fd_flags = O_RDWR;
	rs->ch = rdma_create_event_channel();
	if (!rs->ch) {
		ret = -errno;
		goto err_free;
	}
	/* Never block in rdma_get_cm_event: sleeping is poll()'s job. */
	ret = ur_fd_set_nonblock(rs->ch->fd);
	if (ret)
		goto err_channel;
	rs->fd = rs->ch->fd;
	*out = rs;
	return 0;

err_channel:
	rdma_destroy_event_channel(rs->ch);
err_free:
	pthread_mutex_destroy(&rs->lock);
	free(rs);
	return ret;
}

void rs_free(struct rsock *rs)
{
	if (rs->type == SOCK_DGRAM) {
		rs_ds_free(rs);
		return;
	}
	rs_free_queues(rs->id, rs->cq, rs->cc);
	if (rs->smr)
		ibv_dereg_mr(rs->smr);
	if (rs->rmr)
		ibv_dereg_mr(rs->rmr);
	if (rs->tmr)
		ibv_dereg_mr(rs->tmr);
	free(rs->sbuf);
	free(rs->rbuf);
	free(rs->target);
	free(rs->rmsg);
	if (rs->id)
		rdma_destroy_id(rs->id);
	if (rs->ch)
		rdma_destroy_event_channel(rs->ch);
	pthread_mutex_destroy(&rs->lock);
	free(rs);
}

/* rdma-core's sizing: a receive credit per RS_SNDLOWAT bytes of buffer,
 * the buffer shrunk to what the queues can use. */
static void size_queues(struct rsock *rs)
{
	if (rs->sq_size < RS_QP_MIN_SIZE)
		rs->sq_size = RS_QP_MIN_SIZE;
	if (rs->rq_size < RS_QP_MIN_SIZE)
		rs->rq_size = RS_QP_MIN_SIZE;
	if (rs->rq_size > rs->rbuf_size / RS_SNDLOWAT)
		rs->rq_size = (uint16_t)(rs->rbuf_size / RS_SNDLOWAT);
	else
		rs->rbuf_size = rs->rq_size * RS_SNDLOWAT;
	if (rs->sq_size > rs->sbuf_size / RS_SNDLOWAT)
		rs->sq_size = (uint16_t)(rs->sbuf_size / RS_SNDLOWAT);
	else
		rs->sbuf_size = rs->sq_size * RS_SNDLOWAT;
	/* Room for the control messages and some data beside them, however
	 * small SO_SNDBUF/SO_RCVBUF were set. */
	if (rs->sq_size < 2 * RS_QP_CTRL_SIZE) {
		rs->sq_size = 2 * RS_QP_CTRL_SIZE;
		rs->sbuf_size = rs->sq_size * RS_SNDLOWAT;
	}
	if (rs->rq_size < 2) {
		rs->rq_size = 2;
		rs->rbuf_size = rs->rq_size * RS_SNDLOWAT;
	}
}

static struct ibv_mr *reg(struct ibv_pd *pd, void *buf, size_t len, int access, int *ret)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, len, access);

	if (!mr)
		*ret = errno ? -errno : -ENOMEM;
	return mr;
}

static int create_buffers(struct rsock *rs)
{
	const int remote = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	size_t tlen = sizeof(struct rs_sge) * RS_SGL_SIZE +
		      sizeof(struct rs_iomap) * rs->target_iomap_size;
	int ret = 0;

	rs->sbuf = calloc(1, rs->sbuf_size + RS_CTRL_SLOTS);
	rs->rbuf = calloc(1, rs->rbuf_size);
	rs->target = calloc(1, tlen);
	rs->rmsg_size = rs->rq_size + 1u;
	rs->rmsg = calloc(rs->rmsg_size, sizeof(*rs->rmsg));
	if (!rs->sbuf || !rs->rbuf || !rs->target || !rs->rmsg)
		return -ENOMEM;
	rs->target_sgl = rs->target;
	rs->target_iomap = (struct rs_iomap *)(rs->target_sgl + RS_SGL_SIZE);
	rs->smr = reg(rs->id->pd, rs->sbuf, rs->sbuf_size + RS_CTRL_SLOTS, IBV_ACCESS_LOCAL_WRITE, &ret);
	if (!rs->smr)
		return ret;
	rs->rmr = reg(rs->id->pd, rs->rbuf, rs->rbuf_size, remote, &ret);
	if (!rs->rmr)
		return ret;
	rs->tmr = reg(rs->id->pd, rs->target, tlen, remote, &ret);
	if (!rs->tmr)
		return ret;
	return 0;
}

int rs_create_ep(struct rsock *rs)
{
	struct ibv_qp_init_attr attr;
	unsigned recvs;
	int ret;

	size_queues(rs);
	if (!rs->id->pd)
		return -ENODEV;
	ret = create_buffers(rs);
	if (ret)
		return ret;
	rs->cc = ibv_create_comp_channel(rs->id->verbs);
	if (!rs->cc)
		return -errno;
	ret = ur_fd_set_nonblock(rs->cc->fd);
	if (ret)
		return ret;
	/* Receives: the credits granted, and room for the control messages
	 * the peer may have in flight besides, so they rarely meet RNR. */
	recvs = rs->rq_size + RS_QP_CTRL_SIZE;
	rs->cq = ibv_create_cq(rs->id->verbs, (int)(rs->sq_size + recvs), rs, rs->cc, 0);
	if (!rs->cq)
		return -errno;

	memset(&attr, 0, sizeof(attr));
	attr.qp_context = rs;
	attr.send_cq = rs->cq;
	attr.recv_cq = rs->cq;
	attr.qp_type = IBV_QPT_RC;
	attr.cap.max_send_wr = rs->sq_size;
	attr.cap.max_recv_wr = recvs;
	attr.cap.max_send_sge = 2;
	attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = rs->sq_inline;
	if (rdma_create_qp(rs->id, rs->id->pd, &attr))
		return -errno;
	if (attr.cap.max_inline_data < rs->sq_inline)
		rs->sq_inline = (uint16_t)attr.cap.max_inline_data;

	rs->sbuf_bytes_avail = rs->sbuf_size;
	rs->sbuf_head = 0;
	rs->rbuf_free_offset = rs->rbuf_size >> 1;
	rs->rbuf_bytes_avail = (int)(rs->rbuf_size >> 1);
	rs->sqe_avail = rs->sq_size - (int)rs->ctrl_max_seqno;
	rs->rseq_comp = rs->rq_size >> 1;
	for (unsigned i = 0; i < recvs; i++) {
		ret = rs_post_recv(rs);
		if (ret)
			return ret;
	}
	return 0;
}

/* A receive with no buffer: writes with immediate land where they are
 * addressed; the receive only carries the immediate. */
int rs_post_recv(struct rsock *rs)
{
	struct ibv_recv_wr wr = { .wr_id = RS_WR_RECV, .sg_list = NULL, .num_sge = 0 };
	struct ibv_recv_wr *bad;

	return -ibv_post_recv(rs->id->qp, &wr, &bad);
}

void rs_format_conn_data(const struct rsock *rs, struct rs_conn_data *c)
{
	memset(c, 0, sizeof(*c));
	c->version = RS_CONN_VERSION;
	c->flags = RS_CONN_FLAG_IOMAP | (host_is_net() ? RS_CONN_FLAG_NET : 0);
	c->credits = htobe16(rs->rq_size);
	c->target_iomap_size = rs_value_to_scale(rs->target_iomap_size);
	c->target_sgl.addr = htobe64((uintptr_t)rs->target_sgl);
	c->target_sgl.length = htobe32(RS_SGL_SIZE);
	c->target_sgl.key = htobe32(rs->tmr->rkey);
	c->data_buf.addr = htobe64((uintptr_t)rs->rbuf);
	c->data_buf.length = htobe32(rs->rbuf_size >> 1);
	c->data_buf.key = htobe32(rs->rmr->rkey);
}

int rs_save_conn_data(struct rsock *rs, const void *priv, uint8_t len)
{
	struct rs_conn_data c;

	if (!priv || len < sizeof(c))
		return -EPROTO;
	memcpy(&c, priv, sizeof(c));
	if (c.version != RS_CONN_VERSION)
		return -EOPNOTSUPP;
	rs->remote_sgl.addr = be64toh(c.target_sgl.addr);
	rs->remote_sgl.length = be32toh(c.target_sgl.length);
	rs->remote_sgl.key = be32toh(c.target_sgl.key);
	if (rs->remote_sgl.length == 0)
		return -EPROTO;
	rs->remote_sge = 1;
	rs->swap_sgl = !!(c.flags & RS_CONN_FLAG_NET) != host_is_net();
	if (c.flags & RS_CONN_FLAG_IOMAP) {
		rs->remote_iomap.addr = rs->remote_sgl.addr +
					sizeof(struct rs_sge) * rs->remote_sgl.length;
		rs->remote_iomap.length = rs_scale_to_value(c.target_iomap_size);
		rs->remote_iomap.key = rs->remote_sgl.key;
	}
	rs->target_sgl[0].addr = be64toh(c.data_buf.addr);
	rs->target_sgl[0].length = be32toh(c.data_buf.length);
	rs->target_sgl[0].key = be32toh(c.data_buf.key);
	rs->target_sge = 0;
	rs->sseq_comp = be16toh(c.credits);
	return 0;
}
