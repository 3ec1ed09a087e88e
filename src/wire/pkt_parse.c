/* Parse one RoCE packet against the opcode table.  Each check reads only
 * bytes an earlier check proved present: first the BTH (len >= BTH + ICRC),
 * then, once the opcode's fixed length is known to fit, everything else. */
#include "wire/pkt_parse.h"

#include "util/compiler.h"

UR_ENUM_NAMES(UR_PARSE_RESULT_LIST, UR_PARSE_NR, ur_parse_result_name);

enum ur_parse_result ur_pkt_parse(struct ur_pkt_view *v, const uint8_t *buf, size_t len)
{
	const struct ur_opcode_info *info;
	size_t fixed, paylen;
	uint8_t op, pad;

	if (unlikely(len < UR_BTH_BYTES + UR_ICRC_BYTES))
		return UR_PARSE_SHORT;

	op = bth_opcode(buf);
	info = &ur_opcode[op];
	if (unlikely(!info->mask))
		return UR_PARSE_BAD_OPCODE;
	if (unlikely(bth_tver(buf) != 0))
		return UR_PARSE_BAD_TVER;

	pad = bth_pad(buf);
	if (unlikely(pad && !(info->mask & UR_OPF_PAYLOAD)))
		return UR_PARSE_BAD_PAD;

	fixed = (size_t)info->length + pad + UR_ICRC_BYTES;
	if (unlikely(len < fixed))
		return UR_PARSE_SHORT;
	paylen = len - fixed;
	if (unlikely(paylen && !(info->mask & UR_OPF_PAYLOAD)))
		return UR_PARSE_BAD_PAYLOAD;
	/* Headers are whole words, so pad must round the payload up to one. */
	if (unlikely((paylen + pad) & 3))
		return UR_PARSE_BAD_PAD;
	if (unlikely(paylen > UINT32_MAX))
		return UR_PARSE_BAD_PAYLOAD;

	v->bth = buf;
	v->mask = info->mask;
	v->qpn = bth_qpn(buf);
	v->psn = bth_psn(buf);
	v->opcode = op;
	v->pad = pad;
	v->hdr_len = info->length;
	v->payload = buf + info->length;
	v->paylen = (uint32_t)paylen;
	v->placed = false;
	return UR_PARSE_OK;
}
