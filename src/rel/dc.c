#include "rel/dc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/ah.h"
#include "core/context.h"
#include "core/qp_kind.h"
#include "core/qp_modify.h"
#include "core/route.h"
#include "core/srq.h"
#include "rel/held.h"
#include "rel/progress.h"
#include "rel/psn.h"
#include "rel/qp_error.h"
#include "rel/qp_ops.h"
#include "rel/rel_priv.h"
#include "rel/resp.h"
#include "rel/run.h"
#include "rel/stack.h"
#include "util/clock.h"
#include "util/log.h"

#define HALF_BUCKETS 256

/* A full table gives an initiator the half idle longest, if it has been
 * idle this long (and owes nothing). */
#define HALF_IDLE_NS 1000000000ull

struct ur_dc_halves {
	uint32_t n;
	struct ur_qp *bucket[HALF_BUCKETS];
};

/* ---- creation ----------------------------------------------------------- */

static const struct ur_qp_kind dci_kind, dct_kind, half_kind;

int ur_dc_create(struct ur_context *ctx, struct ibv_qp_init_attr_ex *attr,
		 enum ur_dc_role role, uint64_t key, struct ur_qp **out)
{
	struct ibv_qp_init_attr_ex a = *attr;
	const char *dev = ctx->dev->ibdev.name;
	struct ur_dc_halves *halves = NULL;
	struct ur_qp *qp;
	int ret;

	a.qp_type = IBV_QPT_RC;
	if (role == UR_DC_TGT) {
		if (!a.srq) {
			ur_err(dev, "a DCT receives on an SRQ: set attr->srq");
			return -EINVAL;
		}
		/* Its halves answer only: none could READ a rendezvous. */
		if (to_usrq(a.srq)->tm) {
			ur_err(dev, "a DCT cannot receive on a tag-matching SRQ");
			return -EOPNOTSUPP;
		}
		/* A target only answers. */
		memset(&a.cap, 0, sizeof(a.cap));
		a.comp_mask &= ~IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		halves = calloc(1, sizeof(*halves));
		if (!halves)
			return -ENOMEM;
	} else {
		/* An initiator only asks: its receives, if any, are the DCT's. */
		a.srq = NULL;
		a.cap.max_recv_wr = a.cap.max_recv_sge = 0;
		if (!a.recv_cq)
			a.recv_cq = a.send_cq;
	}
	ret = ur_qp_create_kind(ctx, &a, role == UR_DC_TGT ? &dct_kind : &dci_kind, &qp);
	if (ret) {
		free(halves);
		return ret;
	}
	pthread_mutex_lock(&qp->lock);
	qp->dc_key = key;
	qp->dc_halves = halves;
	qp->qpx.qp_base.qp_type = IBV_QPT_DRIVER;
	pthread_mutex_unlock(&qp->lock);
	attr->cap = a.cap;
	ur_dbg(dev, "%s 0x%06x created", qp->kind->name, ur_qp_num(qp));
	*out = qp;
	return 0;
}

/* ---- initiator ---------------------------------------------------------- */

static bool same_target(const struct ur_qp *qp, const struct ur_send_wqe *w)
{
	const struct ibv_ah_attr *now = &qp->attr.ah_attr, *to = &w->ah->attr;

	return qp->dc_on && qp->attr.dest_qp_num == w->remote_qpn &&
	       qp->dc_key == w->dc_key && now->grh.sgid_index == to->grh.sgid_index &&
	       !memcmp(&now->grh.dgid, &to->grh.dgid, sizeof(now->grh.dgid));
}

/* True if the DCI may send w now: w goes where the DCI is connected, or
 * it connects there, everything before being acknowledged.  False: wait
 * for the acknowledgements. */
static bool dci_connect(struct ur_qp *qp, struct ur_send_wqe *w)
{
	if (same_target(qp, w))
		return true;
	/* Another target: not while the last one still owes answers. */
	if (qp->req.wqe != qp->sq.head || qp->req.psn != qp->comp.psn)
		return false;
	qp->path = w->ah->path;
	qp->attr.ah_attr = w->ah->attr;
	qp->attr.dest_qp_num = w->remote_qpn;
	qp->dc_key = w->dc_key;
	qp->dc_start = qp->req.psn;
	qp->dc_conn++;
	qp->dc_on = true;
	/* A fresh peer: its own retry budget and an unknown holding rule. */
	qp->comp.retry_left = qp->attr.retry_cnt;
	qp->comp.rnr_retry_left = qp->attr.rnr_retry;
	qp->comp.peer_holds = UR_PEER_HOLDS_UNKNOWN;
	ur_dbg(ur_qp_dev(qp), "DCI 0x%06x: connects to DCT 0x%06x at PSN 0x%06x", ur_qp_num(qp),
	       w->remote_qpn, qp->dc_start);
	return true;
}

