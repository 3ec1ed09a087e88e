/* RoCEv2 over UDP: the transport that reaches other hosts (and, until a
 * shared-memory path exists, other processes of this host).
 *
 * Every process has its own unconnected UDP socket per address family, on
 * an ephemeral port; it sends from it with DF set, so the kernel writes IP
 * ID 0 and the ICRC can be computed in advance.  One process per host
 * (network namespace), elected through a lock file, also binds port 4791,
 * where peers that know only (GID, QPN) send, and hands each packet to the
 * process owning its QP through that process's abstract unix socket.
 * Packets between processes of one host go to the owner's unix socket
 * over a connected socket that pushes back when the owner falls behind
 * (udp_local.c), or, failing that, to its own UDP port.
 */
#ifndef UROCE_XPORT_UDP_UDP_H
#define UROCE_XPORT_UDP_UDP_H

#include <stdbool.h>
#include <stdint.h>

#include "xport/xport.h"

struct ur_engine;
struct ur_udp;

struct ur_udp *ur_udp_create(struct ur_engine *e);
void ur_udp_destroy(struct ur_udp *u);
struct ur_xport *ur_udp_xport(struct ur_udp *u);
/* Housekeeping from the engine: router election, retries. */
void ur_udp_tick(struct ur_udp *u);
/* Which sockets the engine watches for writability: those with parked
 * batches, and, while QPs wait (QPS_BLOCKED) with nothing parked, our own
 * so that they are retried at once. */
void ur_udp_update_writable(struct ur_udp *u, bool qps_blocked);
bool ur_udp_is_router(const struct ur_udp *u);
/* At exit: sends what is staged and parked, waiting up to TIMEOUT_MS for
 * full peers to drain, so the last ACKs of a finished run are not lost. */
void ur_udp_drain(struct ur_udp *u, int timeout_ms);
/* Sends batches parked for lack of room; -EAGAIN while some remain. */
int ur_udp_flush_pending(struct ur_udp *u);

#endif
