#include "core/qp_modify.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/compiler.h"

/* Connected types share rows; UD has its own.  XRC initiators follow RC's
 * requester half, XRC targets RC's responder half.  DC's as mlx5 has them:
 * a DCI needs no peer at RTR (each work request names one), a DCT has no
 * send queue and goes no further than RTR. */
enum qp_class { CLS_RC, CLS_UC, CLS_UD, CLS_XRC_INI, CLS_XRC_TGT, CLS_DCI, CLS_DCT, CLS_NR };

static int qp_class(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RC: return CLS_RC;
	case IBV_QPT_UC: return CLS_UC;
	case IBV_QPT_UD: return CLS_UD;
	case IBV_QPT_XRC_SEND: return CLS_XRC_INI;
	case IBV_QPT_XRC_RECV: return CLS_XRC_TGT;
	default:
		if (t == UR_QPT_DCI)
			return CLS_DCI;
		if (t == UR_QPT_DCT)
			return CLS_DCT;
		return -1;
	}
}

#define S IBV_QP_STATE
#define CUR IBV_QP_CUR_STATE
#define PKEY IBV_QP_PKEY_INDEX
#define PORT IBV_QP_PORT
#define QKEY IBV_QP_QKEY
#define ACC IBV_QP_ACCESS_FLAGS
#define AV IBV_QP_AV
#define MTU IBV_QP_PATH_MTU
#define DQPN IBV_QP_DEST_QPN
#define RQPSN IBV_QP_RQ_PSN
#define SQPSN IBV_QP_SQ_PSN
#define DRD IBV_QP_MAX_DEST_RD_ATOMIC
#define IRD IBV_QP_MAX_QP_RD_ATOMIC
#define RNRT IBV_QP_MIN_RNR_TIMER
#define TMO IBV_QP_TIMEOUT
#define RETRY IBV_QP_RETRY_CNT
#define RNRR IBV_QP_RNR_RETRY
#define ALT IBV_QP_ALT_PATH
#define MIG IBV_QP_PATH_MIG_STATE
#define SQDN IBV_QP_EN_SQD_ASYNC_NOTIFY

struct rule_row {
	int req[CLS_NR];
	int opt[CLS_NR];
};

static const struct rule_row reset_init = {
	.req = { [CLS_RC] = PKEY | PORT | ACC, [CLS_UC] = PKEY | PORT | ACC,
		 [CLS_UD] = PKEY | PORT | QKEY, [CLS_XRC_INI] = PKEY | PORT | ACC,
		 [CLS_XRC_TGT] = PKEY | PORT | ACC, [CLS_DCI] = PKEY | PORT,
		 [CLS_DCT] = PKEY | PORT | ACC },
	.opt = { [CLS_DCI] = ACC },
};

static const struct rule_row init_init = {
	.opt = { [CLS_RC] = PKEY | PORT | ACC, [CLS_UC] = PKEY | PORT | ACC,
		 [CLS_UD] = PKEY | PORT | QKEY, [CLS_XRC_INI] = PKEY | PORT | ACC,
		 [CLS_XRC_TGT] = PKEY | PORT | ACC, [CLS_DCI] = PKEY | PORT | ACC,
		 [CLS_DCT] = PKEY | PORT | ACC },
};

static const struct rule_row init_rtr = {
	.req = { [CLS_RC] = AV | MTU | DQPN | RQPSN | DRD | RNRT,
		 [CLS_UC] = AV | MTU | DQPN | RQPSN,
		 [CLS_XRC_INI] = AV | MTU | DQPN | RQPSN,
		 [CLS_XRC_TGT] = AV | MTU | DQPN | RQPSN | DRD | RNRT,
		 [CLS_DCI] = MTU, [CLS_DCT] = AV | MTU | RNRT },
	.opt = { [CLS_RC] = ALT | ACC | PKEY, [CLS_UC] = ALT | ACC | PKEY,
		 [CLS_UD] = PKEY | QKEY, [CLS_XRC_INI] = ALT | ACC | PKEY,
		 [CLS_XRC_TGT] = ALT | ACC | PKEY, [CLS_DCI] = AV | ACC | PKEY,
		 [CLS_DCT] = ACC | PKEY },
};

