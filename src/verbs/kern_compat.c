/* Historical marshalling helpers: kernel uverbs/SA structures <-> verbs ones.
 *
 * uroce has no kernel interface, but these four functions are part of the
 * IBVERBS_1.0/1.1 ABI (rdma-core keeps them for librdmacm and old programs,
 * declared in its infiniband/marshall.h, which Debian does not install), so
 * they are provided with rdma-core 44's semantics:
 *  - plain field-by-field copies, no byte swapping: the network-order fields
 *    (LIDs, P_Key, flow label of a path record) stay network order on both
 *    sides, and the host-order ones stay host order;
 *  - ibv_copy_qp_attr_from_kern() does not copy qp_state nor qp_attr_mask
 *    (the kernel's query response leaves qp_state to the caller), and fields
 *    of ibv_qp_attr with no kernel counterpart (rate_limit) are untouched.
 */
#include <string.h>

#include <infiniband/sa.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

#include "util/compiler.h"

/* Prototypes of rdma-core 44's infiniband/marshall.h. */
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst,
				struct ib_uverbs_qp_attr *src);
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst,
				struct ib_uverbs_ah_attr *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst,
				 struct ib_user_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst,
			       struct ibv_sa_path_rec *src);

_Static_assert(sizeof(((struct ibv_global_route *)0)->dgid) ==
	       sizeof(((struct ib_uverbs_global_route *)0)->dgid),
	       "GID sizes differ");
_Static_assert(sizeof(((struct ibv_sa_path_rec *)0)->dgid) ==
	       sizeof(((struct ib_user_path_rec *)0)->dgid),
	       "path record GID sizes differ");

UR_EXPORT void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst,
					  struct ib_uverbs_ah_attr *src)
{
	memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof(dst->grh.dgid.raw));
	dst->grh.flow_label = src->grh.flow_label;
	dst->grh.sgid_index = src->grh.sgid_index;
	dst->grh.hop_limit = src->grh.hop_limit;
	dst->grh.traffic_class = src->grh.traffic_class;

	dst->dlid = src->dlid;
	dst->sl = src->sl;
	dst->src_path_bits = src->src_path_bits;
	dst->static_rate = src->static_rate;
	dst->is_global = src->is_global;
	dst->port_num = src->port_num;
}

UR_EXPORT void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst,
					  struct ib_uverbs_qp_attr *src)
{
	dst->cur_qp_state = src->cur_qp_state;
	dst->path_mtu = src->path_mtu;
	dst->path_mig_state = src->path_mig_state;
	dst->qkey = src->qkey;
	dst->rq_psn = src->rq_psn;
	dst->sq_psn = src->sq_psn;
	dst->dest_qp_num = src->dest_qp_num;
	dst->qp_access_flags = src->qp_access_flags;

	dst->cap.max_send_wr = src->max_send_wr;
	dst->cap.max_recv_wr = src->max_recv_wr;
	dst->cap.max_send_sge = src->max_send_sge;
	dst->cap.max_recv_sge = src->max_recv_sge;
	dst->cap.max_inline_data = src->max_inline_data;

	ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
	ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);

	dst->pkey_index = src->pkey_index;
	dst->alt_pkey_index = src->alt_pkey_index;
	dst->en_sqd_async_notify = src->en_sqd_async_notify;
	dst->sq_draining = src->sq_draining;
	dst->max_rd_atomic = src->max_rd_atomic;
	dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
	dst->min_rnr_timer = src->min_rnr_timer;
	dst->port_num = src->port_num;
	dst->timeout = src->timeout;
	dst->retry_cnt = src->retry_cnt;
	dst->rnr_retry = src->rnr_retry;
	dst->alt_port_num = src->alt_port_num;
	dst->alt_timeout = src->alt_timeout;
}

/* The scalar fields of a path record, the same names on both sides. */
#define PATH_REC_COPY_SCALARS(dst, src)                                     \
	do {                                                                \
		(dst)->dlid = (src)->dlid;                                  \
		(dst)->slid = (src)->slid;                                  \
		(dst)->raw_traffic = (src)->raw_traffic;                    \
		(dst)->flow_label = (src)->flow_label;                      \
		(dst)->hop_limit = (src)->hop_limit;                        \
		(dst)->traffic_class = (src)->traffic_class;                \
		(dst)->reversible = (src)->reversible;                      \
		(dst)->numb_path = (src)->numb_path;                        \
		(dst)->pkey = (src)->pkey;                                  \
		(dst)->sl = (src)->sl;                                      \
		(dst)->mtu_selector = (src)->mtu_selector;                  \
		(dst)->mtu = (src)->mtu;                                    \
		(dst)->rate_selector = (src)->rate_selector;                \
		(dst)->rate = (src)->rate;                                  \
		(dst)->packet_life_time_selector =                          \
			(src)->packet_life_time_selector;                   \
		(dst)->packet_life_time = (src)->packet_life_time;          \
		(dst)->preference = (src)->preference;                      \
	} while (0)

UR_EXPORT void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst,
					   struct ib_user_path_rec *src)
{
	memcpy(dst->dgid.raw, src->dgid, sizeof(dst->dgid.raw));
	memcpy(dst->sgid.raw, src->sgid, sizeof(dst->sgid.raw));

	PATH_REC_COPY_SCALARS(dst, src);
}

UR_EXPORT void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst,
					 struct ibv_sa_path_rec *src)
{
	memcpy(dst->dgid, src->dgid.raw, sizeof(dst->dgid));
	memcpy(dst->sgid, src->sgid.raw, sizeof(dst->sgid));

	PATH_REC_COPY_SCALARS(dst, src);
}
