/* What uroce's libibverbs.so.1 lends its libmlx5.so.1: DC QPs (a DC
 * initiator, DCI, or target, DCT; src/rel/dc.h) and a few bytes in each
 * QP for the driver library's own per-QP state (the struct mlx5dv_qp_ex
 * that mlx5dv_qp_ex_from_ibv_qp_ex returns).  Exported under the version
 * node UROCE_PRIVATE_1, for libmlx5.so.1 of the same build only (`uroce
 * run` loads them together); not an API for applications. */
#ifndef UROCE_VERBS_DC_ABI_H
#define UROCE_VERBS_DC_ABI_H

#include <stdint.h>
#include <infiniband/verbs.h>

#define UROCE_DC_ABI_VERSION 1

enum uroce_dc_role {
	UROCE_DC_NONE = 0,
	UROCE_DC_INITIATOR = 1,
	UROCE_DC_TARGET = 2,
};

/* Bytes of driver-owned storage in every QP, zeroed at creation. */
#define UROCE_QP_DRIVER_EXT_BYTES 192

struct uroce_dc_caps {
	uint32_t max_initiators;   /* DCIs a DCT serves at once */
	uint32_t max_rd_atomic;    /* READ/ATOMIC a DCT answers per initiator */
};

/* The ABI version of this pair of libraries (must equal
 * UROCE_DC_ABI_VERSION). */
int uroce_dc_abi_version(void);
/* A DCI or DCT, for attr (qp_type IBV_QPT_DRIVER; a DCT needs attr->srq
 * and takes no send queue).  dct_key: the key a DCT accepts (a DCI gives
 * its key with each work request).  NULL with errno set on failure
 * (EINVAL for attributes DC cannot take). */
struct ibv_qp *uroce_dc_create_qp(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr,
				  enum uroce_dc_role role, uint64_t dct_key);
/* The DC address of the work request being built with ibv_wr_* on a DCI:
 * the target DCT's number, behind ah, and the key it checks. */
void uroce_dc_wr_set_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah, uint32_t dctn,
			  uint64_t dc_key);
/* What qp is: UROCE_DC_NONE for every QP not made by uroce_dc_create_qp. */
enum uroce_dc_role uroce_dc_role(struct ibv_qp *qp);
/* 0, and the device's DC limits. */
int uroce_dc_caps(struct ibv_context *ctx, struct uroce_dc_caps *caps);
/* The driver-owned bytes of qp (UROCE_QP_DRIVER_EXT_BYTES), and the QP
 * back from them. */
void *uroce_qp_driver_ext(struct ibv_qp *qp);
struct ibv_qp *uroce_qp_from_driver_ext(void *ext);

#endif
