/* Protection domains and memory regions at the ABI boundary. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/context.h"
#include "core/mr.h"
#include "core/pd.h"
#include "util/log.h"
#include "verbs/stub.h"
#include "verbs/verbs_priv.h"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

UR_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct ur_pd *pd = NULL;
	int ret = ur_pd_alloc(to_uctx(context), &pd);

	return ur_ret_obj(ret, ret ? NULL : &pd->ibpd);
}

UR_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	if (ur_verbs_is_parent_domain(pd))
		return ur_verbs_dealloc_parent_domain(pd);
	return ur_ret_errno(ur_pd_dealloc(to_upd(pd)));
}

#define UR_MR_ACCESS_KNOWN                                                  \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ZERO_BASED | IBV_ACCESS_HUGETLB |   \
	 IBV_ACCESS_RELAXED_ORDERING | IBV_ACCESS_MW_BIND | IBV_ACCESS_ON_DEMAND)

/* A range whose end wraps past 2^64 is refused with EINVAL, as the kernel
 * refuses it: otherwise the page count below wraps too, a few pages pass
 * the check, and the region's bounds would cover the whole address space. */
static bool wraps(uint64_t start, size_t len)
{
	return len && start + (len - 1) < start;
}

/* Fails with EFAULT, as pinning would, if part of the range is unmapped. */
static int check_mapped(const void *addr, size_t len)
{
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)addr & ~(uintptr_t)(page - 1);
	size_t span, npages;
	unsigned char *vec;
	int ret = 0;

	if (!len)
		return 0;
	if (wraps((uintptr_t)addr, len) || wraps(start, (uintptr_t)addr - start + len + (size_t)page - 1))
		return -EINVAL;
	span = (uintptr_t)addr + len - start;
	npages = (span + (size_t)page - 1) / (size_t)page;
	vec = malloc(npages);
	if (!vec)
		return -ENOMEM;
	if (mincore((void *)start, span, vec))
		ret = errno == ENOMEM ? -EFAULT : -errno;
	free(vec);
	return ret;
}

static int check_access(struct ur_context *ctx, unsigned int access)
{
	if (access & ~(unsigned)UR_MR_ACCESS_KNOWN) {
		ur_err(ctx->dev->ibdev.name, "memory region access flags 0x%x are not supported "
		       "(ODP, MW binding, ...)", access & ~(unsigned)UR_MR_ACCESS_KNOWN);
		return -EOPNOTSUPP;
	}
	/* IBA 10.6.3.1: remote write or atomic needs local write. */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return 0;
}

struct ibv_mr *ur_verbs_reg_range(struct ibv_pd *ibpd, void *addr, size_t length, uint64_t iova,
				  unsigned int access)
{
	struct ur_pd *pd = to_upd(ibpd);
	struct ur_context *ctx = pd->ctx;
	struct ur_mr *mr;
	bool implicit;
	int ret;

	access &= ~(unsigned)IBV_ACCESS_OPTIONAL_RANGE;
	ret = check_access(ctx, access);
	/* On-demand paging: uroce pins nothing anyway, so an ODP region is an
	 * ordinary one whose pages fault in when touched.  Implicit ODP (NULL,
	 * SIZE_MAX) is the whole address space, zero-based on addresses: a
	 * peer may name any address, so each access is checked against the
	 * process's mappings (core/mr.c), never just touched. */
	implicit = (access & IBV_ACCESS_ON_DEMAND) && !addr && length == SIZE_MAX;
	if (!ret && implicit && (access & IBV_ACCESS_ZERO_BASED))
		ret = -EINVAL;
	if (!ret && !implicit && !(access & IBV_ACCESS_ZERO_BASED) && wraps(iova, length))
		ret = -EINVAL;
	if (!ret && !implicit)
		ret = check_mapped(addr, length);
	if (ret)
		return ur_ret_obj(ret, NULL);
	ret = ur_mr_create(ibpd, addr, length, iova, access, implicit, &mr);
	if (ret)
		return ur_ret_obj(ret, NULL);
	return &mr->ibmr;
}

