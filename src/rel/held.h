/* Packets an RC QP holds past a gap: requests at the responder (selective
 * retransmission, out-of-order tolerance), READ responses at the requester
 * (out-of-order tolerance).  Each store is a struct ur_held pointer of the
 * QP, NULL while empty.
 *
 * Go-back-N throws away every packet after a lost one, and the requester
 * sends them all again: at 1 % loss and a window of 128 packets, most of
 * the window goes twice.  When the requester says it resends selectively
 * (the mark in BTH, wire/roce_hdr.h), the responder keeps what arrives
 * past a gap, still NAKs the gap once, and when the missing packet comes
 * executes the held ones after it in PSN order: one protocol, the same
 * checks, only later.  Nothing is executed out of order.
 * qp->lock held throughout. */
#ifndef UROCE_REL_HELD_H
#define UROCE_REL_HELD_H

#include <stdbool.h>
#include <stdint.h>

#include "wire/pkt_parse.h"

struct ur_held;

/* Keeps a packet d PSNs past the expected one (0 < d < the window); a copy
 * already held is a duplicate.  False if it could not be kept. */
bool ur_held_keep(struct ur_held **store, const struct ur_pkt_view *pkt, uint32_t d);
/* The held packet at psn, parsed into *v and no longer held, or NULL.
 * The caller releases what is returned once done with *v (executing it
 * may end the QP, which clears what is held). */
void *ur_held_take(struct ur_held *h, uint32_t psn, struct ur_pkt_view *v);
void ur_held_release(void *taken);
/* Drops what is held for PSNs before psn: executed as they came again. */
void ur_held_forget_before(struct ur_held *h, uint32_t psn);
/* Whether packets are still held (call after forgetting those before the
 * expected PSN: then they lie past another gap), and how many. */
bool ur_held_any(const struct ur_held *h);
uint32_t ur_held_count(const struct ur_held *h);
/* Drops everything held (the QP left RTS/RTR, or went back). */
void ur_held_clear(struct ur_held **store);

#endif
