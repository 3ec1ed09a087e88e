/* Protection domains. */
#ifndef UROCE_CORE_PD_H
#define UROCE_CORE_PD_H

#include <stdatomic.h>
#include <infiniband/verbs.h>

struct ur_context;

struct ur_pd {
	struct ibv_pd ibpd;
	struct ur_context *ctx;
	atomic_int users;      /* MRs, QPs, SRQs, AHs: dealloc fails with EBUSY */
	/* A parent domain (ibv_alloc_parent_domain) is a PD object that stands
	 * for its protection domain: every object made on it belongs to that
	 * PD.  NULL for an ordinary PD. */
	struct ur_pd *protection;
	struct ibv_td *td;
};

/* The protection domain an ibv_pd stands for: itself, or a parent
 * domain's PD.  Objects keep this one, so protection checks compare PDs. */
static inline struct ur_pd *to_upd(struct ibv_pd *ibpd)
{
	struct ur_pd *pd = (struct ur_pd *)ibpd;

	return pd->protection ? pd->protection : pd;
}

/* The PD's name in what a process publishes for peers that copy into it
 * (never 0: that means "none"). */
static inline uint32_t ur_pd_id(const struct ur_pd *pd)
{
	return (uint32_t)pd->ibpd.handle + 1;
}

int ur_pd_alloc(struct ur_context *ctx, struct ur_pd **out);
int ur_pd_dealloc(struct ur_pd *pd);

#endif
