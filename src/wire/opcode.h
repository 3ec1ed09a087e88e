/* BTH opcodes and the table that describes each one.
 *
 * One row per opcode says which extension headers follow the BTH, where each
 * starts, how long the fixed part is, and what kind of packet it is.  Code
 * that builds or reads packets asks the table instead of switching on
 * opcodes, so a new opcode is one new row.
 */
#ifndef UROCE_WIRE_OPCODE_H
#define UROCE_WIRE_OPCODE_H

#include <stdbool.h>
#include <stdint.h>

#include "wire/roce_hdr.h"

/* Transport: top 3 bits of the opcode. */
#define UR_OP_TYPE_MASK	0xe0
#define UR_OP_TYPE_RC	0x00
#define UR_OP_TYPE_UC	0x20
#define UR_OP_TYPE_RD	0x40
#define UR_OP_TYPE_UD	0x60
#define UR_OP_TYPE_CNP	0x80
#define UR_OP_TYPE_XRC	0xa0

enum ur_opcode_value {
	UR_OP_RC_SEND_FIRST				= 0x00,
	UR_OP_RC_SEND_MIDDLE				= 0x01,
	UR_OP_RC_SEND_LAST				= 0x02,
	UR_OP_RC_SEND_LAST_WITH_IMMEDIATE		= 0x03,
	UR_OP_RC_SEND_ONLY				= 0x04,
	UR_OP_RC_SEND_ONLY_WITH_IMMEDIATE		= 0x05,
	UR_OP_RC_RDMA_WRITE_FIRST			= 0x06,
	UR_OP_RC_RDMA_WRITE_MIDDLE			= 0x07,
	UR_OP_RC_RDMA_WRITE_LAST			= 0x08,
	UR_OP_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE		= 0x09,
	UR_OP_RC_RDMA_WRITE_ONLY			= 0x0a,
	UR_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE		= 0x0b,
	UR_OP_RC_RDMA_READ_REQUEST			= 0x0c,
	UR_OP_RC_RDMA_READ_RESPONSE_FIRST		= 0x0d,
	UR_OP_RC_RDMA_READ_RESPONSE_MIDDLE		= 0x0e,
	UR_OP_RC_RDMA_READ_RESPONSE_LAST		= 0x0f,
	UR_OP_RC_RDMA_READ_RESPONSE_ONLY		= 0x10,
	UR_OP_RC_ACKNOWLEDGE				= 0x11,
	UR_OP_RC_ATOMIC_ACKNOWLEDGE			= 0x12,
	UR_OP_RC_COMPARE_SWAP				= 0x13,
	UR_OP_RC_FETCH_ADD				= 0x14,
	UR_OP_RC_SEND_LAST_WITH_INVALIDATE		= 0x16,
	UR_OP_RC_SEND_ONLY_WITH_INVALIDATE		= 0x17,
	UR_OP_RC_FLUSH					= 0x1c,
	UR_OP_RC_ATOMIC_WRITE				= 0x1d,

	UR_OP_UC_SEND_FIRST				= 0x20,
	UR_OP_UC_SEND_MIDDLE				= 0x21,
	UR_OP_UC_SEND_LAST				= 0x22,
	UR_OP_UC_SEND_LAST_WITH_IMMEDIATE		= 0x23,
	UR_OP_UC_SEND_ONLY				= 0x24,
	UR_OP_UC_SEND_ONLY_WITH_IMMEDIATE		= 0x25,
	UR_OP_UC_RDMA_WRITE_FIRST			= 0x26,
	UR_OP_UC_RDMA_WRITE_MIDDLE			= 0x27,
	UR_OP_UC_RDMA_WRITE_LAST			= 0x28,
	UR_OP_UC_RDMA_WRITE_LAST_WITH_IMMEDIATE		= 0x29,
	UR_OP_UC_RDMA_WRITE_ONLY			= 0x2a,
	UR_OP_UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE		= 0x2b,

