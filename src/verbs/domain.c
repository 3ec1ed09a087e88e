/* Thread domains and parent domains (ibv_alloc_td, ibv_alloc_parent_domain).
 *
 * A thread domain is an application's promise that one thread at a time
 * uses the objects made in it, which lets a NIC's provider drop locks;
 * uroce keeps its locks, which is correct either way.  A parent domain is a
 * PD object standing for a protection domain (and maybe a thread domain):
 * objects made on it belong to that PD (core/pd.h, to_upd).  Its custom
 * allocators are for a provider's queue buffers in memory the application
 * chooses; uroce's queues are its own memory, so they are accepted and not
 * called. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "core/context.h"
#include "core/pd.h"
#include "util/compiler.h"
#include "verbs/verbs_priv.h"

struct ur_td {
	struct ibv_td ibtd;
	atomic_int users;      /* parent domains using it */
};

static struct ur_td *to_utd(struct ibv_td *td)
{
	return container_of(td, struct ur_td, ibtd);
}

struct ibv_td *ur_verbs_alloc_td(struct ibv_context *ctx, struct ibv_td_init_attr *attr)
{
	struct ur_td *td;

	if (!attr || attr->comp_mask)
		return ur_ret_obj(-EINVAL, NULL);
	td = calloc(1, sizeof(*td));
	if (!td)
		return ur_ret_obj(-ENOMEM, NULL);
	td->ibtd.context = ctx;
	atomic_init(&td->users, 0);
	return &td->ibtd;
}

int ur_verbs_dealloc_td(struct ibv_td *ibtd)
{
	struct ur_td *td = to_utd(ibtd);

	if (atomic_load(&td->users))
		return EBUSY;
	free(td);
	return 0;
}

struct ibv_pd *ur_verbs_alloc_parent_domain(struct ibv_context *ctx,
					    struct ibv_parent_domain_init_attr *attr)
{
	const uint32_t known = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	struct ur_pd *pd, *protection;

	if (!attr || !attr->pd || attr->pd->context != ctx || (attr->comp_mask & ~known) ||
	    (attr->td && attr->td->context != ctx) ||
	    ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
	     (!attr->alloc || !attr->free)))
		return ur_ret_obj(-EINVAL, NULL);
	protection = to_upd(attr->pd);
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return ur_ret_obj(-ENOMEM, NULL);
	pd->ctx = protection->ctx;
	pd->ibpd.context = ctx;
	pd->ibpd.handle = protection->ibpd.handle;
	pd->protection = protection;
	pd->td = attr->td;
	atomic_init(&pd->users, 0);
	atomic_fetch_add(&protection->users, 1);
	if (attr->td)
		atomic_fetch_add(&to_utd(attr->td)->users, 1);
	return &pd->ibpd;
}

bool ur_verbs_is_parent_domain(struct ibv_pd *ibpd)
{
	return ((struct ur_pd *)ibpd)->protection != NULL;
}

int ur_verbs_dealloc_parent_domain(struct ibv_pd *ibpd)
{
	struct ur_pd *pd = (struct ur_pd *)ibpd;

	atomic_fetch_sub(&pd->protection->users, 1);
	if (pd->td)
		atomic_fetch_sub(&to_utd(pd->td)->users, 1);
	free(pd);
	return 0;
}
