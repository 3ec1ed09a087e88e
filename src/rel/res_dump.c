/* The resource window's snapshot (rel/res.h): every device this process
 * has open, and its QPs, CQs and MRs, one a line in rel/res_proto.h's
 * form, with names and fields as `rdma res show` prints them.  Runs on a
 * thread of its own (rel/res_serve.c).  A QP is locked while the table
 * still holds it, and ur_qp_destroy takes the QP's lock once more after
 * taking it out and before freeing it, so a QP locked here is not freed
 * until it is unlocked; CQs and MRs leave their lists under the locks
 * taken here before they go. */
#include "rel/res.h"

#include <inttypes.h>
#include <stdlib.h>

#include "core/context.h"
#include "core/counters.h"
#include "core/cq.h"
#include "core/device.h"
#include "core/mr.h"
#include "core/pd.h"
#include "core/qp.h"
#include "core/qp_kind.h"
#include "rel/held.h"
#include "rel/qp_table.h"
#include "rel/stack.h"
#include "util/clock.h"
#include "util/compiler.h"

static const char *qp_type_name(const struct ur_qp *qp)
{
	switch (qp->qpx.qp_base.qp_type) {   /* the application's: a DC QP's is DRIVER */
	case IBV_QPT_RC: return "RC";
	case IBV_QPT_UC: return "UC";
	case IBV_QPT_UD: return "UD";
	case IBV_QPT_RAW_PACKET: return "RAW_PACKET";
	case IBV_QPT_XRC_SEND: return "XRC_INI";
	case IBV_QPT_XRC_RECV: return "XRC_TGT";
	case IBV_QPT_DRIVER: return "DRIVER";
	default: return "UNKNOWN";
	}
}

static const char *const mig_name[] = {
	[IBV_MIG_MIGRATED] = "MIGRATED", [IBV_MIG_REARM] = "REARM", [IBV_MIG_ARMED] = "ARMED",
};

static bool connected(const struct ur_qp *qp)
{
	return qp->type == IBV_QPT_RC || qp->type == IBV_QPT_UC ||
	       qp->type == IBV_QPT_XRC_SEND || qp->type == IBV_QPT_XRC_RECV;
}

static uint64_t cnt_sum(const struct ur_qp *qp, const enum ur_counter *c, size_t n)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < n; i++)
		sum += qp->cnt[c[i]];
	return sum;
}

/* The per-QP counters a reader wants first, summed from the rxe names
 * (which -d lists one by one): packets sent again (every go-back and
 * every packet resent alone), NAKs received, RNR NAKs either way,
 * completions in error. */
static void qp_counters(const struct ur_qp *qp, FILE *f)
{
	static const enum ur_counter retrans[] = {
		UR_CNT_COMPLETER_RETRY_ERR, UR_CNT_SELECTIVE_RESENDS, UR_CNT_GAP_RESENDS,
	};
	static const enum ur_counter rnr[] = { UR_CNT_RCVD_RNR_ERR, UR_CNT_SEND_RNR_ERR };

	fprintf(f, " retrans=%" PRIu64 " naks=%" PRIu64 " rnr=%" PRIu64 " errors=%" PRIu64,
		cnt_sum(qp, retrans, UR_ARRAY_SIZE(retrans)), qp->cnt[UR_CNT_RCVD_NAK],
		cnt_sum(qp, rnr, UR_ARRAY_SIZE(rnr)), qp->cnt[UR_CNT_COMPLETION_ERRORS]);
	for (int c = 0; c < UR_CNT_NR; c++)
		fprintf(f, " +%s=%" PRIu64, ur_counter_name[c], qp->cnt[c]);
}

/* Where a reliable QP's requester and responder stand: what a QP that
 * gives up logs of its own side (rel/giveup.c), for its peer's. */