UR_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ur_verbs_reg_range(pd, addr, length, (uintptr_t)addr, (unsigned)access);
}

UR_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
					 uint64_t iova, int access)
{
	return ur_verbs_reg_range(pd, addr, length, iova, (unsigned)access);
}

UR_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
					  uint64_t iova, unsigned int access)
{
	return ur_verbs_reg_range(pd, addr, length, iova, access);
}

/* A dma-buf is device memory the kernel maps for DMA: nothing a user-space
 * device can reach. */
UR_STUB(UR_STUB_QUIET, struct ibv_mr *, ibv_reg_dmabuf_mr,
	(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access),
	NULL)

UR_EXPORT int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct ur_mr *mr = to_umr(ibmr);
	struct ur_context *ctx = to_uctx(ibmr->context);

	if (__atomic_load_n(&mr->windows, __ATOMIC_ACQUIRE))
		return EBUSY;    /* memory windows are bound to it */
	ur_mr_destroy(ctx, mr);
	return 0;
}

UR_EXPORT int ibv_rereg_mr(struct ibv_mr *ibmr, int flags, struct ibv_pd *ibpd, void *addr,
			   size_t length, int access)
{
	struct ur_mr *mr = to_umr(ibmr);
	struct ur_context *ctx = to_uctx(ibmr->context);
	int ret = 0;

	if (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED || !flags) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	if ((flags & IBV_REREG_MR_CHANGE_ACCESS) && (ret = check_access(ctx, (unsigned)access))) {
		errno = -ret;
		return IBV_REREG_MR_ERR_INPUT;
	}
	if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && mr->dm_users) {
		errno = EINVAL;      /* a device memory region stays where it is */
		return IBV_REREG_MR_ERR_INPUT;
	}
	if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (ret = check_mapped(addr, length))) {
		errno = -ret;
		return IBV_REREG_MR_ERR_INPUT;
	}
	ur_mr_revoke(ctx, mr);
	pthread_rwlock_wrlock(&ctx->mrs.lock);
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		mr->host = addr;
		mr->iova = (mr->access & IBV_ACCESS_ZERO_BASED) ? 0 : (uintptr_t)addr;
		mr->length = length;
		mr->implicit = false;      /* a range of its own now */
		ibmr->addr = addr;
		ibmr->length = length;
	}
	if (flags & IBV_REREG_MR_CHANGE_PD) {
		atomic_fetch_sub(&mr->pd->users, 1);
		mr->pd = to_upd(ibpd);
		ibmr->pd = ibpd;
		atomic_fetch_add(&mr->pd->users, 1);
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		mr->access = access;
	pthread_rwlock_unlock(&ctx->mrs.lock);
	ur_mr_expose(ctx, mr);
	return 0;
}

/* Sharing objects between processes through a kernel uverbs file. */
UR_STUB(UR_STUB_QUIET, struct ibv_pd *, ibv_import_pd,
	(struct ibv_context *context, uint32_t pd_handle), NULL)
UR_STUB_VOID(UR_STUB_QUIET, ibv_unimport_pd, (struct ibv_pd *pd))
UR_STUB(UR_STUB_QUIET, struct ibv_mr *, ibv_import_mr, (struct ibv_pd *pd, uint32_t mr_handle),
	NULL)
UR_STUB_VOID(UR_STUB_QUIET, ibv_unimport_mr, (struct ibv_mr *mr))
UR_STUB(UR_STUB_QUIET, struct ibv_dm *, ibv_import_dm,
	(struct ibv_context *context, uint32_t dm_handle), NULL)
UR_STUB_VOID(UR_STUB_QUIET, ibv_unimport_dm, (struct ibv_dm *dm))

/* ---- memory windows ----------------------------------------------------- */

