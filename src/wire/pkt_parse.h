/* Receive-side parsing of one RoCE packet (BTH .. ICRC).
 *
 * ur_pkt_parse() proves, from the opcode table and the length alone, that
 * every header the opcode implies lies inside the buffer, and fills a view
 * with the fields every consumer needs.  After UR_PARSE_OK, ur_pkt_hdr() and
 * the accessors in roce_hdr.h may be used on any header the mask names.
 * It does not verify the ICRC (icrc.h) and does not look at P_Key, QPN or
 * PSN values: those checks need QP state.
 */
#ifndef UROCE_WIRE_PKT_PARSE_H
#define UROCE_WIRE_PKT_PARSE_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/enum_name.h"
#include "wire/opcode.h"

struct ur_pkt_view {
	const uint8_t *bth;		/* start of the RoCE payload of the UDP datagram */
	uint32_t mask;			/* ur_opcode[opcode].mask */
	uint32_t qpn, psn;
	uint8_t opcode, pad;
	uint16_t hdr_len;		/* BTH + extension headers */
	const uint8_t *payload;		/* first payload byte */
	uint32_t paylen;		/* payload bytes, pad excluded */
	bool placed;			/* the sender placed them already: payload NULL */
};

#define UR_PARSE_RESULT_LIST(X)						\
	X(UR_PARSE_OK, "OK")						\
	/* shorter than its opcode's headers + pad + ICRC */		\
	X(UR_PARSE_SHORT, "SHORT")					\
	/* not in the opcode table */					\
	X(UR_PARSE_BAD_OPCODE, "BAD_OPCODE")				\
	/* transport header version is not 0 */				\
	X(UR_PARSE_BAD_TVER, "BAD_TVER")				\
	/* pad on an opcode without payload, or payload + pad not a	\
	 * multiple of 4 */						\
	X(UR_PARSE_BAD_PAD, "BAD_PAD")					\
	/* payload on an opcode that has none */			\
	X(UR_PARSE_BAD_PAYLOAD, "BAD_PAYLOAD")

UR_ENUM_DECLARE(ur_parse_result, UR_PARSE_RESULT_LIST, UR_PARSE_NR, ur_parse_result_name);

/* buf/len: the UDP payload, BTH through ICRC inclusive.  Reads nothing
 * outside [buf, buf + len).  On anything but UR_PARSE_OK *v is unspecified. */
enum ur_parse_result ur_pkt_parse(struct ur_pkt_view *v, const uint8_t *buf, size_t len);

/* Pointer to header t of a parsed packet, or NULL if the opcode has none.
 * UR_HDR_PAYLOAD gives the payload on payload-bearing opcodes (even when
 * paylen is 0), NULL on the others. */
static inline const void *ur_pkt_hdr(const struct ur_pkt_view *v, enum ur_hdr_type t)
{
	if (t == UR_HDR_BTH)
		return v->bth;
	if ((unsigned)t >= UR_NUM_HDR_TYPES || !(v->mask & ur_hdr_bit(t)))
		return NULL;
	return v->bth + ur_opcode[v->opcode].offset[t];
}

#endif
