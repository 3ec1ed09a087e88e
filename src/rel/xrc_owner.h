/* XRC domains shared by the processes of a host: the SRQ owner's side
 * (see xrc.h for the target's). */
#ifndef UROCE_REL_XRC_OWNER_H
#define UROCE_REL_XRC_OWNER_H

#include <stdint.h>

#include "rel/xrc_msg.h"
#include "xport/xport.h"

/* A DELIVER from a target QP of another process: places the payload into
 * one of this process's XRC SRQs and sends the REPLY back (a REPLY that
 * cannot be sent is counted in *lost: the target asks again). */
void ur_xrc_on_deliver(struct ur_xports *xports, uint64_t *lost, const struct ur_xrc_msg *m,
		       const uint8_t *payload);

#endif
