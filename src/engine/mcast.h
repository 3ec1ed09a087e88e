/* This process's multicast attachments: group GID -> the UD QPs attached
 * to it.  A datagram for QPN 0xFFFFFF goes to every QP attached to the
 * group it was sent to. */
#ifndef UROCE_ENGINE_MCAST_H
#define UROCE_ENGINE_MCAST_H

#include <stdbool.h>
#include <infiniband/verbs.h>

#include "wire/pkt_parse.h"
#include "xport/xport.h"

struct ur_qp;

int ur_mcast_attach(struct ur_qp *qp, const union ibv_gid *gid);
int ur_mcast_detach(struct ur_qp *qp, const union ibv_gid *gid);
/* Drops every attachment of a QP being destroyed. */
void ur_mcast_forget(struct ur_qp *qp);
/* Engine dispatch (table read lock held). */
void ur_mcast_rx(const struct ur_pkt_view *pkt, const struct ur_rx_meta *meta);

#endif
