#include "wire/grh.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "wire/gid.h"
#include "wire/roce_hdr.h"

#define UR_IPPROTO_UDP 17

void ur_grh_build(uint8_t grh[UR_GRH_BYTES], const struct ur_grh_fields *f, uint32_t roce_bytes)
{
	uint32_t paylen = roce_bytes + 8;   /* the UDP header */

	memset(grh, 0, UR_GRH_BYTES);
	if (f->ipv6) {
		ur_put_be32(grh, (6u << 28) | ((uint32_t)f->traffic_class << 20) |
				 (f->flow_label & 0xfffff));
		ur_put_be16(grh + 4, (uint16_t)paylen);
		grh[6] = UR_IPPROTO_UDP;
		grh[7] = f->hop_limit;
		memcpy(grh + 8, f->sgid.raw, 16);
		memcpy(grh + 24, f->dgid.raw, 16);
	} else {
		uint8_t *ip = grh + 20;

		ip[0] = 0x45;
		ip[1] = f->traffic_class;
		ur_put_be16(ip + 2, (uint16_t)(paylen + 20));
		ip[6] = 0x40;  /* DF */
		ip[8] = f->hop_limit;
		ip[9] = UR_IPPROTO_UDP;
		memcpy(ip + 12, &f->sgid.raw[12], 4);
		memcpy(ip + 16, &f->dgid.raw[12], 4);
	}
}

int ur_grh_parse(const uint8_t grh[UR_GRH_BYTES], struct ur_grh_fields *f)
{
	memset(f, 0, sizeof(*f));
	if ((grh[0] >> 4) == 6) {
		uint32_t vtf = ur_get_be32(grh);

		memcpy(f->sgid.raw, grh + 8, 16);
		memcpy(f->dgid.raw, grh + 24, 16);
		f->traffic_class = (uint8_t)(vtf >> 20);
		f->flow_label = vtf & 0xfffff;
		f->hop_limit = grh[7];
		f->ipv6 = true;
		return 0;
	}
	if ((grh[20] >> 4) == 4) {
		struct in_addr s, d;

		memcpy(&s, grh + 20 + 12, 4);
		memcpy(&d, grh + 20 + 16, 4);
		ur_gid_from_v4(&f->sgid, s);
		ur_gid_from_v4(&f->dgid, d);
		f->traffic_class = grh[21];
		f->hop_limit = grh[20 + 8];
		return 0;
	}
	return -EINVAL;
}
