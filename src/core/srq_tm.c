#include "core/srq_tm.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/tm_types.h>

#include "core/cq.h"
#include "core/qp.h"
#include "core/srq.h"
#include "util/log.h"

static void own_wqe_done(struct ur_qp *qp, struct ur_send_wqe *w, enum ibv_wc_status status);

int ur_srq_tm_create(struct ur_context *ctx, struct ur_pd *pd, struct ibv_srq_init_attr_ex *a,
		     struct ur_srq **out)
{
	uint32_t n = a->tm_cap.max_num_tags;
	struct ur_srq *srq;
	int ret;

	if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_TM) || !(a->comp_mask & IBV_SRQ_INIT_ATTR_CQ) ||
	    !a->cq || n < 1 || n > UR_TM_MAX_TAGS || a->tm_cap.max_ops > UR_TM_MAX_OPS) {
		ur_log(UR_LOG_DBG, ctx->dev->ibdev.name, "TM SRQ: needs a CQ, 1..%d tags "
		       "and up to %d operations (asked %u, %u)", UR_TM_MAX_TAGS, UR_TM_MAX_OPS,
		       n, a->tm_cap.max_ops);
		return -EINVAL;
	}
	ret = ur_srq_create(ctx, pd, a, &srq);
	if (ret)
		return ret;
	srq->tm = calloc(1, sizeof(*srq->tm) + n * sizeof(srq->tm->tags[0]));
	if (!srq->tm) {
		ur_srq_destroy(srq);
		return -ENOMEM;
	}
	srq->tm->max_tags = n;
	srq->cq = to_ucq(a->cq);
	__atomic_add_fetch(&srq->cq->users, 1, __ATOMIC_RELAXED);
	srq->own_wqe_done = own_wqe_done;
	*out = srq;
	return 0;
}

/* ---- list operations ---------------------------------------------------- */

static int tag_add(struct ur_tm *tm, struct ibv_ops_wr *wr, uint32_t *flags)
{
	struct ur_tm_tag *t = NULL;

	if (wr->tm.add.num_sge < 0 || wr->tm.add.num_sge > UR_TM_MAX_SGE ||
	    (wr->tm.add.num_sge && !wr->tm.add.sg_list))
		return -EINVAL;
	for (uint32_t i = 0; i < tm->max_tags && !t; i++)
		if (!tm->tags[i].used)
			t = &tm->tags[i];
	if (!t)
		return -ENOMEM;
	*t = (struct ur_tm_tag){ .used = true, .tag = wr->tm.add.tag, .mask = wr->tm.add.mask,
				 .wr_id = wr->tm.add.recv_wr_id,
				 .num_sge = (uint32_t)wr->tm.add.num_sge };
	memcpy(t->sge, wr->tm.add.sg_list, t->num_sge * sizeof(t->sge[0]));
	t->seq = ++tm->seq;
	wr->tm.handle = (uint32_t)(t - tm->tags);
	/* Posted while unexpected messages the application has not counted
	 * are about: it must sync before the tag can match. */
	if (wr->tm.unexpected_cnt != tm->hw_unexpected)
		*flags = IBV_WC_TM_SYNC_REQ;
	return 0;
}

static int one_op(struct ur_srq *srq, struct ibv_ops_wr *wr, struct ibv_wc *wc)
{
	struct ur_tm *tm = srq->tm;
	uint32_t flags = 0;
	int ret = 0;

	switch (wr->opcode) {
	case IBV_WR_TAG_ADD:
		ret = tag_add(tm, wr, &flags);
		wc->opcode = IBV_WC_TM_ADD;
		break;
	case IBV_WR_TAG_DEL:
		if (wr->tm.handle >= tm->max_tags || !tm->tags[wr->tm.handle].used)
			return -EINVAL;
		tm->tags[wr->tm.handle].used = false;
		wc->opcode = IBV_WC_TM_DEL;
		break;
	case IBV_WR_TAG_SYNC:
		tm->sw_unexpected = wr->tm.unexpected_cnt;
		wc->opcode = IBV_WC_TM_SYNC;
		break;
	default:
		return -EINVAL;
	}
	wc->wr_id = wr->wr_id;
	wc->wc_flags = flags;
	return ret;
}