/* The DCI's PSNs start over: it connects again before its next WQE. */
static void dci_reset(struct ur_qp *qp)
{
	qp->dc_on = false;
}

/* Every work request of a DCI's batch names its target. */
static int dci_check_batch(struct ur_qp *qp)
{
	for (uint32_t i = qp->sq.tail; i != qp->wr_tail; i++) {
		struct ur_send_wqe *w = ur_sq_wqe(qp, i);

		if (!ur_wr_is_local(w->opcode) && !w->ah) {
			ur_err(ur_qp_dev(qp), "DCI 0x%06x: WR 0x%llx has no DC address "
			       "(mlx5dv_wr_set_dc_addr)", ur_qp_num(qp),
			       (unsigned long long)w->wr_id);
			return -EINVAL;
		}
	}
	return 0;
}

/* DC rides on RD's opcodes (docs/dc.md): the DCETH carries the DC key, the
 * RDETH the PSN the connection began at, and the DETH of a request the
 * connection's number (in the Q_Key field) and the initiator.  A DCI's
 * packets and its target's half's answers. */
static void dc_headers(const struct ur_qp *qp, uint8_t *hdr, uint8_t op)
{
	const struct ur_opcode_info *info = &ur_opcode[op];

	dceth_set_key(hdr + info->offset[UR_HDR_DCETH], qp->dc_key);
	rdeth_set_een(hdr + info->offset[UR_HDR_RDETH], qp->dc_start);
	if (info->mask & UR_OPF_DETH) {
		deth_set_qkey(hdr + info->offset[UR_HDR_DETH], qp->dc_conn);
		deth_set_sqp(hdr + info->offset[UR_HDR_DETH], ur_qp_num(qp));
	}
}

/* ---- target ------------------------------------------------------------- */

static unsigned bucket_of(const union ibv_gid *gid, uint32_t sqpn)
{
	uint32_t h = sqpn * 2654435761u;

	for (unsigned i = 0; i < sizeof(gid->raw); i++)
		h = (h ^ gid->raw[i]) * 16777619u;
	return h % HALF_BUCKETS;
}

static struct ur_qp *find_half(struct ur_qp *dct, const union ibv_gid *gid, uint32_t sqpn)
{
	for (struct ur_qp *h = dct->dc_halves->bucket[bucket_of(gid, sqpn)]; h; h = h->dc_next)
		if (h->attr.dest_qp_num == sqpn &&
		    !memcmp(&h->attr.ah_attr.grh.dgid, gid, sizeof(*gid)))
			return h;
	return NULL;
}

static void hash_in(struct ur_qp *dct, struct ur_qp *h)
{
	h->dc_bucket = bucket_of(&h->attr.ah_attr.grh.dgid, h->attr.dest_qp_num);
	h->dc_next = dct->dc_halves->bucket[h->dc_bucket];
	dct->dc_halves->bucket[h->dc_bucket] = h;
}

static void hash_out(struct ur_qp *dct, struct ur_qp *h)
{
	struct ur_qp **p = &dct->dc_halves->bucket[h->dc_bucket];

	while (*p != h)
		p = &(*p)->dc_next;
	*p = h->dc_next;
}

/* Nothing in flight either way: no message half received, no answer
 * owed, nothing waiting for room. */
static bool half_quiet(const struct ur_qp *h)
{
	return h->resp.opcode < 0 && h->resp.res_tx == h->resp.res_next &&
	       !h->resp.ack_pending && !h->req.blocked && !ur_held_count(h->held);
}

/* The half idle longest, if the table is full of halves and it may go. */
static struct ur_qp *idle_half(struct ur_qp *dct, uint64_t now)
{
	struct ur_qp *best = NULL;
	bool quiet;

	for (unsigned i = 0; i < HALF_BUCKETS; i++)
		for (struct ur_qp *h = dct->dc_halves->bucket[i]; h; h = h->dc_next)
			if ((!best || h->dc_used_ns < best->dc_used_ns) &&
			    now - h->dc_used_ns > HALF_IDLE_NS)
				best = h;
	if (!best)
		return NULL;
	pthread_mutex_lock(&best->lock);
	quiet = half_quiet(best) || best->state == IBV_QPS_ERR;
	pthread_mutex_unlock(&best->lock);
	return quiet ? best : NULL;
}