struct ibv_mw *ur_verbs_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	struct ur_pd *pd = to_upd(ibpd);
	struct ur_mw *mw;
	int ret;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)
		return ur_ret_obj(-EINVAL, NULL);
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return ur_ret_obj(-ENOMEM, NULL);
	mw->pd = pd;
	mw->ke.kind = UR_KEY_MW;
	ret = ur_mr_table_insert(&pd->ctx->mrs, &mw->ke);
	if (ret) {
		free(mw);
		return ur_ret_obj(ret, NULL);
	}
	mw->ibmw.context = ibpd->context;
	mw->ibmw.pd = ibpd;
	mw->ibmw.rkey = mw->ke.key;
	mw->ibmw.handle = mw->ke.index;
	mw->ibmw.type = type;
	atomic_fetch_add(&pd->users, 1);
	return &mw->ibmw;
}

int ur_verbs_dealloc_mw(struct ibv_mw *ibmw)
{
	struct ur_mw *mw = to_umw(ibmw);
	struct ur_context *ctx = mw->pd->ctx;

	pthread_rwlock_wrlock(&ctx->mrs.lock);
	if (mw->bound)
		__atomic_sub_fetch(&mw->mr->windows, 1, __ATOMIC_RELEASE);
	mw->bound = false;
	pthread_rwlock_unlock(&ctx->mrs.lock);
	ur_mr_table_remove(&ctx->mrs, &mw->ke);
	atomic_fetch_sub(&mw->pd->users, 1);
	free(mw);
	return 0;
}

/* Type 1 binds go through the send queue like every bind, so that they are
 * ordered with the QP's other work requests.  Each gets a whole new key,
 * reserved now and valid once the bind has run. */
int ur_verbs_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
	struct ur_mr_table *t = &to_umw(mw)->pd->ctx->mrs;
	struct ibv_send_wr wr = {
		.wr_id = bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = bind->send_flags,
	}, *bad;
	int ret;

	if (mw->type != IBV_MW_TYPE_1)
		return EINVAL;     /* type 2 windows are bound with IBV_WR_BIND_MW */
	ret = ur_key_reserve(t, &to_umw(mw)->ke, &wr.bind_mw.rkey);
	if (ret)
		return -ret;
	wr.bind_mw.mw = mw;
	wr.bind_mw.bind_info = bind->bind_info;
	ret = qp->context->ops.post_send(qp, &wr, &bad);
	if (ret) {
		ur_key_unreserve(t, &to_umw(mw)->ke, wr.bind_mw.rkey);
		return ret;
	}
	mw->rkey = wr.bind_mw.rkey;
	return 0;
}

/* ibv_advise_mr: the ranges must lie in regions of pd; a prefetch touches
 * their pages now (PREFETCH_NO_FAULT: only what is already there, which is
 * nothing to do).  Synchronous: FLUSH is what it always does. */
int ur_verbs_advise_mr(struct ibv_pd *ibpd, enum ibv_advise_mr_advice advice, uint32_t flags,
		       struct ibv_sge *sg_list, uint32_t num_sges)
{
	struct ur_pd *pd = to_upd(ibpd);
	struct ur_mr_table *t = &pd->ctx->mrs;
	long page = sysconf(_SC_PAGESIZE);
	int ret = 0;

	if (advice > IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT ||
	    (flags & ~(uint32_t)IBV_ADVISE_MR_FLAG_FLUSH) || !num_sges || !sg_list)
		return EINVAL;
	ur_mr_read_lock(t);
	for (uint32_t i = 0; i < num_sges && !ret; i++) {
		struct ur_mr *mr = ur_mr_lookup(t, sg_list[i].lkey);
		volatile const uint8_t *p;

		if (!mr || mr->pd != pd ||
		    !(p = ur_mr_check(t, sg_list[i].lkey, pd, sg_list[i].addr, sg_list[i].length,
				      0))) {
			ret = EINVAL;
			break;
		}
		if (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
			continue;
		for (uint64_t off = 0; off < sg_list[i].length; off += (uint64_t)page)
			(void)p[off];
	}
	ur_mr_read_unlock(t);
	return ret;
}
