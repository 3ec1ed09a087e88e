/* IBVERBS_PRIVATE_34: rdma-core's provider interface, present so that
 * provider libraries load, never used to drive a uroce device.
 *
 * Why these symbols exist at all: Debian's perftest links libmlx5 and libefa.
 * Their constructors call verbs_register_driver_34() and they import 62
 * PRIVATE_34 symbols; programs are linked with BIND_NOW, so every one of them
 * must resolve when the program starts or it does not start.  None of them is
 * reached for a uroce device: uroce loads no providers and matches no mlx5/efa
 * device, so the provider code that would call them never runs.
 *
 * So: verbs_register_driver_34() is a silent no-op; every command wrapper
 * fails with EOPNOTSUPP in the error convention of its rdma-core 44 contract
 * (all ibv_cmd_* and execute_ioctl return a positive errno value and set
 * errno, except ibv_cmd_poll_cq which returns -1; the post calls also set
 * *bad_wr; pointer returns are NULL with errno set) and logs once, at warn
 * level, which symbol was reached; the void setup helpers log once and do
 * nothing.  Two are pure helpers and are implemented for real:
 * __ioctl_final_num_attrs() and __verbs_log().
 *
 * ibv_query_gid_type() is PRIVATE_34 too, but ibv_devinfo calls it on uroce
 * devices: it has real semantics and lives with the GID table (gid.c).
 *
 * The prototypes are rdma-core 44's (libibverbs/driver.h, cmd_ioctl.h), which
 * Debian does not install; kernel command structures are only pointed to.
 * The stubs' prototypes are written once, by their UR_STUB() definitions.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include "util/compiler.h"
#include "util/log.h"
#include "verbs/stub.h"

/* Types of rdma-core's private headers, only ever pointed to. */
struct verbs_device_ops;
struct verbs_context_ops;
struct verbs_sysfs_dev;
struct verbs_xrcd;
struct verbs_mr;
struct verbs_cq;
struct verbs_srq;
struct verbs_qp;
struct verbs_dm;
struct verbs_counters;
struct verbs_flow_action;
/* Kernel write-command structures of rdma-core's kern-abi.h. */
struct ibv_get_context;
struct ibv_query_port;
struct ibv_alloc_pd;
struct ibv_open_xrcd;
struct ibv_reg_mr;
struct ibv_rereg_mr;
struct ibv_alloc_mw;
struct ibv_create_cq;
struct ibv_create_cq_ex;
struct ibv_resize_cq;
struct ibv_modify_cq;
struct ibv_create_srq;
struct ibv_create_xsrq;
struct ibv_modify_srq;
struct ibv_query_srq;
struct ibv_create_qp;
struct ibv_create_qp_ex;
struct ibv_open_qp;
struct ibv_query_qp;
struct ibv_modify_qp;
struct ibv_modify_qp_ex;
struct ibv_create_wq;
struct ibv_modify_wq;

/* rdma-core 44's ioctl command buffer (cmd_ioctl.h): a linked list of
 * attribute blocks.  Only __ioctl_final_num_attrs() looks inside. */
struct ibv_command_buffer {
	struct ibv_command_buffer *next;
	struct ib_uverbs_attr *next_attr;
	struct ib_uverbs_attr *last_attr;
	uint8_t uhw_in_idx;
	uint8_t uhw_out_idx;
	uint8_t uhw_in_headroom_dwords;
	uint8_t uhw_out_headroom_dwords;
	uint8_t buffer_error : 1;
	uint8_t fallback_require_ex : 1;
	uint8_t fallback_ioctl_only : 1;
	struct ib_uverbs_ioctl_hdr hdr;
};
_Static_assert(sizeof(void *) != 8 ||
	       offsetof(struct ibv_command_buffer, hdr) == 32,
	       "ibv_command_buffer layout differs from rdma-core 44");

/* --- prototypes of what is implemented (rdma-core 44) ------------------- */

void verbs_register_driver_34(const struct verbs_device_ops *ops);
void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt,
		 ...) __attribute__((format(printf, 3, 4)));
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs,
				     struct ibv_command_buffer *link);
extern bool verbs_allow_disassociate_destroy;

/* --- helpers ------------------------------------------------------------ */