/* Where a half answers: its initiator, by UDP (as an AH's datagrams go). */
static int aim_half(struct ur_qp *dct, struct ur_qp *h, const union ibv_gid *gid, uint32_t sqpn)
{
	char why[256];

	h->attr.ah_attr.grh.dgid = *gid;
	h->attr.dest_qp_num = sqpn;
	if (ur_route_resolve(dct->ctx, &h->attr.ah_attr, 0, &h->path, why, sizeof(why))) {
		ur_dbg(ur_qp_dev(dct), "DCT 0x%06x: no way back to an initiator: %s",
		       ur_qp_num(dct), why);
		return -EHOSTUNREACH;
	}
	return 0;
}

/* A responder for the initiator at (gid, sqpn): an RC QP out of the QP
 * table, numbered as its DCT, brought to RTR with the DCT's attributes. */
static struct ur_qp *new_half(struct ur_qp *dct, const union ibv_gid *gid, uint32_t sqpn,
			      uint32_t start)
{
	struct ibv_qp *b = &dct->qpx.qp_base;
	struct ibv_qp_init_attr_ex init = {
		.qp_type = IBV_QPT_RC, .comp_mask = IBV_QP_INIT_ATTR_PD, .pd = b->pd,
		.send_cq = b->send_cq, .recv_cq = b->recv_cq, .srq = b->srq,
	};
	struct ibv_qp_attr a = dct->attr;
	struct ur_context *ctx = dct->ctx;
	struct ur_qp *h;

	if (dct->dc_halves->n >= UR_DC_MAX_HALVES) {
		h = idle_half(dct, ur_now_ns());
		if (!h) {
			ur_dbg(ur_qp_dev(dct), "DCT 0x%06x: serves %u initiators, none idle; "
			       "one more waits", ur_qp_num(dct), dct->dc_halves->n);
			return NULL;
		}
		hash_out(dct, h);
		pthread_mutex_lock(&h->lock);
		h->dc_fresh = true;
		if (aim_half(dct, h, gid, sqpn)) {
			h->state = IBV_QPS_ERR;   /* keyed to no one: found by no packet */
			h->attr.dest_qp_num = UR_QPN_MASK + 1;
		}
		pthread_mutex_unlock(&h->lock);
		hash_in(dct, h);
		return h;
	}
	if (ur_qp_alloc(ctx, &init, &h))
		return NULL;
	if (ur_engine_timer_init(ctx->engine, &h->timer, ur_progress_timer)) {
		ur_qp_free(h);
		return NULL;
	}
	h->kind = &half_kind;
	h->dc_tgt = dct;
	h->qpx.qp_base.qp_num = ur_qp_num(dct);
	a.qp_state = IBV_QPS_INIT;
	if (ur_qp_modify(h, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				     IBV_QP_ACCESS_FLAGS))
		goto err;
	a.qp_state = IBV_QPS_RTR;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.hop_limit = 64;
	a.dest_qp_num = sqpn;
	a.rq_psn = start;
	a.max_dest_rd_atomic = UR_DC_RD_ATOMIC;
	if (ur_qp_modify(h, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				     IBV_QP_MIN_RNR_TIMER))
		goto err;
	if (aim_half(dct, h, gid, sqpn))
		goto err;
	h->dc_fresh = true;
	hash_in(dct, h);
	dct->dc_halves->n++;
	return h;

err:
	ur_engine_timer_fini(ctx->engine, &h->timer);
	ur_qp_free(h);
	return NULL;
}

/* The initiator connected again (or a new one took the half): the half
 * starts over at the connection's first PSN.  Its last connection is over
 * (a DCI moves on only once everything is acknowledged), or failed. */
static void restart_half(struct ur_qp *h, uint32_t conn, uint32_t start)
{
	struct ur_resp_state *r = &h->resp;

	ur_rel_abort(h);
	h->state = IBV_QPS_RTR;
	h->qpx.qp_base.state = IBV_QPS_RTR;
	r->psn = start;
	r->msn = 0;
	r->opcode = -1;
	r->nak_sent = false;
	r->rnr_sent = false;
	r->recv_active = false;
	r->ack_pending = false;
	r->res_next = r->res_tx = 0;
	r->atomic_next = 0;
	memset(r->res, 0, r->nres * (sizeof(*r->res) + sizeof(*r->atomics)));
	ur_held_clear(&h->held);
	h->dc_start = start;
	h->dc_conn = conn;
	h->dc_fresh = false;
}

