/* Memory-window operations on the key table: BIND_MW and LOCAL_INV run
 * inside the device when the requester reaches them; SEND_WITH_INV
 * invalidates at the responder. */
#include "core/context.h"
#include "core/mr.h"
#include "core/pd.h"
#include "core/qp.h"
#include "util/log.h"
#define MW_REMOTE_ACCESS (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)

static bool range_inside(uint64_t start, uint64_t size, uint64_t va, uint64_t len)
{
	return va >= start && va - start <= size && len <= size - (va - start);
}

/* Table write lock held. */
static void unbind(struct ur_mw *mw)
{
	if (mw->bound)
		__atomic_sub_fetch(&mw->mr->windows, 1, __ATOMIC_RELEASE);
	mw->bound = false;
	mw->mr = NULL;
}

static const char *bind_check(struct ur_qp *qp, struct ur_send_wqe *w, struct ur_mr **mrp)
{
	struct ur_mw *mw = w->mw;
	struct ibv_mw_bind_info *b = &w->bind;
	struct ur_mr *mr = b->mr ? to_umr(b->mr) : NULL;

	*mrp = mr;
	if (mw->pd != qp->pd)
		return "the window belongs to another PD";
	/* Type 1: the key ibv_bind_mw reserved (or the window's index). */
	if (mw->ibmw.type == IBV_MW_TYPE_2 && (w->rkey >> 8) != mw->ke.index)
		return "the new rkey does not keep the window's index bits";
	if (mw->ibmw.type == IBV_MW_TYPE_2 && mw->bound)
		return "a type 2 window must be invalidated before it is bound again";
	/* A zero-length bind leaves the window unbound (ibv_alloc_mw(3): "until
	 * invalidated by ibv_bind_mw with zero length for type 1"). */
	if (!b->length)
		return NULL;
	if (!mr)
		return "no memory region given";
	if (mr->pd != mw->pd)
		return "the region belongs to another PD";
	if (!(mr->access & IBV_ACCESS_MW_BIND))
		return "the region was not registered with IBV_ACCESS_MW_BIND";
	/* Local write means nothing for a window (it only grants remote
	 * access) and devices accept it: so does uroce. */
	if (b->mw_access_flags & ~(MW_REMOTE_ACCESS | IBV_ACCESS_LOCAL_WRITE))
		return "unsupported window access flags (zero-based windows are not offered)";
	if ((b->mw_access_flags & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & IBV_ACCESS_LOCAL_WRITE))
		return "remote write/atomic windows need a region with local write";
	if (!range_inside(mr->iova, mr->length, b->addr, b->length))
		return "the window is not inside the region";
	return NULL;
}

static enum ibv_wc_status do_bind(struct ur_qp *qp, struct ur_send_wqe *w)
{
	struct ur_mr_table *t = &qp->ctx->mrs;
	struct ur_mw *mw = w->mw;
	const char *why;
	struct ur_mr *mr;

	pthread_rwlock_wrlock(&t->lock);
	why = bind_check(qp, w, &mr);
	if (!why && ur_key_rebind(t, &mw->ke, w->rkey))
		why = "the new rkey is not one ibv_bind_mw gave";
	if (!why) {
		unbind(mw);
		if (mr && w->bind.length) {
			mw->mr = mr;
			mw->addr = w->bind.addr;
			mw->length = w->bind.length;
			mw->access = (int)(w->bind.mw_access_flags & MW_REMOTE_ACCESS);
			mw->qp = mw->ibmw.type == IBV_MW_TYPE_2 ? (const void *)qp : NULL;
			mw->bound = true;
			__atomic_add_fetch(&mr->windows, 1, __ATOMIC_RELEASE);
		}
		mw->ibmw.rkey = w->rkey;
	}
	pthread_rwlock_unlock(&t->lock);
	if (why) {
		ur_key_unreserve(t, &mw->ke, w->rkey);
		ur_dbg(ur_qp_dev(qp), "QP 0x%06x: bind of memory window 0x%x failed: %s",
		       ur_qp_num(qp), mw->ibmw.rkey, why);
		return IBV_WC_MW_BIND_ERR;
	}
	return IBV_WC_SUCCESS;
}

/* Invalidates the type 2 window rkey names; qp, when set, must be the QP
 * it was bound through (remote invalidation).  Table write lock taken. */
static const char *invalidate(struct ur_qp *qp, uint32_t rkey, const struct ur_qp *via)
{
	struct ur_mr_table *t = &qp->ctx->mrs;
	struct ur_key_entry *e;
	const char *why = NULL;
	struct ur_mw *mw;

	pthread_rwlock_wrlock(&t->lock);
	e = ur_key_lookup(t, rkey);
	if (!e) {
		why = "no such key";
	} else if (e->kind != UR_KEY_MW) {
		why = "memory regions cannot be invalidated (no fast-register MRs)";
	} else {
		mw = container_of(e, struct ur_mw, ke);
		if (mw->ibmw.type != IBV_MW_TYPE_2)
			why = "only type 2 windows can be invalidated";
		else if (mw->pd != qp->pd)
			why = "the window belongs to another PD";
		else if (via && mw->qp != (const void *)via)
			why = "the window is bound through another QP";
		else
			unbind(mw);
	}
	pthread_rwlock_unlock(&t->lock);
	return why;
}

enum ibv_wc_status ur_mw_local_op(struct ur_qp *qp, struct ur_send_wqe *w)
{
	const char *why;

	if (w->opcode == IBV_WR_BIND_MW)
		return do_bind(qp, w);
	why = invalidate(qp, w->imm, NULL);
	if (why) {
		ur_dbg(ur_qp_dev(qp), "QP 0x%06x: local invalidate of 0x%x failed: %s",
		       ur_qp_num(qp), w->imm, why);
		return IBV_WC_MW_BIND_ERR;
	}
	return IBV_WC_SUCCESS;
}

bool ur_mw_remote_invalidate(struct ur_qp *qp, uint32_t rkey)
{
	const char *why = invalidate(qp, rkey, qp);

	if (why)
		ur_dbg(ur_qp_dev(qp), "QP 0x%06x: SEND with invalidate of 0x%x: %s",
		       ur_qp_num(qp), rkey, why);
	return !why;
}
