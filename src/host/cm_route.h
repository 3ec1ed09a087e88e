/* Which process of this host a CM MAD for QP1 belongs to.
 *
 * QP1 is the host's, not a process's: the process serving port 4791 asks
 * here where each MAD goes.  A REQ goes to the process listening on its
 * service ID (or, if none, to any process with a CM, which rejects it);
 * any other CM message to the process owning the comm ID it is addressed
 * to, whose low 24 bits are a QP number that process holds in the host
 * registry for the purpose.
 */
#ifndef UROCE_HOST_CM_ROUTE_H
#define UROCE_HOST_CM_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "host/registry.h"

/* pkt: BTH .. ICRC.  0 with the owner, -ENOENT (nobody: deliver here, or
 * drop) or -EINVAL (not a CM MAD to QP1). */
int ur_host_cm_owner(const struct ur_registry *r, const uint8_t *pkt, size_t len,
		     struct ur_reg_owner *out);
/* The same from the MAD alone (a sender of this host, before the packet
 * is built around it). */
int ur_host_cm_mad_owner(const struct ur_registry *r, const uint8_t *mad, size_t len,
			 struct ur_reg_owner *out);

#endif