static void qp_rel_state(const struct ur_qp *qp, uint64_t now, FILE *f)
{
	const struct ur_comp_state *c = &qp->comp;
	const struct ur_req_state *r = &qp->req;
	const struct ur_resp_state *p = &qp->resp;
	uint64_t coarse = ur_coarse_now_ns();

	fprintf(f, " +comp-psn=%u +psn-max=%u +retry-left=%u +cwnd=%u +rd-atomic=%u +srtt-us=%" PRIu64
		" +backoff=%u +retrying=%d +blocked=%d +rnr-wait=%d +progress-ms-ago=%" PRIu64,
		c->psn, r->psn_max, c->retry_left, r->cwnd, r->rd_atomic, c->srtt_ns / 1000,
		c->backoff, c->retrying, r->blocked, r->rnr_wait,
		c->progress_ns && now > c->progress_ns ? (now - c->progress_ns) / 1000000 : 0);
	fprintf(f, " +rx-ms-ago=%" PRIu64 " +tx-ms-ago=%" PRIu64,
		qp->rx_ns && coarse > qp->rx_ns ? (coarse - qp->rx_ns) / 1000000 : 0,
		qp->tx_ns && coarse > qp->tx_ns ? (coarse - qp->tx_ns) / 1000000 : 0);
	fprintf(f, " +resp-opcode=%d +resp-nak-sent=%d +resp-rnr-sent=%d +resp-held=%u"
		" +resp-ack-pending=%d +resp-ack-psn=%u +resp-res-next=%u +resp-res-tx=%u",
		p->opcode, p->nak_sent, p->rnr_sent, ur_held_count(qp->held), p->ack_pending,
		p->ack_psn, p->res_next, p->res_tx);
}

/* One QP, its lock held. */
static void qp_line(const struct ur_qp *qp, FILE *f)
{
	const struct ibv_qp_attr *a = &qp->attr;

	fprintf(f, "qp ifname=%s port=1 lqpn=%u", ur_qp_dev(qp), ur_qp_num(qp));
	if (connected(qp) && qp->state >= IBV_QPS_RTR)
		fprintf(f, " rqpn=%u", a->dest_qp_num);
	fprintf(f, " type=%s", qp_type_name(qp));
	if (qp->kind->dc)
		fprintf(f, " subtype=%s", qp->kind->name);
	fprintf(f, " state=%s", ur_qp_state_name[qp->state]);
	if (connected(qp))
		fprintf(f, " rq-psn=%u", qp->resp.psn);
	fprintf(f, " sq-psn=%u", qp->req.psn);
	if (connected(qp) && (unsigned)a->path_mig_state < UR_ARRAY_SIZE(mig_name))
		fprintf(f, " path-mig-state=%s", mig_name[a->path_mig_state]);
	if (qp->pd)
		fprintf(f, " pdn=%u", qp->pd->ibpd.handle);
	fprintf(f, " sq-depth=%u sq-used=%u rq-depth=%u rq-used=%u",
		qp->sq.max, qp->sq.tail - qp->sq.head, qp->rq.max, qp->rq.tail - qp->rq.head);
	if (qp->scq)
		fprintf(f, " +scqn=%u", qp->scq->ibcq.handle);
	if (qp->rcq)
		fprintf(f, " +rcqn=%u", qp->rcq->ibcq.handle);
	if (qp->srq)
		fprintf(f, " +srq=yes");
	if (qp->mtu)
		fprintf(f, " +mtu=%u", qp->mtu);
	if (ur_qp_is_reliable(qp))
		qp_rel_state(qp, ur_now_ns(), f);
	qp_counters(qp, f);
	fputc('\n', f);
}

/* QP numbers are taken under the table's lock, then each QP is found
 * again and locked as a packet's would be (rel/recv.c): the table's lock
 * is never held while a QP's is. */
static void dump_qps(struct ur_stack *s, FILE *f)
{
	uint32_t *qpns, n = 0;

	pthread_rwlock_rdlock(&s->qps_lock);
	qpns = calloc(s->qps.count + 1, sizeof(*qpns));
	for (uint32_t i = 0; qpns && i < s->qps.slots->size; i++)
		if (s->qps.slots->keys[i])
			qpns[n++] = s->qps.slots->keys[i];
	pthread_rwlock_unlock(&s->qps_lock);
	if (!qpns)
		return;
	for (uint32_t i = 0; i < n; i++) {
		struct ur_qp *qp;

		qp = ur_stack_lock_qp(s, qpns[i]);
		if (!qp)
			continue;       /* destroyed meanwhile */
		if (!qp->dying)
			qp_line(qp, f);
		pthread_mutex_unlock(&qp->lock);
	}
	free(qpns);
}

