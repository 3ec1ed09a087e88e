/* The BTH opcode table.
 *
 * Rows give only a name and a mask; length and offsets are derived from the
 * mask at compile time, walking the headers in wire order (IBA vol 1,
 * 9.2 and the XRC and memory placement annexes):
 *
 *   BTH DCETH RDETH DETH XRCETH FETH RETH AtomicETH AETH ImmDt IETH AtomicAckETH payload
 *
 * DCETH is DC's: the 8-byte DC access key that follows the BTH of every
 * packet whose opcode is RD's, as Wireshark's InfiniBand dissector reads
 * a DC packet (docs/dc.md).
 *
 * so an offset can never disagree with the header list.  The unit tests check
 * the result against per-opcode header lists written out by hand.
 */
#include "wire/opcode.h"

#define HAS(m, h)	(((m) & UR_OPF_##h) != 0)
#define LEN(m, h)	(HAS(m, h) ? UR_##h##_BYTES : 0)

/* Where each header ends (or would end): the start of the next one. */
#define END_BTH(m)	UR_BTH_BYTES
#define END_DCETH(m)	(END_BTH(m) + LEN(m, DCETH))
#define END_RDETH(m)	(END_DCETH(m) + LEN(m, RDETH))
#define END_DETH(m)	(END_RDETH(m) + LEN(m, DETH))
#define END_XRCETH(m)	(END_DETH(m) + LEN(m, XRCETH))
#define END_FETH(m)	(END_XRCETH(m) + LEN(m, FETH))
#define END_RETH(m)	(END_FETH(m) + LEN(m, RETH))
#define END_ATMETH(m)	(END_RETH(m) + LEN(m, ATMETH))
#define END_AETH(m)	(END_ATMETH(m) + LEN(m, AETH))
#define END_IMMDT(m)	(END_AETH(m) + LEN(m, IMMDT))
#define END_IETH(m)	(END_IMMDT(m) + LEN(m, IETH))
#define END_ATMACK(m)	(END_IETH(m) + LEN(m, ATMACK))
#define END_ALL(m)	END_ATMACK(m)

#define AT(m, h, prev)	(HAS(m, h) ? END_##prev(m) : 0)

#define OP(nm, m) {							\
	.name = nm,							\
	.mask = (m),							\
	.length = END_ALL(m),						\
	.offset = {							\
		[UR_HDR_BTH]	 = 0,					\
		[UR_HDR_DCETH]	 = AT(m, DCETH, BTH),			\
		[UR_HDR_RDETH]	 = AT(m, RDETH, DCETH),			\
		[UR_HDR_DETH]	 = AT(m, DETH, RDETH),			\
		[UR_HDR_XRCETH]	 = AT(m, XRCETH, DETH),			\
		[UR_HDR_FETH]	 = AT(m, FETH, XRCETH),			\
		[UR_HDR_RETH]	 = AT(m, RETH, FETH),			\
		[UR_HDR_ATMETH]	 = AT(m, ATMETH, RETH),			\
		[UR_HDR_AETH]	 = AT(m, AETH, ATMETH),			\
		[UR_HDR_IMMDT]	 = AT(m, IMMDT, AETH),			\
		[UR_HDR_IETH]	 = AT(m, IETH, IMMDT),			\
		[UR_HDR_ATMACK]	 = AT(m, ATMACK, IETH),			\
		[UR_HDR_PAYLOAD] = END_ALL(m),				\
	},								\
}
#define ROW(op, m)	[UR_OP_##op] = OP(#op, m)

/* Position of a packet in its message. */
#define P_FIRST		(UR_OPF_FIRST | UR_OPF_START)
#define P_MIDDLE	UR_OPF_MIDDLE
#define P_LAST		(UR_OPF_LAST | UR_OPF_END)
#define P_ONLY		(UR_OPF_ONLY | UR_OPF_START | UR_OPF_END)
#define P_SINGLE	(UR_OPF_START | UR_OPF_END)	/* never segmented */

