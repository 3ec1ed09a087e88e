/* riomap, riounmap, riowrite: direct placement into the peer's buffers.
 *
 * A buffer mapped for remote writing (PROT_WRITE) takes a slot of the
 * peer's target iomap (as many as the peer's RDMA_IOMAPSIZE); its entry
 * (offset, address, rkey, length) is written there, with immediate
 * RS_OP_IOMAP_SGL, before the next data this side sends, so the peer
 * knows it once that data arrives (rsocket(7)).  riowrite finds the
 * peer's entry covering an offset in our target iomap and RDMA-writes
 * into it without immediate: the peer's application is not told, but the
 * data keeps its place in the stream.  rs->lock held below the exports. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <rdma/rsocket.h>

#include "rsocket/rsocket.h"
#include "util/compiler.h"

struct rs_iomap_mr {
	struct rs_iomap_mr *next;
	uint64_t offset;
	struct ibv_mr *mr;
	int index;        /* slot in the peer's target iomap; -1: local only */
	bool sent;        /* its entry is written to the peer */
};

void rs_iomap_free(struct rsock *rs)
{
	while (rs->iomaps) {
		struct rs_iomap_mr *m = rs->iomaps;

		rs->iomaps = m->next;
		ibv_dereg_mr(m->mr);
		free(m);
	}
	rs->iomap_pending = 0;
}

static bool can_send_or_closed(const struct rsock *rs)
{
	return rs_can_send(rs) || rs->state != RS_CONNECTED || !rs->wr_open;
}

static int wait_send(struct rsock *rs, bool nonblock)
{
	int ret = 0;

	if (!rs_can_send(rs))
		ret = rs_wait(rs, can_send_or_closed, nonblock);
	if (ret)
		return ret;
	if (rs->state != RS_CONNECTED || !rs->wr_open)
		return rs->state == RS_ERROR ? -ECONNRESET : -EPIPE;
	return 0;
}

static int send_entry(struct rsock *rs, struct rs_iomap_mr *m)
{
	struct rs_iomap e = {
		.offset = m->offset,
		.sge = { (uintptr_t)m->mr->addr, m->mr->rkey, (uint32_t)m->mr->length },
	};
	struct ibv_sge sge[2];
	int nsge = 1, flags = IBV_SEND_INLINE;

	if (rs->swap_sgl) {
		e.offset = __builtin_bswap64(e.offset);
		e.sge.addr = __builtin_bswap64(e.sge.addr);
		e.sge.key = __builtin_bswap32(e.sge.key);
		e.sge.length = __builtin_bswap32(e.sge.length);
	}
	if (rs->sq_inline >= sizeof(e)) {
		sge[0].addr = (uintptr_t)&e;
		sge[0].length = sizeof(e);
		sge[0].lkey = 0;
	} else {
		struct iovec v = { &e, sizeof(e) };

		nsge = rs_stage(rs, &v, 1, sizeof(e), sge);
		flags = 0;
	}
	rs->sseq_no++;
	rs->sqe_avail--;
	rs->sbuf_bytes_avail -= sizeof(e);
	return rs_post_write_msg(rs, sge, nsge, rs_msg(RS_OP_IOMAP_SGL, (uint32_t)m->index), flags,
				 rs->remote_iomap.addr + (uint64_t)m->index * sizeof(e),
				 rs->remote_iomap.key);
}

int rs_iomap_flush(struct rsock *rs, bool nonblock)
{
	for (struct rs_iomap_mr *m = rs->iomaps; m && rs->iomap_pending; m = m->next) {
		int ret;

		if (m->index < 0 || m->sent)
			continue;
		ret = wait_send(rs, nonblock);
		if (!ret)
			ret = send_entry(rs, m);
		if (ret)
			return ret;
		m->sent = true;
		rs->iomap_pending--;
	}
	return 0;
}

/* A free slot of the peer's target iomap, or -1. */
static int free_slot(struct rsock *rs)
{
	for (uint32_t i = 0; i < rs->remote_iomap.length; i++) {
		bool used = false;

		for (struct rs_iomap_mr *m = rs->iomaps; m && !used; m = m->next)
			used = m->index == (int)i;
		if (!used)
			return (int)i;
	}
	return -1;
}

static int iomap_locked(struct rsock *rs, void *buf, size_t len, int prot, off_t *offset)
{
	int access = IBV_ACCESS_LOCAL_WRITE;
	struct rs_iomap_mr *m;

	if (rs->type != SOCK_STREAM)
		return -EOPNOTSUPP;   /* rsocket(7): iomaps are for stream sockets */
	if (!rs->id->pd || (prot & ~(PROT_WRITE | PROT_NONE)) || !buf || !len || *offset < -1)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->index = -1;
	if (prot & PROT_WRITE) {
		m->index = free_slot(rs);
		if (m->index < 0) {
			free(m);
			return -ENOMEM;   /* the peer's RDMA_IOMAPSIZE is used up (or 0) */
		}
		access |= IBV_ACCESS_REMOTE_WRITE;
	}
	m->mr = ibv_reg_mr(rs->id->pd, buf, len, access);
	if (!m->mr) {
		int err = errno ? errno : ENOMEM;

		free(m);
		return -err;
	}
	m->offset = *offset == -1 ? (uint64_t)(uintptr_t)buf : (uint64_t)*offset;
	m->next = rs->iomaps;
	rs->iomaps = m;
	if (m->index >= 0)
		rs->iomap_pending++;
	*offset = (off_t)m->offset;
	return 0;
}

