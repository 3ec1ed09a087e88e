/* The private exports librdmacm.so.1 uses (cm_abi.h): QP1 and the host's
 * CM directory, reached through the context's stack.  The CM's comm IDs and
 * listens are the process's, and their calls carry no context: they reach
 * the host registry through the process object (cm_registry()). */
#include "verbs/cm_abi.h"

#include <errno.h>
#include <signal.h>

#include "core/context.h"
#include "core/process.h"
#include "host/netdev.h"
#include "host/registry.h"
#include "core/qp.h"
#include "rel/gsi.h"
#include "rel/progress.h"
#include "rel/qp_error.h"
#include "rel/res.h"
#include "rel/stack.h"
#include "util/compiler.h"

UR_EXPORT int uroce_cm_abi_version(void)
{
	return UROCE_CM_ABI_VERSION;
}

UR_EXPORT int uroce_gsi_attach(struct ibv_context *ibctx, uroce_gsi_rx_fn fn, void *arg)
{
	struct ur_context *ctx = to_uctx(ibctx);

	if (!ctx->stack)
		return ctx->stack_err ? ctx->stack_err : -ENODEV;
	return ur_gsi_attach(ctx->stack, fn, arg);
}

UR_EXPORT int uroce_res_cm_attach(struct ibv_context *ibctx, uroce_res_cm_fn fn, void *arg)
{
	struct ur_context *ctx = to_uctx(ibctx);

	if (!ctx->stack)
		return ctx->stack_err ? ctx->stack_err : -ENODEV;
	ur_res_attach_cm(ctx->stack, fn, arg);
	return 0;
}

UR_EXPORT int uroce_gsi_send(struct ibv_context *ibctx, const struct ibv_ah_attr *ah,
			     const void *mad, size_t len)
{
	return ur_gsi_send(to_uctx(ibctx), ah, mad, len);
}

/* The process's view of the host registry, for the calls below: the CM
 * asks for them without a context (a comm ID or a listen is the
 * process's, not a device's). */
static struct ur_registry *cm_registry(void)
{
	return &ur_process()->registry;
}

UR_EXPORT int uroce_cm_id_alloc(uint32_t *num)
{
	return ur_registry_alloc_qpn(cm_registry(), num);
}

UR_EXPORT void uroce_cm_id_free(uint32_t num)
{
	ur_registry_free_qpn(cm_registry(), num);
}

UR_EXPORT int uroce_cm_listen(uint64_t service_id, int on)
{
	if (!on) {
		ur_registry_cm_unlisten(cm_registry(), service_id);
		return 0;
	}
	return ur_registry_cm_listen(cm_registry(), service_id);
}

UR_EXPORT int uroce_cm_listen_check(uint64_t service_id)
{
	struct ur_reg_owner o;

	if (ur_registry_cm_listener(cm_registry(), service_id, &o) == 0 && !o.self)
		return -EADDRINUSE;
	return 0;
}

UR_EXPORT int uroce_cm_peer_gone(const union ibv_gid *gid, uint32_t comm_id)
{
	int saved = errno, gone = 0;
	struct ur_reg_owner o;

	if (ur_gid_is_local_addr(gid)) {
		/* A comm ID's low 24 bits are a number its process holds in
		 * the registry: nobody holding it, or a dead holder, is gone. */
		if (ur_registry_lookup(cm_registry(), comm_id & 0xffffff, &o))
			gone = 1;
		else if (!o.self)
			gone = kill(o.pid, 0) && errno == ESRCH;
	}
	errno = saved;
	return gone;
}

/* At most this long for what peers' rings hold before a QP is ended. */
#define UR_SETTLE_NS (5 * 1000 * 1000ull)

UR_EXPORT int uroce_qp_to_error(struct ibv_context *ibctx, uint32_t qpn)
{
	struct ur_stack *s = to_uctx(ibctx)->stack;
	struct ur_qp *qp;

	if (!s)
		return -ENODEV;
	/* The peer's last ACKs may wait in a ring behind the DREQ that ends
	 * the QP (it came by UDP): a send they complete must not be flushed. */
	ur_progress_settle(s, UR_SETTLE_NS);
	qp = ur_stack_lock_qp(s, qpn);
	if (!qp)
		return -ENOENT;
	if (!qp->dying && qp->state != IBV_QPS_RESET && qp->state != IBV_QPS_ERR)
		ur_qp_to_error(qp, false);
	pthread_mutex_unlock(&qp->lock);
	return 0;
}
