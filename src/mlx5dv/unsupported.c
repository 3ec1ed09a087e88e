/* The rest of libmlx5.so.1's ABI: mlx5 features a uroce device has no
 * counterpart of (DEVX firmware commands, steering and direct rules, UMR
 * memory keys and crypto, packet pacing, VFIO, LAG, scheduling elements,
 * mlx5's own CQs, WQs and device memory).  Each fails under its
 * documented convention (its man page, mlx5dv_*(3)), never pretending:
 *
 *   DV_ERRNO    int: returns EOPNOTSUPP (0 or an errno value), errno set too
 *   DV_NULL     pointer: NULL, errno EOPNOTSUPP
 *   DV_MINUS1   int or ssize_t: -1, errno EOPNOTSUPP
 *   DV_NOTHING  void: releases an object that cannot exist here
 *
 * mlx5dv.h declares every function, so the compiler checks each
 * definition against its prototype. */
#include <errno.h>
#include <stdio.h>

#include <infiniband/mlx5dv.h>

#include "util/compiler.h"
#include "verbs/stub.h"

/* Its conventions, as verbs/stub.h writes every unsupported entry point. */
#define DV_ERRNO(name, params) UR_STUB(UR_STUB_QUIET, int, name, params, EOPNOTSUPP)
#define DV_NULL(type, name, params) UR_STUB(UR_STUB_QUIET, type, name, params, NULL)
#define DV_MINUS1(type, name, params) UR_STUB(UR_STUB_QUIET, type, name, params, -1)
#define DV_NOTHING(name, params) UR_STUB_VOID(UR_STUB_QUIET, name, params)

/* ---- device, context, memory ----------------------------------------------- */
DV_ERRNO(_mlx5dv_query_port, (struct ibv_context *context, uint32_t port_num,
			      struct mlx5_ib_uapi_query_port *info, size_t info_len))
DV_ERRNO(mlx5dv_set_context_attr, (struct ibv_context *context,
				   enum mlx5dv_set_ctx_attr_type type, void *attr))
DV_NULL(struct ibv_cq_ex *, mlx5dv_create_cq, (struct ibv_context *context,
					       struct ibv_cq_init_attr_ex *cq_attr,
					       struct mlx5dv_cq_init_attr *mlx5_cq_attr))
DV_NULL(struct ibv_wq *, mlx5dv_create_wq, (struct ibv_context *context,
					    struct ibv_wq_init_attr *wq_init_attr,
					    struct mlx5dv_wq_init_attr *mlx5_wq_attr))
DV_NULL(struct ibv_dm *, mlx5dv_alloc_dm, (struct ibv_context *context,
					   struct ibv_alloc_dm_attr *dm_attr,
					   struct mlx5dv_alloc_dm_attr *mlx5_dm_attr))
DV_NULL(void *, mlx5dv_dm_map_op_addr, (struct ibv_dm *dm, uint8_t op))
DV_NULL(struct mlx5dv_var *, mlx5dv_alloc_var, (struct ibv_context *context, uint32_t flags))
DV_NOTHING(mlx5dv_free_var, (struct mlx5dv_var *dv_var))
DV_NULL(struct mlx5dv_pp *, mlx5dv_pp_alloc, (struct ibv_context *context, size_t pp_context_sz,
					      const void *pp_context, uint32_t flags))
DV_NOTHING(mlx5dv_pp_free, (struct mlx5dv_pp *pp))
DV_ERRNO(mlx5dv_reserved_qpn_alloc, (struct ibv_context *ctx, uint32_t *qpn))
DV_ERRNO(mlx5dv_reserved_qpn_dealloc, (struct ibv_context *ctx, uint32_t qpn))

/* ---- VFIO (a device driven from user space without a kernel driver) ------------ */
DV_NULL(struct ibv_device **, mlx5dv_get_vfio_device_list, (struct mlx5dv_vfio_context_attr *attr))
DV_MINUS1(int, mlx5dv_vfio_get_events_fd, (struct ibv_context *ibctx))
DV_ERRNO(mlx5dv_vfio_process_events, (struct ibv_context *context))

/* ---- QPs and AHs beyond DC (qp.c) --------------------------------------------- */
DV_ERRNO(mlx5dv_modify_qp_lag_port, (struct ibv_qp *qp, uint8_t port_num))
DV_ERRNO(mlx5dv_query_qp_lag_port, (struct ibv_qp *qp, uint8_t *port_num,
				    uint8_t *active_port_num))
