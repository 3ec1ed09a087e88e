/* uroce's libmlx5.so.1 (src/mlx5dv/) as a program sees it: the device is
 * no mlx5 (mlx5dv_is_supported false, no objects for mlx5dv_init_obj),
 * mlx5dv_query_device answers 0 and writes only what was asked, QPs come
 * from mlx5dv_create_qp when uroce can take their attributes and are
 * refused with EOPNOTSUPP (or EINVAL for contradictions) otherwise, DC QPs
 * come from libibverbs.so.1's DC, and the rest of the ABI fails in each
 * function's own convention.
 *
 *   mlx5dv_api DEVICE GID_INDEX [CASE...]
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <infiniband/mlx5dv.h>

#include "vt.h"

static const char *errname(int err)
{
	const char *n = strerrorname_np(err);

	return n ? n : "?";
}

/* NULL with errno want, else FAIL (the object, if any, is returned for the
 * caller to free). */
static void *expect_null(void *p, int want, const char *what)
{
	if (p)
		vt_fail("%s: expected NULL with errno %s, got an object", what, errname(want));
	else
		vt_check(errno == want, "%s: NULL with errno %s (want %s)", what, errname(errno),
			 errname(want));
	return p;
}

static void expect_ret(long ret, long want, const char *what)
{
	vt_check(ret == want, "%s: returned %ld (want %ld)", what, ret, want);
}

/* ---- the device ------------------------------------------------------------ */

static void case_device(struct vt_dev *d)
{
	struct ibv_device_attr_ex ex;
	struct mlx5dv_context_attr devx = { .flags = MLX5DV_CONTEXT_FLAGS_DEVX };
	struct mlx5dv_context c;
	struct ibv_context *ctx;
	struct mlx5dv_obj obj;
	struct mlx5dv_clock_info clk;
	struct ibv_values_ex rt = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };

	vt_check(!mlx5dv_is_supported(d->ctx->device),
		 "mlx5dv_is_supported: false (no mlx5 direct data path)");

	/* The device clock (completion timestamps, ibv_query_rt_values_ex)
	 * to wall-clock time, as mlx5 programs convert it. */
	expect_ret(mlx5dv_get_clock_info(d->ctx, &clk), 0, "mlx5dv_get_clock_info");
	if (vt_check(ibv_query_rt_values_ex(d->ctx, &rt) == 0, "ibv_query_rt_values_ex")) {
		uint64_t raw = (uint64_t)rt.raw_clock.tv_sec * 1000000000ull + rt.raw_clock.tv_nsec;
		double now = (double)time(NULL), ts = (double)mlx5dv_ts_to_ns(&clk, raw) / 1e9;

		vt_check(ts > now - 2 && ts < now + 2,
			 "mlx5dv_ts_to_ns of the raw clock: wall-clock time (%.0f s, now %.0f s)",
			 ts, now);
	}

	memset(&c, 0xa5, sizeof(c));
	c.comp_mask = ~0ull;
	expect_ret(mlx5dv_query_device(d->ctx, &c), 0, "mlx5dv_query_device, every mask bit");
	VT_EXPECT_EQ("version", 0, c.version);
	VT_EXPECT_EQ("flags", 0, c.flags);
	VT_EXPECT_EQ("comp_mask: what is filled", MLX5DV_CONTEXT_MASK_DC_ODP_CAPS |
		     MLX5DV_CONTEXT_MASK_DCI_STREAMS, c.comp_mask);
	if (vt_check(ibv_query_device_ex(d->ctx, NULL, &ex) == 0, "ibv_query_device_ex"))
		VT_EXPECT_EQ("dc_odp_caps (RC's)", ex.odp_caps.per_transport_caps.rc_odp_caps,
			     c.dc_odp_caps);
	VT_EXPECT_EQ("dci_streams_caps.max_log_num_concurent", 4,
		     c.dci_streams_caps.max_log_num_concurent);
	VT_EXPECT_EQ("dci_streams_caps.max_log_num_errored", 0,
		     c.dci_streams_caps.max_log_num_errored);

	/* A program built against an older mlx5dv.h has a shorter struct:
	 * nothing past what it asked for may be written. */
	memset(&c, 0xa5, sizeof(c));
	c.comp_mask = MLX5DV_CONTEXT_MASK_DC_ODP_CAPS;
	expect_ret(mlx5dv_query_device(d->ctx, &c), 0, "mlx5dv_query_device, DC ODP caps only");
	VT_EXPECT_EQ("comp_mask", MLX5DV_CONTEXT_MASK_DC_ODP_CAPS, c.comp_mask);
	vt_check(c.cqe_comp_caps.max_num == 0xa5a5a5a5 && c.dci_streams_caps.max_log_num_concurent == 0xa5 &&
		 c.max_wr_memcpy_length == (size_t)0xa5a5a5a5a5a5a5a5ull,
		 "fields not asked for are left as they were");

	ctx = mlx5dv_open_device(d->ctx->device, NULL);
	if (vt_check(ctx != NULL, "mlx5dv_open_device without attributes: a context (%s)",
		     ctx ? "ok" : strerror(errno)))
		ibv_close_device(ctx);
	errno = 0;
	ctx = expect_null(mlx5dv_open_device(d->ctx->device, &devx), EOPNOTSUPP,
			  "mlx5dv_open_device with MLX5DV_CONTEXT_FLAGS_DEVX");
	if (ctx)
		ibv_close_device(ctx);

	memset(&obj, 0, sizeof(obj));
	expect_ret(mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP), EOPNOTSUPP, "mlx5dv_init_obj");
}