	/* RD's opcodes, which DC uses (rel/dc.h): with the 8-byte DC header
	 * after the BTH, as DC packets have it.  uroce has no RD QPs. */
	UR_OP_RD_SEND_FIRST				= 0x40,
	UR_OP_RD_SEND_MIDDLE				= 0x41,
	UR_OP_RD_SEND_LAST				= 0x42,
	UR_OP_RD_SEND_LAST_WITH_IMMEDIATE		= 0x43,
	UR_OP_RD_SEND_ONLY				= 0x44,
	UR_OP_RD_SEND_ONLY_WITH_IMMEDIATE		= 0x45,
	UR_OP_RD_RDMA_WRITE_FIRST			= 0x46,
	UR_OP_RD_RDMA_WRITE_MIDDLE			= 0x47,
	UR_OP_RD_RDMA_WRITE_LAST			= 0x48,
	UR_OP_RD_RDMA_WRITE_LAST_WITH_IMMEDIATE		= 0x49,
	UR_OP_RD_RDMA_WRITE_ONLY			= 0x4a,
	UR_OP_RD_RDMA_WRITE_ONLY_WITH_IMMEDIATE		= 0x4b,
	UR_OP_RD_RDMA_READ_REQUEST			= 0x4c,
	UR_OP_RD_RDMA_READ_RESPONSE_FIRST		= 0x4d,
	UR_OP_RD_RDMA_READ_RESPONSE_MIDDLE		= 0x4e,
	UR_OP_RD_RDMA_READ_RESPONSE_LAST		= 0x4f,
	UR_OP_RD_RDMA_READ_RESPONSE_ONLY		= 0x50,
	UR_OP_RD_ACKNOWLEDGE				= 0x51,
	UR_OP_RD_ATOMIC_ACKNOWLEDGE			= 0x52,
	UR_OP_RD_COMPARE_SWAP				= 0x53,
	UR_OP_RD_FETCH_ADD				= 0x54,

	UR_OP_UD_SEND_ONLY				= 0x64,
	UR_OP_UD_SEND_ONLY_WITH_IMMEDIATE		= 0x65,

	UR_OP_CNP					= 0x81,

	UR_OP_XRC_SEND_FIRST				= 0xa0,
	UR_OP_XRC_SEND_MIDDLE				= 0xa1,
	UR_OP_XRC_SEND_LAST				= 0xa2,
	UR_OP_XRC_SEND_LAST_WITH_IMMEDIATE		= 0xa3,
	UR_OP_XRC_SEND_ONLY				= 0xa4,
	UR_OP_XRC_SEND_ONLY_WITH_IMMEDIATE		= 0xa5,
	UR_OP_XRC_RDMA_WRITE_FIRST			= 0xa6,
	UR_OP_XRC_RDMA_WRITE_MIDDLE			= 0xa7,
	UR_OP_XRC_RDMA_WRITE_LAST			= 0xa8,
	UR_OP_XRC_RDMA_WRITE_LAST_WITH_IMMEDIATE	= 0xa9,
	UR_OP_XRC_RDMA_WRITE_ONLY			= 0xaa,
	UR_OP_XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE	= 0xab,
	UR_OP_XRC_RDMA_READ_REQUEST			= 0xac,
	UR_OP_XRC_RDMA_READ_RESPONSE_FIRST		= 0xad,
	UR_OP_XRC_RDMA_READ_RESPONSE_MIDDLE		= 0xae,
	UR_OP_XRC_RDMA_READ_RESPONSE_LAST		= 0xaf,
	UR_OP_XRC_RDMA_READ_RESPONSE_ONLY		= 0xb0,
	UR_OP_XRC_ACKNOWLEDGE				= 0xb1,
	UR_OP_XRC_ATOMIC_ACKNOWLEDGE			= 0xb2,
	UR_OP_XRC_COMPARE_SWAP				= 0xb3,
	UR_OP_XRC_FETCH_ADD				= 0xb4,
	UR_OP_XRC_SEND_LAST_WITH_INVALIDATE		= 0xb6,
	UR_OP_XRC_SEND_ONLY_WITH_INVALIDATE		= 0xb7,
};

