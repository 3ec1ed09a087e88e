/* What a QP costs: N RC QPs in pairs of one process, each pair connected
 * to each other through the device (RESET -> INIT -> RTR -> RTS), as
 * perftest sizes them (send and receive queues of 128, a CQ each side of a
 * pair).  Prints the resident memory per QP and how many QPs per second
 * reach RTS (create + modify, as a connection manager or a benchmark's
 * setup does).  Public verbs only: runs on any RoCE device.
 *
 *   bench_qps DEVICE GID_INDEX [QPS]    (QPS: 1000 by default)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/verbs.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Resident memory in KiB (VmRSS). */
static long rss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

static void die(const char *what)
{
	fprintf(stderr, "bench_qps: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void to_rts(struct ibv_qp *qp, uint32_t dest, const union ibv_gid *gid, int gid_index)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		die("INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		die("RTS");
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd;
	struct ibv_qp **qp;
	struct ibv_cq **cq;
	union ibv_gid gid;
	int n, gid_index, nqp;
	long rss0, rss1;
	double t0, t;

	if (argc < 3) {
		fprintf(stderr, "usage: bench_qps DEVICE GID_INDEX [QPS]\n");
		return 2;
	}
	gid_index = atoi(argv[2]);
	nqp = argc > 3 ? atoi(argv[3]) : 1000;
	nqp += nqp % 2;
	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		die(argv[1]);
	pd = ibv_alloc_pd(ctx);
	if (!pd || ibv_query_gid(ctx, 1, gid_index, &gid))
		die("PD or GID");
	qp = calloc((size_t)nqp, sizeof(*qp));
	cq = calloc((size_t)nqp, sizeof(*cq));
	if (!qp || !cq)
		die("calloc");
	rss0 = rss_kib();
	t0 = now();
	for (int i = 0; i < nqp; i++) {
		struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 128, .max_recv_wr = 128, .max_send_sge = 1,
				 .max_recv_sge = 1 } };

		cq[i] = ibv_create_cq(ctx, 256, NULL, NULL, 0);
		if (!cq[i])
			die("ibv_create_cq");
		a.send_cq = a.recv_cq = cq[i];
		qp[i] = ibv_create_qp(pd, &a);
		if (!qp[i])
			die("ibv_create_qp");
	}
	for (int i = 0; i < nqp; i += 2) {
		to_rts(qp[i], qp[i + 1]->qp_num, &gid, gid_index);
		to_rts(qp[i + 1], qp[i]->qp_num, &gid, gid_index);
	}
	t = now() - t0;
	rss1 = rss_kib();
	printf("%d RC QPs (%d connected pairs, queues of 128, a CQ of 256 each) on %s: "
	       "%.0f QPs/s to RTS (%.1f ms in all), %.1f KiB resident per QP with its CQ\n",
	       nqp, nqp / 2, argv[1], nqp / t, t * 1e3, (double)(rss1 - rss0) / nqp);
	for (int i = 0; i < nqp; i++) {
		ibv_destroy_qp(qp[i]);
		ibv_destroy_cq(cq[i]);
	}
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	free(qp);
	free(cq);
	return 0;
}