/* Operations, transport-neutral.  The RETH rides on the first packet of a
 * write, the AETH on the first and last packets of a read response, and a
 * send completes a receive WQE on its last packet. */
#define IF(c, f)	((c) ? (f) : 0)
#define SEND(p)		(UR_OPF_REQ | UR_OPF_SEND | UR_OPF_PAYLOAD | UR_OPF_RWR | \
			 IF((p) & UR_OPF_END, UR_OPF_COMP) | (p))
#define SEND_IMM(p)	(SEND(p) | UR_OPF_IMM | UR_OPF_IMMDT)
#define SEND_INV(p)	(SEND(p) | UR_OPF_INV | UR_OPF_IETH)
#define WRITE(p)	(UR_OPF_REQ | UR_OPF_WRITE | UR_OPF_PAYLOAD | \
			 IF((p) & UR_OPF_START, UR_OPF_RETH) | (p))
#define WRITE_IMM(p)	(WRITE(p) | UR_OPF_IMM | UR_OPF_IMMDT | UR_OPF_RWR | UR_OPF_COMP)
#define READ_REQ	(UR_OPF_REQ | UR_OPF_READ | UR_OPF_RETH | P_SINGLE)
#define READ_RESP(p)	(UR_OPF_RESP | UR_OPF_PAYLOAD | IF((p) & UR_OPF_ONLY, UR_OPF_AETH) | (p))
#define ACK		(UR_OPF_RESP | UR_OPF_AETH | P_SINGLE)
#define ATOMIC_ACK	(ACK | UR_OPF_ATMACK)
#define ATOMIC		(UR_OPF_REQ | UR_OPF_ATOMIC | UR_OPF_ATMETH | P_SINGLE)
#define FLUSH		(UR_OPF_REQ | UR_OPF_FLUSH | UR_OPF_FETH | UR_OPF_RETH | P_SINGLE)
#define ATOMIC_WRITE	(UR_OPF_REQ | UR_OPF_ATOMIC_WRITE | UR_OPF_RETH | UR_OPF_PAYLOAD | P_SINGLE)

/* Transport-specific headers: RD requests carry RDETH+DETH and RD responses
 * RDETH, both after DC's DCETH; UD carries DETH; XRC requests (not
 * responses) carry XRCETH. */
#define RD_REQ(m)	((m) | UR_OPF_DCETH | UR_OPF_RDETH | UR_OPF_DETH)
#define RD_RESP(m)	((m) | UR_OPF_DCETH | UR_OPF_RDETH)
#define UD(m)		((m) | UR_OPF_DETH)
#define XRC(m)		((m) | UR_OPF_XRCETH)

/* CNP (RoCEv2 annex A17.9.3): BTH and 16 reserved bytes, neither request nor
 * response.  The reserved bytes are treated as payload so that a sender
 * that pads differently is still understood. */
#define CNP		UR_OPF_PAYLOAD

