/* RoCEv2 transport headers: sizes and field accessors.
 *
 * Every accessor takes a pointer to the first byte of *that* header and uses
 * memcpy-based loads and stores, so headers may sit at any alignment in a
 * receive buffer.  Values are returned in host order, except ImmDt, which
 * libibverbs keeps as __be32 and therefore travels untouched.  Finding a
 * header inside a packet is the opcode table's job (opcode.h, pkt_parse.h).
 *
 * Layouts follow the IBA specification, volume 1, chapter 9, plus the
 * RoCEv2 annex (A17) and the memory placement extensions (FETH).
 */
#ifndef UROCE_WIRE_ROCE_HDR_H
#define UROCE_WIRE_ROCE_HDR_H

#include <endian.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define UR_BTH_BYTES		12
#define UR_RETH_BYTES		16
#define UR_AETH_BYTES		4
#define UR_ATMETH_BYTES		28
#define UR_ATMACK_BYTES		8
#define UR_IMMDT_BYTES		4
#define UR_IETH_BYTES		4
#define UR_RDETH_BYTES		4
#define UR_DETH_BYTES		8
#define UR_DCETH_BYTES		8
#define UR_XRCETH_BYTES		4
#define UR_FETH_BYTES		4
#define UR_ICRC_BYTES		4

#define UR_ROCE_UDP_PORT	4791
#define UR_DEFAULT_PKEY		0xffff
#define UR_QPN_MASK		0xffffffu	/* QPNs, PSNs, MSNs, EECNs: 24 bits */
#define UR_MCAST_QPN		0xffffffu	/* a UD datagram to a multicast group */
#define UR_GSI_QPN		1u		/* QP1: management datagrams (the CM) */

/* ---- alignment-safe big/little-endian loads and stores ---- */

/* ur_get_<order><bits>(p) loads the field at p, ur_put_<order><bits>(p, v)
 * stores v there, in that byte order, at any alignment. */
#define UR_FIELD_ACCESSORS(order, bits)                                    \
	static inline uint##bits##_t ur_get_##order##bits(const void *p)   \
	{                                                                   \
		uint##bits##_t v;                                           \
									    \
		memcpy(&v, p, sizeof(v));                                   \
		return order##bits##toh(v);                                 \
	}                                                                   \
	static inline void ur_put_##order##bits(void *p, uint##bits##_t v) \
	{                                                                   \
		v = hto##order##bits(v);                                    \
		memcpy(p, &v, sizeof(v));                                   \
	}

UR_FIELD_ACCESSORS(be, 16)
UR_FIELD_ACCESSORS(be, 32)
UR_FIELD_ACCESSORS(be, 64)
UR_FIELD_ACCESSORS(le, 32)

/* A 24-bit field in the low three bytes of a big-endian word whose top byte
 * holds something else (flags or reserved bits). */
static inline uint32_t ur_get_be24(const uint8_t *word)
{
	return ur_get_be32(word) & UR_QPN_MASK;
}

static inline void ur_put_be24(uint8_t *word, uint32_t v)
{
	word[1] = (uint8_t)(v >> 16);
	word[2] = (uint8_t)(v >> 8);
	word[3] = (uint8_t)v;
}

static inline void ur_set_bit8(uint8_t *b, uint8_t mask, bool on)
{
	*b = on ? (uint8_t)(*b | mask) : (uint8_t)(*b & ~mask);
}

/* ---- BTH: Base Transport Header (12 bytes) ----
 *  0: OpCode
 *  1: SE(7) MigReq(6) PadCnt(5:4) TVer(3:0)
 *  2: P_Key (16)
 *  4: FECN(7) BECN(6) resv6(5:0), then DestQP (24)
 *  8: AckReq(7) resv7(6:0), then PSN (24)
 */
#define UR_BTH_SE	0x80
#define UR_BTH_MIG	0x40
#define UR_BTH_PAD	0x30
#define UR_BTH_TVER	0x0f
#define UR_BTH_FECN	0x80
#define UR_BTH_BECN	0x40
#define UR_BTH_ACKREQ	0x80
/* resv7's lowest bit, set by uroce on RC requests: "I resend only what a
 * sequence NAK names, so hold what arrives past the gap" (rel/held.h,
 * docs/wire.md).  Requesters that know nothing of it send 0, and get
 * go-back-N from uroce's responder, as the IBA has it. */
