/* What the requester, completer and responder share: the window and
 * pacing constants, and the opcodes by their low bits. */
#ifndef UROCE_REL_REL_PRIV_H
#define UROCE_REL_REL_PRIV_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/qp.h"
#include "core/qp_kind.h"
#include "rel/psn.h"
#include "wire/opcode.h"
#include "wire/roce_hdr.h"

/* Flow control: at most this many PSNs unacknowledged (rxe's limit), and a
 * congestion window that halves on loss and grows back by one packet per
 * window acknowledged, so a lossy path (a full socket buffer) converges. */
#define UR_MAX_UNACKED_PSNS 128u
#define UR_CWND_MIN 4u
#define UR_CWND_INIT 64u
/* Packets resent alone for one NAK at most (comp.c, selective). */
#define UR_SEL_RUN_MAX 32u
/* Gaps in one flight fixed alone (one per round trip, as the responder
 * NAKs the next only once the last is filled); past them the loss is
 * dense and going back for the rest of the flight is faster. */
#define UR_SEL_GAPS_MAX 3u
/* Out-of-order tolerance (UROCE_OOO=1): packets held past a gap before
 * the gap counts as a loss and is NAKed (or, for READ responses,
 * requested again); fewer mean the network reordered, and the gap fills
 * by itself.  TCP's duplicate-ACK threshold, for the same reason. */
#define UR_OOO_NAK_AFTER 3u
/* Ask for an ACK at least this often, well inside the window. */
#define UR_ACK_EVERY 16u
/* A READ is requested in pieces of at most this many response packets, so
 * responses never outrun the window either. */
#define UR_READ_CHUNK_PKTS 32u
/* Retransmission timeouts below this only cause spurious resends. */
#define UR_MIN_RETRANS_NS 500000ull
/* The floor of the timer from the measured round trip (timers.c), and how
 * often it may double before the QP's own timeout takes over. */
#define UR_MIN_RTO_NS 1000000ull
/* Its floor when it fires a probe, one packet resent alone to a responder
 * that holds the rest: firing early costs one packet, not a window, and a
 * lost NAK or resend otherwise stalls the QP a whole floor. */
#define UR_MIN_RTO_ALONE_NS 250000ull
#define UR_MAX_BACKOFF 8u
/* QP timeouts a QP may wait for its turn on a transport that others' turns
 * keep draining before its retries count again (timers.c). */
#define UR_MAX_TURN_WAIT 16u
/* ... while this very process is behind on what it was sent (its own
 * socket's queue unread, or its own QPs' packets to each other kept): it
 * is running, so what waits gets read; bounded only so that a flood that
 * never lets its queue empty cannot hide a dead peer for ever. */
#define UR_MAX_SELF_WAIT 256u
/* The longest gap, in QP timeouts, between two early go-backs while a
 * reader of this host is behind (timers.c): a packet lost meanwhile still
 * goes again within it. */
#define UR_MAX_HOLD_GAP 16u
/* ... while the peer is a process of this host that the scheduler keeps
 * waiting for a CPU (starved.c): 4.3 s at the timeout of 14 most programs
 * set, past the 1.6 s seen here, bounded so that one kept off for good
 * still ends the QP. */
#define UR_MAX_STARVED_WAIT 64u
/* How often a QP stopped by a full transport, with nothing in flight (no
 * deadline of its own), makes sure it is still on the waiting list. */
#define UR_BLOCKED_CHECK_NS (100u * 1000 * 1000)

/* The low five bits of a BTH opcode; OR in the transport (UR_OP_TYPE_*). */
enum ur_op_low {
	UR_OPL_SEND_FIRST = 0x00,
	UR_OPL_SEND_MIDDLE = 0x01,
	UR_OPL_SEND_LAST = 0x02,
	UR_OPL_SEND_LAST_WITH_IMMEDIATE = 0x03,
	UR_OPL_SEND_ONLY = 0x04,
	UR_OPL_SEND_ONLY_WITH_IMMEDIATE = 0x05,
	UR_OPL_RDMA_WRITE_FIRST = 0x06,
	UR_OPL_RDMA_WRITE_MIDDLE = 0x07,
	UR_OPL_RDMA_WRITE_LAST = 0x08,
	UR_OPL_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x09,
	UR_OPL_RDMA_WRITE_ONLY = 0x0a,
	UR_OPL_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x0b,
	UR_OPL_RDMA_READ_REQUEST = 0x0c,
	UR_OPL_RDMA_READ_RESPONSE_FIRST = 0x0d,
	UR_OPL_RDMA_READ_RESPONSE_MIDDLE = 0x0e,
	UR_OPL_RDMA_READ_RESPONSE_LAST = 0x0f,
	UR_OPL_RDMA_READ_RESPONSE_ONLY = 0x10,
	UR_OPL_ACKNOWLEDGE = 0x11,
	UR_OPL_ATOMIC_ACKNOWLEDGE = 0x12,
	UR_OPL_COMPARE_SWAP = 0x13,
	UR_OPL_FETCH_ADD = 0x14,
	UR_OPL_SEND_LAST_WITH_INVALIDATE = 0x16,
	UR_OPL_SEND_ONLY_WITH_INVALIDATE = 0x17,
	UR_OPL_ATOMIC_WRITE = 0x1d,
};

static inline uint8_t ur_qp_op_base(const struct ur_qp *qp)
{
	return qp->kind->opcodes;
}

static inline uint32_t ur_pad_of(uint32_t len)
{
	return (4 - (len & 3)) & 3;
}

/* The order of alone resends (struct ur_comp_state rs_stamp): outstanding
 * PSNs span less than UR_MAX_UNACKED_PSNS, so one slot each. */
_Static_assert(UR_MAX_UNACKED_PSNS == 128, "rs_stamp holds 128 PSNs");
static inline uint16_t ur_rs_stamp(const struct ur_comp_state *c, uint32_t psn)
{
	return c->rs_stamp[psn & 127];
}

/* Whether stamp a was taken after stamp b (both set; they wrap). */
static inline bool ur_rs_after(uint16_t a, uint16_t b)
{
	return (int16_t)(uint16_t)(a - b) > 0;
}

static inline void ur_rs_set(struct ur_comp_state *c, uint32_t psn)
{
	if (!++c->rs_seq)
		c->rs_seq = 1;
	c->rs_stamp[psn & 127] = c->rs_seq;
	if (!c->rs_any || !psn_lt(psn, c->rs_end))
		c->rs_end = psn_inc(psn);
	c->rs_any = true;
}

/* Acknowledged: [from, from + n) have no stamp any more.  Stamps lie in
 * [the oldest unacknowledged PSN, rs_end): once the ACKs pass rs_end none
 * is left, and the ACK path stops clearing. */
static inline void ur_rs_forget(struct ur_comp_state *c, uint32_t from, uint32_t n)
{
	if (!c->rs_any)
		return;
	if (n >= UR_MAX_UNACKED_PSNS) {
		memset(c->rs_stamp, 0, sizeof(c->rs_stamp));
		c->rs_any = false;
		return;
	}
	for (uint32_t i = 0; i < n; i++)
		c->rs_stamp[(from + i) & 127] = 0;
	if (!psn_lt(psn_add(from, n), c->rs_end))
		c->rs_any = false;
}

#endif
