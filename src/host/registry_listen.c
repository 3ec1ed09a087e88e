/* The communication manager's listeners: a directory kept in the multicast
 * group table (registry_mcast.c) under keys no group has, one per service
 * ID, whose members are the processes listening on it. */
#include "host/registry_priv.h"

#include <signal.h>
#include <string.h>

/* A CM service ID as a group key: "urCM", zeros, the ID.  Multicast GIDs
 * begin with 0xff, so no group is ever mistaken for one. */
#define UR_REG_CM_IFINDEX 0xffffffffu

static void cm_key(union ibv_gid *g, uint64_t service_id)
{
	memset(g, 0, sizeof(*g));
	memcpy(g->raw, "urCM", 4);
	for (int i = 0; i < 8; i++)
		g->raw[8 + i] = (uint8_t)(service_id >> (56 - 8 * i));
}

int ur_registry_cm_listen(struct ur_registry *r, uint64_t service_id)
{
	union ibv_gid g;

	cm_key(&g, service_id);
	return ur_registry_mcast_join(r, &g, UR_REG_CM_IFINDEX);
}

void ur_registry_cm_unlisten(struct ur_registry *r, uint64_t service_id)
{
	union ibv_gid g;

	cm_key(&g, service_id);
	ur_registry_mcast_leave(r, &g, UR_REG_CM_IFINDEX);
}

int ur_registry_cm_listener(const struct ur_registry *r, uint64_t service_id,
			    struct ur_reg_owner *out)
{
	struct ur_reg_owner o[8];
	union ibv_gid g;
	int n;

	cm_key(&g, service_id);
	n = ur_registry_mcast_members(r, &g, o, (int)(sizeof(o) / sizeof(o[0])));
	/* A REQ is rare: checking that the listener lives is affordable, and
	 * a dead one's entry stays until its slot is reclaimed. */
	for (int i = 0; i < n; i++)
		if (o[i].self || kill(o[i].pid, 0) == 0 || errno == EPERM) {
			*out = o[i];
			return 0;
		}
	return -ENOENT;
}
