/* RoCEv2 over UDP: the transport that reaches other hosts (and, until a
 * shared-memory path exists, other processes of this host).
 *
 * Every process has its own unconnected UDP socket per address family, on
 * an ephemeral port; it sends from it with DF set, so the kernel writes IP
 * ID 0 and the ICRC can be computed in advance.  One process per host
 * (network namespace), elected through a lock file, also binds port 4791,
 * where peers that know only (GID, QPN) send, and hands each packet to the
 * process owning its QP through that process's abstract unix socket.
 * Packets between processes of one host go straight to the owner's own
 * UDP port.
 */
#ifndef UROCE_XPORT_UDP_UDP_H
#define UROCE_XPORT_UDP_UDP_H

#include <stdint.h>

#include "xport/xport.h"

struct ur_engine;
struct ur_udp;

struct ur_udp *ur_udp_create(struct ur_engine *e);
void ur_udp_destroy(struct ur_udp *u);
struct ur_xport *ur_udp_xport(struct ur_udp *u);
/* Housekeeping from the engine: router election, retries. */
void ur_udp_tick(struct ur_udp *u);
/* Resume after EAGAIN: ask the engine to watch for writability. */
void ur_udp_want_writable(struct ur_udp *u);
void ur_udp_stop_writable(struct ur_udp *u);
bool ur_udp_is_router(const struct ur_udp *u);
/* Sends batches parked for lack of room; -EAGAIN while some remain. */
int ur_udp_flush_pending(struct ur_udp *u);

#endif
