#include "rel/inbox.h"

#include <string.h>

#include "rel/psn.h"
#include "wire/opcode.h"
#include "wire/roce_hdr.h"

/* open and n are also read without the spin (a quick look before taking
 * it), so every access to them is atomic. */

static void spin_lock(uint32_t *spin)
{
	while (__atomic_exchange_n(spin, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(spin, __ATOMIC_RELAXED)) {
#if defined(__x86_64__) || defined(__i386__)
			__builtin_ia32_pause();
#endif
		}
}

static void spin_unlock(uint32_t *spin)
{
	__atomic_store_n(spin, 0, __ATOMIC_RELEASE);
}

void ur_inbox_open(struct ur_qp *qp)
{
	struct ur_inbox *b = &qp->inbox;

	/* No spin: a put checks open again under it, and nothing is taken
	 * before ur_inbox_close, which takes the spin. */
	if (!__atomic_load_n(&b->open, __ATOMIC_RELAXED))
		__atomic_store_n(&b->open, true, __ATOMIC_RELAXED);
}

bool ur_inbox_close(struct ur_qp *qp)
{
	struct ur_inbox *b = &qp->inbox;
	bool waiting;

	if (!__atomic_load_n(&b->open, __ATOMIC_RELAXED))
		return __atomic_load_n(&b->n, __ATOMIC_RELAXED) != 0;
	spin_lock(&b->spin);
	__atomic_store_n(&b->open, false, __ATOMIC_RELAXED);
	waiting = __atomic_load_n(&b->n, __ATOMIC_RELAXED) != 0;
	spin_unlock(&b->spin);
	return waiting;
}

/* Whether pkt, a plain ACK, says all that the ACK last put says: ACKs
 * are cumulative, so a newer one from the same sender takes its slot (a
 * copy lasting a while sees an ACK every message).  Not a NAK, an RNR
 * NAK, a gap report or an atomic ACK: each of those is its own. */
static bool covers(const uint8_t *pkt, size_t len, const union ibv_gid *sgid,
		   const struct ur_inbox_pkt *last)
{
	size_t aeth = UR_BTH_BYTES;

	if (memcmp(sgid->raw, last->sgid, sizeof(last->sgid)) ||
	    len < aeth + UR_AETH_BYTES || last->len < aeth + UR_AETH_BYTES ||
	    bth_opcode(pkt) != UR_OP_RC_ACKNOWLEDGE || bth_opcode(last->bytes) != UR_OP_RC_ACKNOWLEDGE)
		return false;
	if ((aeth_syn(pkt + aeth) & UR_AETH_TYPE_MASK) != UR_AETH_ACK ||
	    (aeth_syn(last->bytes + aeth) & UR_AETH_TYPE_MASK) != UR_AETH_ACK)
		return false;
	return !psn_lt(bth_psn(pkt), bth_psn(last->bytes));
}

bool ur_inbox_put(struct ur_qp *qp, const uint8_t *pkt, size_t len, const union ibv_gid *sgid)
{
	struct ur_inbox *b = &qp->inbox;
	bool put = false;
	uint8_t n;

	if (len > UR_INBOX_PKT_MAX || !__atomic_load_n(&b->open, __ATOMIC_RELAXED))
		return false;
	spin_lock(&b->spin);
	n = __atomic_load_n(&b->n, __ATOMIC_RELAXED);
	if (!__atomic_load_n(&b->open, __ATOMIC_RELAXED)) {
		/* closed meanwhile */
	} else if (n && covers(pkt, len, sgid, &b->pkt[n - 1])) {
		struct ur_inbox_pkt *p = &b->pkt[n - 1];

		b->covered++;
		p->len = (uint8_t)len;
		memcpy(p->bytes, pkt, len);
		memcpy(p->sgid, sgid->raw, sizeof(p->sgid));
		put = true;
	} else if (n < UR_INBOX_SLOTS) {
		struct ur_inbox_pkt *p = &b->pkt[n];

		p->len = (uint8_t)len;
		memcpy(p->bytes, pkt, len);
		memcpy(p->sgid, sgid->raw, sizeof(p->sgid));
		__atomic_store_n(&b->n, (uint8_t)(n + 1), __ATOMIC_RELAXED);
		put = true;
	}
	spin_unlock(&b->spin);
	return put;
}

bool ur_inbox_take(struct ur_qp *qp, struct ur_inbox_pkt *out, uint32_t *covered)
{
	struct ur_inbox *b = &qp->inbox;
	bool took = false;
	uint8_t n;

	if (!__atomic_load_n(&b->n, __ATOMIC_RELAXED))
		return false;
	spin_lock(&b->spin);
	n = __atomic_load_n(&b->n, __ATOMIC_RELAXED);
	*covered += b->covered;
	b->covered = 0;
	if (n) {
		*out = b->pkt[0];
		memmove(&b->pkt[0], &b->pkt[1], (n - 1u) * sizeof(b->pkt[0]));
		__atomic_store_n(&b->n, (uint8_t)(n - 1), __ATOMIC_RELAXED);
		took = true;
	}
	spin_unlock(&b->spin);
	return took;
}