static const struct rule_row rtr_rts = {
	.req = { [CLS_RC] = TMO | RETRY | RNRR | SQPSN | IRD, [CLS_UC] = SQPSN,
		 [CLS_UD] = SQPSN, [CLS_XRC_INI] = TMO | RETRY | RNRR | SQPSN | IRD,
		 [CLS_XRC_TGT] = TMO | SQPSN,
		 [CLS_DCI] = TMO | RETRY | RNRR | SQPSN | IRD },
	.opt = { [CLS_RC] = CUR | ALT | ACC | RNRT | MIG, [CLS_DCI] = CUR | ACC | RNRT,
		 [CLS_UC] = CUR | ALT | ACC | MIG, [CLS_UD] = CUR | QKEY,
		 [CLS_XRC_INI] = CUR | ALT | ACC | MIG,
		 [CLS_XRC_TGT] = CUR | ALT | ACC | RNRT | MIG },
};

static const struct rule_row rts_rts = {
	.opt = { [CLS_RC] = CUR | ACC | ALT | MIG | RNRT,
		 [CLS_UC] = CUR | ACC | ALT | MIG, [CLS_UD] = CUR | QKEY,
		 [CLS_XRC_INI] = CUR | ACC | ALT | MIG,
		 [CLS_XRC_TGT] = CUR | ACC | ALT | MIG | RNRT,
		 [CLS_DCI] = CUR | ACC | RNRT },
};

static const struct rule_row rts_sqd = {
	.opt = { [CLS_RC] = SQDN, [CLS_UC] = SQDN, [CLS_UD] = SQDN,
		 [CLS_XRC_INI] = SQDN, [CLS_XRC_TGT] = SQDN },
};

static const struct rule_row sqd_rts = {
	.opt = { [CLS_RC] = CUR | ALT | ACC | RNRT | MIG, [CLS_UC] = CUR | ALT | ACC | MIG,
		 [CLS_UD] = CUR | QKEY, [CLS_XRC_INI] = CUR | ALT | ACC | MIG,
		 [CLS_XRC_TGT] = CUR | ALT | ACC | RNRT | MIG },
};

static const struct rule_row sqd_sqd = {
	.opt = { [CLS_RC] = PORT | AV | TMO | RETRY | RNRR | IRD | DRD | ALT | ACC | PKEY | RNRT | MIG,
		 [CLS_UC] = AV | ALT | ACC | PKEY | MIG, [CLS_UD] = PKEY | QKEY,
		 [CLS_XRC_INI] = PORT | AV | TMO | RETRY | RNRR | IRD | ALT | ACC | PKEY | MIG,
		 [CLS_XRC_TGT] = PORT | AV | TMO | DRD | ALT | ACC | PKEY | RNRT | MIG },
};

static const struct rule_row sqe_rts = {
	.opt = { [CLS_UC] = CUR | ACC, [CLS_UD] = CUR | QKEY },
};

static const struct rule_row plain; /* valid, no attributes */

/* Which (cur, next) pairs exist; RC/XRC cannot leave SQE for RTS (SQE is
 * an unreliable-only state), which the empty rows express. */
static const struct rule_row *const table[IBV_QPS_ERR + 1][IBV_QPS_ERR + 1] = {
	[IBV_QPS_RESET] = { [IBV_QPS_RESET] = &plain, [IBV_QPS_INIT] = &reset_init },
	[IBV_QPS_INIT] = { [IBV_QPS_RESET] = &plain, [IBV_QPS_ERR] = &plain,
			   [IBV_QPS_INIT] = &init_init, [IBV_QPS_RTR] = &init_rtr },
	[IBV_QPS_RTR] = { [IBV_QPS_RESET] = &plain, [IBV_QPS_ERR] = &plain,
			  [IBV_QPS_RTS] = &rtr_rts },
	[IBV_QPS_RTS] = { [IBV_QPS_RESET] = &plain, [IBV_QPS_ERR] = &plain,
			  [IBV_QPS_RTS] = &rts_rts, [IBV_QPS_SQD] = &rts_sqd },
	[IBV_QPS_SQD] = { [IBV_QPS_RESET] = &plain, [IBV_QPS_ERR] = &plain,
			  [IBV_QPS_RTS] = &sqd_rts, [IBV_QPS_SQD] = &sqd_sqd },
	[IBV_QPS_SQE] = { [IBV_QPS_RESET] = &plain, [IBV_QPS_ERR] = &plain,
			  [IBV_QPS_RTS] = &sqe_rts },
	[IBV_QPS_ERR] = { [IBV_QPS_RESET] = &plain, [IBV_QPS_ERR] = &plain },
};

