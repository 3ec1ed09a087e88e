#include "core/qp_kind.h"

#include "wire/opcode.h"

const struct ur_qp_kind ur_qp_kind_rc = {
	.name = "RC", .rules = IBV_QPT_RC, .opcodes = UR_OP_TYPE_RC,
	.flags = UR_KIND_AV_PEER | UR_KIND_ONE_COPY,
};

static const struct ur_qp_kind uc = {
	.name = "UC", .rules = IBV_QPT_UC, .opcodes = UR_OP_TYPE_UC,
	.flags = UR_KIND_AV_PEER | UR_KIND_ONE_COPY,
};

static const struct ur_qp_kind ud = {
	.name = "UD", .rules = IBV_QPT_UD, .opcodes = UR_OP_TYPE_UD,
};

static const struct ur_qp_kind xrc_ini = {
	.name = "XRC_INI", .rules = IBV_QPT_XRC_SEND, .opcodes = UR_OP_TYPE_XRC,
	.flags = UR_KIND_AV_PEER | UR_KIND_NO_RQ,
};

static const struct ur_qp_kind xrc_tgt = {
	.name = "XRC_TGT", .rules = IBV_QPT_XRC_RECV, .opcodes = UR_OP_TYPE_XRC,
	.flags = UR_KIND_AV_PEER | UR_KIND_NO_RQ,
};

const struct ur_qp_kind *ur_qp_kind_of(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_UC: return &uc;
	case IBV_QPT_UD: return &ud;
	case IBV_QPT_XRC_SEND: return &xrc_ini;
	case IBV_QPT_XRC_RECV: return &xrc_tgt;
	default: return &ur_qp_kind_rc;
	}
}
