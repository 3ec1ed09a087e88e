/* What librdmacm exports and uroce does not do: each fails with
 * EOPNOTSUPP and -1 or the function's error value, never pretends.
 *  - ECE (enhanced connection establishment), which RoCE NICs of
 *    one vendor only negotiate: EOPNOTSUPP, as the device's
 *    ibv_query_ece answers, so programs go on without it (pyverbs does);
 */
#include <errno.h>
#include <rdma/rdma_cma.h>

#include "verbs/stub.h"

/* Not supported (for ECE, as ibv_query_ece says on uroce): -1, errno set. */
UR_STUB(UR_STUB_QUIET, int, rdma_set_local_ece, (struct rdma_cm_id *id, struct ibv_ece *ece), -1)
UR_STUB(UR_STUB_QUIET, int, rdma_get_remote_ece, (struct rdma_cm_id *id, struct ibv_ece *ece), -1)
UR_STUB(UR_STUB_QUIET, int, rdma_reject_ece, (struct rdma_cm_id *id, const void *private_data,
					      uint8_t private_data_len), -1)
