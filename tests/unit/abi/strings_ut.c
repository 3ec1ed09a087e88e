/* ibv_*_str: every enum value against rdma-core 44's text, the "unknown"
 * fallback on both sides of each table, and (where the system library is
 * present) value-by-value agreement with it. */
#include "ut.h"
#include "sysref.h"

#include "verbs/strings.c"

struct expect {
	long long value;
	const char *text;
};

static const struct expect node_types[] = {
	{ IBV_NODE_UNKNOWN, "unknown" },
	{ 0, "unknown" },
	{ IBV_NODE_CA, "InfiniBand channel adapter" },
	{ IBV_NODE_SWITCH, "InfiniBand switch" },
	{ IBV_NODE_ROUTER, "InfiniBand router" },
	{ IBV_NODE_RNIC, "iWARP NIC" },
	{ IBV_NODE_USNIC, "usNIC" },
	{ IBV_NODE_USNIC_UDP, "usNIC UDP" },
	{ IBV_NODE_UNSPECIFIED, "unspecified" },
	{ IBV_NODE_UNSPECIFIED + 1, "unknown" },
	{ 1000, "unknown" },
};

static const struct expect port_states[] = {
	{ -1, "unknown" },
	{ IBV_PORT_NOP, "no state change (NOP)" },
	{ IBV_PORT_DOWN, "down" },
	{ IBV_PORT_INIT, "init" },
	{ IBV_PORT_ARMED, "armed" },
	{ IBV_PORT_ACTIVE, "active" },
	{ IBV_PORT_ACTIVE_DEFER, "active defer" },
	{ IBV_PORT_ACTIVE_DEFER + 1, "unknown" },
};

static const struct expect event_types[] = {
	{ -1, "unknown" },
	{ IBV_EVENT_CQ_ERR, "CQ error" },
	{ IBV_EVENT_QP_FATAL, "local work queue catastrophic error" },
	{ IBV_EVENT_QP_REQ_ERR, "invalid request local work queue error" },
	{ IBV_EVENT_QP_ACCESS_ERR, "local access violation work queue error" },
	{ IBV_EVENT_COMM_EST, "communication established" },
	{ IBV_EVENT_SQ_DRAINED, "send queue drained" },
	{ IBV_EVENT_PATH_MIG, "path migrated" },
	{ IBV_EVENT_PATH_MIG_ERR, "path migration request error" },
	{ IBV_EVENT_DEVICE_FATAL, "local catastrophic error" },
	{ IBV_EVENT_PORT_ACTIVE, "port active" },
	{ IBV_EVENT_PORT_ERR, "port error" },
	{ IBV_EVENT_LID_CHANGE, "LID change" },
	{ IBV_EVENT_PKEY_CHANGE, "P_Key change" },
	{ IBV_EVENT_SM_CHANGE, "SM change" },
	{ IBV_EVENT_SRQ_ERR, "SRQ catastrophic error" },
	{ IBV_EVENT_SRQ_LIMIT_REACHED, "SRQ limit reached" },
	{ IBV_EVENT_QP_LAST_WQE_REACHED, "last WQE reached" },
	{ IBV_EVENT_CLIENT_REREGISTER, "client reregistration" },
	{ IBV_EVENT_GID_CHANGE, "GID table change" },
	{ IBV_EVENT_WQ_FATAL, "WQ fatal" },
	/* IBV_EVENT_DEVICE_SPEED_CHANGE of later releases: unknown in 44 */
	{ IBV_EVENT_WQ_FATAL + 1, "unknown" },
};

static const struct expect wc_statuses[] = {
	{ -1, "unknown" },
	{ IBV_WC_SUCCESS, "success" },
	{ IBV_WC_LOC_LEN_ERR, "local length error" },
	{ IBV_WC_LOC_QP_OP_ERR, "local QP operation error" },
	{ IBV_WC_LOC_EEC_OP_ERR, "local EE context operation error" },
	{ IBV_WC_LOC_PROT_ERR, "local protection error" },
	{ IBV_WC_WR_FLUSH_ERR, "Work Request Flushed Error" },
	{ IBV_WC_MW_BIND_ERR, "memory management operation error" },
	{ IBV_WC_BAD_RESP_ERR, "bad response error" },
	{ IBV_WC_LOC_ACCESS_ERR, "local access error" },
	{ IBV_WC_REM_INV_REQ_ERR, "remote invalid request error" },
	{ IBV_WC_REM_ACCESS_ERR, "remote access error" },
	{ IBV_WC_REM_OP_ERR, "remote operation error" },
	{ IBV_WC_RETRY_EXC_ERR, "transport retry counter exceeded" },
	{ IBV_WC_RNR_RETRY_EXC_ERR, "RNR retry counter exceeded" },
	{ IBV_WC_LOC_RDD_VIOL_ERR, "local RDD violation error" },
	{ IBV_WC_REM_INV_RD_REQ_ERR, "remote invalid RD request" },
	{ IBV_WC_REM_ABORT_ERR, "aborted error" },
	{ IBV_WC_INV_EECN_ERR, "invalid EE context number" },
	{ IBV_WC_INV_EEC_STATE_ERR, "invalid EE context state" },
	{ IBV_WC_FATAL_ERR, "fatal error" },
	{ IBV_WC_RESP_TIMEOUT_ERR, "response timeout error" },
	{ IBV_WC_GENERAL_ERR, "general error" },
	{ IBV_WC_TM_ERR, "TM error" },
	{ IBV_WC_TM_RNDV_INCOMPLETE, "TM software rendezvous" },
	{ IBV_WC_TM_RNDV_INCOMPLETE + 1, "unknown" },
};

