/* What uroce's libibverbs.so.1 lends its librdmacm.so.1: QP1 and the
 * host's directory of CM endpoints.  Exported under the version node
 * UROCE_PRIVATE_1, for librdmacm.so.1 of the same build only (they are
 * loaded together by `uroce run`); not an API for applications.
 * Every function returns 0 or -errno and leaves errno alone. */
#ifndef UROCE_VERBS_CM_ABI_H
#define UROCE_VERBS_CM_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <infiniband/verbs.h>

#define UROCE_CM_ABI_VERSION 3

/* Called on uroce's engine thread for each MAD that reaches QP1 here. */
typedef void (*uroce_gsi_rx_fn)(void *arg, const uint8_t *mad, size_t len,
				const union ibv_gid *sgid, const union ibv_gid *dgid);

/* The ABI version of this pair of libraries (must equal
 * UROCE_CM_ABI_VERSION). */
int uroce_cm_abi_version(void);
/* Makes fn the receiver of this process's QP1 MADs (through the stack ctx
 * belongs to); NULL detaches, waiting for a call in progress to end. */
int uroce_gsi_attach(struct ibv_context *ctx, uroce_gsi_rx_fn fn, void *arg);
/* One MAD to QP1 of ah's destination. */
int uroce_gsi_send(struct ibv_context *ctx, const struct ibv_ah_attr *ah, const void *mad,
		   size_t len);
/* A host-unique number whose owner is this process (a QP number in the
 * host registry), to build comm IDs the host can route back here. */
int uroce_cm_id_alloc(uint32_t *num);
void uroce_cm_id_free(uint32_t num);
/* Lists this process as listening on service_id (0: as having a CM). */
int uroce_cm_listen(uint64_t service_id, int on);
/* -EADDRINUSE if another live process of the host listens on it. */
int uroce_cm_listen_check(uint64_t service_id);
/* 1 if the peer of a connection, at gid with comm ID comm_id, was a
 * process of this host that is gone (killed: it sent no DREQ), 0 if it
 * lives or is another host's (whose CM speaks for it). */
int uroce_cm_peer_gone(const union ibv_gid *gid, uint32_t comm_id);
/* Moves QP qpn of ctx's stack to ERROR if it still exists (-ENOENT if
 * not): safe against a concurrent ibv_destroy_qp. */
int uroce_qp_to_error(struct ibv_context *ctx, uint32_t qpn);
/* Writes the CM's ids as lines of the resource window's snapshot
 * ("cm_id key=value ...", src/rel/res_proto.h); called on the stack's
 * snapshot thread (never the engine's) when `uroce res` asks. */
typedef void (*uroce_res_cm_fn)(void *arg, FILE *f);
/* Makes fn that writer for the stack ctx belongs to (NULL: none). */
int uroce_res_cm_attach(struct ibv_context *ctx, uroce_res_cm_fn fn, void *arg);

#endif
