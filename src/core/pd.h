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
};

static inline struct ur_pd *to_upd(struct ibv_pd *ibpd)
{
	return (struct ur_pd *)ibpd;
}

int ur_pd_alloc(struct ur_context *ctx, struct ur_pd **out);
int ur_pd_dealloc(struct ur_pd *pd);

#endif
