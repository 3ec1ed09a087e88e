/* RoCEv2 invariant CRC (ICRC): the CRC-32 that ends every RoCE packet.
 *
 * It covers what no router may change: 8 bytes of 0xFF standing in for the
 * InfiniBand LRH, the IP header with its variant fields (IPv4 TOS, TTL,
 * checksum; IPv6 traffic class, flow label, hop limit) set to ones, the UDP
 * header with its checksum set to ones, the BTH with byte 4 (FECN, BECN,
 * resv6) set to ones, then the extension headers, payload and pad.  The
 * result is stored little-endian in the last 4 bytes.
 */
#ifndef UROCE_WIRE_ICRC_H
#define UROCE_WIRE_ICRC_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* CRC-32 with zlib's crc32() semantics (start with 0, chain by passing the
 * previous result).  PCLMULQDQ when the CPU has it, slice-by-8 otherwise or
 * when UROCE_CRC=portable is set. */
uint32_t ur_crc32(uint32_t crc, const void *buf, size_t len);

/* The part of the IP/UDP headers the ICRC covers besides the RoCE bytes. */
struct ur_roce_ip {
	int family;			/* AF_INET or AF_INET6 */
	union {
		struct { struct in_addr saddr, daddr; } v4;
		struct { struct in6_addr saddr, daddr; } v6;
	};
	uint16_t sport, dport;		/* host byte order */
	uint16_t ip_id;			/* IPv4 identification, host order */
	bool df;			/* IPv4 Don't Fragment */
};

/* ICRC of a packet to send.  iov holds the RoCE bytes from the BTH through
 * payload and pad, without the ICRC (the BTH may span iov entries);
 * roce_len is their total.  The IP and UDP length fields are derived from
 * it: UDP length = 8 + roce_len + 4, IPv4 total length = 20 + UDP length
 * (no IP options), IPv6 payload length = UDP length.  Returns the value to
 * store with ur_put_le32() right after the RoCE bytes. */
uint32_t ur_icrc_calc(const struct ur_roce_ip *ip, const struct iovec *iov, int iovcnt,
		      size_t roce_len);

/* Verify a received packet, pkt/len = BTH .. ICRC inclusive: 0 if the ICRC
 * matches, -EBADMSG if not (or if len cannot hold a BTH and an ICRC),
 * -EAFNOSUPPORT for an unknown family.
 *
 * IPv6 is checked exactly.  For IPv4, ip->ip_id and ip->df are ignored: the
 * ICRC covers the IP identification, which a plain UDP socket never sees
 * (rxe sends random IDs).  Instead the check solves for it.  The CRC is
 * affine, so the received ICRC XOR the ICRC computed with ID 0 and DF set
 * equals the contribution of the 32 bits at IP header bytes 4..7 (ID, flags,
 * fragment offset), i.e. those bits times x^(8k) mod P, k being the bytes
 * from the ID field to the end of the covered data.  Multiplying by
 * x^(-8k) recovers the bits; the packet is accepted when they describe an
 * unfragmented datagram with DF set (fragment offset 0, MF 0, reserved 0):
 * every RoCEv2 sender sets DF (Linux rxe, NICs, uroce), and a datagram
 * without it is dropped.  The ID then comes out in *ip_id_out (may be NULL).
 *
 * Cost of that freedom: a corrupted IPv4 packet passes with probability
 * 2^16 / 2^32 = 2^-16 (any ID) instead of 2^-32, and the CRC's guarantee
 * for short error bursts is weakened; single-bit errors in the covered
 * bytes are still caught (docs/wire.md).  An oversized IPv4 packet (total
 * length over 65535) is rejected. */
int ur_icrc_check(const struct ur_roce_ip *ip, const uint8_t *pkt, size_t len,
		  uint16_t *ip_id_out);

#endif
