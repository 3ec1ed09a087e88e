#include "host/cm_route.h"

#include <errno.h>

#include "wire/mad.h"
#include "wire/opcode.h"
#include "wire/roce_hdr.h"

int ur_host_cm_owner(const struct ur_registry *r, const uint8_t *pkt, size_t len,
		     struct ur_reg_owner *out)
{
	const size_t mad_at = UR_BTH_BYTES + UR_DETH_BYTES;

	if (len < mad_at + UR_ICRC_BYTES || bth_opcode(pkt) != UR_OP_UD_SEND_ONLY ||
	    bth_qpn(pkt) != UR_GSI_QPN)
		return -EINVAL;
	return ur_host_cm_mad_owner(r, pkt + mad_at, len - mad_at - UR_ICRC_BYTES, out);
}

int ur_host_cm_mad_owner(const struct ur_registry *r, const uint8_t *mad, size_t len,
			 struct ur_reg_owner *out)
{
	struct ur_cm_dest d;

	if (ur_cm_dest_of(mad, len, &d))
		return -EINVAL;
	if (!d.by_service)
		return ur_registry_lookup(r, d.comm_id & UR_QPN_MASK, out);
	if (ur_registry_cm_listener(r, d.service_id, out) == 0)
		return 0;
	return ur_registry_cm_listener(r, 0, out);
}