/* ---- QPs -------------------------------------------------------------------- */

struct qp_env {
	struct ibv_cq *cq;
	struct ibv_srq *srq;
};

static void env_open(struct qp_env *e, struct vt_dev *d)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };

	e->cq = ibv_create_cq(d->ctx, 64, NULL, NULL, 0);
	e->srq = ibv_create_srq(d->pd, &sa);
	vt_check(e->cq && e->srq, "a CQ and an SRQ for the QPs");
}

static void env_close(struct qp_env *e)
{
	if (e->srq)
		ibv_destroy_srq(e->srq);
	if (e->cq)
		ibv_destroy_cq(e->cq);
}

static struct ibv_qp_init_attr_ex qp_attr(struct vt_dev *d, struct qp_env *e,
					  enum ibv_qp_type type)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = type,
		.send_cq = e->cq,
		.recv_cq = e->cq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = d->pd,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND |
				  IBV_QP_EX_WITH_RDMA_READ,
	};
	return a;
}

/* mlx5dv_create_qp must fail with errno want. */
static void refused(struct vt_dev *d, struct qp_env *e, enum ibv_qp_type type,
		    struct mlx5dv_qp_init_attr *dv, int want, const char *what)
{
	struct ibv_qp_init_attr_ex a = qp_attr(d, e, type);
	struct ibv_qp *qp;

	errno = 0;
	qp = expect_null(mlx5dv_create_qp(d->ctx, &a, dv), want, what);
	if (qp)
		ibv_destroy_qp(qp);
}

