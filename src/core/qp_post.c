/* Work requests into a QP's queues: the checks a device makes at post
 * time (opcode for the QP type, SGE counts, sizes, inline room, UD MTU),
 * then the WQE layout the protocol reads. */
#include <errno.h>
#include <string.h>

#include "core/ah.h"
#include "core/limits.h"
#include "core/mr.h"
#include "core/qp.h"
#include "core/qp_kind.h"
#include "util/log.h"

static bool opcode_allowed(enum ibv_qp_type type, uint32_t op)
{
	switch (type) {
	case IBV_QPT_RC:
		return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM ||
		       op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM ||
		       op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_CMP_AND_SWP ||
		       op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_SEND_WITH_INV ||
		       ur_wr_is_local(op);
	case IBV_QPT_UC:
		return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM ||
		       op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM ||
		       ur_wr_is_local(op);
	case IBV_QPT_UD:
		return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM;
	case IBV_QPT_XRC_SEND:
		return opcode_allowed(IBV_QPT_RC, op);
	default:
		return false;
	}
}

static bool is_atomic(uint32_t op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

/* The WQE's data, len bytes: copied into it now if the WR is inline (a
 * READ's or an atomic's SGE is where the answer goes, so never those),
 * else its SGEs. */
static int fill_send_data(struct ur_qp *qp, struct ur_send_wqe *w, const struct ibv_send_wr *wr,
			  uint64_t len)
{
	if ((wr->send_flags & IBV_SEND_INLINE) && !is_atomic(wr->opcode) &&
	    wr->opcode != IBV_WR_RDMA_READ) {
		uint8_t *dst = w->inline_data;

		if (len > qp->cap.max_inline_data) {
			ur_err(ur_qp_dev(qp), "QP 0x%06x: %llu inline bytes, the QP allows %u",
			       ur_qp_num(qp), (unsigned long long)len, qp->cap.max_inline_data);
			return -EINVAL;
		}
		/* An empty SGE may have address 0 (UCX posts one): no copy,
		 * since memcpy from NULL is undefined even for 0 bytes. */
		for (int i = 0; i < wr->num_sge; i++) {
			if (!wr->sg_list[i].length)
				continue;
			memcpy(dst, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			dst += wr->sg_list[i].length;
		}
		w->is_inline = true;
		w->num_sge = 0;
	} else {
		/* A zero-length message may come with sg_list NULL. */
		if (wr->num_sge)
			memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(struct ibv_sge));
		w->num_sge = (uint32_t)wr->num_sge;
	}
	return 0;
}

static int fill_send_wqe(struct ur_qp *qp, struct ur_send_wqe *w, const struct ibv_send_wr *wr)
{
	const char *dev = ur_qp_dev(qp);
	uint64_t len = 0;

	if (ur_qp_kind_has(qp, UR_KIND_WR_ONLY)) {
		ur_err(dev, "QP 0x%06x: a DC QP takes work requests through ibv_wr_* and "
		       "mlx5dv_wr_set_dc_addr, not ibv_post_send", ur_qp_num(qp));
		return -EINVAL;
	}
	if (!opcode_allowed(qp->type, wr->opcode)) {
		ur_err(dev, "QP 0x%06x: opcode %d is not valid on this QP type",
		       ur_qp_num(qp), wr->opcode);
		return -EINVAL;
	}
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge) {
		ur_err(dev, "QP 0x%06x: %d SGEs, the QP was created with max_send_sge %u",
		       ur_qp_num(qp), wr->num_sge, qp->cap.max_send_sge);
		return -EINVAL;
	}
	memset(w, 0, sizeof(*w));
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->send_flags = wr->send_flags;
	w->imm = wr->imm_data;
	w->state = UR_WQE_POSTED;
	for (int i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (len > UR_MAX_MSG_SZ) {
		ur_err(dev, "QP 0x%06x: message of %llu bytes exceeds max_msg_sz %u",
		       ur_qp_num(qp), (unsigned long long)len, UR_MAX_MSG_SZ);
		return -EINVAL;
	}
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
		break;
	case IBV_WR_BIND_MW:
		if (!wr->bind_mw.mw)
			return -EINVAL;
		w->mw = to_umw(wr->bind_mw.mw);
		w->rkey = wr->bind_mw.rkey;
		w->bind = wr->bind_mw.bind_info;
		w->num_sge = 0;
		return 0;
	case IBV_WR_LOCAL_INV:
		w->imm = wr->invalidate_rkey;
		w->num_sge = 0;
		return 0;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		if (wr->num_sge != 1 || wr->sg_list[0].length < 8) {
			ur_err(dev, "QP 0x%06x: an atomic needs one SGE of 8 bytes",
			       ur_qp_num(qp));
			return -EINVAL;
		}
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
		len = 8;
		break;
	default:
		break;
	}
	if (qp->type == IBV_QPT_XRC_SEND)
		w->remote_srqn = wr->qp_type.xrc.remote_srqn & 0xffffff;
	if (qp->type == IBV_QPT_UD) {
		if (!wr->wr.ud.ah)
			return -EINVAL;
		w->ah = to_uah(wr->wr.ud.ah);
		w->remote_qpn = wr->wr.ud.remote_qpn & 0xffffff;
		w->remote_qkey = wr->wr.ud.remote_qkey;
		if (len > qp->mtu && qp->mtu) {
			ur_err(dev, "QP 0x%06x: UD message of %llu bytes exceeds the path MTU %u",
			       ur_qp_num(qp), (unsigned long long)len, qp->mtu);
			return -EINVAL;
		}
	}
	w->length = (uint32_t)len;
	return fill_send_data(qp, w, wr, len);
}

int ur_sq_post(struct ur_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	int ret = 0;

	for (; wr; wr = wr->next) {
		if (ur_wq_full(&qp->sq)) {
			ret = -ENOMEM;
			break;
		}
		ret = fill_send_wqe(qp, ur_sq_wqe(qp, qp->sq.tail), wr);
		if (ret)
			break;
		qp->sq.tail++;
	}
	if (ret)
		*bad = wr;
	return ret;
}

int ur_rq_post(struct ur_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return ur_wq_post_recv(&qp->rq, wr, qp->cap.max_recv_sge, bad);
}
