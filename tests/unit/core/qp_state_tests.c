/* The QP state machine (qp_state.c): every (cur, next) pair for every QP
 * type against a table written out here by hand from the IBA spec (the
 * table Linux's ib_modify_qp_is_ok encodes), and every attribute bit
 * required, allowed or refused. */

#define S IBV_QP_STATE
#define CUR IBV_QP_CUR_STATE
#define SQDN IBV_QP_EN_SQD_ASYNC_NOTIFY
#define ACC IBV_QP_ACCESS_FLAGS
#define PKEY IBV_QP_PKEY_INDEX
#define PORT IBV_QP_PORT
#define QKEY IBV_QP_QKEY
#define AV IBV_QP_AV
#define MTU IBV_QP_PATH_MTU
#define TMO IBV_QP_TIMEOUT
#define RETRY IBV_QP_RETRY_CNT
#define RNRR IBV_QP_RNR_RETRY
#define RQPSN IBV_QP_RQ_PSN
#define IRD IBV_QP_MAX_QP_RD_ATOMIC
#define ALT IBV_QP_ALT_PATH
#define RNRT IBV_QP_MIN_RNR_TIMER
#define SQPSN IBV_QP_SQ_PSN
#define DRD IBV_QP_MAX_DEST_RD_ATOMIC
#define MIG IBV_QP_PATH_MIG_STATE
#define DQPN IBV_QP_DEST_QPN

static const enum ibv_qp_type qp_types[] = {
	IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD, IBV_QPT_XRC_SEND, IBV_QPT_XRC_RECV,
};

static const char *const type_name[] = {
	[IBV_QPT_RC] = "RC", [IBV_QPT_UC] = "UC", [IBV_QPT_UD] = "UD",
	[IBV_QPT_XRC_SEND] = "XRC_SEND", [IBV_QPT_XRC_RECV] = "XRC_RECV",
};

/* Every attribute bit a mask can carry. */
static const int all_bits[] = {
	CUR, SQDN, ACC, PKEY, PORT, QKEY, AV, MTU, TMO, RETRY, RNRR, RQPSN, IRD, ALT,
	RNRT, SQPSN, DRD, MIG, IBV_QP_CAP, DQPN, IBV_QP_RATE_LIMIT,
};

struct expect { bool valid; int req, opt; };

/* The expected rule, spelled out per transition and type. */
static struct expect expected(enum ibv_qp_state cur, enum ibv_qp_state next, enum ibv_qp_type t)
{
	bool rc = t == IBV_QPT_RC, uc = t == IBV_QPT_UC, ud = t == IBV_QPT_UD;
	bool ini = t == IBV_QPT_XRC_SEND, tgt = t == IBV_QPT_XRC_RECV;
	struct expect e = { true, 0, 0 };

	/* Into RESET and ERR from anywhere but RESET (which may only stay or
	 * go to INIT). */
	if (next == IBV_QPS_RESET)
		return e;
	if (next == IBV_QPS_ERR)
		return (struct expect){ cur != IBV_QPS_RESET, 0, 0 };

	switch (cur) {
	case IBV_QPS_RESET:
		if (next != IBV_QPS_INIT)
			break;
		e.req = ud ? PKEY | PORT | QKEY : PKEY | PORT | ACC;
		return e;
	case IBV_QPS_INIT:
		if (next == IBV_QPS_INIT) {
			e.opt = ud ? PKEY | PORT | QKEY : PKEY | PORT | ACC;
			return e;
		}
		if (next != IBV_QPS_RTR)
			break;
		if (rc || tgt)
			e.req = AV | MTU | DQPN | RQPSN | DRD | RNRT;
		else if (uc || ini)
			e.req = AV | MTU | DQPN | RQPSN;
		e.opt = ud ? PKEY | QKEY : ALT | ACC | PKEY;
		return e;
	case IBV_QPS_RTR:
		if (next != IBV_QPS_RTS)
			break;
		if (rc || ini)
			e.req = TMO | RETRY | RNRR | SQPSN | IRD;
		else if (tgt)
			e.req = TMO | SQPSN;
		else
			e.req = SQPSN;
		e.opt = ud ? CUR | QKEY : (rc || tgt) ? CUR | ALT | ACC | RNRT | MIG
						     : CUR | ALT | ACC | MIG;
		return e;
	case IBV_QPS_RTS:
		if (next == IBV_QPS_SQD) {
			e.opt = SQDN;
			return e;
		}
		if (next != IBV_QPS_RTS)
			break;
		e.opt = ud ? CUR | QKEY : (rc || tgt) ? CUR | ACC | ALT | MIG | RNRT
						     : CUR | ACC | ALT | MIG;
		return e;
	case IBV_QPS_SQD:
		if (next == IBV_QPS_RTS) {
			e.opt = ud ? CUR | QKEY : (rc || tgt) ? CUR | ALT | ACC | RNRT | MIG
							     : CUR | ALT | ACC | MIG;
			return e;
		}
		if (next != IBV_QPS_SQD)
			break;
		if (ud)
			e.opt = PKEY | QKEY;
		else if (uc)
			e.opt = AV | ALT | ACC | PKEY | MIG;
		else if (rc)
			e.opt = PORT | AV | TMO | RETRY | RNRR | IRD | DRD | ALT | ACC | PKEY | RNRT | MIG;
		else if (ini)
			e.opt = PORT | AV | TMO | RETRY | RNRR | IRD | ALT | ACC | PKEY | MIG;
		else
			e.opt = PORT | AV | TMO | DRD | ALT | ACC | PKEY | RNRT | MIG;
		return e;
	case IBV_QPS_SQE:
		/* Only the unreliable types can be in SQE. */
		if (next == IBV_QPS_RTS && (ud || uc)) {
			e.opt = ud ? CUR | QKEY : CUR | ACC;
			return e;
		}
		break;
	default:
		break;
	}
	return (struct expect){ false, 0, 0 };
}

