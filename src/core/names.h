/* Verbs enums as text: the texts of rdma-core 44, letter for letter
 * ("unknown" outside the tables), for ibv_*_str and for log lines. */
#ifndef UROCE_CORE_NAMES_H
#define UROCE_CORE_NAMES_H

#include <infiniband/verbs.h>

const char *ur_node_type_name(enum ibv_node_type v);
const char *ur_port_state_name(enum ibv_port_state v);
const char *ur_event_type_name(enum ibv_event_type v);
const char *ur_wc_status_name(enum ibv_wc_status v);

#endif
