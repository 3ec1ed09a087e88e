/* A QP's inbox: ACKs received while another thread holds the QP's lock.
 * A holder that may keep the QP a while opens it: an application thread
 * building work requests (wr_start .. wr_complete), one copying a large
 * WRITE or READ straight into or out of the peer's memory (tens of
 * microseconds a megabyte).  Not a thread handling a received packet:
 * opening and closing on every packet cost a fifth of the small-message
 * rate (bench/compare.sh), for contention seldom met.  The
 * receiving thread, finding the lock taken, puts an ACK for that QP there
 * and goes on with other packets instead of sleeping on the lock until
 * the holder is done (and costing the holder's unlock a futex wake).  The
 * run step (run.c) closes the inbox and takes what was put there
 * (UR_RUN_INBOX, comp.c) before the lock is released; every holder that
 * opens it runs the QP before it unlocks.  Only responses without payload
 * (ACKs, NAKs, atomic ACKs) are put here, a newer plain ACK from the same
 * sender in the slot of the one before it (ACKs are cumulative); anything
 * else, or an inbox full or closed, waits for the lock as before, so a
 * QP's packets are still taken in the order they came. */
#ifndef UROCE_REL_INBOX_H
#define UROCE_REL_INBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/qp.h"

/* The lock holder, qp->lock held: ACKs may be put now. */
void ur_inbox_open(struct ur_qp *qp);
/* The lock holder, qp->lock held: nothing more is put; whether anything
 * waits to be taken (the caller kicks UR_RUN_INBOX). */
bool ur_inbox_close(struct ur_qp *qp);
/* The receiving thread, without qp->lock (the QP table's read lock keeps
 * qp alive): true if the packet was put and is the holder's now; false if
 * the inbox is closed or full, or the packet too long. */
bool ur_inbox_put(struct ur_qp *qp, const uint8_t *pkt, size_t len, const union ibv_gid *sgid);
/* qp->lock held: the oldest packet put, copied into *out; false if none.
 * Adds to *covered the ACKs whose slot a newer one took meanwhile (they
 * count as received). */
bool ur_inbox_take(struct ur_qp *qp, struct ur_inbox_pkt *out, uint32_t *covered);

#endif
