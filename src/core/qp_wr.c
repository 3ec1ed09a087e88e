/* The ibv_qp_ex work-request builders (ibv_wr_send, ibv_wr_set_sge, ...
 * between ibv_wr_start and ibv_wr_complete).  WQEs are built in the SQ
 * slots past sq.tail and become visible to the requester only at
 * ibv_wr_complete (rel/qp_ops.c); an error in any builder call discards the
 * whole batch, as the verbs contract says. */
#include <errno.h>
#include <string.h>

#include "core/ah.h"
#include "core/limits.h"
#include "core/mr.h"
#include "core/qp.h"
#include "core/qp_kind.h"
#include "util/log.h"

static inline struct ur_qp *from_qpx(struct ibv_qp_ex *qpx)
{
	return container_of(qpx, struct ur_qp, qpx);
}

static struct ur_send_wqe *cur_wqe(struct ur_qp *qp)
{
	if (qp->wr_err || qp->wr_tail == qp->sq.tail)
		return NULL;
	return ur_sq_wqe(qp, qp->wr_tail - 1);
}

static struct ur_send_wqe *new_wqe(struct ibv_qp_ex *qpx, uint32_t opcode)
{
	struct ur_qp *qp = from_qpx(qpx);
	struct ur_send_wqe *w;

	if (qp->wr_err)
		return NULL;
	/* Unlocked, as the builders are: the completer moves the head on
	 * under the QP's lock, only ever forward (ur_sq_retire). */
	if (qp->wr_tail - __atomic_load_n(&qp->sq.head, __ATOMIC_ACQUIRE) >= qp->sq.max) {
		qp->wr_err = -ENOMEM;
		return NULL;
	}
	w = ur_sq_wqe(qp, qp->wr_tail++);
	memset(w, 0, sizeof(*w));
	w->wr_id = qpx->wr_id;
	w->send_flags = qpx->wr_flags;
	w->opcode = opcode;
	w->state = UR_WQE_POSTED;
	return w;
}

/* new_wqe for an operation only RC and XRC QPs have: on another QP the
 * batch fails with EINVAL at ibv_wr_complete. */
static struct ur_send_wqe *new_rc_wqe(struct ibv_qp_ex *qpx, uint32_t opcode)
{
	enum ibv_qp_type t = from_qpx(qpx)->type;

	if (t != IBV_QPT_RC && t != IBV_QPT_XRC_SEND) {
		from_qpx(qpx)->wr_err = -EINVAL;
		return NULL;
	}
	return new_wqe(qpx, opcode);
}

static void wr_send(struct ibv_qp_ex *qpx)
{
	new_wqe(qpx, IBV_WR_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	struct ur_send_wqe *w = new_wqe(qpx, IBV_WR_SEND_WITH_IMM);

	if (w)
		w->imm = imm;
}

static void rdma(struct ibv_qp_ex *qpx, uint32_t op, uint32_t rkey, uint64_t addr, __be32 imm)
{
	struct ur_send_wqe *w = new_wqe(qpx, op);

	if (!w)
		return;
	if (from_qpx(qpx)->type == IBV_QPT_UD) {
		from_qpx(qpx)->wr_err = -EINVAL;
		return;
	}
	w->rkey = rkey;
	w->remote_addr = addr;
	w->imm = imm;
}

static void wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr)
{
	rdma(qpx, IBV_WR_RDMA_WRITE, rkey, addr, 0);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr, __be32 imm)
{
	rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, addr, imm);
}

static void wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr)
{
	if (from_qpx(qpx)->type == IBV_QPT_UC) {
		from_qpx(qpx)->wr_err = -EINVAL;
		return;
	}
	rdma(qpx, IBV_WR_RDMA_READ, rkey, addr, 0);
}

static void atomic(struct ibv_qp_ex *qpx, uint32_t op, uint32_t rkey, uint64_t addr,
		   uint64_t cmp_add, uint64_t swap)
{
	/* RC and XRC have atomics (XRC opcodes 0xB3, 0xB4), as post_send allows. */
	struct ur_send_wqe *w = new_rc_wqe(qpx, op);

	if (!w)
		return;
	w->rkey = rkey;
	w->remote_addr = addr;
	w->compare_add = cmp_add;
	w->swap = swap;
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr,
			      uint64_t compare, uint64_t swap)
{
	atomic(qpx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr, compare, swap);
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr,
				uint64_t add)
{
	atomic(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, add, 0);
}

static bool atomic_op(uint32_t op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

static void wr_set_sge_list(struct ibv_qp_ex *qpx, size_t n, const struct ibv_sge *sg)
{
	struct ur_qp *qp = from_qpx(qpx);
	struct ur_send_wqe *w = cur_wqe(qp);
	uint64_t len = 0;

	if (!w)
		return;
	if (n > qp->cap.max_send_sge) {
		qp->wr_err = -EINVAL;
		return;
	}
	for (size_t i = 0; i < n; i++)
		len += sg[i].length;
	if (atomic_op(w->opcode)) {
		if (n != 1 || len < 8) {
			qp->wr_err = -EINVAL;
			return;
		}
		len = 8;
	} else if (len > UR_MAX_MSG_SZ || (qp->type == IBV_QPT_UD && len > qp->mtu)) {
		qp->wr_err = -EINVAL;
		return;
	}
	memcpy(w->sge, sg, n * sizeof(*sg));
	w->num_sge = (uint32_t)n;
	w->length = (uint32_t)len;
	w->is_inline = false;
}

static void wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	wr_set_sge_list(qpx, 1, &sge);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t n,
				    const struct ibv_data_buf *buf)
{
	struct ur_qp *qp = from_qpx(qpx);
	struct ur_send_wqe *w = cur_wqe(qp);
	size_t len = 0;
	uint8_t *dst;

	if (!w)
		return;
	for (size_t i = 0; i < n; i++)
		len += buf[i].length;
	if (len > qp->cap.max_inline_data || atomic_op(w->opcode) ||
	    w->opcode == IBV_WR_RDMA_READ) {
		qp->wr_err = -EINVAL;
		return;
	}
	dst = w->inline_data;
	for (size_t i = 0; i < n; i++) {
		if (!buf[i].length)
			continue;    /* addr may be NULL: see fill_send_data */
		memcpy(dst, buf[i].addr, buf[i].length);
		dst += buf[i].length;
	}
	w->is_inline = true;
	w->num_sge = 0;
	w->length = (uint32_t)len;
}

