/* What a poll of an empty CQ costs: ibv_poll_cq on a CQ with nothing in
 * it, over and over, nanoseconds a call.  A busy-polling program (MPI's
 * progress loop, perftest) spends most of its calls there, and where
 * more programs spin than there are cores, every nanosecond of it is
 * taken from the process that has work.  The CQ belongs to an RC QP in
 * RTS, so the device has its receive path set up as a program's would.
 * Only the public verbs API: it runs on any RDMA device.
 *
 *   bench_empty_poll [DEVICE [SECONDS]]   (default: the first device, 1 s)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/verbs.h>

#include "../bench_verbs.h"

/* The QP connected to itself: INIT, RTR, RTS, as a program's would be. */
static int connect_self(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	union ibv_gid gid;

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS) ||
	    ibv_query_gid(qp->context, 1, 0, &gid))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = qp->qp_num;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : NULL;
	double secs = argc > 2 ? atof(argv[2]) : 1.0;
	struct ibv_context *ctx = bench_open_dev(name);
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp;
	struct ibv_wc wc[16];
	unsigned long calls = 0, found = 0;
	double t0, t;

	if (!cq) {
		fprintf(stderr, "bench_empty_poll: cannot open %s with a PD and a CQ on it\n",
			name ? name : "a device");
		return 1;
	}
	init.send_cq = init.recv_cq = cq;
	qp = ibv_create_qp(pd, &init);
	if (!qp || connect_self(qp)) {
		fprintf(stderr, "bench_empty_poll: cannot bring an RC QP to RTS\n");
		return 1;
	}
	t0 = bench_now();
	do {
		for (int i = 0; i < 1000; i++)
			found += (unsigned long)ibv_poll_cq(cq, 16, wc);
		calls += 1000;
		t = bench_now();
	} while (t - t0 < secs);
	printf("%12s %12s %12s\n", "calls", "ns/call", "completions");
	printf("%12lu %12.1f %12lu\n", calls, (t - t0) * 1e9 / (double)calls, found);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return found ? 1 : 0;
}