#define UR_BTH_SELECTIVE	0x01

static inline uint8_t bth_opcode(const uint8_t *h) { return h[0]; }
static inline bool bth_se(const uint8_t *h) { return h[1] & UR_BTH_SE; }
static inline bool bth_mig(const uint8_t *h) { return h[1] & UR_BTH_MIG; }
static inline uint8_t bth_pad(const uint8_t *h) { return (h[1] & UR_BTH_PAD) >> 4; }
static inline uint8_t bth_tver(const uint8_t *h) { return h[1] & UR_BTH_TVER; }
static inline uint16_t bth_pkey(const uint8_t *h) { return ur_get_be16(h + 2); }
static inline bool bth_fecn(const uint8_t *h) { return h[4] & UR_BTH_FECN; }
static inline bool bth_becn(const uint8_t *h) { return h[4] & UR_BTH_BECN; }
static inline uint32_t bth_qpn(const uint8_t *h) { return ur_get_be24(h + 4); }
static inline bool bth_ackreq(const uint8_t *h) { return h[8] & UR_BTH_ACKREQ; }
static inline uint32_t bth_psn(const uint8_t *h) { return ur_get_be24(h + 8); }
static inline bool bth_selective(const uint8_t *h) { return h[8] & UR_BTH_SELECTIVE; }

static inline void bth_set_opcode(uint8_t *h, uint8_t op) { h[0] = op; }
static inline void bth_set_se(uint8_t *h, bool se) { ur_set_bit8(&h[1], UR_BTH_SE, se); }
static inline void bth_set_mig(uint8_t *h, bool mig) { ur_set_bit8(&h[1], UR_BTH_MIG, mig); }
static inline void bth_set_pad(uint8_t *h, uint8_t pad)
{
	h[1] = (uint8_t)((h[1] & ~UR_BTH_PAD) | ((pad << 4) & UR_BTH_PAD));
}
static inline void bth_set_tver(uint8_t *h, uint8_t tver)
{
	h[1] = (uint8_t)((h[1] & ~UR_BTH_TVER) | (tver & UR_BTH_TVER));
}
static inline void bth_set_pkey(uint8_t *h, uint16_t pkey) { ur_put_be16(h + 2, pkey); }
static inline void bth_set_fecn(uint8_t *h, bool on) { ur_set_bit8(&h[4], UR_BTH_FECN, on); }
static inline void bth_set_becn(uint8_t *h, bool on) { ur_set_bit8(&h[4], UR_BTH_BECN, on); }
static inline void bth_set_qpn(uint8_t *h, uint32_t qpn) { ur_put_be24(h + 4, qpn); }
static inline void bth_set_ackreq(uint8_t *h, bool on) { ur_set_bit8(&h[8], UR_BTH_ACKREQ, on); }
static inline void bth_set_psn(uint8_t *h, uint32_t psn) { ur_put_be24(h + 8, psn); }
static inline void bth_set_selective(uint8_t *h, bool on) { ur_set_bit8(&h[8], UR_BTH_SELECTIVE, on); }

/* A whole BTH: reserved bits, FECN and BECN zero, TVer 0, MigReq 1.  MigReq 1
 * is the spec's value for a QP in the Migrated state, which is every QP
 * without automatic path migration armed; receivers (rxe included, which
 * itself sends 0) ignore the bit, and the ICRC covers it either way. */
static inline void bth_init(uint8_t *h, uint8_t opcode, bool se, uint8_t pad,
			    uint16_t pkey, uint32_t qpn, bool ackreq, uint32_t psn)
{
	h[0] = opcode;
	h[1] = (uint8_t)((se ? UR_BTH_SE : 0) | UR_BTH_MIG | ((pad << 4) & UR_BTH_PAD));
	ur_put_be16(h + 2, pkey);
	ur_put_be32(h + 4, qpn & UR_QPN_MASK);
	ur_put_be32(h + 8, (ackreq ? 0x80000000u : 0) | (psn & UR_QPN_MASK));
}

