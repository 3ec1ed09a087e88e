/* A known set of objects for `uroce res` to find (tests/integ/res.test.sh):
 * two CQs (64 and 200 entries), three QPs of three types in three states
 * (RC in RTS with known PSNs and peer, UD in RTR, UC in INIT) with known
 * depths, two MRs (4 KiB local write; 64 KiB local write, remote read and
 * write) and an rdma_cm id listening on 127.0.0.1:PORT.
 *
 * It prints what it made as one line, "made {JSON}", then holds it all
 * until DONE_FILE exists (at most two minutes), and destroys it.
 *
 *   res_set DEVICE GID_INDEX CM_PORT DONE_FILE
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "vt.h"

struct made_qp {
	struct ibv_qp *qp;
	const char *type, *state;
};

static struct ibv_qp *make_qp(struct vt_dev *d, struct ibv_cq *scq, struct ibv_cq *rcq,
			      enum ibv_qp_type t, uint32_t sq, uint32_t rq)
{
	struct ibv_qp_init_attr a = {
		.send_cq = scq, .recv_cq = rcq, .qp_type = t,
		.cap = { .max_send_wr = sq, .max_recv_wr = rq, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(d->pd, &a);

	if (!qp) {
		perror("ibv_create_qp");
		exit(2);
	}
	return qp;
}

static void to_init(struct vt_dev *d, struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = d->port,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE, .qkey = 0x11111111 };
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	mask |= qp->qp_type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
	if (ibv_modify_qp(qp, &a, mask)) {
		perror("modify to INIT");
		exit(2);
	}
}

/* RC: RTR towards dest (receiving from rq_psn), then RTS sending from sq_psn. */
static void rc_to_rts(struct vt_dev *d, struct ibv_qp *qp, uint32_t dest, uint32_t rq_psn,
		      uint32_t sq_psn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = dest,
		.rq_psn = rq_psn, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = d->port,
			     .grh = { .dgid = d->gid, .sgid_index = (uint8_t)d->gid_index,
				      .hop_limit = 1 } },
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
		perror("RC to RTR");
		exit(2);
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC)) {
		perror("RC to RTS");
		exit(2);
	}
}

static void ud_to_rtr(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE)) {
		perror("UD to RTR");
		exit(2);
	}
}

static struct rdma_cm_id *listen_on(int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = NULL;

	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(id, (struct sockaddr *)&sin) || rdma_listen(id, 4)) {
		perror("rdma_cm listen");
		exit(2);
	}
	return id;
}

static void print_qp(const struct made_qp *m, const char *sep)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;

	if (ibv_query_qp(m->qp, &a, IBV_QP_STATE | IBV_QP_CAP | IBV_QP_SQ_PSN | IBV_QP_RQ_PSN |
				    IBV_QP_DEST_QPN, &init)) {
		perror("ibv_query_qp");
		exit(2);
	}
	printf("%s{\"lqpn\":%u,\"type\":\"%s\",\"state\":\"%s\",\"sq-depth\":%u,\"rq-depth\":%u",
	       sep, m->qp->qp_num, m->type, m->state, init.cap.max_send_wr, init.cap.max_recv_wr);
	if (m->qp->qp_type == IBV_QPT_RC)
		printf(",\"rqpn\":%u,\"sq-psn\":%u,\"rq-psn\":%u", a.dest_qp_num, a.sq_psn, a.rq_psn);
	printf("}");
}

int main(int argc, char **argv)
{
	struct vt_dev d;
	struct ibv_cq *cq64, *cq200;
	struct made_qp qps[3];
	struct ibv_mr *mr4k, *mr64k;
	struct rdma_cm_id *listener;
	struct rdma_event_channel *cm_channel;
	void *b4k, *b64k;
	int port;

	if (argc != 5) {
		fprintf(stderr, "usage: res_set DEVICE GID_INDEX CM_PORT DONE_FILE\n");
		return 2;
	}
	port = atoi(argv[3]);
	vt_dev_open(&d, argv[1], atoi(argv[2]));
	cq64 = ibv_create_cq(d.ctx, 64, NULL, NULL, 0);
	cq200 = ibv_create_cq(d.ctx, 200, NULL, NULL, 0);
	if (!cq64 || !cq200) {
		perror("ibv_create_cq");
		return 2;
	}
	qps[0] = (struct made_qp){ make_qp(&d, cq64, cq200, IBV_QPT_RC, 16, 32), "RC", "RTS" };
	qps[1] = (struct made_qp){ make_qp(&d, cq64, cq64, IBV_QPT_UD, 8, 4), "UD", "RTR" };
	qps[2] = (struct made_qp){ make_qp(&d, cq200, cq200, IBV_QPT_UC, 2, 2), "UC", "INIT" };
	for (int i = 0; i < 3; i++)
		to_init(&d, qps[i].qp);
	rc_to_rts(&d, qps[0].qp, qps[1].qp->qp_num, 1000, 2000);
	ud_to_rtr(qps[1].qp);

	b4k = aligned_alloc(4096, 4096);
	b64k = aligned_alloc(4096, 65536);
	mr4k = b4k ? ibv_reg_mr(d.pd, b4k, 4096, IBV_ACCESS_LOCAL_WRITE) : NULL;
	mr64k = b64k ? ibv_reg_mr(d.pd, b64k, 65536, IBV_ACCESS_LOCAL_WRITE |
			      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE) : NULL;
	if (!mr4k || !mr64k) {
		perror("ibv_reg_mr");
		return 2;
	}
	listener = listen_on(port);

	printf("made {\"pid\":%d,\"cqe\":[%d,%d],\"qp\":[", (int)getpid(), cq64->cqe, cq200->cqe);
	for (int i = 0; i < 3; i++)
		print_qp(&qps[i], i ? "," : "");
	printf("],\"mr\":[{\"mrlen\":4096,\"lkey\":%u,\"access\":\"LOCAL_WRITE\"},"
	       "{\"mrlen\":65536,\"lkey\":%u,\"access\":\"LOCAL_WRITE,REMOTE_WRITE,REMOTE_READ\"}],"
	       "\"cm_port\":%d}\n", mr4k->lkey, mr64k->lkey, port);
	fflush(stdout);

	for (int i = 0; i < 2400 && access(argv[4], F_OK); i++)
		usleep(50000);

	cm_channel = listener->channel;
	rdma_destroy_id(listener);
	rdma_destroy_event_channel(cm_channel);
	ibv_dereg_mr(mr4k);
	ibv_dereg_mr(mr64k);
	for (int i = 0; i < 3; i++)
		ibv_destroy_qp(qps[i].qp);
	ibv_destroy_cq(cq64);
	ibv_destroy_cq(cq200);
	vt_dev_close(&d);
	free(b4k);
	free(b64k);
	return 0;
}