UR_EXPORT off_t riomap(int s, void *buf, size_t len, int prot, int flags, off_t offset)
{
	struct rsock *rs = rs_table_get(s);
	int ret;

	(void)flags;
	if (!rs) {
		errno = EBADF;
		return -1;
	}
	pthread_mutex_lock(&rs->lock);
	ret = iomap_locked(rs, buf, len, prot, &offset);
	pthread_mutex_unlock(&rs->lock);
	if (ret) {
		errno = -ret;
		return -1;
	}
	return offset;
}

UR_EXPORT int riounmap(int s, void *buf, size_t len)
{
	struct rsock *rs = rs_table_get(s);
	struct rs_iomap_mr **pm;
	int ret = -EINVAL;

	if (!rs) {
		errno = EBADF;
		return -1;
	}
	pthread_mutex_lock(&rs->lock);
	for (pm = &rs->iomaps; *pm; pm = &(*pm)->next) {
		struct rs_iomap_mr *m = *pm;

		if (m->mr->addr != buf || m->mr->length != len)
			continue;
		*pm = m->next;
		if (m->index >= 0 && !m->sent)
			rs->iomap_pending--;
		ibv_dereg_mr(m->mr);
		free(m);
		ret = 0;
		break;
	}
	pthread_mutex_unlock(&rs->lock);
	if (ret) {
		errno = -ret;
		return -1;
	}
	return 0;
}

/* The peer's mapping that holds offset, if any. */
static const struct rs_iomap *find_target(const struct rsock *rs, uint64_t offset)
{
	for (unsigned i = 0; i < rs->target_iomap_size; i++) {
		const struct rs_iomap *t = &rs->target_iomap[i];

		if (t->sge.length && offset >= t->offset && offset - t->offset < t->sge.length)
			return t;
	}
	return NULL;
}

static ssize_t iowrite_locked(struct rsock *rs, const void *buf, size_t count, uint64_t offset,
			      bool nonblock)
{
	const struct rs_iomap *t = NULL;
	uint32_t olen = RS_OLAP_START;
	size_t done = 0;
	int ret;

	if (rs->type != SOCK_STREAM)
		return -EOPNOTSUPP;
	if (rs->state != RS_CONNECTED || !rs->wr_open)
		return rs->state == RS_ERROR ? -ECONNRESET :
		       rs->state == RS_DISCONNECTED ? -EPIPE : -ENOTCONN;
	ret = rs_iomap_flush(rs, nonblock);
	if (ret)
		return ret;
	while (done < count) {
		struct iovec v = { (uint8_t *)buf + done, count - done };
		struct ibv_sge sge[2];
		uint32_t xfer;
		uint64_t addr;
		int nsge, flags = 0;

		if (!t || offset < t->offset || offset - t->offset >= t->sge.length)
			t = find_target(rs, offset);
		if (!t) {
			ret = -EINVAL;   /* the peer mapped nothing there (yet) */
			break;
		}
		ret = wait_send(rs, nonblock);
		if (ret)
			break;
		xfer = count - done < olen ? (uint32_t)(count - done) : olen;
		if (olen < RS_MAX_TRANSFER)
			olen <<= 1;
		if (xfer > rs->sbuf_bytes_avail)
			xfer = rs->sbuf_bytes_avail;
		if (xfer > t->offset + t->sge.length - offset)
			xfer = (uint32_t)(t->offset + t->sge.length - offset);
		addr = t->sge.addr + (offset - t->offset);
		if (xfer <= rs->sq_inline) {
			sge[0].addr = (uintptr_t)v.iov_base;
			sge[0].length = xfer;
			sge[0].lkey = 0;
			nsge = 1;
			flags = IBV_SEND_INLINE;
		} else {
			nsge = rs_stage(rs, &v, 1, xfer, sge);
		}
		rs->sqe_avail--;
		rs->sbuf_bytes_avail -= xfer;
		ret = rs_post_write(rs, sge, nsge, rs_msg(RS_OP_WRITE, xfer), flags, addr, t->sge.key);
		if (ret) {
			rs->state = RS_ERROR;
			rs->err = -ret;
			break;
		}
		done += xfer;
		offset += xfer;
	}
	return done ? (ssize_t)done : ret;
}

UR_EXPORT size_t riowrite(int s, const void *buf, size_t count, off_t offset, int flags)
{
	struct rsock *rs = rs_table_get(s);
	ssize_t r;

	if (!rs) {
		errno = EBADF;
		return (size_t)-1;
	}
	pthread_mutex_lock(&rs->lock);
	r = iowrite_locked(rs, buf, count, (uint64_t)offset,
			   rs->nonblock || (flags & MSG_DONTWAIT));
	pthread_mutex_unlock(&rs->lock);
	if (r < 0) {
		errno = (int)-r;
		return (size_t)-1;
	}
	return (size_t)r;
}