DV_ERRNO(mlx5dv_modify_qp_udp_sport, (struct ibv_qp *qp, uint16_t udp_sport))
DV_ERRNO(mlx5dv_modify_qp_sched_elem, (struct ibv_qp *qp,
				       const struct mlx5dv_sched_leaf *requestor,
				       const struct mlx5dv_sched_leaf *responder))
DV_ERRNO(mlx5dv_map_ah_to_qp, (struct ibv_ah *ah, uint32_t qp_num))
/* Streams have no error state of their own on uroce (dv.h). */
DV_ERRNO(mlx5dv_dci_stream_id_reset, (struct ibv_qp *qp, uint16_t stream_id))

/* Its man page's convention: -errno, not an errno value. */
UR_EXPORT int mlx5dv_qp_cancel_posted_send_wrs(struct mlx5dv_qp_ex *mqp, uint64_t wr_id)
{
	return -EOPNOTSUPP;
}

/* ---- scheduling elements -------------------------------------------------- */
DV_NULL(struct mlx5dv_sched_node *, mlx5dv_sched_node_create,
	(struct ibv_context *context, const struct mlx5dv_sched_attr *sched_attr))
DV_ERRNO(mlx5dv_sched_node_modify, (struct mlx5dv_sched_node *node,
				    const struct mlx5dv_sched_attr *sched_attr))
DV_ERRNO(mlx5dv_sched_node_destroy, (struct mlx5dv_sched_node *node))
DV_NULL(struct mlx5dv_sched_leaf *, mlx5dv_sched_leaf_create,
	(struct ibv_context *context, const struct mlx5dv_sched_attr *sched_attr))
DV_ERRNO(mlx5dv_sched_leaf_modify, (struct mlx5dv_sched_leaf *leaf,
				    const struct mlx5dv_sched_attr *sched_attr))
DV_ERRNO(mlx5dv_sched_leaf_destroy, (struct mlx5dv_sched_leaf *leaf))

/* ---- memory keys (UMR), signature and crypto ------------------------------ */
DV_NULL(struct mlx5dv_mkey *, mlx5dv_create_mkey, (struct mlx5dv_mkey_init_attr *mkey_init_attr))
DV_ERRNO(mlx5dv_destroy_mkey, (struct mlx5dv_mkey *mkey))
DV_ERRNO(_mlx5dv_mkey_check, (struct mlx5dv_mkey *mkey, struct mlx5dv_mkey_err *err_info,
			      size_t err_info_size))
DV_ERRNO(mlx5dv_crypto_login, (struct ibv_context *context,
			       struct mlx5dv_crypto_login_attr *login_attr))
DV_ERRNO(mlx5dv_crypto_login_query_state, (struct ibv_context *context,
					   enum mlx5dv_crypto_login_state *state))
DV_ERRNO(mlx5dv_crypto_logout, (struct ibv_context *context))
DV_NULL(struct mlx5dv_crypto_login_obj *, mlx5dv_crypto_login_create,
	(struct ibv_context *context, struct mlx5dv_crypto_login_attr_ex *login_attr))
DV_ERRNO(mlx5dv_crypto_login_query, (struct mlx5dv_crypto_login_obj *crypto_login,
				     struct mlx5dv_crypto_login_query_attr *query_attr))
DV_ERRNO(mlx5dv_crypto_login_destroy, (struct mlx5dv_crypto_login_obj *crypto_login))
DV_NULL(struct mlx5dv_dek *, mlx5dv_dek_create, (struct ibv_context *context,
						 struct mlx5dv_dek_init_attr *init_attr))
DV_ERRNO(mlx5dv_dek_query, (struct mlx5dv_dek *dek, struct mlx5dv_dek_attr *attr))
DV_ERRNO(mlx5dv_dek_destroy, (struct mlx5dv_dek *dek))

/* ---- flow steering -------------------------------------------------------- */
DV_NULL(struct mlx5dv_flow_matcher *, mlx5dv_create_flow_matcher,
	(struct ibv_context *context, struct mlx5dv_flow_matcher_attr *matcher_attr))
