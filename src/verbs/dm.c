/* Device memory (ibv_alloc_dm, ibv_reg_dm_mr, ibv_memcpy_to/from_dm).
 *
 * A NIC's device memory is memory on the card, faster for the card to
 * reach; a software device's card is this process, so its device memory is
 * host memory the library owns.  Programs written for device memory run
 * unchanged: the copies check what a NIC checks (4-byte aligned offsets and
 * lengths, the bounds), a region over it is zero-based, as mlx5 requires, and works
 * for every operation like any region.  ibv_free_dm fails with EBUSY while
 * a region lies in it, so no peer reaches freed memory. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/limits.h"
#include "core/mr.h"
#include "util/compiler.h"
#include "verbs/verbs_priv.h"

struct ur_dm {
	struct ibv_dm ibdm;
	uint8_t *buf;
	size_t length;
	uint32_t users;       /* regions over it (struct ur_mr's dm_users) */
};

static struct ur_dm *to_udm(struct ibv_dm *dm)
{
	return container_of(dm, struct ur_dm, ibdm);
}

/* 0, or the errno value a NIC's provider gives for a bad copy. */
static int check_copy(const struct ur_dm *d, uint64_t offset, size_t length)
{
	if ((offset | length) & 3)
		return EINVAL;       /* device memory is reached in 4-byte words */
	if (offset > d->length || length > d->length - offset)
		return EFAULT;
	return 0;
}

static int memcpy_to(struct ibv_dm *dm, uint64_t offset, const void *host, size_t length)
{
	struct ur_dm *d = to_udm(dm);
	int ret = check_copy(d, offset, length);

	if (!ret)
		memcpy(d->buf + offset, host, length);
	return ret;
}

static int memcpy_from(void *host, struct ibv_dm *dm, uint64_t offset, size_t length)
{
	struct ur_dm *d = to_udm(dm);
	int ret = check_copy(d, offset, length);

	if (!ret)
		memcpy(host, d->buf + offset, length);
	return ret;
}

struct ibv_dm *ur_verbs_alloc_dm(struct ibv_context *ctx, struct ibv_alloc_dm_attr *attr)
{
	static atomic_uint next_handle = 1;
	size_t align = 64, len;
	struct ur_dm *d;

	if (!attr || attr->comp_mask || !attr->length || attr->length > UR_MAX_DM_BYTES ||
	    attr->log_align_req > 12)
		return ur_ret_obj(-EINVAL, NULL);
	if ((1u << attr->log_align_req) > align)
		align = 1u << attr->log_align_req;
	len = (attr->length + align - 1) & ~(align - 1);
	d = calloc(1, sizeof(*d));
	if (!d || !(d->buf = aligned_alloc(align, len))) {
		free(d);
		return ur_ret_obj(-ENOMEM, NULL);
	}
	memset(d->buf, 0, len);
	d->length = attr->length;
	d->ibdm.context = ctx;
	d->ibdm.memcpy_to_dm = memcpy_to;
	d->ibdm.memcpy_from_dm = memcpy_from;
	d->ibdm.handle = atomic_fetch_add(&next_handle, 1);
	return &d->ibdm;
}

int ur_verbs_free_dm(struct ibv_dm *dm)
{
	struct ur_dm *d = to_udm(dm);

	if (__atomic_load_n(&d->users, __ATOMIC_ACQUIRE))
		return EBUSY;
	free(d->buf);
	free(d);
	return 0;
}

struct ibv_mr *ur_verbs_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm, uint64_t dm_offset,
				  size_t length, unsigned int access)
{
	struct ur_dm *d = to_udm(dm);
	struct ibv_mr *mr;

	if (!(access & IBV_ACCESS_ZERO_BASED) || dm_offset > d->length ||
	    length > d->length - dm_offset || dm->context != pd->context)
		return ur_ret_obj(-EINVAL, NULL);
	mr = ur_verbs_reg_range(pd, d->buf + dm_offset, length, 0, access);
	if (!mr)
		return NULL;
	__atomic_add_fetch(&d->users, 1, __ATOMIC_RELAXED);
	to_umr(mr)->dm_users = &d->users;
	return mr;
}
