/* The *_str helpers of libibverbs: enum value -> human-readable text, the
 * texts of rdma-core 44 (core/names.c keeps the tables). */
#include <infiniband/verbs.h>

#include "core/names.h"
#include "util/compiler.h"

UR_EXPORT const char *ibv_node_type_str(enum ibv_node_type node_type)
{
	return ur_node_type_name(node_type);
}

UR_EXPORT const char *ibv_port_state_str(enum ibv_port_state port_state)
{
	return ur_port_state_name(port_state);
}

UR_EXPORT const char *ibv_event_type_str(enum ibv_event_type event)
{
	return ur_event_type_name(event);
}

UR_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	return ur_wc_status_name(status);
}
