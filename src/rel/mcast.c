#include "rel/mcast.h"

#include <errno.h>
#include <string.h>

#include "core/limits.h"
#include "core/qp.h"
#include "host/registry.h"
#include "rel/stack.h"
#include "util/array.h"
#include "wire/gid.h"

void ur_mcast_init(struct ur_mcast *m)
{
	pthread_mutex_init(&m->lock, NULL);
}

static struct ur_mcast *table_of(struct ur_qp *qp)
{
	return &qp->ctx->stack->mcast;
}

static unsigned count_group(struct ur_mcast *m, const union ibv_gid *gid, unsigned ifindex)
{
	unsigned n = 0;

	for (unsigned i = 0; i < m->n; i++)
		n += !memcmp(&m->att[i].gid, gid, sizeof(*gid)) && m->att[i].ifindex == ifindex;
	return n;
}

/* The process joins the group: on the link (its transports) and in the
 * host registry, so that port 4791's server hands it the datagrams. */
static int join(struct ur_qp *qp, const union ibv_gid *gid, unsigned ifindex)
{
	int ret = ur_xports_mcast(qp->ctx->xports, gid, ifindex, true);

	if (ret)
		return ret;
	ret = ur_registry_mcast_join(qp->ctx->stack->reg, gid, ifindex);
	if (ret)
		ur_xports_mcast(qp->ctx->xports, gid, ifindex, false);
	return ret;
}

int ur_mcast_attach(struct ur_qp *qp, const union ibv_gid *gid)
{
	unsigned ifindex = qp->ctx->dev->nd.ifindex;
	struct ur_mcast *m;
	int ret = 0;

	if (qp->type != IBV_QPT_UD || !ur_gid_is_multicast(gid))
		return -EINVAL;
	m = table_of(qp);
	pthread_mutex_lock(&m->lock);
	for (unsigned i = 0; i < m->n; i++)
		if (m->att[i].qp == qp && !memcmp(&m->att[i].gid, gid, sizeof(*gid)))
			goto out;      /* attaching twice is harmless */
	/* The limits ibv_query_device advertises (counted per process: the
	 * host registry knows member processes, not their QPs). */
	if (m->n == UR_MAX_TOTAL_MCAST_QP_ATTACH ||
	    count_group(m, gid, ifindex) >= UR_MAX_MCAST_QP_ATTACH) {
		ret = -ENOMEM;
		goto out;
	}
	ret = UR_ARRAY_ROOM(m->att, m->cap, m->n, 16);
	if (!ret && !count_group(m, gid, ifindex))
		ret = join(qp, gid, ifindex);
	if (!ret)
		m->att[m->n++] = (struct ur_mcast_attachment){ *gid, ifindex, qp };
out:
	pthread_mutex_unlock(&m->lock);
	return ret;
}

/* m->lock held. */
static void remove_at(struct ur_qp *qp, struct ur_mcast *m, unsigned i)
{
	union ibv_gid gid = m->att[i].gid;
	unsigned ifindex = m->att[i].ifindex;

	m->att[i] = m->att[--m->n];
	if (!count_group(m, &gid, ifindex)) {
		ur_registry_mcast_leave(qp->ctx->stack->reg, &gid, ifindex);
		ur_xports_mcast(qp->ctx->xports, &gid, ifindex, false);
	}
}

int ur_mcast_detach(struct ur_qp *qp, const union ibv_gid *gid)
{
	struct ur_mcast *m = table_of(qp);
	int ret = -EINVAL;

	pthread_mutex_lock(&m->lock);
	for (unsigned i = 0; i < m->n; i++) {
		if (m->att[i].qp == qp && !memcmp(&m->att[i].gid, gid, sizeof(*gid))) {
			remove_at(qp, m, i);
			ret = 0;
			break;
		}
	}
	pthread_mutex_unlock(&m->lock);
	return ret;
}

void ur_mcast_forget(struct ur_qp *qp)
{
	struct ur_mcast *m = table_of(qp);

	pthread_mutex_lock(&m->lock);
	for (unsigned i = 0; i < m->n;) {
		if (m->att[i].qp == qp)
			remove_at(qp, m, i);
		else
			i++;
	}
	pthread_mutex_unlock(&m->lock);
}

unsigned ur_mcast_members(struct ur_mcast *m, const union ibv_gid *gid, struct ur_qp **out,
			  unsigned max)
{
	unsigned n = 0;

	pthread_mutex_lock(&m->lock);
	for (unsigned i = 0; i < m->n && n < max; i++)
		if (!memcmp(&m->att[i].gid, gid, sizeof(*gid)))
			out[n++] = m->att[i].qp;
	pthread_mutex_unlock(&m->lock);
	return n;
}
