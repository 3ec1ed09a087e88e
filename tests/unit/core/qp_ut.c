/* Unit tests of the QP state machine: the transition table (qp_state.c)
 * and ur_qp_modify() on real QPs (qp_modify.c); XRC domains and SRQs; in
 * a private network namespace on a stack whose reactor has no thread; the
 * resource dump beside registrations. */
#include <arpa/inet.h>
#include <fcntl.h>

#include "ut.h"
#include "ut_env.h"
#include "ut_stack.h"

#include "core/context.h"
#include "core/cq.h"
#include "core/device.h"
#include "core/limits.h"
#include "core/pd.h"
#include "core/qp.h"
#include "core/qp_modify.h"
#include "core/srq.h"
#include "core/srq_tm.h"
#include "core/xrcd.h"

#include "qp_state_tests.c"
#include "qp_modify_tests.c"
#include "objects_tests.c"
#include "res_tests.c"

int main(void)
{
	ut_env_init("ut0:lo");

	UT_RUN(test_state_table);
	UT_RUN(test_state_masks);
	UT_RUN(test_state_mask_str);
	UT_RUN(test_modify_walk);
	UT_RUN(test_modify_values);
	UT_RUN(test_modify_path_mtu);
	UT_RUN(test_modify_rtr_gid_errors);
	UT_RUN(test_modify_rts_rts);
	UT_RUN(test_qp_create_limits);
	UT_RUN(test_xrcd_open_close);
	UT_RUN(test_srq_limits);
	UT_RUN(test_res_dump_beside_reg);
	return UT_DONE();
}
