/* The stream data path: sends copy into the send buffer (or go inline) and
 * RDMA-write into the target SGE the peer handed us; receives copy out of
 * the receive buffer in the order the data messages came, and give the
 * space back as credits.  rs->lock held. */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "core/limits.h"
#include "rsocket/rsocket.h"

struct iov_cur {
	const struct iovec *iov;
	int cnt;
	size_t off;
};

static size_t iov_total(const struct iovec *iov, int cnt)
{
	size_t n = 0;

	for (int i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	return n;
}

/* Takes the next at most *n bytes of the iovecs at cursor c: where they
 * are, their count in *n, and c moved past them. */
static uint8_t *iov_take(struct iov_cur *c, size_t *n)
{
	uint8_t *at = (uint8_t *)c->iov->iov_base + c->off;
	size_t k = c->iov->iov_len - c->off;

	if (k > *n)
		k = *n;
	*n = k;
	c->off += k;
	if (c->off == c->iov->iov_len) {
		c->iov++;
		c->cnt--;
		c->off = 0;
	}
	return at;
}

/* Copies n bytes from the iovecs at c to dst, moving c. */
static void iov_copy_out(struct iov_cur *c, uint8_t *dst, size_t n)
{
	for (size_t k; n; dst += k, n -= k) {
		const uint8_t *from;

		k = n;
		from = iov_take(c, &k);
		memcpy(dst, from, k);
	}
}

/* Copies n bytes from src into the iovecs at c, moving c. */
static void iov_copy_in(struct iov_cur *c, const uint8_t *src, size_t n)
{
	for (size_t k; n; src += k, n -= k) {
		uint8_t *to;

		k = n;
		to = iov_take(c, &k);
		memcpy(to, src, k);
	}
}

static bool opening(const struct rsock *rs)
{
	return rs->state == RS_RESOLVING_ADDR || rs->state == RS_RESOLVING_ROUTE ||
	       rs->state == RS_CONNECTING || rs->state == RS_ACCEPTING;
}

static bool opened(const struct rsock *rs)
{
	return !opening(rs);
}

/* A connection being made is waited for (blocking) before data moves. */
static int wait_open(struct rsock *rs, bool nonblock)
{
	if (!opening(rs))
		return 0;
	return rs_wait(rs, opened, nonblock);
}

static bool can_send_or_closed(const struct rsock *rs)
{
	return rs_can_send(rs) || rs->state != RS_CONNECTED || !rs->wr_open;
}

static bool rdata_or_closed(const struct rsock *rs)
{
	return rs_have_rdata(rs) || rs->state != RS_CONNECTED || !rs->rd_open;
}

static int send_closed_err(const struct rsock *rs)
{
	switch (rs->state) {
	case RS_IDLE:
	case RS_BOUND:
	case RS_LISTENING:
		return -ENOTCONN;
	case RS_CONNECT_ERROR:
		return -(rs->err ? rs->err : ECONNREFUSED);
	case RS_ERROR:
		return -ECONNRESET;
	default:
		return -EPIPE;
	}
}

/* One data message of len bytes into the current target SGE. */
static int write_data(struct rsock *rs, struct ibv_sge *sgl, int nsge, uint32_t len, int flags)
{
	struct rs_sge *t = &rs->target_sgl[rs->target_sge];
	uint64_t addr = t->addr;
	uint32_t rkey = t->key;

	rs->sseq_no++;
	rs->sqe_avail--;
	rs->sbuf_bytes_avail -= len;
	t->addr += len;
	t->length -= len;
	if (!t->length && ++rs->target_sge == RS_SGL_SIZE)
		rs->target_sge = 0;
	return rs_post_write_msg(rs, sgl, nsge, rs_msg(RS_OP_DATA, len), flags, addr, rkey);
}

/* Copies n bytes into sbuf at its head (wrapping) and names them in sge[]. */
static int stage(struct rsock *rs, struct iov_cur *c, uint32_t n, struct ibv_sge *sge)
{
	uint32_t first = rs->sbuf_size - rs->sbuf_head;
	int nsge = 1;

	if (first > n)
		first = n;
	iov_copy_out(c, rs->sbuf + rs->sbuf_head, first);
	sge[0].addr = (uintptr_t)(rs->sbuf + rs->sbuf_head);
	sge[0].length = first;
	sge[0].lkey = rs->smr->lkey;
	rs->sbuf_head += first;
	if (rs->sbuf_head == rs->sbuf_size)
		rs->sbuf_head = 0;
	if (n > first) {
		iov_copy_out(c, rs->sbuf, n - first);
		sge[1].addr = (uintptr_t)rs->sbuf;
		sge[1].length = n - first;
		sge[1].lkey = rs->smr->lkey;
		rs->sbuf_head = n - first;
		nsge = 2;
	}
	return nsge;
}

int rs_stage(struct rsock *rs, const struct iovec *iov, int iovcnt, uint32_t n,
	     struct ibv_sge *sge)
{
	struct iov_cur c = { iov, iovcnt, 0 };

	return stage(rs, &c, n, sge);
}

ssize_t rs_send_iov(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags)
{
	bool nonblock = rs->nonblock || (flags & MSG_DONTWAIT);
	struct iov_cur c = { iov, iovcnt, 0 };
	size_t left = iov_total(iov, iovcnt), sent = 0;
	uint32_t olen = RS_OLAP_START;
	int ret;

	ret = wait_open(rs, nonblock);
	if (ret)
		return ret;
	if (rs->state != RS_CONNECTED || !rs->wr_open)
		return send_closed_err(rs);
	while (left) {
		struct ibv_sge sge[2];
		uint32_t xfer;
		int nsge;

		if (!rs_can_send(rs)) {
			ret = rs_wait(rs, can_send_or_closed, nonblock);
			if (ret || rs->state != RS_CONNECTED || !rs->wr_open) {
				if (sent)
					break;
				return ret ? ret : send_closed_err(rs);
			}
		}
		xfer = left < olen ? (uint32_t)left : olen;
		if (olen < RS_MAX_TRANSFER)
			olen <<= 1;
		if (xfer > rs->sbuf_bytes_avail)
			xfer = rs->sbuf_bytes_avail;
		if (xfer > rs->target_sgl[rs->target_sge].length)
			xfer = rs->target_sgl[rs->target_sge].length;
		if (xfer <= rs->sq_inline) {
			uint8_t tmp[UR_MAX_INLINE];

			iov_copy_out(&c, tmp, xfer);
			sge[0].addr = (uintptr_t)tmp;
			sge[0].length = xfer;
			sge[0].lkey = 0;
			ret = write_data(rs, sge, 1, xfer, IBV_SEND_INLINE);
		} else {
			nsge = stage(rs, &c, xfer, sge);
			ret = write_data(rs, sge, nsge, xfer, 0);
		}
		if (ret) {
			rs->state = RS_ERROR;
			rs->err = -ret;
			if (sent)
				break;
			return ret;
		}
		left -= xfer;
		sent += xfer;
	}
	return (ssize_t)sent;
}

/* Copies up to left bytes of received data; MSG_PEEK leaves it there. */
static size_t take(struct rsock *rs, struct iov_cur *c, size_t left, bool peek)
{
	unsigned head = rs->rmsg_head;
	uint32_t off = rs->rbuf_offset;
	size_t got = 0;

	while (left && head != rs->rmsg_tail) {
		uint32_t avail = rs->rmsg[head], rsize = left < avail ? (uint32_t)left : avail;
		uint32_t end = rs->rbuf_size - off;

		if (rsize > end) {
			iov_copy_in(c, rs->rbuf + off, end);
			iov_copy_in(c, rs->rbuf, rsize - end);
			off = rsize - end;
		} else {
			iov_copy_in(c, rs->rbuf + off, rsize);
			off += rsize;
			if (off == rs->rbuf_size)
				off = 0;
		}
		left -= rsize;
		got += rsize;
		if (peek) {
			if (rsize < avail)
				break;
		} else {
			rs->rmsg[head] -= rsize;
			rs->rbuf_bytes_avail += (int)rsize;
			if (rs->rmsg[head])
				break;
			rs->rseq_no++;
		}
		if (++head == rs->rmsg_size)
			head = 0;
	}
	if (!peek) {
		rs->rmsg_head = head;
		rs->rbuf_offset = off;
	}
	return got;
}

ssize_t rs_recv_iov(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags)
{
	bool nonblock = rs->nonblock || (flags & MSG_DONTWAIT);
	bool peek = flags & MSG_PEEK, waitall = (flags & MSG_WAITALL) && !peek;
	struct iov_cur c = { iov, iovcnt, 0 };
	size_t left = iov_total(iov, iovcnt), got = 0;
	int ret;

	ret = wait_open(rs, nonblock);
	if (ret)
		return ret;
	if (rs->state < RS_RESOLVING_ADDR)
		return -ENOTCONN;
	if (rs->state == RS_CONNECT_ERROR)
		return -(rs->err ? rs->err : ECONNREFUSED);
	while (left) {
		size_t n;

		if (!rs_have_rdata(rs))
			rs_progress(rs);
		if (!rs_have_rdata(rs)) {
			if (got && !waitall)
				break;
			if (rs->state != RS_CONNECTED || !rs->rd_open) {
				/* The peer closed: what it sent is read, then 0. */
				if (rs->state == RS_ERROR && !got)
					return -ECONNRESET;
				break;
			}
			ret = rs_wait_recv(rs, rdata_or_closed, nonblock);
			if (ret) {
				if (got)
					break;
				return ret;
			}
			continue;
		}
		n = take(rs, &c, left, peek);
		left -= n;
		got += n;
		if (peek)
			break;
		rs_update_credits(rs);
		if (!waitall)
			break;
	}
	return (ssize_t)got;
}

static bool ctrl_avail_or_closed(const struct rsock *rs)
{
	return rs_ctrl_avail(rs) || rs->state != RS_CONNECTED;
}

int rs_shutdown(struct rsock *rs, int how)
{
	enum rs_ctrl ctrl;

	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
		return -EINVAL;
	if (rs->state == RS_DISCONNECTED || rs->state == RS_ERROR)
		return 0;
	if (rs->state != RS_CONNECTED)
		return -ENOTCONN;
	if (how == SHUT_RDWR) {
		rs->rd_open = rs->wr_open = false;
		ctrl = RS_CTRL_DISCONNECT;
	} else if (how == SHUT_WR) {
		rs->wr_open = false;
		ctrl = rs->rd_open ? RS_CTRL_SHUTDOWN : RS_CTRL_DISCONNECT;
	} else {
		rs->rd_open = false;
		if (rs->wr_open)
			return 0;
		ctrl = RS_CTRL_DISCONNECT;
	}
	/* A shutdown waits for room for its message, and for what was sent
	 * before it to be delivered, whether or not the socket blocks. */
	rs_wait(rs, ctrl_avail_or_closed, false);
	if (rs->state == RS_CONNECTED && rs_ctrl_avail(rs))
		rs_post_ctrl(rs, ctrl);
	rs_wait(rs, rs_all_sends_done, false);
	if (ctrl == RS_CTRL_DISCONNECT && rs->state == RS_CONNECTED)
		rs->state = RS_DISCONNECTED;
	return 0;
}
