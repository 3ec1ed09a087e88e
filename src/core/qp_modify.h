/* The QP state machine: which transitions exist and which attributes each
 * requires or allows, per QP type, as the IBA spec and Linux's
 * ib_modify_qp_is_ok define them. */
#ifndef UROCE_CORE_QP_MODIFY_H
#define UROCE_CORE_QP_MODIFY_H

#include <stdbool.h>
#include <infiniband/verbs.h>

#include "xport/xport.h"

/* The rules' names for DC's two kinds of QP, past enum ibv_qp_type's
 * (applications create both as IBV_QPT_DRIVER). */
#define UR_QPT_DCI ((enum ibv_qp_type)(IBV_QPT_DRIVER + 1))
#define UR_QPT_DCT ((enum ibv_qp_type)(IBV_QPT_DRIVER + 2))

struct ur_qp_transition {
	bool valid;
	int required;      /* IBV_QP_* bits that must be in the mask */
	int optional;      /* bits that may also be */
};

/* The rule for cur -> next on a QP of this type (valid = false: illegal). */
struct ur_qp_transition ur_qp_transition_rule(enum ibv_qp_state cur,
					      enum ibv_qp_state next,
					      enum ibv_qp_type type);

/* 0 if the mask fits the rule; otherwise -EINVAL and *missing / *extra
 * name the offending attribute bits. */
int ur_qp_check_mask(enum ibv_qp_state cur, enum ibv_qp_state next,
		     enum ibv_qp_type type, int mask, int *missing, int *extra);

struct ur_qp;

/* What a modify is about to change, checked before anything does. */
struct ur_qp_change {
	enum ibv_qp_state cur, next;
	bool new_path;
	struct ur_path path;   /* resolved at RTR (IBV_QP_AV) */
	unsigned mtu;          /* path MTU in bytes, 0: unchanged */
};

/* Checks a modify (qp->lock held): the transition, the mask, the values,
 * the route to the peer.  Nothing changes.  0 or -errno, the reason logged. */
int ur_qp_modify_check(struct ur_qp *qp, const struct ibv_qp_attr *a, int mask,
		       struct ur_qp_change *c);
/* Applies a checked modify's attributes (not the state: that is the
 * protocol's, rel/qp_ops.c).  0 or -ENOMEM. */
int ur_qp_modify_apply(struct ur_qp *qp, const struct ibv_qp_attr *a, int mask,
		       const struct ur_qp_change *c);

/* "IBV_QP_AV|IBV_QP_PATH_MTU" style text for a mask, for error messages. */
const char *ur_qp_mask_str(int mask, char *buf, size_t len);

#endif