DV_ERRNO(mlx5dv_destroy_flow_matcher, (struct mlx5dv_flow_matcher *matcher))
DV_NULL(struct ibv_flow *, mlx5dv_create_flow,
	(struct mlx5dv_flow_matcher *matcher, struct mlx5dv_flow_match_parameters *match_value,
	 size_t num_actions, struct mlx5dv_flow_action_attr actions_attr[]))
DV_NULL(struct ibv_flow_action *, mlx5dv_create_flow_action_esp,
	(struct ibv_context *ctx, struct ibv_flow_action_esp_attr *esp,
	 struct mlx5dv_flow_action_esp *mlx5_attr))
DV_NULL(struct ibv_flow_action *, mlx5dv_create_flow_action_modify_header,
	(struct ibv_context *ctx, size_t actions_sz, uint64_t actions[],
	 enum mlx5_ib_uapi_flow_table_type ft_type))
DV_NULL(struct ibv_flow_action *, mlx5dv_create_flow_action_packet_reformat,
	(struct ibv_context *ctx, size_t data_sz, void *data,
	 enum mlx5_ib_uapi_flow_action_packet_reformat_type reformat_type,
	 enum mlx5_ib_uapi_flow_table_type ft_type))
DV_NULL(struct mlx5dv_steering_anchor *, mlx5dv_create_steering_anchor,
	(struct ibv_context *context, struct mlx5dv_steering_anchor_attr *attr))
DV_ERRNO(mlx5dv_destroy_steering_anchor, (struct mlx5dv_steering_anchor *sa))

/* ---- DEVX: firmware commands and objects ---------------------------------- */
DV_ERRNO(mlx5dv_devx_general_cmd, (struct ibv_context *context, const void *in, size_t inlen,
				   void *out, size_t outlen))
DV_NULL(struct mlx5dv_devx_obj *, mlx5dv_devx_obj_create,
	(struct ibv_context *context, const void *in, size_t inlen, void *out, size_t outlen))
DV_ERRNO(mlx5dv_devx_obj_query, (struct mlx5dv_devx_obj *obj, const void *in, size_t inlen,
				 void *out, size_t outlen))
DV_ERRNO(mlx5dv_devx_obj_modify, (struct mlx5dv_devx_obj *obj, const void *in, size_t inlen,
				  void *out, size_t outlen))
DV_ERRNO(mlx5dv_devx_obj_destroy, (struct mlx5dv_devx_obj *obj))
DV_ERRNO(mlx5dv_devx_obj_query_async, (struct mlx5dv_devx_obj *obj, const void *in,
				       size_t inlen, size_t outlen, uint64_t wr_id,
				       struct mlx5dv_devx_cmd_comp *cmd_comp))
DV_ERRNO(mlx5dv_devx_query_eqn, (struct ibv_context *context, uint32_t vector, uint32_t *eqn))
DV_ERRNO(mlx5dv_devx_cq_query, (struct ibv_cq *cq, const void *in, size_t inlen,
				void *out, size_t outlen))
DV_ERRNO(mlx5dv_devx_cq_modify, (struct ibv_cq *cq, const void *in, size_t inlen,
				 void *out, size_t outlen))
DV_ERRNO(mlx5dv_devx_qp_query, (struct ibv_qp *qp, const void *in, size_t inlen,
				void *out, size_t outlen))
DV_ERRNO(mlx5dv_devx_qp_modify, (struct ibv_qp *qp, const void *in, size_t inlen,
				 void *out, size_t outlen))
DV_ERRNO(mlx5dv_devx_srq_query, (struct ibv_srq *srq, const void *in, size_t inlen,
				 void *out, size_t outlen))
DV_ERRNO(mlx5dv_devx_srq_modify, (struct ibv_srq *srq, const void *in, size_t inlen,
				  void *out, size_t outlen))
DV_ERRNO(mlx5dv_devx_wq_query, (struct ibv_wq *wq, const void *in, size_t inlen,
				void *out, size_t outlen))
DV_ERRNO(mlx5dv_devx_wq_modify, (struct ibv_wq *wq, const void *in, size_t inlen,
				 void *out, size_t outlen))
DV_ERRNO(mlx5dv_devx_ind_tbl_query, (struct ibv_rwq_ind_table *ind_tbl, const void *in,
				     size_t inlen, void *out, size_t outlen))
DV_ERRNO(mlx5dv_devx_ind_tbl_modify, (struct ibv_rwq_ind_table *ind_tbl, const void *in,
				      size_t inlen, void *out, size_t outlen))