/* Log, once per entry point, that provider code reached it. */
#define PRIV_REACHED()                                                      \
	do {                                                                \
		static bool _warned;                                        \
		if (!__atomic_exchange_n(&_warned, true, __ATOMIC_RELAXED)) \
			ur_warn(NULL, "rdma-core provider entry point "     \
				"called, but uroce runs no providers: "     \
				"not supported");                           \
	} while (0)

/* The conventions of rdma-core 44's contracts (verbs/stub.h), each logging
 * once: an int that is a positive errno value, -1, NULL, nothing; a post
 * call also names its first work request as not posted. */
#define PRIV_ERRNO(name, params) UR_STUB(PRIV_REACHED(), int, name, params, EOPNOTSUPP)
#define PRIV_MINUS1(name, params) UR_STUB(PRIV_REACHED(), int, name, params, -1)
#define PRIV_NULL(type, name, params) UR_STUB(PRIV_REACHED(), type, name, params, NULL)
#define PRIV_VOID(name, params) UR_STUB_VOID(PRIV_REACHED(), name, params)
#define PRIV_POST(name, params) UR_STUB(PRIV_BAD_WR(), int, name, params, EOPNOTSUPP)
#define PRIV_BAD_WR()                                                       \
	do {                                                                \
		if (bad_wr)                                                 \
			*bad_wr = wr;                                       \
		PRIV_REACHED();                                             \
	} while (0)

/* --- registration, logging, ioctl plumbing ------------------------------ */

/* Every provider library's constructor calls this on load.  uroce matches
 * devices itself, so there is nothing to register; loading a provider is
 * normal (perftest links libmlx5 and libefa), hence no warning. */
UR_EXPORT void verbs_register_driver_34(const struct verbs_device_ops *ops)
{
	ur_dbg(NULL, "ignoring provider registration");
}

/* rdma-core's provider log sink: messages at or below $VERBS_LOG_LEVEL
 * (0 none, 1 err, 2 warn, 3 info, 4 debug; default 0) are written verbatim
 * (the verbs_log() macro has already prefixed "dev: func:line: ") to the file
 * named by $VERBS_LOG_FILE; without that file, nothing is written, as in
 * rdma-core's release builds. */
static uint32_t verbs_log_level;
static FILE *verbs_log_fp;
static pthread_once_t verbs_log_once = PTHREAD_ONCE_INIT;

static void verbs_log_setup(void)
{
	const char *level = getenv("VERBS_LOG_LEVEL");
	const char *file = getenv("VERBS_LOG_FILE");

	if (level)
		verbs_log_level = (uint32_t)strtoul(level, NULL, 0);
	if (!verbs_log_level)
		return;
	if (file)
		verbs_log_fp = fopen(file, "ae");
	if (!verbs_log_fp)
		verbs_log_level = 0;
}

UR_EXPORT void __verbs_log(struct verbs_context *ctx, uint32_t level,
			   const char *fmt, ...)
{
	int saved_errno = errno;
	va_list ap;

	pthread_once(&verbs_log_once, verbs_log_setup);
	if (level <= verbs_log_level && verbs_log_fp) {
		va_start(ap, fmt);
		vfprintf(verbs_log_fp, fmt, ap);
		va_end(ap);
	}
	errno = saved_errno;
}

/* Pure arithmetic on the caller's buffers, so computed for real: the
 * attribute count of a command plus that of every linked block. */
UR_EXPORT unsigned int __ioctl_final_num_attrs(unsigned int num_attrs,
					       struct ibv_command_buffer *link)
{
	for (; link; link = link->next)
		num_attrs += (unsigned int)(link->next_attr - link->hdr.attrs);
	return num_attrs;
}

PRIV_ERRNO(execute_ioctl, (struct ibv_context *context, struct ibv_command_buffer *cmd))

/* rdma-core reads $RDMAV_ALLOW_DISASSOC_DESTROY into this flag, which lets a
 * provider treat destroy calls as successful after the device went away.
 * A data object (1 byte): libmlx5 imports it.  uroce devices are never
 * disassociated, so it stays false. */
UR_EXPORT bool verbs_allow_disassociate_destroy;

/* --- context and device setup ------------------------------------------- */

PRIV_NULL(void *, _verbs_init_and_alloc_context, (struct ibv_device *device, int cmd_fd,
						  size_t alloc_size,
						  struct verbs_context *context_offset,
						  uint32_t driver_id))

PRIV_VOID(verbs_uninit_context, (struct verbs_context *context))

PRIV_VOID(verbs_set_ops, (struct verbs_context *vctx, const struct verbs_context_ops *ops))

