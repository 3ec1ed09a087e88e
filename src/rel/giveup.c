#include "rel/giveup.h"

#include <inttypes.h>
#include <stdio.h>

#include "core/names.h"
#include "core/qp.h"
#include "rel/ack.h"
#include "rel/rel_priv.h"
#include "rel/timers.h"
#include "util/clock.h"
#include "util/log.h"
#include "wire/opcode.h"
#include "wire/pkt_parse.h"

void ur_giveup_mark(struct ur_qp *qp, const struct ur_pkt_view *pkt, uint8_t syn)
{
	struct ur_comp_state *c = &qp->comp;
	struct ur_retry_mark *m;

	if (c->nmarks == UR_RETRY_MARKS)   /* retry_cnt is at most 7: kept the first */
		return;
	m = &c->marks[c->nmarks++];
	m->ns = ur_now_ns();
	m->timer = !pkt;
	m->opcode = pkt ? pkt->opcode : 0;
	m->syn = pkt ? syn : 0;
	m->psn = c->psn;
	m->sent_psn = qp->req.psn;
	m->rcvd = qp->cnt[UR_CNT_RCVD_PKTS];
	m->sent = qp->cnt[UR_CNT_SENT_PKTS];
	m->early = c->early_retries;
}

/* Milliseconds from then to now; -1 for never (then 0). */
static double ms_ago(uint64_t now, uint64_t then)
{
	if (!then)
		return -1;
	return now > then ? (double)(now - then) / 1e6 : 0;
}

static void why(char *buf, size_t len, bool timer, uint8_t opcode, uint8_t syn)
{
	const char *name = ur_opcode_name(opcode);

	if (timer)
		snprintf(buf, len, "timer");
	else if ((opcode & 0x1f) == UR_OPL_ACKNOWLEDGE)
		snprintf(buf, len, "%s 0x%02x", name ? name : "?", syn);
	else
		snprintf(buf, len, "%s", name ? name : "?");
}

/* Each counted retry since the last progress, a line each: how long
 * before now, why, where the requester was, and what the QP received and
 * sent from it until the next (or until now). */
static void log_marks(struct ur_qp *qp, uint64_t now)
{
	const struct ur_comp_state *c = &qp->comp;
	const struct ur_retry_mark here = {
		.rcvd = qp->cnt[UR_CNT_RCVD_PKTS], .sent = qp->cnt[UR_CNT_SENT_PKTS],
		.early = c->early_retries,
	};

	if (!c->nmarks)
		ur_info(ur_qp_dev(qp), "QP 0x%06x: no counted retry since the last progress",
			ur_qp_num(qp));
	for (unsigned i = 0; i < c->nmarks; i++) {
		const struct ur_retry_mark *m = &c->marks[i];
		const struct ur_retry_mark *n = i + 1 < c->nmarks ? &c->marks[i + 1] : &here;
		char w[48];

		why(w, sizeof(w), m->timer, m->opcode, m->syn);
		ur_info(ur_qp_dev(qp), "QP 0x%06x: counted retry %u, %.1f ms before: %s, oldest PSN "
			"0x%06x, next 0x%06x; from it until the %s: rcvd %" PRIu64 " sent %" PRIu64
			" early go-backs %" PRIu64, ur_qp_num(qp), i + 1, ms_ago(now, m->ns), w,
			m->psn, m->sent_psn, n == &here ? "end" : "next", n->rcvd - m->rcvd,
			n->sent - m->sent, n->early - m->early);
	}
}

/* Its counters that are not 0. */
static void log_counters(struct ur_qp *qp)
{
	char line[1024];
	size_t at = 0;

	line[0] = '\0';
	for (int i = 0; i < UR_CNT_NR && at < sizeof(line); i++)
		if (qp->cnt[i])
			at += (size_t)snprintf(line + at, sizeof(line) - at, " %s=%" PRIu64,
					       ur_counter_name[i], qp->cnt[i]);
	ur_info(ur_qp_dev(qp), "QP 0x%06x: counters:%s", ur_qp_num(qp), line);
}

void ur_giveup_log(struct ur_qp *qp, const struct ur_pkt_view *pkt, uint8_t syn, int status)
{
	static unsigned rl_sec, rl_cnt;
	const struct ur_comp_state *c = &qp->comp;
	const struct ur_req_state *r = &qp->req;
	struct ur_send_wqe *w = ur_ack_oldest(qp);
	uint64_t now = ur_now_ns(), coarse = ur_coarse_now_ns();
	char by[48];

	/* A few QPs a second: many that give up at once say the same. */
	if (UR_LOG_INFO > ur_log_level || !ur_log_ratelimit_ok(&rl_sec, &rl_cnt))
		return;
	why(by, sizeof(by), !pkt, pkt ? pkt->opcode : 0, syn);
	ur_info(ur_qp_dev(qp), "QP 0x%06x (peer 0x%06x) gives up, %s, at %s: oldest PSN 0x%06x, "
		"next 0x%06x, sent up to 0x%06x; oldest WR %s PSN 0x%06x-0x%06x; retry_cnt %u, "
		"timeout %.1f ms, last progress %.1f ms ago, last packet in %.0f ms ago, out %.0f ms ago (-1: never)",
		ur_qp_num(qp), qp->attr.dest_qp_num, ur_wc_status_name(status), by, c->psn, r->psn,
		r->psn_max, w ? (w->opcode == IBV_WR_RDMA_READ ? "READ" :
				 ur_wr_is_rd_atomic(w->opcode) ? "ATOMIC" : "WRITE/SEND") : "none",
		w ? w->first_psn : 0, w ? w->last_psn : 0, qp->attr.retry_cnt,
		(double)ur_rel_timeout_ns(qp->attr.timeout) / 1e6, ms_ago(now, c->progress_ns),
		ms_ago(coarse, qp->rx_ns), ms_ago(coarse, qp->tx_ns));
	ur_info(ur_qp_dev(qp), "QP 0x%06x: srtt %.3f ms rttvar %.3f ms backoff %u cwnd %u "
		"rd_atomic %u retrying %d rnr_wait %d blocked %d (waiting %.1f ms) behind %.1f ms "
		"sel_pending %d peer_holds %u probing %d", ur_qp_num(qp),
		(double)c->srtt_ns / 1e6, (double)c->rttvar_ns / 1e6, c->backoff, r->cwnd,
		r->rd_atomic, c->retrying, r->rnr_wait, r->blocked, ms_ago(now, r->blocked_ns),
		ms_ago(now, c->behind_ns), r->sel_pending, c->peer_holds, c->probing);
	log_marks(qp, now);
	log_counters(qp);
}
