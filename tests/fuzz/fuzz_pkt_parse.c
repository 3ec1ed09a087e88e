/* libFuzzer target: one RoCE packet (BTH .. ICRC) per input.
 *
 * Parse it; if the parser accepts it, check the view's arithmetic and read
 * every byte of every header it claims, through the accessors, plus the
 * payload and pad, so that a wrong offset or length shows up as an
 * out-of-bounds read under ASan.  Then run the ICRC check for a fixed IPv4
 * and IPv6 path; when the IPv4 check accepts, regenerating the ICRC with the
 * recovered ID must reproduce the stored one. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_common.h"
#include "wire/opcode.h"
#include "wire/pkt_parse.h"

static volatile uint64_t sink;

#define FUZZ_ASSERT(c) do { if (!(c)) abort(); } while (0)

static uint64_t touch_headers(const struct ur_pkt_view *v)
{
	const uint8_t *h;
	uint64_t acc = bth_se(v->bth) + bth_mig(v->bth) + bth_pkey(v->bth) + bth_fecn(v->bth) +
		       bth_becn(v->bth) + bth_ackreq(v->bth);

	if ((h = ur_pkt_hdr(v, UR_HDR_RETH)))
		acc += reth_va(h) + reth_rkey(h) + reth_len(h);
	if ((h = ur_pkt_hdr(v, UR_HDR_AETH)))
		acc += aeth_syn(h) + aeth_msn(h);
	if ((h = ur_pkt_hdr(v, UR_HDR_ATMETH)))
		acc += atmeth_va(h) + atmeth_rkey(h) + atmeth_swap_add(h) + atmeth_comp(h);
	if ((h = ur_pkt_hdr(v, UR_HDR_ATMACK)))
		acc += atmack_orig(h);
	if ((h = ur_pkt_hdr(v, UR_HDR_IMMDT)))
		acc += immdt_get(h);
	if ((h = ur_pkt_hdr(v, UR_HDR_IETH)))
		acc += ieth_rkey(h);
	if ((h = ur_pkt_hdr(v, UR_HDR_RDETH)))
		acc += rdeth_een(h) + h[0];
	if ((h = ur_pkt_hdr(v, UR_HDR_DETH)))
		acc += deth_qkey(h) + deth_sqp(h) + h[4];
	if ((h = ur_pkt_hdr(v, UR_HDR_XRCETH)))
		acc += xrceth_srqn(h) + h[0];
	if ((h = ur_pkt_hdr(v, UR_HDR_FETH)))
		acc += feth_plt(h) + feth_sel(h) + ur_get_be32(h);
	if ((h = ur_pkt_hdr(v, UR_HDR_PAYLOAD)))
		for (uint32_t i = 0; i < v->paylen + v->pad; i++)
			acc += h[i];
	return acc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ur_roce_ip ip4, ip6;
	struct ur_pkt_view v;
	uint16_t id = 0;

	if (ur_pkt_parse(&v, data, size) == UR_PARSE_OK) {
		const struct ur_opcode_info *info = &ur_opcode[v.opcode];

		FUZZ_ASSERT(v.bth == data && v.opcode == data[0]);
		FUZZ_ASSERT(info->mask && v.mask == info->mask && v.hdr_len == info->length);
		FUZZ_ASSERT(v.payload == data + v.hdr_len);
		FUZZ_ASSERT((size_t)v.hdr_len + v.paylen + v.pad + UR_ICRC_BYTES == size);
		FUZZ_ASSERT((v.mask & UR_OPF_PAYLOAD) || (v.paylen == 0 && v.pad == 0));
		FUZZ_ASSERT(size % 4 == 0);
		FUZZ_ASSERT(v.qpn == bth_qpn(data) && v.psn == bth_psn(data));
		for (int t = UR_HDR_RETH; t < UR_HDR_PAYLOAD; t++)
			FUZZ_ASSERT(!ur_pkt_hdr(&v, t) ||
				    info->offset[t] + 4 <= v.hdr_len);
		sink += touch_headers(&v);
	}

	fuzz_ip(&ip4, AF_INET);
	fuzz_ip(&ip6, AF_INET6);
	if (ur_icrc_check(&ip4, data, size, &id) == 0) {
		struct iovec iov = { (void *)data, size - UR_ICRC_BYTES };
		uint32_t want = ur_get_le32(data + size - UR_ICRC_BYTES);

		ip4.ip_id = id;
		ip4.df = true;
		if (ur_icrc_calc(&ip4, &iov, 1, iov.iov_len) != want) {
			ip4.df = false;
			FUZZ_ASSERT(ur_icrc_calc(&ip4, &iov, 1, iov.iov_len) == want);
		}
	}
	sink += (uint64_t)ur_icrc_check(&ip6, data, size, NULL);
	return 0;
}
