/* QPs through mlx5dv: DC initiators (DCI) and targets (DCT) made by
 * libibverbs.so.1 (dc_abi.h), every other QP plain ibv_create_qp_ex; and
 * the struct mlx5dv_qp_ex of each QP, kept in the QP's driver bytes, whose
 * wr_set_dc_addr gives a DC work request its target. */
#include <errno.h>
#include <stddef.h>

#include <infiniband/mlx5dv.h>

#include "mlx5dv/dv.h"
#include "util/compiler.h"
#include "verbs/dc_abi.h"

/* The QP's driver bytes: what mlx5dv_qp_ex_from_ibv_qp_ex hands out, and
 * the QP it builds work requests on (set when dv is filled). */
struct dv_qp {
	struct mlx5dv_qp_ex dv;
	struct ibv_qp_ex *qpx;
};
_Static_assert(sizeof(struct dv_qp) <= UROCE_QP_DRIVER_EXT_BYTES,
	       "a QP's driver bytes hold its struct mlx5dv_qp_ex");

static inline struct dv_qp *to_dv_qp(struct mlx5dv_qp_ex *mqp)
{
	return container_of(mqp, struct dv_qp, dv);
}

/* ---- work-request builders ------------------------------------------------ */

/* Streams share the one DCI (DV_DCI_MAX_LOG_STREAMS): a work request goes
 * out in its turn whichever stream it names, so the stream is not kept. */
static void wr_set_dc_addr(struct mlx5dv_qp_ex *mqp, struct ibv_ah *ah, uint32_t dctn,
			   uint64_t key)
{
	uroce_dc_wr_set_addr(to_dv_qp(mqp)->qpx, ah, dctn, key);
}

static void wr_set_dc_addr_stream(struct mlx5dv_qp_ex *mqp, struct ibv_ah *ah, uint32_t dctn,
				  uint64_t key, uint16_t stream_id)
{
	uroce_dc_wr_set_addr(to_dv_qp(mqp)->qpx, ah, dctn, key);
}

/* The mlx5-only builders (UMR memory keys, signature and crypto, raw WQEs,
 * DMA memcpy) and, on a QP that is not a DCI, the DC address.  A QP with
 * these operations cannot be made here (mlx5dv_create_qp refuses
 * MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS, which mlx5 needs to enable
 * them), so a call is a program's mistake.
 * libibverbs.so.1 offers no way to fail the batch from here (its builders
 * record their error inside the QP), so these do nothing: the work request
 * they describe is not built. */
static void unsupported_mkey(struct mlx5dv_qp_ex *mqp, struct mlx5dv_mkey *mkey,
			     uint32_t access, uint32_t repeat, uint16_t n,
			     struct mlx5dv_mr_interleaved *data)
{
}

static void unsupported_mr_list(struct mlx5dv_qp_ex *mqp, struct mlx5dv_mkey *mkey,
				uint32_t access, uint16_t n, struct ibv_sge *sge)
{
}

static void unsupported_mkey_configure(struct mlx5dv_qp_ex *mqp, struct mlx5dv_mkey *mkey,
				       uint8_t n, struct mlx5dv_mkey_conf_attr *attr)
{
}

static void unsupported_mkey_access(struct mlx5dv_qp_ex *mqp, uint32_t access)
{
}

static void unsupported_mkey_list(struct mlx5dv_qp_ex *mqp, uint16_t n,
				  const struct ibv_sge *sge)
{
}

static void unsupported_mkey_interleaved(struct mlx5dv_qp_ex *mqp, uint32_t repeat,
					 uint16_t n, const struct mlx5dv_mr_interleaved *data)
{
}

static void unsupported_sig_block(struct mlx5dv_qp_ex *mqp,
				  const struct mlx5dv_sig_block_attr *attr)
{
}

static void unsupported_raw_wqe(struct mlx5dv_qp_ex *mqp, const void *wqe)
{
}

static void unsupported_memcpy(struct mlx5dv_qp_ex *mqp, uint32_t dest_lkey,
			       uint64_t dest_addr, uint32_t src_lkey, uint64_t src_addr,
			       size_t length)
{
}

static void unsupported_crypto(struct mlx5dv_qp_ex *mqp, const struct mlx5dv_crypto_attr *attr)
{
}

static void unsupported_dc_addr(struct mlx5dv_qp_ex *mqp, struct ibv_ah *ah, uint32_t dctn,
				uint64_t key)
{
}

static void unsupported_dc_addr_stream(struct mlx5dv_qp_ex *mqp, struct ibv_ah *ah,
				       uint32_t dctn, uint64_t key, uint16_t stream_id)
{
}