PRIV_VOID(verbs_init_cq, (struct ibv_cq *cq, struct ibv_context *context,
			  struct ibv_comp_channel *channel, void *cq_context))

PRIV_NULL(struct ibv_context *, verbs_open_device, (struct ibv_device *device,
						    void *private_data))

/* Reads a file of a provider device's sysfs directory: -1 with errno. */
PRIV_MINUS1(ibv_read_ibdev_sysfs_file, (char *buf, size_t size,
					struct verbs_sysfs_dev *sysfs_dev, const char *fnfmt,
					...))

/* --- command wrappers --------------------------------------------------- */

PRIV_ERRNO(ibv_cmd_get_context, (struct verbs_context *context, struct ibv_get_context *cmd,
				 size_t cmd_size, struct ib_uverbs_get_context_resp *resp,
				 size_t resp_size))

PRIV_ERRNO(ibv_cmd_query_context, (struct ibv_context *ctx, struct ibv_command_buffer *driver))

PRIV_ERRNO(ibv_cmd_create_flow_action_esp, (struct ibv_context *ctx,
					    struct ibv_flow_action_esp_attr *attr,
					    struct verbs_flow_action *flow_action,
					    struct ibv_command_buffer *driver))

PRIV_ERRNO(ibv_cmd_modify_flow_action_esp, (struct verbs_flow_action *flow_action,
					    struct ibv_flow_action_esp_attr *attr,
					    struct ibv_command_buffer *driver))

PRIV_ERRNO(ibv_cmd_query_device_any, (struct ibv_context *context,
				      const struct ibv_query_device_ex_input *input,
				      struct ibv_device_attr_ex *attr, size_t attr_size,
				      struct ib_uverbs_ex_query_device_resp *resp,
				      size_t *resp_size))

PRIV_ERRNO(ibv_cmd_query_port, (struct ibv_context *context, uint8_t port_num,
				struct ibv_port_attr *port_attr, struct ibv_query_port *cmd,
				size_t cmd_size))

PRIV_ERRNO(ibv_cmd_alloc_pd, (struct ibv_context *context, struct ibv_pd *pd,
			      struct ibv_alloc_pd *cmd, size_t cmd_size,
			      struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size))

PRIV_ERRNO(ibv_cmd_dealloc_pd, (struct ibv_pd *pd))

PRIV_ERRNO(ibv_cmd_open_xrcd, (struct ibv_context *context, struct verbs_xrcd *xrcd,
			       int vxrcd_size, struct ibv_xrcd_init_attr *attr,
			       struct ibv_open_xrcd *cmd, size_t cmd_size,
			       struct ib_uverbs_open_xrcd_resp *resp, size_t resp_size))

PRIV_ERRNO(ibv_cmd_close_xrcd, (struct verbs_xrcd *xrcd))

PRIV_ERRNO(ibv_cmd_reg_mr, (struct ibv_pd *pd, void *addr, size_t length, uint64_t hca_va,
			    int access, struct verbs_mr *vmr, struct ibv_reg_mr *cmd,
			    size_t cmd_size, struct ib_uverbs_reg_mr_resp *resp,
			    size_t resp_size))

PRIV_ERRNO(ibv_cmd_rereg_mr, (struct verbs_mr *vmr, uint32_t flags, void *addr, size_t length,
			      uint64_t hca_va, int access, struct ibv_pd *pd,
			      struct ibv_rereg_mr *cmd, size_t cmd_sz,
			      struct ib_uverbs_rereg_mr_resp *resp, size_t resp_sz))

PRIV_ERRNO(ibv_cmd_dereg_mr, (struct verbs_mr *vmr))

PRIV_ERRNO(ibv_cmd_query_mr, (struct ibv_pd *pd, struct verbs_mr *vmr, uint32_t mr_handle))

PRIV_ERRNO(ibv_cmd_advise_mr, (struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			       uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge))

PRIV_ERRNO(ibv_cmd_reg_dmabuf_mr, (struct ibv_pd *pd, uint64_t offset, size_t length,
				   uint64_t iova, int fd, int access, struct verbs_mr *vmr))

PRIV_ERRNO(ibv_cmd_alloc_mw, (struct ibv_pd *pd, enum ibv_mw_type type, struct ibv_mw *mw,
			      struct ibv_alloc_mw *cmd, size_t cmd_size,
			      struct ib_uverbs_alloc_mw_resp *resp, size_t resp_size))