const struct ur_opcode_info ur_opcode[256] = {
	ROW(RC_SEND_FIRST,				SEND(P_FIRST)),
	ROW(RC_SEND_MIDDLE,				SEND(P_MIDDLE)),
	ROW(RC_SEND_LAST,				SEND(P_LAST)),
	ROW(RC_SEND_LAST_WITH_IMMEDIATE,		SEND_IMM(P_LAST)),
	ROW(RC_SEND_ONLY,				SEND(P_ONLY)),
	ROW(RC_SEND_ONLY_WITH_IMMEDIATE,		SEND_IMM(P_ONLY)),
	ROW(RC_RDMA_WRITE_FIRST,			WRITE(P_FIRST)),
	ROW(RC_RDMA_WRITE_MIDDLE,			WRITE(P_MIDDLE)),
	ROW(RC_RDMA_WRITE_LAST,				WRITE(P_LAST)),
	ROW(RC_RDMA_WRITE_LAST_WITH_IMMEDIATE,		WRITE_IMM(P_LAST)),
	ROW(RC_RDMA_WRITE_ONLY,				WRITE(P_ONLY)),
	ROW(RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,		WRITE_IMM(P_ONLY)),
	ROW(RC_RDMA_READ_REQUEST,			READ_REQ),
	ROW(RC_RDMA_READ_RESPONSE_FIRST,		READ_RESP(P_FIRST)),
	ROW(RC_RDMA_READ_RESPONSE_MIDDLE,		READ_RESP(P_MIDDLE)),
	ROW(RC_RDMA_READ_RESPONSE_LAST,			READ_RESP(P_LAST)),
	ROW(RC_RDMA_READ_RESPONSE_ONLY,			READ_RESP(P_ONLY)),
	ROW(RC_ACKNOWLEDGE,				ACK),
	ROW(RC_ATOMIC_ACKNOWLEDGE,			ATOMIC_ACK),
	ROW(RC_COMPARE_SWAP,				ATOMIC),
	ROW(RC_FETCH_ADD,				ATOMIC),
	ROW(RC_SEND_LAST_WITH_INVALIDATE,		SEND_INV(P_LAST)),
	ROW(RC_SEND_ONLY_WITH_INVALIDATE,		SEND_INV(P_ONLY)),
	ROW(RC_FLUSH,					FLUSH),
	ROW(RC_ATOMIC_WRITE,				ATOMIC_WRITE),

	ROW(UC_SEND_FIRST,				SEND(P_FIRST)),
	ROW(UC_SEND_MIDDLE,				SEND(P_MIDDLE)),
	ROW(UC_SEND_LAST,				SEND(P_LAST)),
	ROW(UC_SEND_LAST_WITH_IMMEDIATE,		SEND_IMM(P_LAST)),
	ROW(UC_SEND_ONLY,				SEND(P_ONLY)),
	ROW(UC_SEND_ONLY_WITH_IMMEDIATE,		SEND_IMM(P_ONLY)),
	ROW(UC_RDMA_WRITE_FIRST,			WRITE(P_FIRST)),
	ROW(UC_RDMA_WRITE_MIDDLE,			WRITE(P_MIDDLE)),
	ROW(UC_RDMA_WRITE_LAST,				WRITE(P_LAST)),
	ROW(UC_RDMA_WRITE_LAST_WITH_IMMEDIATE,		WRITE_IMM(P_LAST)),
	ROW(UC_RDMA_WRITE_ONLY,				WRITE(P_ONLY)),
	ROW(UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,		WRITE_IMM(P_ONLY)),

	ROW(RD_SEND_FIRST,				RD_REQ(SEND(P_FIRST))),
	ROW(RD_SEND_MIDDLE,				RD_REQ(SEND(P_MIDDLE))),
	ROW(RD_SEND_LAST,				RD_REQ(SEND(P_LAST))),
	ROW(RD_SEND_LAST_WITH_IMMEDIATE,		RD_REQ(SEND_IMM(P_LAST))),
	ROW(RD_SEND_ONLY,				RD_REQ(SEND(P_ONLY))),
	ROW(RD_SEND_ONLY_WITH_IMMEDIATE,		RD_REQ(SEND_IMM(P_ONLY))),
	ROW(RD_RDMA_WRITE_FIRST,			RD_REQ(WRITE(P_FIRST))),
	ROW(RD_RDMA_WRITE_MIDDLE,			RD_REQ(WRITE(P_MIDDLE))),
	ROW(RD_RDMA_WRITE_LAST,				RD_REQ(WRITE(P_LAST))),
	ROW(RD_RDMA_WRITE_LAST_WITH_IMMEDIATE,		RD_REQ(WRITE_IMM(P_LAST))),
	ROW(RD_RDMA_WRITE_ONLY,				RD_REQ(WRITE(P_ONLY))),
	ROW(RD_RDMA_WRITE_ONLY_WITH_IMMEDIATE,		RD_REQ(WRITE_IMM(P_ONLY))),
	ROW(RD_RDMA_READ_REQUEST,			RD_REQ(READ_REQ)),
	ROW(RD_RDMA_READ_RESPONSE_FIRST,		RD_RESP(READ_RESP(P_FIRST))),
	ROW(RD_RDMA_READ_RESPONSE_MIDDLE,		RD_RESP(READ_RESP(P_MIDDLE))),
	ROW(RD_RDMA_READ_RESPONSE_LAST,			RD_RESP(READ_RESP(P_LAST))),
	ROW(RD_RDMA_READ_RESPONSE_ONLY,			RD_RESP(READ_RESP(P_ONLY))),
	ROW(RD_ACKNOWLEDGE,				RD_RESP(ACK)),
	ROW(RD_ATOMIC_ACKNOWLEDGE,			RD_RESP(ATOMIC_ACK)),
	ROW(RD_COMPARE_SWAP,				RD_REQ(ATOMIC)),
	ROW(RD_FETCH_ADD,				RD_REQ(ATOMIC)),

	ROW(UD_SEND_ONLY,				UD(SEND(P_ONLY))),
	ROW(UD_SEND_ONLY_WITH_IMMEDIATE,		UD(SEND_IMM(P_ONLY))),

	ROW(CNP,					CNP),

	ROW(XRC_SEND_FIRST,				XRC(SEND(P_FIRST))),
	ROW(XRC_SEND_MIDDLE,				XRC(SEND(P_MIDDLE))),
	ROW(XRC_SEND_LAST,				XRC(SEND(P_LAST))),
	ROW(XRC_SEND_LAST_WITH_IMMEDIATE,		XRC(SEND_IMM(P_LAST))),
	ROW(XRC_SEND_ONLY,				XRC(SEND(P_ONLY))),
	ROW(XRC_SEND_ONLY_WITH_IMMEDIATE,		XRC(SEND_IMM(P_ONLY))),
	ROW(XRC_RDMA_WRITE_FIRST,			XRC(WRITE(P_FIRST))),
	ROW(XRC_RDMA_WRITE_MIDDLE,			XRC(WRITE(P_MIDDLE))),
	ROW(XRC_RDMA_WRITE_LAST,			XRC(WRITE(P_LAST))),
	ROW(XRC_RDMA_WRITE_LAST_WITH_IMMEDIATE,		XRC(WRITE_IMM(P_LAST))),
	ROW(XRC_RDMA_WRITE_ONLY,			XRC(WRITE(P_ONLY))),
	ROW(XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,		XRC(WRITE_IMM(P_ONLY))),
	ROW(XRC_RDMA_READ_REQUEST,			XRC(READ_REQ)),
	ROW(XRC_RDMA_READ_RESPONSE_FIRST,		READ_RESP(P_FIRST)),
	ROW(XRC_RDMA_READ_RESPONSE_MIDDLE,		READ_RESP(P_MIDDLE)),
	ROW(XRC_RDMA_READ_RESPONSE_LAST,		READ_RESP(P_LAST)),
	ROW(XRC_RDMA_READ_RESPONSE_ONLY,		READ_RESP(P_ONLY)),
	ROW(XRC_ACKNOWLEDGE,				ACK),
	ROW(XRC_ATOMIC_ACKNOWLEDGE,			ATOMIC_ACK),
	ROW(XRC_COMPARE_SWAP,				XRC(ATOMIC)),
	ROW(XRC_FETCH_ADD,				XRC(ATOMIC)),
	ROW(XRC_SEND_LAST_WITH_INVALIDATE,		XRC(SEND_INV(P_LAST))),
	ROW(XRC_SEND_ONLY_WITH_INVALIDATE,		XRC(SEND_INV(P_ONLY))),
};

const char *ur_opcode_name(uint8_t op)
{
	return ur_opcode[op].name ? ur_opcode[op].name : "UNKNOWN";
}
