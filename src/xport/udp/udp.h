/* RoCEv2 over UDP: the transport that reaches other hosts, and other
 * processes of this host.
 *
 * Every process has its own unconnected UDP socket per address family, on
 * an ephemeral port; it sends from it with DF set, so the kernel writes IP
 * ID 0 and the ICRC can be computed in advance.  One process per host
 * (network namespace), elected through a lock file, also serves the host's
 * port 4791, where peers that know only (GID, QPN) send, and hands each
 * packet to the process owning its QP through that process's unix socket
 * (udp_host_port.c).  Packets between processes of one host go to the
 * owner's unix socket over a connected socket that pushes back when the
 * owner falls behind (udp_host_peers.c), or, failing that, to its own UDP
 * port.
 */
#ifndef UROCE_XPORT_UDP_UDP_H
#define UROCE_XPORT_UDP_UDP_H

#include "xport/xport.h"

/* Opens the sockets, watches them on e, takes part in the port-4791
 * election.  0 or -errno. */
int ur_udp_open(struct ur_engine *e, struct ur_registry *reg, const struct ur_xport_hooks *h,
		struct ur_xport **out);

#endif