static void test_state_table(void)
{
	for (unsigned ti = 0; ti < UR_ARRAY_SIZE(qp_types); ti++) {
		enum ibv_qp_type t = qp_types[ti];

		for (int cur = IBV_QPS_RESET; cur <= IBV_QPS_ERR; cur++) {
			for (int next = IBV_QPS_RESET; next <= IBV_QPS_ERR; next++) {
				struct ur_qp_transition r = ur_qp_transition_rule(cur, next, t);
				struct expect e = expected(cur, next, t);
				int before = ut_failures;

				UT_EQ(r.valid, e.valid);
				if (e.valid) {
					UT_EQ(r.required, e.req);
					UT_EQ(r.optional, e.opt);
				}
				if (ut_failures != before)
					fprintf(stderr, "  (%s %s -> %s)\n", type_name[t],
						ur_qp_state_name[cur], ur_qp_state_name[next]);
			}
		}
	}
	/* Out-of-range states and types have no rule. */
	UT_CHECK(!ur_qp_transition_rule(IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPT_RAW_PACKET).valid);
	UT_CHECK(!ur_qp_transition_rule(IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPT_DRIVER).valid);
	UT_CHECK(!ur_qp_transition_rule(IBV_QPS_UNKNOWN, IBV_QPS_INIT, IBV_QPT_RC).valid);
	UT_CHECK(!ur_qp_transition_rule(IBV_QPS_RESET, (enum ibv_qp_state)42, IBV_QPT_RC).valid);
	UT_CHECK(!ur_qp_transition_rule((enum ibv_qp_state)-1, IBV_QPS_INIT, IBV_QPT_RC).valid);
}

/* For every legal transition: required + optional accepted, any subset of
 * the optional ones too; a missing required bit or any other bit refused
 * and named. */
static void test_state_masks(void)
{
	for (unsigned ti = 0; ti < UR_ARRAY_SIZE(qp_types); ti++) {
		enum ibv_qp_type t = qp_types[ti];

		for (int cur = IBV_QPS_RESET; cur <= IBV_QPS_ERR; cur++) {
			for (int next = IBV_QPS_RESET; next <= IBV_QPS_ERR; next++) {
				struct expect e = expected(cur, next, t);
				int missing, extra, before = ut_failures;

				if (!e.valid) {
					UT_EQ(ur_qp_check_mask(cur, next, t, S | e.req, &missing, &extra),
					      -EINVAL);
					continue;
				}
				UT_EQ(ur_qp_check_mask(cur, next, t, S | e.req, &missing, &extra), 0);
				UT_EQ(missing, 0);
				UT_EQ(extra, 0);
				UT_EQ(ur_qp_check_mask(cur, next, t, S | e.req | e.opt, &missing, &extra), 0);
				for (unsigned b = 0; b < UR_ARRAY_SIZE(all_bits); b++) {
					int bit = all_bits[b];
					int ret = ur_qp_check_mask(cur, next, t, S | (e.req & ~bit) |
								   ((e.req | e.opt) & bit ? 0 : bit),
								   &missing, &extra);

					if (e.req & bit) {
						UT_EQ(ret, -EINVAL);
						UT_EQ(missing, bit);
						UT_EQ(extra, 0);
					} else if (e.opt & bit) {
						UT_EQ(ret, 0);     /* left out: fine */
					} else {
						UT_EQ(ret, -EINVAL);
						UT_EQ(extra, bit);
						UT_EQ(missing, 0);
					}
					/* Each optional bit alone is fine. */
					if (e.opt & bit)
						UT_EQ(ur_qp_check_mask(cur, next, t, S | e.req | bit,
								       &missing, &extra), 0);
				}
				if (ut_failures != before)
					fprintf(stderr, "  (%s %s -> %s)\n", type_name[t],
						ur_qp_state_name[cur], ur_qp_state_name[next]);
			}
		}
	}
}

static void test_state_mask_str(void)
{
	char buf[256];

	UT_CHECK(!strcmp(ur_qp_mask_str(0, buf, sizeof(buf)), ""));
	UT_CHECK(!strcmp(ur_qp_mask_str(AV | MTU, buf, sizeof(buf)), "IBV_QP_AV|IBV_QP_PATH_MTU"));
	UT_CHECK(!strcmp(ur_qp_mask_str(DQPN | (1 << 30), buf, sizeof(buf)),
			 "IBV_QP_DEST_QPN|0x40000000"));
	/* Truncates safely. */
	UT_CHECK(strlen(ur_qp_mask_str(0x7fffffff, buf, 20)) < 20);
}
