/* The verbs objects a stream rsocket and each of a datagram rsocket's QPs
 * hold under their rdma_cm id. */
#include "rsocket/rsocket.h"

void rs_free_queues(struct rdma_cm_id *id, struct ibv_cq *cq, struct ibv_comp_channel *cc)
{
	if (id && id->qp)
		rdma_destroy_qp(id);
	if (cq)
		ibv_destroy_cq(cq);
	if (cc)
		ibv_destroy_comp_channel(cc);
}
