/* QP1, the general services interface, as far as the CM needs it: the
 * MADs that arrive for QP1 go to one receiver per process (the CM, which
 * lives in librdmacm.so.1 and attaches here), and MADs leave as UD
 * datagrams from QP1 to QP1 with the GSI Q_Key, as RoCE carries them.
 * Which process of the host a MAD for QP1 belongs to is decided before it
 * gets here (host/cm_route.c). */
#ifndef UROCE_REL_GSI_H
#define UROCE_REL_GSI_H

#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "wire/pkt_parse.h"
#include "xport/xport.h"

struct ur_stack;
struct ur_context;

/* Called on the engine thread (or a polling thread) with one MAD, the
 * address it came from and the one it was sent to. */
typedef void (*ur_gsi_rx_fn)(void *arg, const uint8_t *mad, size_t len,
			     const union ibv_gid *sgid, const union ibv_gid *dgid);

/* Makes fn the process's QP1 receiver (NULL detaches): 0, or -EBUSY if
 * another is attached. */
int ur_gsi_attach(struct ur_stack *s, ur_gsi_rx_fn fn, void *arg);
/* Sends one MAD to QP1 at ah (port 1, a GRH with the source GID index and
 * the peer's GID): 0, or -errno (no route: -EINVAL, -ENETUNREACH ...). */
int ur_gsi_send(struct ur_context *ctx, const struct ibv_ah_attr *ah, const void *mad,
		size_t len);
/* A packet for QP1, from the receive path. */
void ur_gsi_rx(struct ur_stack *s, const struct ur_pkt_view *v, const struct ur_rx_meta *meta);

#endif