/* ---- RETH: RDMA Extended Transport Header (16): VA(64) R_Key DMALen ---- */
static inline uint64_t reth_va(const uint8_t *h) { return ur_get_be64(h); }
static inline uint32_t reth_rkey(const uint8_t *h) { return ur_get_be32(h + 8); }
static inline uint32_t reth_len(const uint8_t *h) { return ur_get_be32(h + 12); }
static inline void reth_set_va(uint8_t *h, uint64_t va) { ur_put_be64(h, va); }
static inline void reth_set_rkey(uint8_t *h, uint32_t rkey) { ur_put_be32(h + 8, rkey); }
static inline void reth_set_len(uint8_t *h, uint32_t len) { ur_put_be32(h + 12, len); }

/* ---- AETH: ACK Extended Transport Header (4): Syndrome(8) MSN(24) ----
 * Syndrome bits 7:5 give the type, bits 4:0 a credit count (ACK), an RNR
 * timer code (RNR NAK) or a NAK code. */
#define UR_AETH_TYPE_MASK	0xe0
#define UR_AETH_CODE_MASK	0x1f
#define UR_AETH_ACK		0x00
#define UR_AETH_ACK_UNLIMITED	0x1f	/* ACK, credit field "no limit": what rxe sends */
#define UR_AETH_RNR_NAK		0x20
#define UR_AETH_RESERVED	0x40
#define UR_AETH_NAK		0x60
#define UR_NAK_PSN_SEQ_ERR	0x60
#define UR_NAK_INVALID_REQ	0x61
#define UR_NAK_REM_ACCESS_ERR	0x62
#define UR_NAK_REM_OP_ERR	0x63
#define UR_NAK_INV_RD_REQ	0x64
/* Two reserved syndromes, sent by uroce's responder only to a requester
 * that marks its requests (UR_BTH_SELECTIVE), which knows them (docs/wire.md):
 * - GAP: "the PSNs from the BTH's on, as many as the MSN field says, are
 *   missing, and I hold what came after them".  Past the gap a sequence
 *   NAK names, each further gap is told so as it shows, and resent at
 *   once, rather than one round trip after the gap before it filled.  It
 *   acknowledges nothing.
 * - GAP_AGAIN: a sequence NAK of the BTH's PSN (acknowledging what
 *   precedes it) that also says which PSN, in the MSN field, the
 *   responder just received: if the requester resent that one alone after
 *   the missing one, the missing one's resend was lost, and goes again at
 *   once rather than at the timer. */
#define UR_AETH_GAP		0x40
#define UR_AETH_GAP_AGAIN	0x41

static inline uint8_t aeth_syn(const uint8_t *h) { return h[0]; }
static inline uint32_t aeth_msn(const uint8_t *h) { return ur_get_be24(h); }
static inline void aeth_set_syn(uint8_t *h, uint8_t syn) { h[0] = syn; }
static inline void aeth_set_msn(uint8_t *h, uint32_t msn) { ur_put_be24(h, msn); }
static inline uint8_t ur_aeth_type(uint8_t syn) { return syn & UR_AETH_TYPE_MASK; }
static inline uint8_t ur_aeth_code(uint8_t syn) { return syn & UR_AETH_CODE_MASK; }

/* ---- AtomicETH (28): VA(64) R_Key SwapOrAdd(64) Compare(64) ---- */
static inline uint64_t atmeth_va(const uint8_t *h) { return ur_get_be64(h); }
static inline uint32_t atmeth_rkey(const uint8_t *h) { return ur_get_be32(h + 8); }
static inline uint64_t atmeth_swap_add(const uint8_t *h) { return ur_get_be64(h + 12); }
static inline uint64_t atmeth_comp(const uint8_t *h) { return ur_get_be64(h + 20); }
static inline void atmeth_set_va(uint8_t *h, uint64_t va) { ur_put_be64(h, va); }
static inline void atmeth_set_rkey(uint8_t *h, uint32_t rkey) { ur_put_be32(h + 8, rkey); }
static inline void atmeth_set_swap_add(uint8_t *h, uint64_t v) { ur_put_be64(h + 12, v); }
static inline void atmeth_set_comp(uint8_t *h, uint64_t v) { ur_put_be64(h + 20, v); }