static void case_qp(struct vt_dev *d)
{
	struct mlx5dv_qp_init_attr send_ops = {
		.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS,
		.send_ops_flags = MLX5DV_QP_EX_WITH_MR_LIST,
	};
	struct mlx5dv_qp_init_attr tunnel = {
		.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS,
		.create_flags = MLX5DV_QP_CREATE_TUNNEL_OFFLOADS,
	};
	struct mlx5dv_qp_init_attr no_scatter = {
		.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS,
		.create_flags = MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE,
	};
	struct mlx5dv_qp_init_attr streams_alone = {
		.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS,
	};
	struct ibv_qp_init_attr_ex a;
	struct mlx5dv_qp_ex *mqp;
	struct qp_env e;
	struct ibv_qp *qp;

	env_open(&e, d);
	refused(d, &e, IBV_QPT_RC, &send_ops, EOPNOTSUPP,
		"RC with MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS (mlx5's UMR builders)");
	refused(d, &e, IBV_QPT_RC, &tunnel, EOPNOTSUPP, "RC with MLX5DV_QP_CREATE_TUNNEL_OFFLOADS");
	refused(d, &e, IBV_QPT_RC, &streams_alone, EINVAL, "DCI streams without DC");

	a = qp_attr(d, &e, IBV_QPT_RC);
	qp = mlx5dv_create_qp(d->ctx, &a, &no_scatter);
	if (vt_check(qp != NULL, "RC with MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE: a QP (%s)",
		     qp ? "ok" : strerror(errno))) {
		VT_EXPECT_EQ("its type", IBV_QPT_RC, qp->qp_type);
		errno = 0;
		mqp = mlx5dv_qp_ex_from_ibv_qp_ex(ibv_qp_to_qp_ex(qp));
		vt_check(mqp && mqp->wr_set_dc_addr && mqp->wr_mr_list,
			 "mlx5dv_qp_ex_from_ibv_qp_ex of an RC QP: every builder set");
		ibv_destroy_qp(qp);
	}
	a = qp_attr(d, &e, IBV_QPT_UD);
	qp = mlx5dv_create_qp(d->ctx, &a, NULL);
	if (vt_check(qp != NULL, "UD without mlx5 attributes: a QP (%s)", qp ? "ok" : strerror(errno)))
		ibv_destroy_qp(qp);
	env_close(&e);
}

/* ---- DC ----------------------------------------------------------------------- */

static struct mlx5dv_qp_init_attr dc_attr(enum mlx5dv_dc_type type)
{
	struct mlx5dv_qp_init_attr dv = {
		.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC,
		.dc_init_attr = { .dc_type = type },
	};

	if (type == MLX5DV_DCTYPE_DCT) {
		dv.dc_init_attr.dct_access_key = 0x1ee7a330;
	} else {
		dv.comp_mask |= MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS;
		dv.create_flags = MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE;
	}
	return dv;
}

/* A DC QP as perftest asks for one. */
static void dc_qp(struct vt_dev *d, struct qp_env *e, struct mlx5dv_qp_init_attr *dv,
		  const char *what)
{
	struct ibv_qp_init_attr_ex a = qp_attr(d, e, IBV_QPT_DRIVER);
	bool dci = dv->dc_init_attr.dc_type == MLX5DV_DCTYPE_DCI;
	struct mlx5dv_qp_ex *mqp;
	struct ibv_qp *qp;

	if (!dci) {
		a.srq = e->srq;
		a.comp_mask &= ~IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	}
	errno = 0;
	qp = mlx5dv_create_qp(d->ctx, &a, dv);
	if (vt_check(qp != NULL, "%s: a QP (%s)", what, qp ? "ok" : strerror(errno)) && dci) {
		mqp = mlx5dv_qp_ex_from_ibv_qp_ex(ibv_qp_to_qp_ex(qp));
		vt_check(mqp && mqp->wr_set_dc_addr && mqp->wr_set_dc_addr_stream,
			 "%s: its mlx5dv_qp_ex has wr_set_dc_addr and wr_set_dc_addr_stream", what);
	}
	if (qp)
		ibv_destroy_qp(qp);
}