int ur_srq_post_ops(struct ur_srq *srq, struct ibv_ops_wr *wr, struct ibv_ops_wr **bad)
{
	if (!srq->tm) {
		*bad = wr;
		return -EOPNOTSUPP;
	}
	for (; wr; wr = wr->next) {
		struct ibv_wc wc = { .status = IBV_WC_SUCCESS };
		int ret;

		pthread_mutex_lock(&srq->lock);
		ret = one_op(srq, wr, &wc);
		pthread_mutex_unlock(&srq->lock);
		if (ret) {
			*bad = wr;
			return ret;
		}
		if (wr->flags & IBV_OPS_SIGNALED)
			ur_cq_push(srq->cq, &wc, false);
	}
	return 0;
}

/* ---- matching ----------------------------------------------------------- */

/* The oldest posted tag buffer whose tag matches, or NULL. */
static struct ur_tm_tag *match(struct ur_tm *tm, uint64_t tag)
{
	struct ur_tm_tag *best = NULL;

	for (uint32_t i = 0; i < tm->max_tags; i++) {
		struct ur_tm_tag *t = &tm->tags[i];

		if (t->used && ((t->tag ^ tag) & t->mask) == 0 && (!best || t->seq < best->seq))
			best = t;
	}
	return best;
}

bool ur_srq_tm_take(struct ur_srq *srq, const uint8_t *hdr, uint32_t len,
		    struct ur_recv_wqe *out, struct ur_tm_match *m)
{
	struct ur_tm *tm = srq->tm;
	struct ibv_tmh tmh = { .opcode = IBV_TMH_NO_TAG };
	struct ur_tm_tag *t = NULL;

	memset(m, 0, sizeof(*m));
	m->kind = UR_TM_NO_TAG;
	if (hdr && len >= UR_TM_HDR_BYTES) {
		memcpy(&tmh, hdr, sizeof(tmh));
		if (tmh.opcode != IBV_TMH_NO_TAG)
			m->kind = UR_TM_UNEXPECTED;
		m->tag = be64toh(tmh.tag);
		m->priv = be32toh(tmh.app_ctx);
	}
	pthread_mutex_lock(&srq->lock);
	/* Matching stops at an unexpected message until the application
	 * says it has seen it (IBV_WR_TAG_SYNC). */
	if ((tmh.opcode == IBV_TMH_EAGER ||
	     (tmh.opcode == IBV_TMH_RNDV && len >= UR_TM_RNDV_HDR_BYTES)) &&
	    m->kind == UR_TM_UNEXPECTED && tm->sw_unexpected == tm->hw_unexpected)
		t = match(tm, m->tag);
	if (t) {
		out->wr_id = t->wr_id;
		out->num_sge = t->num_sge;
		out->length = 0;
		for (uint32_t i = 0; i < t->num_sge; i++) {
			out->sge[i] = t->sge[i];
			out->length += t->sge[i].length;
		}
		t->used = false;
		m->kind = tmh.opcode == IBV_TMH_RNDV ? UR_TM_RNDV : UR_TM_EAGER;
	}
	pthread_mutex_unlock(&srq->lock);
	if (m->kind == UR_TM_RNDV) {
		struct ibv_rvh rvh;

		memcpy(&rvh, hdr + UR_TM_HDR_BYTES, sizeof(rvh));
		m->rndv_va = be64toh(rvh.va);
		m->rndv_rkey = be32toh(rvh.rkey);
		m->rndv_len = be32toh(rvh.len);
	}
	if (t)
		return true;
	/* Ordinary receives: NO_TAG messages, and what matched nothing. */
	if (!ur_srq_take(srq, out))
		return false;
	if (m->kind == UR_TM_UNEXPECTED) {
		pthread_mutex_lock(&srq->lock);
		tm->hw_unexpected++;
		pthread_mutex_unlock(&srq->lock);
		m->tag = 0;
		m->priv = 0;
	}
	if (m->kind == UR_TM_NO_TAG) {
		m->tag = 0;
		m->priv = 0;
	}
	return true;
}