static void access_names(int access, FILE *f)
{
	static const struct { int bit; const char *name; } bits[] = {
		{ IBV_ACCESS_LOCAL_WRITE, "LOCAL_WRITE" },
		{ IBV_ACCESS_REMOTE_WRITE, "REMOTE_WRITE" },
		{ IBV_ACCESS_REMOTE_READ, "REMOTE_READ" },
		{ IBV_ACCESS_REMOTE_ATOMIC, "REMOTE_ATOMIC" },
		{ IBV_ACCESS_MW_BIND, "MW_BIND" },
		{ IBV_ACCESS_ZERO_BASED, "ZERO_BASED" },
		{ IBV_ACCESS_ON_DEMAND, "ON_DEMAND" },
		{ IBV_ACCESS_RELAXED_ORDERING, "RELAXED_ORDERING" },
	};
	const char *sep = "";

	fputs(" +access=", f);
	for (size_t i = 0; i < UR_ARRAY_SIZE(bits); i++)
		if (access & bits[i].bit) {
			fprintf(f, "%s%s", sep, bits[i].name);
			sep = ",";
		}
	if (!*sep)
		fputs("LOCAL_READ", f);
}

/* A context's regions (windows are not listed, as rdma does not). */
static unsigned dump_mrs(struct ur_context *ctx, FILE *f)
{
	struct ur_mr_table *t = &ctx->mrs;
	unsigned n = 0;

	ur_mr_read_lock(t);
	for (uint32_t i = 0; i < t->size; i++) {
		struct ur_key_entry *e = t->slot[i].e;
		struct ur_mr *mr;

		if (!e || e->kind != UR_KEY_MR || t->slot[i].index != e->index)
			continue;       /* empty, a window, or an index reserved for a bind */
		mr = container_of(e, struct ur_mr, ke);
		/* The keys as the table holds them (written under its lock): a
		 * registration copies them into the ibv_mr only after the
		 * table has let go, so those may not be set yet. */
		fprintf(f, "mr ifname=%s mrn=%u +rkey=0x%x +lkey=0x%x +iova=0x%" PRIx64
			" mrlen=%" PRIu64, ctx->dev->ibdev.name, e->index, e->key, e->key,
			mr->iova, mr->length);
		if (mr->pd)
			fprintf(f, " pdn=%u", mr->pd->ibpd.handle);
		access_names(mr->access, f);
		fputc('\n', f);
		n++;
	}
	ur_mr_read_unlock(t);
	return n;
}

static unsigned dump_cqs(struct ur_context *ctx, FILE *f)
{
	struct ur_list *pos;
	unsigned n = 0;

	pthread_mutex_lock(&ctx->cqs_lock);
	ur_list_for_each(pos, &ctx->cqs) {
		struct ur_cq *cq = ur_list_entry(pos, struct ur_cq, ctx_link);

		pthread_spin_lock(&cq->lock);
		fprintf(f, "cq ifname=%s cqn=%u cqe=%u users=%u +used=%u +channel=%s +armed=%s\n",
			ctx->dev->ibdev.name, cq->ibcq.handle, cq->depth,
			__atomic_load_n(&cq->users, __ATOMIC_RELAXED), cq->tail - cq->head,
			cq->ibcq.channel ? "yes" : "no", cq->armed ? "yes" : "no");
		pthread_spin_unlock(&cq->lock);
		n++;
	}
	pthread_mutex_unlock(&ctx->cqs_lock);
	return n;
}

/* A device's contexts in this process: its summary line, its CQs, MRs. */
static void dump_device(struct ur_device *dev, void *arg)
{
	FILE *f = arg;
	struct ur_list *pos;
	unsigned nctx = 0;

	pthread_mutex_lock(&dev->ctx_lock);
	ur_list_for_each(pos, &dev->contexts) {
		struct ur_context *ctx = ur_list_entry(pos, struct ur_context, dev_link);

		dump_cqs(ctx, f);
		dump_mrs(ctx, f);
		nctx++;
	}
	pthread_mutex_unlock(&dev->ctx_lock);
	if (nctx)
		fprintf(f, "dev ifname=%s ctx=%u pd=%u\n", dev->ibdev.name, nctx,
			__atomic_load_n(&dev->objs[UR_OBJ_PD], __ATOMIC_RELAXED));
}

void ur_res_dump(struct ur_stack *s, FILE *f)
{
	ur_device_foreach(dump_device, f);
	dump_qps(s, f);
	pthread_mutex_lock(&s->res.cm_lock);
	if (s->res.cm_dump)
		s->res.cm_dump(s->res.cm_arg, f);
	pthread_mutex_unlock(&s->res.cm_lock);
}