PRIV_ERRNO(ibv_cmd_dealloc_mw, (struct ibv_mw *mw))

PRIV_ERRNO(ibv_cmd_create_cq, (struct ibv_context *context, int cqe,
			       struct ibv_comp_channel *channel, int comp_vector,
			       struct ibv_cq *cq, struct ibv_create_cq *cmd, size_t cmd_size,
			       struct ib_uverbs_create_cq_resp *resp, size_t resp_size))

PRIV_ERRNO(ibv_cmd_create_cq_ex, (struct ibv_context *context,
				  const struct ibv_cq_init_attr_ex *cq_attr, struct verbs_cq *cq,
				  struct ibv_create_cq_ex *cmd, size_t cmd_size,
				  struct ib_uverbs_ex_create_cq_resp *resp, size_t resp_size,
				  uint32_t cmd_flags))

/* The one command whose failure is -1 (it returns a count otherwise). */
PRIV_MINUS1(ibv_cmd_poll_cq, (struct ibv_cq *cq, int ne, struct ibv_wc *wc))

PRIV_ERRNO(ibv_cmd_req_notify_cq, (struct ibv_cq *cq, int solicited_only))

PRIV_ERRNO(ibv_cmd_resize_cq, (struct ibv_cq *cq, int cqe, struct ibv_resize_cq *cmd,
			       size_t cmd_size, struct ib_uverbs_resize_cq_resp *resp,
			       size_t resp_size))

PRIV_ERRNO(ibv_cmd_destroy_cq, (struct ibv_cq *cq))

PRIV_ERRNO(ibv_cmd_modify_cq, (struct ibv_cq *cq, struct ibv_modify_cq_attr *attr,
			       struct ibv_modify_cq *cmd, size_t cmd_size))

PRIV_ERRNO(ibv_cmd_create_srq, (struct ibv_pd *pd, struct ibv_srq *srq,
				struct ibv_srq_init_attr *attr, struct ibv_create_srq *cmd,
				size_t cmd_size, struct ib_uverbs_create_srq_resp *resp,
				size_t resp_size))

PRIV_ERRNO(ibv_cmd_create_srq_ex, (struct ibv_context *context, struct verbs_srq *srq,
				   struct ibv_srq_init_attr_ex *attr_ex,
				   struct ibv_create_xsrq *cmd, size_t cmd_size,
				   struct ib_uverbs_create_srq_resp *resp, size_t resp_size))

PRIV_ERRNO(ibv_cmd_modify_srq, (struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
				int srq_attr_mask, struct ibv_modify_srq *cmd, size_t cmd_size))

PRIV_ERRNO(ibv_cmd_query_srq, (struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
			       struct ibv_query_srq *cmd, size_t cmd_size))

PRIV_ERRNO(ibv_cmd_destroy_srq, (struct ibv_srq *srq))

PRIV_ERRNO(ibv_cmd_create_qp, (struct ibv_pd *pd, struct ibv_qp *qp,
			       struct ibv_qp_init_attr *attr, struct ibv_create_qp *cmd,
			       size_t cmd_size, struct ib_uverbs_create_qp_resp *resp,
			       size_t resp_size))

PRIV_ERRNO(ibv_cmd_create_qp_ex, (struct ibv_context *context, struct verbs_qp *qp,
				  struct ibv_qp_init_attr_ex *attr_ex, struct ibv_create_qp *cmd,
				  size_t cmd_size, struct ib_uverbs_create_qp_resp *resp,
				  size_t resp_size))

PRIV_ERRNO(ibv_cmd_create_qp_ex2, (struct ibv_context *context, struct verbs_qp *qp,
				   struct ibv_qp_init_attr_ex *qp_attr,
				   struct ibv_create_qp_ex *cmd, size_t cmd_size,
				   struct ib_uverbs_ex_create_qp_resp *resp, size_t resp_size))

PRIV_ERRNO(ibv_cmd_open_qp, (struct ibv_context *context, struct verbs_qp *qp, int vqp_sz,
			     struct ibv_qp_open_attr *attr, struct ibv_open_qp *cmd,
			     size_t cmd_size, struct ib_uverbs_create_qp_resp *resp,
			     size_t resp_size))

