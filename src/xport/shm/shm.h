/* Shared memory between processes of one host: the transport that goes
 * before UDP.
 *
 * Each process owns a file of rings in /dev/shm (one ring per process
 * sending to it) and a FIFO, its doorbell.  A sender copies each packet
 * into its ring in the receiver's file, with no system call; the receiver
 * polls its rings from its reactor (the engine thread, or an application
 * thread polling a CQ) and hands each packet up as it would a UDP one.
 * Only a receiver whose engine thread sleeps is woken, through its FIFO;
 * a sender waiting for room is woken through its own.  The packets are
 * the protocol's, unchanged (no ICRC: nothing crossed a wire).
 *
 * It serves a path when the peer QP's owner (the host registry) is a
 * process of this user in this network namespace that has such a file;
 * for anything else (a datagram AH, the CM's QP1, other hosts, a peer
 * without the transport, every ring taken) resolve answers -ENOENT and UDP
 * takes the path.  UROCE_SHM=0 turns it off; so does UROCE_FAULTS, whose
 * injector sits on UDP's receive path.
 */
#ifndef UROCE_XPORT_SHM_SHM_H
#define UROCE_XPORT_SHM_SHM_H

#include "xport/xport.h"

/* 0 and *out set; 0 and *out NULL when the transport is off (said why at
 * info level); or -errno. */
int ur_shm_open(struct ur_engine *e, struct ur_registry *reg, const struct ur_xport_hooks *h,
		struct ur_xport **out);

#endif
