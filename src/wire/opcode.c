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

/* The low five bits of an opcode name the same operation in each transport
 * that has it, so the rows of those operations are written once: T is the
 * transport's prefix, REQ and RESP wrap its requests' and responses' masks
 * in its own headers (AS_IS: none). */
#define AS_IS(m)	(m)

#define SEND_WRITE_ROWS(T, REQ)								\
	ROW(T##_SEND_FIRST,				REQ(SEND(P_FIRST))),		\
	ROW(T##_SEND_MIDDLE,				REQ(SEND(P_MIDDLE))),		\
	ROW(T##_SEND_LAST,				REQ(SEND(P_LAST))),		\
	ROW(T##_SEND_LAST_WITH_IMMEDIATE,		REQ(SEND_IMM(P_LAST))),		\
	ROW(T##_SEND_ONLY,				REQ(SEND(P_ONLY))),		\
	ROW(T##_SEND_ONLY_WITH_IMMEDIATE,		REQ(SEND_IMM(P_ONLY))),		\
	ROW(T##_RDMA_WRITE_FIRST,			REQ(WRITE(P_FIRST))),		\
	ROW(T##_RDMA_WRITE_MIDDLE,			REQ(WRITE(P_MIDDLE))),		\
	ROW(T##_RDMA_WRITE_LAST,			REQ(WRITE(P_LAST))),		\
	ROW(T##_RDMA_WRITE_LAST_WITH_IMMEDIATE,		REQ(WRITE_IMM(P_LAST))),	\
	ROW(T##_RDMA_WRITE_ONLY,			REQ(WRITE(P_ONLY))),		\
	ROW(T##_RDMA_WRITE_ONLY_WITH_IMMEDIATE,		REQ(WRITE_IMM(P_ONLY))),

#define READ_ATOMIC_ROWS(T, REQ, RESP)							\
	ROW(T##_RDMA_READ_REQUEST,			REQ(READ_REQ)),			\
	ROW(T##_RDMA_READ_RESPONSE_FIRST,		RESP(READ_RESP(P_FIRST))),	\
	ROW(T##_RDMA_READ_RESPONSE_MIDDLE,		RESP(READ_RESP(P_MIDDLE))),	\
	ROW(T##_RDMA_READ_RESPONSE_LAST,		RESP(READ_RESP(P_LAST))),	\
	ROW(T##_RDMA_READ_RESPONSE_ONLY,		RESP(READ_RESP(P_ONLY))),	\
	ROW(T##_ACKNOWLEDGE,				RESP(ACK)),			\
	ROW(T##_ATOMIC_ACKNOWLEDGE,			RESP(ATOMIC_ACK)),		\
	ROW(T##_COMPARE_SWAP,				REQ(ATOMIC)),			\
	ROW(T##_FETCH_ADD,				REQ(ATOMIC)),

#define SEND_INV_ROWS(T, REQ)							\
	ROW(T##_SEND_LAST_WITH_INVALIDATE,		REQ(SEND_INV(P_LAST))),	\
	ROW(T##_SEND_ONLY_WITH_INVALIDATE,		REQ(SEND_INV(P_ONLY))),

const struct ur_opcode_info ur_opcode[256] = {
	SEND_WRITE_ROWS(RC, AS_IS)
	READ_ATOMIC_ROWS(RC, AS_IS, AS_IS)
	SEND_INV_ROWS(RC, AS_IS)
	ROW(RC_FLUSH,					FLUSH),
	ROW(RC_ATOMIC_WRITE,				ATOMIC_WRITE),

	SEND_WRITE_ROWS(UC, AS_IS)

	SEND_WRITE_ROWS(RD, RD_REQ)
	READ_ATOMIC_ROWS(RD, RD_REQ, RD_RESP)

	ROW(UD_SEND_ONLY,				UD(SEND(P_ONLY))),
	ROW(UD_SEND_ONLY_WITH_IMMEDIATE,		UD(SEND_IMM(P_ONLY))),

	ROW(CNP,					CNP),

	SEND_WRITE_ROWS(XRC, XRC)
	READ_ATOMIC_ROWS(XRC, XRC, AS_IS)
	SEND_INV_ROWS(XRC, XRC)
};

const char *ur_opcode_name(uint8_t op)
{
	return ur_opcode[op].name ? ur_opcode[op].name : "UNKNOWN";
}
