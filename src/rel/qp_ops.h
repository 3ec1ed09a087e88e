/* A QP's life cycle and posting, with their effects on the protocol:
 * the entry points src/verbs calls.  They return 0 or -errno. */
#ifndef UROCE_REL_QP_OPS_H
#define UROCE_REL_QP_OPS_H

#include <infiniband/verbs.h>

struct ur_context;
struct ur_qp;
struct ur_qp_kind;

/* A QP numbered on the host (the registry), reachable by its packets, its
 * protocol state reset.  Its kind is its type's (core/qp_kind.h). */
int ur_qp_create(struct ur_context *ctx, struct ibv_qp_init_attr_ex *attr, struct ur_qp **out);
/* The same, of a kind its own file defines (DC's, rel/dc.c); NULL: the
 * type's. */
int ur_qp_create_kind(struct ur_context *ctx, struct ibv_qp_init_attr_ex *attr,
		      const struct ur_qp_kind *kind, struct ur_qp **out);
/* Sends an acknowledgement still owed, then takes the QP out of reach of
 * packets, timers and transports before freeing it. */
int ur_qp_destroy(struct ur_qp *qp);
int ur_qp_modify(struct ur_qp *qp, struct ibv_qp_attr *attr, int mask);
int ur_qp_post_send(struct ur_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int ur_qp_post_recv(struct ur_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

/* The ibv_wr_* batch around core's builders: start locks the QP, complete
 * hands the batch to the requester (0 or -errno: an error in any builder
 * call discards the batch), abort discards it. */
void ur_qp_wr_start(struct ur_qp *qp);
int ur_qp_wr_complete(struct ur_qp *qp);
void ur_qp_wr_abort(struct ur_qp *qp);

#endif
