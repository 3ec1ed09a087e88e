/* Probing the device's limits the way middleware does: libfabric's verbs
 * provider and UCX create QPs (and CQs, SRQs) asking for more and more
 * until one is refused, and take the last granted value as the limit.
 * Every request over a limit must fail with EINVAL (NULL + errno), create
 * nothing, and print nothing at the default log level (the test script
 * checks the output); the largest granted value must be the limit
 * ibv_query_device reports where it reports one.
 *
 *   limits DEVICE GID_INDEX [CASE...]
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vt.h"

enum knob { K_SEND_WR, K_RECV_WR, K_SEND_SGE, K_RECV_SGE, K_INLINE };

static unsigned refusals;    /* over-limit requests refused with EINVAL */
static unsigned others;      /* refused with anything else */

/* Tries one QP of type with knob set to v (the rest small); destroys it.
 * Returns true when it was created. */
static bool try_qp(struct vt_dev *d, struct ibv_cq *cq, enum ibv_qp_type type, enum knob k,
		   uint32_t v)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = type,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	uint32_t *field[] = {
		[K_SEND_WR] = &a.cap.max_send_wr, [K_RECV_WR] = &a.cap.max_recv_wr,
		[K_SEND_SGE] = &a.cap.max_send_sge, [K_RECV_SGE] = &a.cap.max_recv_sge,
		[K_INLINE] = &a.cap.max_inline_data,
	};
	struct ibv_qp *qp;

	*field[k] = v;
	errno = 0;
	qp = ibv_create_qp(d->pd, &a);
	if (qp) {
		ibv_destroy_qp(qp);
		return true;
	}
	if (errno == EINVAL)
		refusals++;
	else
		others++;
	return false;
}

/* libfabric's search: doubling from lo until refused, then bisection. */
static uint32_t probe_qp(struct vt_dev *d, struct ibv_cq *cq, enum ibv_qp_type type, enum knob k,
			 uint32_t lo)
{
	uint32_t hi = lo;

	while (try_qp(d, cq, type, k, hi) && hi < (1u << 30)) {
		lo = hi;
		hi *= 2;
	}
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (try_qp(d, cq, type, k, mid))
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static void probe_type(struct vt_dev *d, enum ibv_qp_type type, const char *tname)
{
	struct ibv_cq *cq = ibv_create_cq(d->ctx, 16, NULL, NULL, 0);
	uint32_t max[5];
	unsigned before = refusals;

	if (!vt_check(cq != NULL, "%s: a CQ for the probes", tname))
		return;
	others = 0;
	for (int k = K_SEND_WR; k <= K_INLINE; k++)
		max[k] = probe_qp(d, cq, type, (enum knob)k, 1);
	VT_EXPECT_EQ("max_send_wr found by probing vs ibv_query_device max_qp_wr", d->attr.max_qp_wr,
		     max[K_SEND_WR]);
	VT_EXPECT_EQ("max_recv_wr found by probing vs max_qp_wr", d->attr.max_qp_wr, max[K_RECV_WR]);
	VT_EXPECT_EQ("max_send_sge found by probing vs max_sge", d->attr.max_sge, max[K_SEND_SGE]);
	VT_EXPECT_EQ("max_recv_sge found by probing vs max_sge", d->attr.max_sge, max[K_RECV_SGE]);
	vt_check(max[K_INLINE] >= 64, "%s: max_inline_data found by probing: %u", tname,
		 max[K_INLINE]);
	vt_check(refusals - before >= 5, "%s: %u over-limit requests refused with EINVAL", tname,
		 refusals - before);
	VT_EXPECT_EQ("refusals with an errno other than EINVAL", 0, others);
	ibv_destroy_cq(cq);
}

static void case_qp(struct vt_dev *d)
{
	probe_type(d, IBV_QPT_RC, "RC");
	probe_type(d, IBV_QPT_UD, "UD");
}

static void case_cq_srq(struct vt_dev *d)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = (uint32_t)d->attr.max_srq_wr + 1,
						   .max_sge = 1 } };
	struct ibv_cq *cq;
	struct ibv_srq *srq;

	errno = 0;
	cq = ibv_create_cq(d->ctx, d->attr.max_cqe + 1, NULL, NULL, 0);
	vt_check(!cq && errno == EINVAL, "CQ of max_cqe + 1 (%d) entries: refused with EINVAL (%s)",
		 d->attr.max_cqe + 1, cq ? "created" : strerror(errno));
	if (cq)
		ibv_destroy_cq(cq);
	cq = ibv_create_cq(d->ctx, d->attr.max_cqe, NULL, NULL, 0);
	vt_check(cq != NULL, "CQ of max_cqe (%d) entries: created", d->attr.max_cqe);
	if (cq)
		ibv_destroy_cq(cq);

	errno = 0;
	srq = ibv_create_srq(d->pd, &sa);
	vt_check(!srq && errno == EINVAL, "SRQ of max_srq_wr + 1 (%u): refused with EINVAL (%s)",
		 sa.attr.max_wr, srq ? "created" : strerror(errno));
	if (srq)
		ibv_destroy_srq(srq);
}

static const struct vt_case cases[] = {
	{ "qp", case_qp },
	{ "cq_srq", case_cq_srq },
	{ NULL, NULL },
};

VT_MAIN(cases)
