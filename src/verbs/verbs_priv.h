/* Shared by the ABI boundary's files: how errors cross it.
 *
 * Inside the library functions return 0 or -errno; each exported verb
 * converts once, here, to its documented contract. */
#ifndef UROCE_VERBS_VERBS_PRIV_H
#define UROCE_VERBS_VERBS_PRIV_H

#include <errno.h>
#include <stdbool.h>
#include <infiniband/verbs.h>

#include "util/compiler.h"

/* Verbs that return an errno value (ibv_modify_qp, ibv_destroy_*, ...). */
static inline int ur_ret_errno(int ret)
{
	if (ret < 0) {
		errno = -ret;
		return -ret;
	}
	return 0;
}

/* Verbs that return -1 and set errno (ibv_query_gid, ibv_get_cq_event, ...). */
static inline int ur_ret_minus1(int ret)
{
	if (ret < 0) {
		errno = -ret;
		return -1;
	}
	return 0;
}

/* Verbs that return an object, or NULL and set errno (ibv_create_qp, ...):
 * obj is what the internal call made when ret is 0. */
static inline void *ur_ret_obj(int ret, void *obj)
{
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return obj;
}

/* The context ops installed into every context. */
void ur_verbs_set_ops(struct verbs_context *vctx);

/* Extended ops, defined next to the verbs they belong to. */
int ur_verbs_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr,
			size_t len);
int ur_verbs_query_device_ex(struct ibv_context *ctx, const struct ibv_query_device_ex_input *in,
			     struct ibv_device_attr_ex *attr, size_t len);
int ur_verbs_query_rt_values(struct ibv_context *ctx, struct ibv_values_ex *values);
/* ibv_reg_mr's work, for regions over any host range (device memory too). */
struct ibv_mr *ur_verbs_reg_range(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				  unsigned int access);
struct ibv_dm *ur_verbs_alloc_dm(struct ibv_context *ctx, struct ibv_alloc_dm_attr *attr);
int ur_verbs_free_dm(struct ibv_dm *dm);
struct ibv_mr *ur_verbs_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm, uint64_t dm_offset,
				  size_t length, unsigned int access);
/* domain.c: thread and parent domains. */
struct ibv_td *ur_verbs_alloc_td(struct ibv_context *ctx, struct ibv_td_init_attr *attr);
int ur_verbs_dealloc_td(struct ibv_td *td);
struct ibv_pd *ur_verbs_alloc_parent_domain(struct ibv_context *ctx,
					    struct ibv_parent_domain_init_attr *attr);
bool ur_verbs_is_parent_domain(struct ibv_pd *pd);
int ur_verbs_dealloc_parent_domain(struct ibv_pd *pd);
int ur_verbs_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		       struct ibv_sge *sg_list, uint32_t num_sges);
struct ibv_cq_ex *ur_verbs_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr);
int ur_verbs_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
int ur_verbs_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int ur_verbs_req_notify_cq(struct ibv_cq *cq, int solicited_only);
/* A QP made inside the library, given the ibv_wr_* batch calls. */
struct ur_qp;
struct ibv_qp *ur_verbs_qp_out(struct ur_qp *qp);
struct ibv_qp *ur_verbs_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr);
int ur_verbs_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int ur_verbs_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
struct ibv_srq *ur_verbs_create_srq_ex(struct ibv_context *ctx, struct ibv_srq_init_attr_ex *attr);
int ur_verbs_post_srq_ops(struct ibv_srq *srq, struct ibv_ops_wr *wr, struct ibv_ops_wr **bad);
int ur_verbs_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int ur_verbs_get_srq_num(struct ibv_srq *srq, uint32_t *num);

struct ibv_xrcd *ur_verbs_open_xrcd(struct ibv_context *ctx, struct ibv_xrcd_init_attr *attr);
int ur_verbs_close_xrcd(struct ibv_xrcd *xrcd);
struct ibv_mw *ur_verbs_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int ur_verbs_dealloc_mw(struct ibv_mw *mw);
int ur_verbs_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind);

#endif