/* ---- rendezvous --------------------------------------------------------- */

/* A WQE of the device's own at the SQ's tail (the QP keeps room for
 * them: UR_TM_SQ_SLOTS); NULL if none is left. */
static struct ur_send_wqe *own_wqe(struct ur_qp *qp, uint8_t kind, uint32_t opcode)
{
	struct ur_send_wqe *w;

	if (qp->sq.tail - qp->sq.head >= qp->sq.size)
		return NULL;
	w = ur_sq_wqe(qp, qp->sq.tail);
	memset(w, 0, sizeof(*w));
	w->opcode = opcode;
	w->internal = kind;
	w->send_flags = IBV_SEND_SIGNALED;
	w->state = UR_WQE_POSTED;
	return w;
}

static void tm_completion(struct ur_qp *qp, uint64_t wr_id, enum ibv_wc_status status,
			  uint32_t flags, uint32_t len, uint64_t tag, uint32_t priv)
{
	struct ibv_wc wc = { .wr_id = wr_id, .status = status, .opcode = IBV_WC_TM_RECV,
			     .wc_flags = flags, .byte_len = len, .qp_num = ur_qp_num(qp) };

	if (ur_cq_push_tm(qp->rcq, &wc, false, tag, priv) == -ENOSPC)
		qp->cq_overrun = true;
}

void ur_tm_rndv_read(struct ur_qp *qp, const struct ur_recv_wqe *buf, const struct ur_tm_match *m)
{
	struct ur_send_wqe *w = own_wqe(qp, UR_WQE_TM_READ, IBV_WR_RDMA_READ);

	if (!w || buf->num_sge > qp->cap.max_send_sge || m->rndv_len > buf->length) {
		tm_completion(qp, buf->wr_id, IBV_WC_TM_RNDV_INCOMPLETE, 0, 0, m->tag, m->priv);
		return;
	}
	w->wr_id = buf->wr_id;
	w->rkey = m->rndv_rkey;
	w->remote_addr = m->rndv_va;
	w->length = m->rndv_len;
	w->num_sge = buf->num_sge;
	memcpy(w->sge, buf->sge, buf->num_sge * sizeof(w->sge[0]));
	w->compare_add = m->tag;     /* kept for the completion and the FIN */
	w->imm = m->priv;
	qp->sq.tail++;
}

/* A WQE of the device's own completed (instead of a completion for the
 * application): a rendezvous READ reports the data and queues the FIN. */
static void own_wqe_done(struct ur_qp *qp, struct ur_send_wqe *w, enum ibv_wc_status status)
{
	struct ibv_tmh fin = { .opcode = IBV_TMH_FIN };
	struct ur_send_wqe *f;

	if (w->internal != UR_WQE_TM_READ)
		return;    /* a FIN: the sender's business */
	/* The tag was the first completion's (the match); this one says the
	 * data is in, as mlx5 reports it. */
	tm_completion(qp, w->wr_id, status == IBV_WC_SUCCESS ? IBV_WC_SUCCESS :
		      IBV_WC_TM_RNDV_INCOMPLETE, IBV_WC_TM_DATA_VALID, w->length, 0, 0);
	if (status != IBV_WC_SUCCESS)
		return;
	/* The sender may reuse its buffer: a FIN with the tag. */
	f = own_wqe(qp, UR_WQE_TM_FIN, IBV_WR_SEND);
	if (!f)
		return;
	fin.app_ctx = htobe32(w->imm);
	fin.tag = htobe64(w->compare_add);
	f->is_inline = true;
	f->length = sizeof(fin);
	memcpy(f->inline_data, &fin, sizeof(fin));
	qp->sq.tail++;
}
