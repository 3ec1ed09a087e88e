#include "core/qp_modify.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "core/limits.h"
#include "core/cq.h"
#include "core/qp.h"
#include "core/qp_kind.h"
#include "core/route.h"
#include "util/log.h"
#include "wire/roce_hdr.h"

/* Attribute values a device can refuse, checked before anything changes. */
static int check_values(struct ur_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	const char *dev = ur_qp_dev(qp);
	uint32_t qpn = ur_qp_num(qp);

	if ((mask & IBV_QP_PORT) && a->port_num != 1) {
		ur_err(dev, "QP 0x%06x: port %u does not exist (the device has port 1)",
		       qpn, a->port_num);
		return -EINVAL;
	}
	if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index >= UR_MAX_PKEYS) {
		ur_err(dev, "QP 0x%06x: P_Key index %u out of range (table has %d)",
		       qpn, a->pkey_index, UR_MAX_PKEYS);
		return -EINVAL;
	}
	if ((mask & IBV_QP_PATH_MTU) &&
	    (a->path_mtu < IBV_MTU_256 || a->path_mtu > UR_MAX_MTU)) {
		ur_err(dev, "QP 0x%06x: path MTU enum %d is invalid", qpn, a->path_mtu);
		return -EINVAL;
	}
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > UR_MAX_QP_RD_ATOM) {
		ur_err(dev, "QP 0x%06x: max_rd_atomic %u exceeds %d", qpn,
		       a->max_rd_atomic, UR_MAX_QP_RD_ATOM);
		return -EINVAL;
	}
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > UR_MAX_QP_RD_ATOM) {
		ur_err(dev, "QP 0x%06x: max_dest_rd_atomic %u exceeds %d", qpn,
		       a->max_dest_rd_atomic, UR_MAX_QP_RD_ATOM);
		return -EINVAL;
	}
	if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
		return -EINVAL;
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return -EINVAL;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return -EINVAL;
	/* ON_DEMAND means nothing for a QP; programs pass their regions'
	 * flags (rdma-core's tests do), and the kernel's drivers take it. */
	if ((mask & IBV_QP_ACCESS_FLAGS) &&
	    (a->qp_access_flags & ~(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
				    IBV_ACCESS_ON_DEMAND)))
		return -EINVAL;
	if ((mask & IBV_QP_ALT_PATH) || (mask & IBV_QP_PATH_MIG_STATE)) {
		ur_err(dev, "QP 0x%06x: alternate paths (APM) are not supported", qpn);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* At RTR a connected QP must be able to reach its peer, and its MTU must
 * fit the interface: reject here, quickly and with the reason, rather than
 * lose every packet later. */
static int resolve_peer(struct ur_qp *qp, const struct ibv_qp_attr *a, int mask,
			struct ur_path *path, unsigned *mtu)
{
	const char *dev = ur_qp_dev(qp);
	struct ibv_port_attr port;
	char why[256];
	int ret;

	ret = ur_route_resolve(qp->ctx, &a->ah_attr,
			       (mask & IBV_QP_DEST_QPN) ? a->dest_qp_num : qp->attr.dest_qp_num,
			       path, why, sizeof(why));
	if (ret) {
		ur_err(dev, "QP 0x%06x: cannot move to RTR: %s", ur_qp_num(qp), why);
		return ret;
	}
	ur_port_attr(qp->ctx->dev, &port);
	if (mask & IBV_QP_PATH_MTU) {
		if (a->path_mtu > port.active_mtu) {
			ur_err(dev, "QP 0x%06x: path MTU %u exceeds the port's active MTU "
			       "%u (interface %s); use an MTU of %u or less on both sides",
			       ur_qp_num(qp), ur_mtu_bytes(a->path_mtu),
			       ur_mtu_bytes(port.active_mtu), qp->ctx->dev->netdev_name,
			       ur_mtu_bytes(port.active_mtu));
			return -EINVAL;
		}
		*mtu = ur_mtu_bytes(a->path_mtu);
	}
	return 0;
}

/* Each attribute the mask names, the field written once; PSNs and QPNs
 * keep their 24 bits. */
#define TAKE(bit, field)						\
	do {								\
		if (mask & (bit))					\
			qp->attr.field = a->field;			\
	} while (0)
#define TAKE_24(bit, field)						\
	do {								\
		if (mask & (bit))					\
			qp->attr.field = a->field & UR_QPN_MASK;	\
	} while (0)

static void apply(struct ur_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	TAKE(IBV_QP_ACCESS_FLAGS, qp_access_flags);
	TAKE(IBV_QP_PKEY_INDEX, pkey_index);
	TAKE(IBV_QP_PORT, port_num);
	TAKE(IBV_QP_QKEY, qkey);
	TAKE(IBV_QP_AV, ah_attr);
	TAKE(IBV_QP_PATH_MTU, path_mtu);
	TAKE(IBV_QP_TIMEOUT, timeout);
	TAKE(IBV_QP_RETRY_CNT, retry_cnt);
	TAKE(IBV_QP_RNR_RETRY, rnr_retry);
	TAKE_24(IBV_QP_RQ_PSN, rq_psn);
	TAKE(IBV_QP_MAX_QP_RD_ATOMIC, max_rd_atomic);
	TAKE(IBV_QP_MIN_RNR_TIMER, min_rnr_timer);
	TAKE_24(IBV_QP_SQ_PSN, sq_psn);
	TAKE(IBV_QP_MAX_DEST_RD_ATOMIC, max_dest_rd_atomic);
	TAKE_24(IBV_QP_DEST_QPN, dest_qp_num);
}

#undef TAKE
#undef TAKE_24

static int alloc_resources(struct ur_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	uint32_t n;
	struct ur_resp_res *res;

	if (!(mask & IBV_QP_MAX_DEST_RD_ATOMIC))
		return 0;
	/* At least one slot, so a lone READ can always be answered. */
	n = ur_max(a->max_dest_rd_atomic, (uint8_t)1);
	res = calloc(n, sizeof(*res) + sizeof(struct ur_atomic_result));
	if (!res)
		return -ENOMEM;
	free(qp->resp.res);
	qp->resp.res = res;
	qp->resp.atomics = (struct ur_atomic_result *)(res + n);
	qp->resp.nres = n;
	qp->resp.res_next = qp->resp.res_tx = 0;
	qp->resp.atomic_next = 0;
	return 0;
}

int ur_qp_modify_check(struct ur_qp *qp, const struct ibv_qp_attr *a, int mask,
		       struct ur_qp_change *c)
{
	int missing, extra, ret;
	char m1[256], m2[256];

	memset(c, 0, sizeof(*c));
	c->cur = qp->state;
	if ((mask & IBV_QP_CUR_STATE) && a->cur_qp_state != c->cur) {
		ur_err(ur_qp_dev(qp), "QP 0x%06x: cur_qp_state %s but the QP is in %s",
		       ur_qp_num(qp), ur_qp_state_name[a->cur_qp_state],
		       ur_qp_state_name[c->cur]);
		return -EINVAL;
	}
	c->next = (mask & IBV_QP_STATE) ? a->qp_state : c->cur;
	if (c->next < IBV_QPS_RESET || c->next > IBV_QPS_ERR)
		return -EINVAL;
	ret = ur_qp_check_mask(c->cur, c->next, qp->kind->rules, mask, &missing, &extra);
	if (ret) {
		if (!ur_qp_transition_rule(c->cur, c->next, qp->kind->rules).valid)
			ur_err(ur_qp_dev(qp), "QP 0x%06x: no transition %s -> %s", ur_qp_num(qp),
			       ur_qp_state_name[c->cur], ur_qp_state_name[c->next]);
		else
			ur_err(ur_qp_dev(qp), "QP 0x%06x: %s -> %s: missing attributes [%s], "
			       "not allowed [%s]", ur_qp_num(qp), ur_qp_state_name[c->cur],
			       ur_qp_state_name[c->next], ur_qp_mask_str(missing, m1, sizeof(m1)),
			       ur_qp_mask_str(extra, m2, sizeof(m2)));
		return ret;
	}
	ret = check_values(qp, a, mask);
	if (ret)
		return ret;
	if (c->next == IBV_QPS_SQD) {
		ur_err(ur_qp_dev(qp), "QP 0x%06x: the SQ drain state (SQD) is not supported",
		       ur_qp_num(qp));
		return -EOPNOTSUPP;
	}
	/* The AV names the QP's one peer, resolved now; UD's and DC's peers
	 * come with each work request (a DCT's: each packet), and their AV
	 * names only the port and source GID. */
	if ((mask & IBV_QP_AV) && ur_qp_kind_has(qp, UR_KIND_AV_PEER)) {
		ret = resolve_peer(qp, a, mask, &c->path, &c->mtu);
		if (ret)
			return ret;
		c->new_path = true;
	} else if (mask & IBV_QP_PATH_MTU) {
		c->mtu = ur_mtu_bytes(a->path_mtu);
	}
	return 0;
}

int ur_qp_modify_apply(struct ur_qp *qp, const struct ibv_qp_attr *a, int mask,
		       const struct ur_qp_change *c)
{
	int ret = alloc_resources(qp, a, mask);

	if (ret)
		return ret;
	apply(qp, a, mask);
	if (c->new_path)
		qp->path = c->path;
	if (c->mtu)
		qp->mtu = c->mtu;
	if (qp->type == IBV_QPT_UD && c->cur == IBV_QPS_RESET && c->next == IBV_QPS_INIT) {
		struct ibv_port_attr port;

		ur_port_attr(qp->ctx->dev, &port);
		qp->mtu = ur_mtu_bytes(port.active_mtu);
	}
	return 0;
}
