/* This process's multicast attachments: group GID -> the UD QPs attached
 * to it.  A datagram for QPN 0xFFFFFF goes to every QP attached to the
 * group it was sent to (recv.c).  The first attachment of a group joins
 * it on the transports and in the host registry, the last leaves. */
#ifndef UROCE_REL_MCAST_H
#define UROCE_REL_MCAST_H

#include <pthread.h>
#include <infiniband/verbs.h>

struct ur_qp;

struct ur_mcast_attachment {
	union ibv_gid gid;
	unsigned ifindex;
	struct ur_qp *qp;
};

struct ur_mcast {
	pthread_mutex_t lock;
	struct ur_mcast_attachment *att;
	unsigned n, cap;
};

void ur_mcast_init(struct ur_mcast *m);
int ur_mcast_attach(struct ur_qp *qp, const union ibv_gid *gid);
int ur_mcast_detach(struct ur_qp *qp, const union ibv_gid *gid);
/* Drops every attachment of a QP being destroyed. */
void ur_mcast_forget(struct ur_qp *qp);
/* The QPs attached to group gid, at most max of them; their count. */
unsigned ur_mcast_members(struct ur_mcast *m, const union ibv_gid *gid, struct ur_qp **out,
			  unsigned max);

#endif