/* ---- AtomicAckETH (8): original remote data ---- */
static inline uint64_t atmack_orig(const uint8_t *h) { return ur_get_be64(h); }
static inline void atmack_set_orig(uint8_t *h, uint64_t v) { ur_put_be64(h, v); }

/* ---- ImmDt (4): raw network-order word, exactly as ibv_send_wr/ibv_wc hold it ---- */
static inline uint32_t immdt_get(const uint8_t *h)
{
	uint32_t v;

	memcpy(&v, h, sizeof(v));
	return v;
}

static inline void immdt_set(uint8_t *h, uint32_t be_imm) { memcpy(h, &be_imm, sizeof(be_imm)); }

/* ---- IETH (4): R_Key to invalidate ---- */
static inline uint32_t ieth_rkey(const uint8_t *h) { return ur_get_be32(h); }
static inline void ieth_set_rkey(uint8_t *h, uint32_t rkey) { ur_put_be32(h, rkey); }

/* ---- RDETH (4): reserved(8) EE-Context(24) ---- */
static inline uint32_t rdeth_een(const uint8_t *h) { return ur_get_be24(h); }
static inline void rdeth_set_een(uint8_t *h, uint32_t een) { ur_put_be32(h, een & UR_QPN_MASK); }

/* ---- DETH (8): Q_Key, reserved(8) SrcQP(24) ---- */
/* DCETH: DC's access key, 64 bits. */
static inline uint64_t dceth_key(const uint8_t *h) { return ur_get_be64(h); }
static inline void dceth_set_key(uint8_t *h, uint64_t key) { ur_put_be64(h, key); }

static inline uint32_t deth_qkey(const uint8_t *h) { return ur_get_be32(h); }
static inline uint32_t deth_sqp(const uint8_t *h) { return ur_get_be24(h + 4); }
static inline void deth_set_qkey(uint8_t *h, uint32_t qkey) { ur_put_be32(h, qkey); }
static inline void deth_set_sqp(uint8_t *h, uint32_t sqp) { ur_put_be32(h + 4, sqp & UR_QPN_MASK); }

/* ---- XRCETH (4): reserved(8) XRC SRQ number(24) ---- */
static inline uint32_t xrceth_srqn(const uint8_t *h) { return ur_get_be24(h); }
static inline void xrceth_set_srqn(uint8_t *h, uint32_t srqn) { ur_put_be32(h, srqn & UR_QPN_MASK); }

/* ---- FETH (4), FLUSH only: reserved(26) Selectivity(5:4) PlacementType(3:0) ---- */
#define UR_FETH_PLT_MASK	0x0000000fu
#define UR_FETH_SEL_MASK	0x00000030u
#define UR_FETH_SEL_SHIFT	4

static inline uint8_t feth_plt(const uint8_t *h) { return ur_get_be32(h) & UR_FETH_PLT_MASK; }
static inline uint8_t feth_sel(const uint8_t *h)
{
	return (ur_get_be32(h) & UR_FETH_SEL_MASK) >> UR_FETH_SEL_SHIFT;
}
static inline void feth_set_plt(uint8_t *h, uint8_t plt)
{
	ur_put_be32(h, (ur_get_be32(h) & ~UR_FETH_PLT_MASK) | (plt & UR_FETH_PLT_MASK));
}
static inline void feth_set_sel(uint8_t *h, uint8_t sel)
{
	ur_put_be32(h, (ur_get_be32(h) & ~UR_FETH_SEL_MASK) |
		       (((uint32_t)sel << UR_FETH_SEL_SHIFT) & UR_FETH_SEL_MASK));
}
/* The whole FETH, reserved bits zero. */
static inline void feth_init(uint8_t *h, uint8_t plt, uint8_t sel)
{
	ur_put_be32(h, (((uint32_t)sel << UR_FETH_SEL_SHIFT) & UR_FETH_SEL_MASK) |
		       (plt & UR_FETH_PLT_MASK));
}

#endif