struct ur_qp_transition ur_qp_transition_rule(enum ibv_qp_state cur,
					      enum ibv_qp_state next,
					      enum ibv_qp_type type)
{
	struct ur_qp_transition t = { 0 };
	const struct rule_row *row;
	int cls = qp_class(type);

	if (cls < 0 || cur < IBV_QPS_RESET || cur > IBV_QPS_ERR ||
	    next < IBV_QPS_RESET || next > IBV_QPS_ERR)
		return t;
	row = table[cur][next];
	if (!row)
		return t;
	/* SQE -> RTS exists only for the unreliable types. */
	if (row == &sqe_rts && cls != CLS_UC && cls != CLS_UD)
		return t;
	if (cls == CLS_DCT && (next == IBV_QPS_RTS || next == IBV_QPS_SQD))
		return t;
	t.valid = true;
	t.required = row->req[cls];
	t.optional = row->opt[cls];
	return t;
}

int ur_qp_check_mask(enum ibv_qp_state cur, enum ibv_qp_state next,
		     enum ibv_qp_type type, int mask, int *missing, int *extra)
{
	struct ur_qp_transition t = ur_qp_transition_rule(cur, next, type);

	*missing = *extra = 0;
	if (!t.valid)
		return -EINVAL;
	/* CUR_STATE only makes sense leaving RTR/RTS/SQD/SQE. */
	if ((mask & CUR) && cur != IBV_QPS_RTR && cur != IBV_QPS_RTS &&
	    cur != IBV_QPS_SQD && cur != IBV_QPS_SQE) {
		*extra = CUR;
		return -EINVAL;
	}
	*missing = t.required & ~mask;
	*extra = mask & ~(t.required | t.optional | S);
	return (*missing || *extra) ? -EINVAL : 0;
}

const char *ur_qp_mask_str(int mask, char *buf, size_t len)
{
	static const struct { int bit; const char *name; } names[] = {
		{ IBV_QP_STATE, "STATE" }, { IBV_QP_CUR_STATE, "CUR_STATE" },
		{ IBV_QP_EN_SQD_ASYNC_NOTIFY, "EN_SQD_ASYNC_NOTIFY" },
		{ IBV_QP_ACCESS_FLAGS, "ACCESS_FLAGS" }, { IBV_QP_PKEY_INDEX, "PKEY_INDEX" },
		{ IBV_QP_PORT, "PORT" }, { IBV_QP_QKEY, "QKEY" }, { IBV_QP_AV, "AV" },
		{ IBV_QP_PATH_MTU, "PATH_MTU" }, { IBV_QP_TIMEOUT, "TIMEOUT" },
		{ IBV_QP_RETRY_CNT, "RETRY_CNT" }, { IBV_QP_RNR_RETRY, "RNR_RETRY" },
		{ IBV_QP_RQ_PSN, "RQ_PSN" }, { IBV_QP_MAX_QP_RD_ATOMIC, "MAX_QP_RD_ATOMIC" },
		{ IBV_QP_ALT_PATH, "ALT_PATH" }, { IBV_QP_MIN_RNR_TIMER, "MIN_RNR_TIMER" },
		{ IBV_QP_SQ_PSN, "SQ_PSN" }, { IBV_QP_MAX_DEST_RD_ATOMIC, "MAX_DEST_RD_ATOMIC" },
		{ IBV_QP_PATH_MIG_STATE, "PATH_MIG_STATE" }, { IBV_QP_CAP, "CAP" },
		{ IBV_QP_DEST_QPN, "DEST_QPN" }, { IBV_QP_RATE_LIMIT, "RATE_LIMIT" },
	};
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < UR_ARRAY_SIZE(names); i++) {
		if (!(mask & names[i].bit))
			continue;
		off += (size_t)snprintf(buf + off, off < len ? len - off : 0, "%sIBV_QP_%s",
					off ? "|" : "", names[i].name);
		mask &= ~names[i].bit;
	}
	if (mask)
		snprintf(buf + off, off < len ? len - off : 0, "%s0x%x", off ? "|" : "", mask);
	return buf;
}