PRIV_ERRNO(ibv_cmd_query_qp, (struct ibv_qp *qp, struct ibv_qp_attr *qp_attr, int attr_mask,
			      struct ibv_qp_init_attr *qp_init_attr, struct ibv_query_qp *cmd,
			      size_t cmd_size))

PRIV_ERRNO(ibv_cmd_modify_qp, (struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
			       struct ibv_modify_qp *cmd, size_t cmd_size))

PRIV_ERRNO(ibv_cmd_modify_qp_ex, (struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
				  struct ibv_modify_qp_ex *cmd, size_t cmd_size,
				  struct ib_uverbs_ex_modify_qp_resp *resp, size_t resp_size))

PRIV_ERRNO(ibv_cmd_destroy_qp, (struct ibv_qp *qp))

/* The post calls also name the first work request not posted. */
PRIV_POST(ibv_cmd_post_send, (struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			      struct ibv_send_wr **bad_wr))

PRIV_POST(ibv_cmd_post_recv, (struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
			      struct ibv_recv_wr **bad_wr))

PRIV_POST(ibv_cmd_post_srq_recv, (struct ibv_srq *srq, struct ibv_recv_wr *wr,
				  struct ibv_recv_wr **bad_wr))

PRIV_ERRNO(ibv_cmd_create_ah, (struct ibv_pd *pd, struct ibv_ah *ah, struct ibv_ah_attr *attr,
			       struct ib_uverbs_create_ah_resp *resp, size_t resp_size))

PRIV_ERRNO(ibv_cmd_destroy_ah, (struct ibv_ah *ah))

PRIV_ERRNO(ibv_cmd_attach_mcast, (struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid))

PRIV_ERRNO(ibv_cmd_detach_mcast, (struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid))

PRIV_ERRNO(ibv_cmd_create_flow, (struct ibv_qp *qp, struct ibv_flow *flow_id,
				 struct ibv_flow_attr *flow_attr, void *ucmd, size_t ucmd_size))

PRIV_ERRNO(ibv_cmd_destroy_flow, (struct ibv_flow *flow_id))

PRIV_ERRNO(ibv_cmd_create_wq, (struct ibv_context *context,
			       struct ibv_wq_init_attr *wq_init_attr, struct ibv_wq *wq,
			       struct ibv_create_wq *cmd, size_t cmd_size,
			       struct ib_uverbs_ex_create_wq_resp *resp, size_t resp_size))

PRIV_ERRNO(ibv_cmd_destroy_flow_action, (struct verbs_flow_action *action))

PRIV_ERRNO(ibv_cmd_modify_wq, (struct ibv_wq *wq, struct ibv_wq_attr *attr,
			       struct ibv_modify_wq *cmd, size_t cmd_size))

PRIV_ERRNO(ibv_cmd_destroy_wq, (struct ibv_wq *wq))

PRIV_ERRNO(ibv_cmd_create_rwq_ind_table, (struct ibv_context *context,
					  struct ibv_rwq_ind_table_init_attr *init_attr,
					  struct ibv_rwq_ind_table *rwq_ind_table,
					  struct ib_uverbs_ex_create_rwq_ind_table_resp *resp,
					  size_t resp_size))

PRIV_ERRNO(ibv_cmd_destroy_rwq_ind_table, (struct ibv_rwq_ind_table *rwq_ind_table))

PRIV_ERRNO(ibv_cmd_create_counters, (struct ibv_context *context,
				     struct ibv_counters_init_attr *init_attr,
				     struct verbs_counters *vcounters,
				     struct ibv_command_buffer *link))

PRIV_ERRNO(ibv_cmd_destroy_counters, (struct verbs_counters *vcounters))

PRIV_ERRNO(ibv_cmd_read_counters, (struct verbs_counters *vcounters, uint64_t *counters_value,
				   uint32_t ncounters, uint32_t flags,
				   struct ibv_command_buffer *link))

PRIV_ERRNO(ibv_cmd_alloc_dm, (struct ibv_context *ctx, const struct ibv_alloc_dm_attr *dm_attr,
			      struct verbs_dm *dm, struct ibv_command_buffer *link))

PRIV_ERRNO(ibv_cmd_free_dm, (struct verbs_dm *dm))

PRIV_ERRNO(ibv_cmd_reg_dm_mr, (struct ibv_pd *pd, struct verbs_dm *dm, uint64_t offset,
			       size_t length, unsigned int access, struct verbs_mr *vmr,
			       struct ibv_command_buffer *link))