static void wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
	struct ibv_data_buf b = { .addr = addr, .length = length };

	wr_set_inline_data_list(qpx, 1, &b);
}

/* The current WQE addressed to QP qpn through ah, if the QP is of a kind
 * that takes an address (valid) and ah is given; else NULL, and the batch
 * fails with EINVAL at ibv_wr_complete. */
static struct ur_send_wqe *set_addr(struct ur_qp *qp, bool valid, struct ibv_ah *ah,
				    uint32_t qpn)
{
	struct ur_send_wqe *w = cur_wqe(qp);

	if (!w)
		return NULL;
	if (!valid || !ah) {
		qp->wr_err = -EINVAL;
		return NULL;
	}
	w->ah = to_uah(ah);
	w->remote_qpn = qpn & 0xffffff;
	return w;
}

static void wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah, uint32_t remote_qpn,
			   uint32_t remote_qkey)
{
	struct ur_qp *qp = from_qpx(qpx);
	struct ur_send_wqe *w = set_addr(qp, qp->type == IBV_QPT_UD, ah, remote_qpn);

	if (w)
		w->remote_qkey = remote_qkey;
}

void ur_qp_wr_set_dc_addr(struct ur_qp *qp, struct ibv_ah *ah, uint32_t dctn, uint64_t key)
{
	struct ur_send_wqe *w = set_addr(qp, qp->kind->dc == UR_DC_INI, ah, dctn);

	if (w)
		w->dc_key = key;
}

/* Operations uroce does not offer through this interface yet: the batch
 * fails with EOPNOTSUPP at ibv_wr_complete. */
static void unsupported(struct ibv_qp_ex *qpx)
{
	from_qpx(qpx)->wr_err = -EOPNOTSUPP;
}

static void wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *info)
{
	struct ur_send_wqe *w;

	if (!mw) {
		from_qpx(qpx)->wr_err = -EINVAL;
		return;
	}
	w = new_wqe(qpx, IBV_WR_BIND_MW);
	if (!w)
		return;
	w->mw = to_umw(mw);
	w->rkey = rkey;
	w->bind = *info;
}

static void wr_local_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	struct ur_send_wqe *w = new_wqe(qpx, IBV_WR_LOCAL_INV);

	if (w)
		w->imm = rkey;
}

static void wr_send_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	struct ur_send_wqe *w = new_rc_wqe(qpx, IBV_WR_SEND_WITH_INV);

	if (w)
		w->imm = rkey;
}

static void wr_send_tso(struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	unsupported(qpx);
}

static void wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t srqn)
{
	struct ur_qp *qp = from_qpx(qpx);
	struct ur_send_wqe *w = cur_wqe(qp);

	if (!w)
		return;
	if (qp->type != IBV_QPT_XRC_SEND) {
		qp->wr_err = -EINVAL;
		return;
	}
	w->remote_srqn = srqn & 0xffffff;
}

/* ATOMIC WRITE (IBA memory placement extensions, RC only): the 8 bytes at
 * op, stored whole at the responder; they travel as the WQE's inline data. */
static void wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr,
			    const void *op)
{
	struct ur_qp *qp = from_qpx(qpx);
	struct ur_send_wqe *w;

	if (!ur_qp_plain_rc(qp) || !op) {
		qp->wr_err = -EINVAL;
		return;
	}
	w = new_wqe(qpx, IBV_WR_ATOMIC_WRITE);
	if (!w)
		return;
	w->rkey = rkey;
	w->remote_addr = addr;
	w->is_inline = true;
	w->length = 8;
	memcpy(w->inline_data, op, 8);
}

void ur_qp_init_wr_builders(struct ur_qp *qp)
{
	struct ibv_qp_ex *x = &qp->qpx;

	x->wr_send = wr_send;
	x->wr_send_imm = wr_send_imm;
	x->wr_rdma_write = wr_rdma_write;
	x->wr_rdma_write_imm = wr_rdma_write_imm;
	x->wr_rdma_read = wr_rdma_read;
	x->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	x->wr_atomic_fetch_add = wr_atomic_fetch_add;
	x->wr_set_sge = wr_set_sge;
	x->wr_set_sge_list = wr_set_sge_list;
	x->wr_set_inline_data = wr_set_inline_data;
	x->wr_set_inline_data_list = wr_set_inline_data_list;
	x->wr_set_ud_addr = wr_set_ud_addr;
	x->wr_bind_mw = wr_bind_mw;
	x->wr_local_inv = wr_local_inv;
	x->wr_send_inv = wr_send_inv;
	x->wr_send_tso = wr_send_tso;
	x->wr_set_xrc_srqn = wr_set_xrc_srqn;
	x->wr_atomic_write = wr_atomic_write;
}
