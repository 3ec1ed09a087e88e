/* RoCEv2 ICRC: generation, exact check for IPv6, and the IPv4 check that
 * solves for the IP identification a UDP socket cannot see (see icrc.h). */
#include "wire/icrc.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "util/compiler.h"
#include "wire/crc32.h"
#include "wire/roce_hdr.h"

#define LRH_BYTES	8	/* the InfiniBand LRH, masked to ones */
#define IP4_BYTES	20
#define IP6_BYTES	40
#define UDP_BYTES	8
#define PSHDR_MAX	(LRH_BYTES + IP6_BYTES + UDP_BYTES + UR_BTH_BYTES)
#define IP4_DF		0x4000
#define IP4_ID_OFF	4	/* identification, then flags + fragment offset */

/* The covered prefix up to and including the BTH, variant fields as ones.
 * Returns its length. */
static size_t icrc_pseudo_hdr(uint8_t *buf, const struct ur_roce_ip *ip,
			      const uint8_t *bth, size_t roce_len, uint16_t ip_id, bool df)
{
	uint16_t udp_len = (uint16_t)(UDP_BYTES + roce_len + UR_ICRC_BYTES);
	uint8_t *h = buf + LRH_BYTES, *u;

	memset(buf, 0xff, LRH_BYTES);
	if (ip->family == AF_INET) {
		h[0] = 0x45;				/* version 4, 5 words */
		h[1] = 0xff;				/* TOS */
		ur_put_be16(h + 2, (uint16_t)(IP4_BYTES + udp_len));
		ur_put_be16(h + 4, ip_id);
		ur_put_be16(h + 6, df ? IP4_DF : 0);
		h[8] = 0xff;				/* TTL */
		h[9] = IPPROTO_UDP;
		h[10] = h[11] = 0xff;			/* header checksum */
		memcpy(h + 12, &ip->v4.saddr, 4);
		memcpy(h + 16, &ip->v4.daddr, 4);
		u = h + IP4_BYTES;
	} else {
		h[0] = 0x6f;				/* version 6, traffic class, */
		h[1] = h[2] = h[3] = 0xff;		/* flow label */
		ur_put_be16(h + 4, udp_len);
		h[6] = IPPROTO_UDP;
		h[7] = 0xff;				/* hop limit */
		memcpy(h + 8, &ip->v6.saddr, 16);
		memcpy(h + 24, &ip->v6.daddr, 16);
		u = h + IP6_BYTES;
	}
	ur_put_be16(u, ip->sport);
	ur_put_be16(u + 2, ip->dport);
	ur_put_be16(u + 4, udp_len);
	u[6] = u[7] = 0xff;				/* UDP checksum */
	memcpy(u + UDP_BYTES, bth, UR_BTH_BYTES);
	u[UDP_BYTES + 4] = 0xff;			/* FECN, BECN, resv6 */
	return (size_t)(u + UDP_BYTES + UR_BTH_BYTES - buf);
}

uint32_t ur_icrc_calc(const struct ur_roce_ip *ip, const struct iovec *iov, int iovcnt,
		      size_t roce_len)
{
	uint8_t bth[UR_BTH_BYTES] = { 0 }, pshdr[PSHDR_MAX];
	size_t got = 0, off = 0, n;
	uint32_t crc;
	int i = 0;

	/* The BTH is needed whole before anything else; it may span entries. */
	for (; i < iovcnt && got < UR_BTH_BYTES; i++) {
		n = ur_min(iov[i].iov_len, UR_BTH_BYTES - got);
		memcpy(bth + got, iov[i].iov_base, n);
		got += n;
		off = n;
	}
	if (got == UR_BTH_BYTES && i > 0 && off < iov[i - 1].iov_len)
		i--;		/* the rest of that entry is covered data */
	else
		off = 0;

	crc = ur_crc32(0, pshdr, icrc_pseudo_hdr(pshdr, ip, bth, roce_len, ip->ip_id, ip->df));
	for (; i < iovcnt; i++, off = 0)
		crc = ur_crc32(crc, (const uint8_t *)iov[i].iov_base + off, iov[i].iov_len - off);
	return crc;
}

int ur_icrc_check(const struct ur_roce_ip *ip, const uint8_t *pkt, size_t len,
		  uint16_t *ip_id_out)
{
	uint8_t pshdr[PSHDR_MAX];
	uint32_t crc, delta, w;
	size_t roce_len;

	if (ip->family != AF_INET && ip->family != AF_INET6)
		return -EAFNOSUPPORT;
	if (unlikely(len < UR_BTH_BYTES + UR_ICRC_BYTES))
		return -EBADMSG;
	roce_len = len - UR_ICRC_BYTES;
	if (ip->family == AF_INET && unlikely(roce_len > 0xffff - IP4_BYTES - UDP_BYTES - UR_ICRC_BYTES))
		return -EBADMSG;

	/* IPv4: computed with ID 0 and DF set, the bits solved for below. */
	crc = ur_crc32(0, pshdr, icrc_pseudo_hdr(pshdr, ip, pkt, roce_len, 0, true));
	crc = ur_crc32(crc, pkt + UR_BTH_BYTES, roce_len - UR_BTH_BYTES);
	delta = ur_get_le32(pkt + roce_len) ^ crc;

	if (ip->family == AF_INET6)
		return delta ? -EBADMSG : 0;

	/* delta = W * x^(8k) mod P, W the XOR between the real IP header bytes
	 * 4..7 and (0, 0, DF, 0), loaded little-endian (register form);
	 * k = bytes from byte 4 of the IP header to the end of the covered
	 * data.  Zero-cost answer for the common ID 0 + DF case. */
	w = delta ? ur_crc32_mulmod(delta, ur_crc32_xpow8_inv(IP4_BYTES - IP4_ID_OFF +
							     UDP_BYTES + roce_len)) : 0;
	/* Only DF set and no fragmentation bits: every RoCEv2 sender sets DF
	 * (rxe, NICs, ours), and admitting DF clear too would double the
	 * false-accept rate and let two single-bit errors through. */
	if (w >> 16)
		return -EBADMSG;
	if (ip_id_out)
		*ip_id_out = (uint16_t)((w & 0xff) << 8 | ((w >> 8) & 0xff));
	return 0;
}
