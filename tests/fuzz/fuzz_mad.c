/* libFuzzer target: one MAD as it arrives at QP1 (the bytes after DETH).
 *
 * Whatever parses must pack again and parse to the same message (the codec
 * is its own inverse on what it accepts), the host's delivery key must
 * agree with the parsed message, and rdma_cm's header in a REQ's private
 * data must parse without reading past it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/mad.h"

#define FUZZ_ASSERT(c) do { if (!(c)) abort(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ur_cm_msg m, again;
	uint8_t mad[UR_MAD_BYTES];
	struct ur_cm_dest d;
	struct ur_cma_hdr h;
	int r = ur_cm_parse(data, size, &m);

	FUZZ_ASSERT((ur_cm_dest_of(data, size, &d) == 0) == (r == 0));
	if (r)
		return 0;
	FUZZ_ASSERT(d.by_service == (m.attr == UR_CM_REQ || m.attr == UR_CM_SIDR_REQ));
	FUZZ_ASSERT(d.by_service ? d.service_id == m.service_id : d.comm_id == m.remote_comm_id);
	FUZZ_ASSERT(m.priv_len == ur_cm_priv_room(m.attr));
	FUZZ_ASSERT(ur_cm_pack(&m, mad) == 0);
	FUZZ_ASSERT(ur_cm_parse(mad, sizeof(mad), &again) == 0);
	FUZZ_ASSERT(memcmp(&m, &again, sizeof(m)) == 0);
	if (m.attr == UR_CM_REQ && ur_cma_hdr_parse(m.priv, m.priv_len, &h) == 0)
		FUZZ_ASSERT(h.ip_version == 4 || h.ip_version == 6);
	return 0;
}
