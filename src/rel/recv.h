/* Received packets and local messages to the QPs they are for: the
 * stack's transport hooks land here (reactor callbacks, which never run
 * concurrently). */
#ifndef UROCE_REL_RECV_H
#define UROCE_REL_RECV_H

#include <stddef.h>
#include <stdint.h>

#include "xport/xport.h"

struct ur_stack;

/* A RoCE packet (BTH .. ICRC), its integrity checked: parsed, its QP (or
 * a multicast group's QPs) found, handed to the responder or completer. */
void ur_recv_packet(struct ur_stack *s, const uint8_t *pkt, size_t len,
		    const struct ur_rx_meta *meta);
/* A message from another process of the host (a shared XRC domain's). */
void ur_recv_local_msg(struct ur_stack *s, const uint8_t *msg, size_t len);

#endif