static void case_dc(struct vt_dev *d)
{
	struct mlx5dv_qp_init_attr dct = dc_attr(MLX5DV_DCTYPE_DCT);
	struct mlx5dv_qp_init_attr dci = dc_attr(MLX5DV_DCTYPE_DCI);
	struct mlx5dv_qp_init_attr streams = dc_attr(MLX5DV_DCTYPE_DCI);
	struct mlx5dv_qp_init_attr bad;
	struct qp_env e;

	env_open(&e, d);
	dc_qp(d, &e, &dct, "DCT (perftest's attributes)");
	dc_qp(d, &e, &dci, "DCI with DISABLE_SCATTER_TO_CQE (perftest's attributes)");
	streams.comp_mask |= MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS;
	streams.dc_init_attr.dci_streams.log_num_concurent = 2;
	dc_qp(d, &e, &streams, "DCI with 4 streams");

	/* Contradictions are EINVAL whether or not DC is there. */
	bad = dc_attr(MLX5DV_DCTYPE_DCI);
	bad.dc_init_attr.dc_type = 7;
	refused(d, &e, IBV_QPT_DRIVER, &bad, EINVAL, "DC type 7");
	bad = streams;
	bad.dc_init_attr.dci_streams.log_num_concurent = 5;
	refused(d, &e, IBV_QPT_DRIVER, &bad, EINVAL, "DCI with 32 streams (more than 16)");
	bad = dct;
	bad.comp_mask |= MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS;
	refused(d, &e, IBV_QPT_DRIVER, &bad, EINVAL, "DCT with DCI streams");
	env_close(&e);
}

/* ---- the rest of the ABI ---------------------------------------------------------- */

static void case_unsupported(struct vt_dev *d)
{
	struct mlx5dv_mkey_init_attr mk = { .pd = d->pd, .max_entries = 1 };
	struct mlx5dv_cq_init_attr dvcq = { 0 };
	struct ibv_cq_init_attr_ex cq = { .cqe = 16 };
	struct mlx5dv_crypto_login_attr login = { 0 };
	struct mlx5_ib_uapi_query_port port;
	uint32_t in[4] = { 0 }, out[4];
	uint32_t qpn;
	uint8_t p, ap;

	errno = 0;
	expect_null(mlx5dv_create_cq(d->ctx, &cq, &dvcq), EOPNOTSUPP, "mlx5dv_create_cq");
	errno = 0;
	expect_null(mlx5dv_create_mkey(&mk), EOPNOTSUPP, "mlx5dv_create_mkey");
	errno = 0;
	expect_null(mlx5dv_dr_domain_create(d->ctx, MLX5DV_DR_DOMAIN_TYPE_NIC_RX), EOPNOTSUPP,
		    "mlx5dv_dr_domain_create");
	errno = 0;
	expect_null(mlx5dv_devx_obj_create(d->ctx, in, sizeof(in), out, sizeof(out)), EOPNOTSUPP,
		    "mlx5dv_devx_obj_create");
	errno = 0;
	expect_null(mlx5dv_dr_action_create_drop(), EOPNOTSUPP, "mlx5dv_dr_action_create_drop");
	expect_ret(mlx5dv_devx_general_cmd(d->ctx, in, sizeof(in), out, sizeof(out)), EOPNOTSUPP,
		   "mlx5dv_devx_general_cmd");
	expect_ret(mlx5dv_crypto_login(d->ctx, &login), EOPNOTSUPP, "mlx5dv_crypto_login");
	expect_ret(mlx5dv_query_port(d->ctx, 1, &port), EOPNOTSUPP, "mlx5dv_query_port");
	expect_ret(mlx5dv_reserved_qpn_alloc(d->ctx, &qpn), EOPNOTSUPP, "mlx5dv_reserved_qpn_alloc");
	expect_ret(mlx5dv_query_qp_lag_port(NULL, &p, &ap), EOPNOTSUPP, "mlx5dv_query_qp_lag_port");
	/* The two conventions of their own. */
	expect_ret(mlx5dv_qp_cancel_posted_send_wrs(NULL, 1), -EOPNOTSUPP,
		   "mlx5dv_qp_cancel_posted_send_wrs (-errno)");
	errno = 0;
	expect_ret(mlx5dv_devx_get_event(NULL, NULL, 0), -1, "mlx5dv_devx_get_event (-1)");
	VT_EXPECT_EQ("mlx5dv_devx_get_event: errno EOPNOTSUPP", EOPNOTSUPP, errno);
}

static const struct vt_case cases[] = {
	{ "device", case_device },
	{ "qp", case_qp },
	{ "dc", case_dc },
	{ "unsupported", case_unsupported },
	{ NULL, NULL },
};

VT_MAIN(cases)
