/* libFuzzer target: the whole receive path behind the ICRC check.
 *
 * One input = one selector byte + one RoCE packet (BTH .. ICRC).  The
 * packet is aimed at one of the live stack's five QPs (fuzz_stack.h; the
 * selector modulo five picks), comes "from" that QP's peer, and goes through
 * ur_recv_packet exactly as a received datagram would: parser, dispatch,
 * responder or completer.  A write outside the MR faults even without
 * ASan (guard pages).  Selector bits 0x40 / 0x20 move the PSN into the
 * responder's or completer's window, where random PSNs would rarely land,
 * and 0x10 writes the region's rkey into a RETH or AtomicETH (keys are
 * drawn at random in every process, so a saved input could not name it).
 * Bit 0x08 says, as a shared-memory ring's record may, that the sender
 * placed the payload itself: as many bytes as the RETH's length with 0x04,
 * else as the packet's last four bytes say.  Bit 0x02 writes the DC
 * target's key into a DCETH, which a random one would never match. */
#include <stdint.h>
#include <string.h>
#include <pthread.h>

#include "fuzz_stack.h"
#include "core/context.h"
#include "core/qp.h"
#include "rel/psn.h"
#include "rel/recv.h"
#include "rel/resp_batch.h"
#include "wire/opcode.h"
#include "wire/roce_hdr.h"

/* Names the live region in the packet's RETH or AtomicETH, if it has one
 * and is long enough to hold it. */
static void aim_rkey(uint8_t *pkt, size_t len)
{
	const struct ur_opcode_info *op = &ur_opcode[bth_opcode(pkt)];
	unsigned at = op->offset[UR_HDR_RETH] ? op->offset[UR_HDR_RETH] :
		      op->offset[UR_HDR_ATMETH];

	if (at && at + 12 <= len)
		reth_set_rkey(pkt + at, fz.mr->rkey);   /* the AtomicETH's R_Key sits alike */
}

static uint32_t placed_claim(const uint8_t *pkt, size_t len, bool as_reth)
{
	unsigned at = ur_opcode[bth_opcode(pkt)].offset[UR_HDR_RETH];

	if (as_reth && at && at + 16 <= len)
		return reth_len(pkt + at);
	return (uint32_t)pkt[len - 4] << 24 | (uint32_t)pkt[len - 3] << 16 |
	       (uint32_t)pkt[len - 2] << 8 | pkt[len - 1];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t pkt[16384];
	struct ur_rx_meta meta = { 0 };
	struct ur_qp *qp;

	if (!fz.ready)
		fuzz_stack_setup();
	if (size < 1 + UR_BTH_BYTES || size - 1 > sizeof(pkt))
		return 0;
	qp = to_uqp(fz.qp[data[0] % FUZZ_NQP]);
	memcpy(pkt, data + 1, size - 1);
	bth_set_qpn(pkt, ur_qp_num(qp));
	pthread_mutex_lock(&qp->lock);
	if (data[0] & 0x40)
		bth_set_psn(pkt, qp->resp.psn);
	else if ((data[0] & 0x20) && qp->req.psn != qp->comp.psn)
		bth_set_psn(pkt, psn_add(qp->comp.psn, bth_psn(pkt) %
					 (uint32_t)psn_diff(qp->req.psn, qp->comp.psn)));
	pthread_mutex_unlock(&qp->lock);
	if (data[0] & 0x10)
		aim_rkey(pkt, size - 1);
	/* To the DC target with its key, so that the halves are reached. */
	if ((data[0] & 0x02) && ur_opcode[bth_opcode(pkt)].offset[UR_HDR_DCETH] &&
	    UR_BTH_BYTES + UR_DCETH_BYTES <= size - 1)
		dceth_set_key(pkt + UR_BTH_BYTES, FUZZ_DC_KEY);
	meta.sgid = fz.peer;
	meta.dgid = fz.peer;
	meta.hop_limit = 64;
	meta.ipv6 = data[0] & 0x80;
	if (data[0] & 0x08)
		meta.placed = placed_claim(pkt, size - 1, data[0] & 0x04);
	/* In a batch of one, as the transports hand packets over: the ACK
	 * it owes is held and sent at the batch's end. */
	ur_resp_batch_begin();
	ur_recv_packet(to_uctx(fz.ctx)->stack, pkt, size - 1, &meta);
	ur_resp_batch_end();
	fuzz_stack_tidy();
	return 0;
}