/* Fills d for qp: the DC builders on a DCI, the refusing ones elsewhere. */
static void dv_qp_fill(struct dv_qp *d, struct ibv_qp *qp)
{
	struct mlx5dv_qp_ex *x = &d->dv;
	bool dci = uroce_dc_role(qp) == UROCE_DC_INITIATOR;

	x->comp_mask = 0;
	x->wr_set_dc_addr = dci ? wr_set_dc_addr : unsupported_dc_addr;
	x->wr_set_dc_addr_stream = dci ? wr_set_dc_addr_stream : unsupported_dc_addr_stream;
	x->wr_mr_interleaved = unsupported_mkey;
	x->wr_mr_list = unsupported_mr_list;
	x->wr_mkey_configure = unsupported_mkey_configure;
	x->wr_set_mkey_access_flags = unsupported_mkey_access;
	x->wr_set_mkey_layout_list = unsupported_mkey_list;
	x->wr_set_mkey_layout_interleaved = unsupported_mkey_interleaved;
	x->wr_set_mkey_sig_block = unsupported_sig_block;
	x->wr_raw_wqe = unsupported_raw_wqe;
	x->wr_memcpy = unsupported_memcpy;
	x->wr_set_mkey_crypto = unsupported_crypto;
	d->qpx = ibv_qp_to_qp_ex(qp);
}

/* ---- entry points --------------------------------------------------------- */

/* The QP's struct mlx5dv_qp_ex.  A DCI's was filled at creation; any other
 * QP's is filled at the first call (its driver bytes start zeroed). */
UR_EXPORT struct mlx5dv_qp_ex *mlx5dv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex *qpx)
{
	struct dv_qp *d = uroce_qp_driver_ext(&qpx->qp_base);

	if (!d) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!d->qpx)
		dv_qp_fill(d, &qpx->qp_base);
	return &d->dv;
}

/* What uroce takes of mlx5dv_qp_init_attr.  DISABLE_SCATTER_TO_CQE only
 * keeps mlx5 from placing small received data in the CQE: nothing a
 * program can observe, so it is accepted and means nothing here. */
#define DV_QP_MASKS (MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS | MLX5DV_QP_INIT_ATTR_MASK_DC | \
		     MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS)
#define DV_QP_CREATE_FLAGS MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE

/* 0, or the errno value for attributes uroce cannot take. */
static int dv_qp_attr_check(const struct mlx5dv_qp_init_attr *dv)
{
	const struct mlx5dv_dc_init_attr *dc = &dv->dc_init_attr;

	if (dv->comp_mask & ~(uint64_t)DV_QP_MASKS)
		return EOPNOTSUPP;
	if ((dv->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS) &&
	    (dv->create_flags & ~(uint32_t)DV_QP_CREATE_FLAGS))
		return EOPNOTSUPP;
	if (!(dv->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_DC))
		return (dv->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS) ? EINVAL : 0;
	if (dc->dc_type != MLX5DV_DCTYPE_DCI && dc->dc_type != MLX5DV_DCTYPE_DCT)
		return EINVAL;
	if (dv->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS) {
		if (dc->dc_type != MLX5DV_DCTYPE_DCI ||
		    dc->dci_streams.log_num_concurent > DV_DCI_MAX_LOG_STREAMS ||
		    dc->dci_streams.log_num_errored > 0)
			return EINVAL;
	}
	return 0;
}

static struct ibv_qp *dc_create(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr,
				const struct mlx5dv_dc_init_attr *dc)
{
	struct ibv_qp *qp;
	struct dv_qp *d;

	if (dc->dc_type == MLX5DV_DCTYPE_DCT)
		return uroce_dc_create_qp(ctx, attr, UROCE_DC_TARGET, dc->dct_access_key);
	qp = uroce_dc_create_qp(ctx, attr, UROCE_DC_INITIATOR, 0);
	if (!qp)
		return NULL;
	/* A DCI is of no use without its wr_set_dc_addr. */
	d = uroce_qp_driver_ext(qp);
	if (!d) {
		ibv_destroy_qp(qp);
		errno = EOPNOTSUPP;
		return NULL;
	}
	dv_qp_fill(d, qp);
	return qp;
}

UR_EXPORT struct ibv_qp *mlx5dv_create_qp(struct ibv_context *ctx,
					  struct ibv_qp_init_attr_ex *attr,
					  struct mlx5dv_qp_init_attr *dv)
{
	int err = dv ? dv_qp_attr_check(dv) : 0;

	if (err) {
		errno = err;
		return NULL;
	}
	if (dv && (dv->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_DC))
		return dc_create(ctx, attr, &dv->dc_init_attr);
	return ibv_create_qp_ex(ctx, attr);
}