typedef const char *(*str_fn)(int);

static void check_table(const char *name, str_fn fn,
			const struct expect *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *got = fn((int)e[i].value);

		ut_checks++;
		if (strcmp(got, e[i].text)) {
			ut_failures++;
			fprintf(stderr, "%s(%lld) = \"%s\", want \"%s\"\n", name,
				e[i].value, got, e[i].text);
		}
	}
}

/* Every value in the listed range has exactly one expectation: the tables
 * above are exhaustive, so a new enum value cannot slip through. */
static void check_exhaustive(const struct expect *e, size_t n,
			     long long first, long long last)
{
	for (long long v = first; v <= last; v++) {
		int seen = 0;

		for (size_t i = 0; i < n; i++)
			seen += e[i].value == v;
		UT_EQ(seen, 1);
	}
}

static void test_node_type(void)
{
	check_table("ibv_node_type_str", (str_fn)ibv_node_type_str, node_types,
		    UR_ARRAY_SIZE(node_types));
	check_exhaustive(node_types, UR_ARRAY_SIZE(node_types), IBV_NODE_UNKNOWN,
			 IBV_NODE_UNSPECIFIED + 1);
}

static void test_port_state(void)
{
	check_table("ibv_port_state_str", (str_fn)ibv_port_state_str,
		    port_states, UR_ARRAY_SIZE(port_states));
	check_exhaustive(port_states, UR_ARRAY_SIZE(port_states), -1,
			 IBV_PORT_ACTIVE_DEFER + 1);
}

static void test_event_type(void)
{
	check_table("ibv_event_type_str", (str_fn)ibv_event_type_str,
		    event_types, UR_ARRAY_SIZE(event_types));
	check_exhaustive(event_types, UR_ARRAY_SIZE(event_types), -1,
			 IBV_EVENT_WQ_FATAL + 1);
}

static void test_wc_status(void)
{
	check_table("ibv_wc_status_str", (str_fn)ibv_wc_status_str,
		    wc_statuses, UR_ARRAY_SIZE(wc_statuses));
	check_exhaustive(wc_statuses, UR_ARRAY_SIZE(wc_statuses), -1,
			 IBV_WC_TM_RNDV_INCOMPLETE + 1);
}

/* Same text as rdma-core for every value from -64 to 256 (its range checks
 * reject negative values too, so the reference is safe to call with them). */
static void test_against_system_library(void)
{
	static const struct {
		const char *name;
		str_fn ours;
	} fns[] = {
		{ "ibv_node_type_str", (str_fn)ibv_node_type_str },
		{ "ibv_port_state_str", (str_fn)ibv_port_state_str },
		{ "ibv_event_type_str", (str_fn)ibv_event_type_str },
		{ "ibv_wc_status_str", (str_fn)ibv_wc_status_str },
	};
	void *h = sysref_open();

	if (!h)
		return;
	for (size_t f = 0; f < UR_ARRAY_SIZE(fns); f++) {
		str_fn ref = (str_fn)sysref_sym(h, fns[f].name, "IBVERBS_1.1");

		UT_CHECK(ref != NULL);
		if (!ref)
			continue;
		for (int v = -64; v <= 256; v++) {
			const char *a = fns[f].ours(v), *b = ref(v);

			ut_checks++;
			if (strcmp(a, b)) {
				ut_failures++;
				fprintf(stderr, "%s(%d): uroce \"%s\", rdma-core \"%s\"\n",
					fns[f].name, v, a, b);
			}
		}
	}
	dlclose(h);
}

int main(void)
{
	UT_RUN(test_node_type);
	UT_RUN(test_port_state);
	UT_RUN(test_event_type);
	UT_RUN(test_wc_status);
	UT_RUN(test_against_system_library);
	return UT_DONE();
}