DV_NULL(struct mlx5dv_devx_umem *, mlx5dv_devx_umem_reg,
	(struct ibv_context *ctx, void *addr, size_t size, uint32_t access))
DV_NULL(struct mlx5dv_devx_umem *, mlx5dv_devx_umem_reg_ex,
	(struct ibv_context *ctx, struct mlx5dv_devx_umem_in *umem_in))
DV_ERRNO(mlx5dv_devx_umem_dereg, (struct mlx5dv_devx_umem *umem))
DV_NULL(struct mlx5dv_devx_uar *, mlx5dv_devx_alloc_uar, (struct ibv_context *context,
							  uint32_t flags))
DV_NOTHING(mlx5dv_devx_free_uar, (struct mlx5dv_devx_uar *devx_uar))
DV_NULL(struct mlx5dv_devx_cmd_comp *, mlx5dv_devx_create_cmd_comp, (struct ibv_context *context))
DV_NOTHING(mlx5dv_devx_destroy_cmd_comp, (struct mlx5dv_devx_cmd_comp *cmd_comp))
DV_ERRNO(mlx5dv_devx_get_async_cmd_comp, (struct mlx5dv_devx_cmd_comp *cmd_comp,
					  struct mlx5_ib_uapi_devx_async_cmd_hdr *cmd_resp,
					  size_t cmd_resp_len))
DV_NULL(struct mlx5dv_devx_event_channel *, mlx5dv_devx_create_event_channel,
	(struct ibv_context *context, enum mlx5_ib_uapi_devx_create_event_channel_flags flags))
DV_NOTHING(mlx5dv_devx_destroy_event_channel,
	   (struct mlx5dv_devx_event_channel *event_channel))
DV_ERRNO(mlx5dv_devx_subscribe_devx_event,
	 (struct mlx5dv_devx_event_channel *event_channel, struct mlx5dv_devx_obj *obj,
	  uint16_t events_sz, uint16_t events_num[], uint64_t cookie))
DV_ERRNO(mlx5dv_devx_subscribe_devx_event_fd,
	 (struct mlx5dv_devx_event_channel *event_channel, int fd, struct mlx5dv_devx_obj *obj,
	  uint16_t event_num))
DV_MINUS1(ssize_t, mlx5dv_devx_get_event,
	  (struct mlx5dv_devx_event_channel *event_channel,
	   struct mlx5_ib_uapi_devx_async_event_hdr *event_data, size_t event_resp_len))
DV_NULL(struct mlx5dv_devx_eq *, mlx5dv_devx_create_eq,
	(struct ibv_context *ibctx, const void *in, size_t inlen, void *out, size_t outlen))
DV_ERRNO(mlx5dv_devx_destroy_eq, (struct mlx5dv_devx_eq *eq))
DV_NULL(struct mlx5dv_devx_msi_vector *, mlx5dv_devx_alloc_msi_vector,
	(struct ibv_context *ibctx))
DV_ERRNO(mlx5dv_devx_free_msi_vector, (struct mlx5dv_devx_msi_vector *msi))

/* ---- direct rules (mlx5dv_dr_*): domains, tables, matchers, rules ---------- */
DV_NULL(struct mlx5dv_dr_domain *, mlx5dv_dr_domain_create,
	(struct ibv_context *ctx, enum mlx5dv_dr_domain_type type))
DV_ERRNO(mlx5dv_dr_domain_sync, (struct mlx5dv_dr_domain *domain, uint32_t flags))
DV_ERRNO(mlx5dv_dr_domain_destroy, (struct mlx5dv_dr_domain *domain))
DV_NOTHING(mlx5dv_dr_domain_set_reclaim_device_memory,
	   (struct mlx5dv_dr_domain *dmn, bool enable))
DV_NOTHING(mlx5dv_dr_domain_allow_duplicate_rules, (struct mlx5dv_dr_domain *domain, bool allow))
DV_NULL(struct mlx5dv_dr_table *, mlx5dv_dr_table_create,
	(struct mlx5dv_dr_domain *domain, uint32_t level))
DV_ERRNO(mlx5dv_dr_table_destroy, (struct mlx5dv_dr_table *table))
DV_NULL(struct mlx5dv_dr_matcher *, mlx5dv_dr_matcher_create,
	(struct mlx5dv_dr_table *table, uint16_t priority, uint8_t match_criteria_enable,
	 struct mlx5dv_flow_match_parameters *mask))
