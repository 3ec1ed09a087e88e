#include "rel/xrc_msg.h"

#include <errno.h>
#include <string.h>

UR_ENUM_NAMES(UR_XRC_STATUS_LIST, UR_XRC_STATUS_NR, ur_xrc_status_name);

void ur_xrc_msg_init(struct ur_xrc_msg *m, enum ur_xrc_kind kind, pid_t src_pid)
{
	memset(m, 0, sizeof(*m));
	m->magic = UR_XRC_MAGIC;
	m->version = UR_XRC_VERSION;
	m->kind = (uint16_t)kind;
	m->src_pid = (int32_t)src_pid;
}

int ur_xrc_msg_parse(const uint8_t *buf, size_t len, struct ur_xrc_msg *m,
		     const uint8_t **payload)
{
	if (len < sizeof(*m))
		return -EINVAL;
	memcpy(m, buf, sizeof(*m));
	if (m->magic != UR_XRC_MAGIC || m->version != UR_XRC_VERSION || m->src_pid <= 0)
		return -EINVAL;
	switch (m->kind) {
	case UR_XRC_DELIVER:
		if (m->paylen != len - sizeof(*m) || m->status ||
		    !memchr(m->ibdev, '\0', sizeof(m->ibdev)))
			return -EINVAL;
		break;
	case UR_XRC_REPLY:
		if (len != sizeof(*m) || m->paylen || m->status >= UR_XRC_STATUS_NR)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	if (m->psn > 0xffffff || m->tgt_qpn > 0xffffff || m->srqn > 0xffffff)
		return -EINVAL;
	*payload = buf + sizeof(*m);
	return 0;
}
