#include "engine/mcast.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "core/limits.h"
#include "host/netdev.h"
#include "core/qp.h"
#include "engine/engine.h"
#include "rel/rel.h"
#include "util/log.h"
#include "host/registry.h"


struct attachment {
	union ibv_gid gid;
	unsigned ifindex;
	struct ur_qp *qp;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct attachment *att;
static unsigned natt, capacity;

static unsigned count_group(const union ibv_gid *gid, unsigned ifindex)
{
	unsigned n = 0;

	for (unsigned i = 0; i < natt; i++)
		n += !memcmp(&att[i].gid, gid, sizeof(*gid)) && att[i].ifindex == ifindex;
	return n;
}

int ur_mcast_attach(struct ur_qp *qp, const union ibv_gid *gid)
{
	unsigned ifindex = qp->ctx->dev->nd.ifindex;
	int ret = 0;

	if (qp->type != IBV_QPT_UD || !ur_gid_is_multicast(gid))
		return -EINVAL;
	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < natt; i++)
		if (att[i].qp == qp && !memcmp(&att[i].gid, gid, sizeof(*gid)))
			goto out;      /* attaching twice is harmless */
	/* The limits ibv_query_device advertises (counted per process: the
	 * host registry knows member processes, not their QPs). */
	if (natt == UR_MAX_TOTAL_MCAST_QP_ATTACH ||
	    count_group(gid, ifindex) >= UR_MAX_MCAST_QP_ATTACH) {
		ret = -ENOMEM;
		goto out;
	}
	if (natt == capacity) {
		unsigned ncap = capacity ? capacity * 2 : 16;
		struct attachment *na = realloc(att, ncap * sizeof(*na));

		if (!na) {
			ret = -ENOMEM;
			goto out;
		}
		att = na;
		capacity = ncap;
	}
	if (!count_group(gid, ifindex)) {
		struct ur_xport *x = ur_engine_xport(ur_engine_get());

		ret = x->ops->mcast(x, gid, ifindex, true);
		if (!ret) {
			ret = ur_registry_mcast_join(gid, ifindex);
			if (ret)
				x->ops->mcast(x, gid, ifindex, false);
		}
		if (ret)
			goto out;
	}
	att[natt++] = (struct attachment){ *gid, ifindex, qp };
out:
	pthread_mutex_unlock(&lock);
	return ret;
}

static void remove_at(unsigned i)
{
	union ibv_gid gid = att[i].gid;
	unsigned ifindex = att[i].ifindex;

	att[i] = att[--natt];
	if (!count_group(&gid, ifindex)) {
		struct ur_xport *x = ur_engine_xport(ur_engine_get());

		ur_registry_mcast_leave(&gid, ifindex);
		x->ops->mcast(x, &gid, ifindex, false);
	}
}

int ur_mcast_detach(struct ur_qp *qp, const union ibv_gid *gid)
{
	int ret = -EINVAL;

	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < natt; i++) {
		if (att[i].qp == qp && !memcmp(&att[i].gid, gid, sizeof(*gid))) {
			remove_at(i);
			ret = 0;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

void ur_mcast_forget(struct ur_qp *qp)
{
	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < natt;) {
		if (att[i].qp == qp)
			remove_at(i);
		else
			i++;
	}
	pthread_mutex_unlock(&lock);
}

void ur_mcast_rx(const struct ur_pkt_view *pkt, const struct ur_rx_meta *meta)
{
	struct ur_qp *targets[64];
	unsigned n = 0;

	/* Collect first: delivering takes QP locks, never under ours. */
	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < natt && n < UR_ARRAY_SIZE(targets); i++)
		if (!memcmp(&att[i].gid, &meta->dgid, sizeof(meta->dgid)))
			targets[n++] = att[i].qp;
	pthread_mutex_unlock(&lock);
	if (!n)
		ur_dbg(NULL, "multicast datagram for a group with no QP attached here");
	for (unsigned i = 0; i < n; i++) {
		pthread_mutex_lock(&targets[i]->lock);
		ur_rel_rx(targets[i], pkt, meta);
		pthread_mutex_unlock(&targets[i]->lock);
	}
}