DV_ERRNO(mlx5dv_dr_matcher_set_layout, (struct mlx5dv_dr_matcher *matcher,
					struct mlx5dv_dr_matcher_layout *layout))
DV_ERRNO(mlx5dv_dr_matcher_destroy, (struct mlx5dv_dr_matcher *matcher))
DV_NULL(struct mlx5dv_dr_rule *, mlx5dv_dr_rule_create,
	(struct mlx5dv_dr_matcher *matcher, struct mlx5dv_flow_match_parameters *value,
	 size_t num_actions, struct mlx5dv_dr_action *actions[]))
DV_ERRNO(mlx5dv_dr_rule_destroy, (struct mlx5dv_dr_rule *rule))
DV_ERRNO(mlx5dv_dr_aso_other_domain_link,
	 (struct mlx5dv_devx_obj *devx_obj, struct mlx5dv_dr_domain *peer_dmn,
	  struct mlx5dv_dr_domain *dmn, uint32_t flags, uint8_t return_reg_c))
DV_ERRNO(mlx5dv_dr_aso_other_domain_unlink, (struct mlx5dv_devx_obj *devx_obj,
					     struct mlx5dv_dr_domain *dmn))
DV_ERRNO(mlx5dv_dump_dr_domain, (FILE *fout, struct mlx5dv_dr_domain *domain))
DV_ERRNO(mlx5dv_dump_dr_table, (FILE *fout, struct mlx5dv_dr_table *table))
DV_ERRNO(mlx5dv_dump_dr_matcher, (FILE *fout, struct mlx5dv_dr_matcher *matcher))
DV_ERRNO(mlx5dv_dump_dr_rule, (FILE *fout, struct mlx5dv_dr_rule *rule))

/* ---- direct rules: actions ------------------------------------------------- */
DV_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_dest_table,
	(struct mlx5dv_dr_table *table))
DV_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_dest_root_table,
	(struct mlx5dv_dr_table *table, uint16_t priority))
DV_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_dest_ibv_qp, (struct ibv_qp *ibqp))
DV_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_dest_devx_tir,
	(struct mlx5dv_devx_obj *devx_obj))
DV_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_dest_vport,
	(struct mlx5dv_dr_domain *domain, uint32_t vport))
DV_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_dest_ib_port,
	(struct mlx5dv_dr_domain *domain, uint32_t ib_port))
DV_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_dest_array,
	(struct mlx5dv_dr_domain *domain, size_t num_dest,
	 struct mlx5dv_dr_action_dest_attr *dests[]))
DV_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_drop, (void))
DV_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_default_miss, (void))
DV_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_tag, (uint32_t tag_value))
DV_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_flow_counter,
	(struct mlx5dv_devx_obj *devx_obj, uint32_t offset))
DV_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_packet_reformat,
	(struct mlx5dv_dr_domain *domain, uint32_t flags,
	 enum mlx5_ib_uapi_flow_action_packet_reformat_type reformat_type,
	 size_t data_sz, void *data))
DV_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_modify_header,
	(struct mlx5dv_dr_domain *domain, uint32_t flags, size_t actions_sz, __be64 actions[]))
DV_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_flow_meter,
	(struct mlx5dv_dr_flow_meter_attr *attr))
DV_ERRNO(mlx5dv_dr_action_modify_flow_meter, (struct mlx5dv_dr_action *action,
					      struct mlx5dv_dr_flow_meter_attr *attr,
					      __be64 modify_field_select))
DV_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_flow_sampler,
	(struct mlx5dv_dr_flow_sampler_attr *attr))
DV_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_pop_vlan, (void))
DV_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_push_vlan,
	(struct mlx5dv_dr_domain *domain, __be32 vlan_hdr))
DV_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_aso,
	(struct mlx5dv_dr_domain *domain, struct mlx5dv_devx_obj *devx_obj, uint32_t offset,
	 uint32_t flags, uint8_t return_reg_c))
DV_ERRNO(mlx5dv_dr_action_modify_aso, (struct mlx5dv_dr_action *action, uint32_t offset,
				       uint32_t flags, uint8_t return_reg_c))
DV_ERRNO(mlx5dv_dr_action_destroy, (struct mlx5dv_dr_action *action))