/* Whether a packet of connection conn opens a newer connection than the
 * one the half serves: a late packet of an older one does not.  A DCI
 * numbers its connections in turn (2^31 before the comparison wraps). */
static bool newer_connection(const struct ur_qp *h, uint32_t conn)
{
	return h->dc_fresh || (int32_t)(conn - h->dc_conn) > 0;
}

void ur_dc_target_rx(struct ur_qp *dct, const struct ur_pkt_view *pkt,
		     const struct ur_rx_meta *meta)
{
	const uint8_t *dceth = ur_pkt_hdr(pkt, UR_HDR_DCETH);
	const uint8_t *deth = ur_pkt_hdr(pkt, UR_HDR_DETH);
	const uint8_t *rdeth = ur_pkt_hdr(pkt, UR_HDR_RDETH);
	uint64_t now = ur_now_ns();
	uint32_t sqpn, conn, start;
	struct ur_qp *h;

	if (dct->state != IBV_QPS_RTR || !(pkt->mask & UR_OPF_REQ) || !dceth || !deth || !rdeth) {
		UR_QP_COUNT(dct, UR_CNT_DROPPED);
		return;
	}
	if (dceth_key(dceth) != dct->dc_key) {
		UR_QP_COUNT(dct, UR_CNT_QKEY_VIOLATIONS);
		ur_dbg(ur_qp_dev(dct), "DCT 0x%06x: dropped a request with the wrong DC key",
		       ur_qp_num(dct));
		return;
	}
	sqpn = deth_sqp(deth);
	conn = deth_qkey(deth);
	start = rdeth_een(rdeth);
	h = find_half(dct, &meta->sgid, sqpn);
	if (!h) {
		h = new_half(dct, &meta->sgid, sqpn, start);
		if (!h) {
			UR_QP_COUNT(dct, UR_CNT_DROPPED);
			return;
		}
	}
	pthread_mutex_lock(&h->lock);
	if (newer_connection(h, conn))
		restart_half(h, conn, start);
	if (conn == h->dc_conn && start == h->dc_start) {
		h->dc_used_ns = now;
		UR_QP_COUNT(h, UR_CNT_RCVD_PKTS);
		ur_resp_rx(h, pkt, meta);
		ur_qp_run(h);
		ur_qp_check_overrun(h);
	} else {
		UR_QP_COUNT(h, UR_CNT_DROPPED);   /* a late packet of a closed connection */
	}
	pthread_mutex_unlock(&h->lock);
}

/* Frees a destroyed DCT's halves.  No locks held; the DCT is out of the
 * QP table and no packet is being delivered to it. */
static void dct_destroy(struct ur_qp *dct)
{
	struct ur_stack *s = dct->ctx->stack;
	struct ur_dc_halves *halves = dct->dc_halves;

	if (!halves)
		return;
	for (unsigned i = 0; i < HALF_BUCKETS; i++) {
		struct ur_qp *h = halves->bucket[i];

		while (h) {
			struct ur_qp *next = h->dc_next;

			ur_rel_stop(s, h);
			ur_engine_quiesce(s->engine);
			ur_engine_timer_fini(s->engine, &h->timer);
			ur_qp_free(h);
			h = next;
		}
	}
	free(halves);
	dct->dc_halves = NULL;
}

/* ---- the kinds ---------------------------------------------------------- */

/* A DC QP takes its work requests through ibv_wr_* (each names its
 * target) and receives, a DCT, on its SRQ alone. */
static const struct ur_qp_kind dci_kind = {
	.name = "DCI", .rules = UR_QPT_DCI, .dc = UR_DC_INI, .opcodes = UR_OP_TYPE_RD,
	.flags = UR_KIND_NO_RQ | UR_KIND_WR_ONLY,
	.reset = dci_reset,
	.check_batch = dci_check_batch,
	.connect = dci_connect,
	.headers = dc_headers,
};

static const struct ur_qp_kind dct_kind = {
	.name = "DCT", .rules = UR_QPT_DCT, .dc = UR_DC_TGT, .opcodes = UR_OP_TYPE_RD,
	.flags = UR_KIND_NO_RQ | UR_KIND_WR_ONLY,
	.rx = ur_dc_target_rx,
	.destroy = dct_destroy,
};

/* An RC responder made and aimed by its DCT (new_half), out of the QP
 * table; its target frees it. */
static const struct ur_qp_kind half_kind = {
	.name = "DCT half", .rules = IBV_QPT_RC, .dc = UR_DC_HALF, .opcodes = UR_OP_TYPE_RD,
	.flags = UR_KIND_HIDDEN,
	.headers = dc_headers,
};