/* Headers in the order they appear on the wire; offset[] is indexed by it. */
enum ur_hdr_type {
	UR_HDR_BTH,
	UR_HDR_RETH,
	UR_HDR_AETH,
	UR_HDR_ATMETH,
	UR_HDR_ATMACK,
	UR_HDR_IMMDT,
	UR_HDR_IETH,
	UR_HDR_RDETH,
	UR_HDR_DETH,
	UR_HDR_XRCETH,
	UR_HDR_FETH,
	UR_HDR_DCETH,		/* DC: right after the BTH (see opcode.c) */
	UR_HDR_PAYLOAD,
	UR_NUM_HDR_TYPES
};

/* Mask bits.  Header presence bits are 1 << ur_hdr_type, so that
 * (mask & ur_hdr_bit(t)) answers "does this opcode carry header t". */
#define ur_hdr_bit(t)		(1u << (t))
#define UR_OPF_RETH		ur_hdr_bit(UR_HDR_RETH)
#define UR_OPF_AETH		ur_hdr_bit(UR_HDR_AETH)
#define UR_OPF_ATMETH		ur_hdr_bit(UR_HDR_ATMETH)
#define UR_OPF_ATMACK		ur_hdr_bit(UR_HDR_ATMACK)
#define UR_OPF_IMMDT		ur_hdr_bit(UR_HDR_IMMDT)
#define UR_OPF_IETH		ur_hdr_bit(UR_HDR_IETH)
#define UR_OPF_RDETH		ur_hdr_bit(UR_HDR_RDETH)
#define UR_OPF_DETH		ur_hdr_bit(UR_HDR_DETH)
#define UR_OPF_XRCETH		ur_hdr_bit(UR_HDR_XRCETH)
#define UR_OPF_FETH		ur_hdr_bit(UR_HDR_FETH)
#define UR_OPF_DCETH		ur_hdr_bit(UR_HDR_DCETH)
#define UR_OPF_PAYLOAD		ur_hdr_bit(UR_HDR_PAYLOAD) /* may carry payload */
/* Direction: exactly one of the two, except for CNP which is neither. */
#define UR_OPF_REQ		(1u << 13)	/* requester -> responder */
#define UR_OPF_RESP		(1u << 14)	/* ACK/NAK, read response, atomic ACK */
/* Position within a segmented message (sends, writes, read responses). */
#define UR_OPF_FIRST		(1u << 15)
#define UR_OPF_MIDDLE		(1u << 16)
#define UR_OPF_LAST		(1u << 17)
#define UR_OPF_ONLY		(UR_OPF_FIRST | UR_OPF_LAST)
/* Message boundaries for every opcode: FIRST or ONLY, or a single-packet
 * operation (read request, atomic, flush, atomic write, ACK), starts one;
 * LAST or ONLY or a single-packet operation ends one. */
#define UR_OPF_START		(1u << 18)
#define UR_OPF_END		(1u << 19)
/* Request kind; set on request packets only. */
#define UR_OPF_SEND		(1u << 20)
#define UR_OPF_WRITE		(1u << 21)
#define UR_OPF_READ		(1u << 22)
#define UR_OPF_ATOMIC		(1u << 23)
#define UR_OPF_FLUSH		(1u << 24)
#define UR_OPF_ATOMIC_WRITE	(1u << 25)
#define UR_OPF_IMM		(1u << 26)	/* with immediate (carries ImmDt) */
#define UR_OPF_INV		(1u << 27)	/* with invalidate (carries IETH) */
/* Responder side effects.  RWR: the packet belongs to a message that consumes
 * a receive WQE: every packet of a send, and the LAST/ONLY packet of an RDMA
 * write with immediate (the only one that touches the receive queue).
 * COMP: RWR and END, the packet after which the responder completes that
 * receive WQE. */
#define UR_OPF_RWR		(1u << 28)
#define UR_OPF_COMP		(1u << 29)

struct ur_opcode_info {
	const char *name;
	uint32_t mask;
	uint8_t length;				/* BTH + extension headers */
	uint8_t offset[UR_NUM_HDR_TYPES];	/* from the BTH; 0 if absent */
};

/* Unused opcodes: name NULL, mask 0. */
extern const struct ur_opcode_info ur_opcode[256];

/* Never NULL: "UNKNOWN" for opcodes the table does not describe. */
const char *ur_opcode_name(uint8_t op);

static inline bool ur_opcode_known(uint8_t op)
{
	return ur_opcode[op].mask != 0;
}

#endif
