/* Address handles (UD). */
#ifndef UROCE_CORE_AH_H
#define UROCE_CORE_AH_H

#include <infiniband/verbs.h>

#include "xport/xport.h"

struct ur_pd;

struct ur_ah {
	struct ibv_ah ibah;
	struct ur_pd *pd;
	struct ibv_ah_attr attr;
	union ibv_gid sgid;
	struct ur_path path;           /* route to the destination's host */
};

static inline struct ur_ah *to_uah(struct ibv_ah *ibah)
{
	return (struct ur_ah *)ibah;
}

int ur_ah_create(struct ur_pd *pd, struct ibv_ah_attr *attr, struct ur_ah **out);
int ur_ah_destroy(struct ur_ah *ah);

#endif
