/* The live stack the receive-side fuzz targets feed (fuzz_stack.h). */
#include "fuzz_stack.h"

#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "private_ns.h"

#include "core/context.h"
#include "core/qp.h"
#include "verbs/dc_abi.h"
#include "core/srq.h"
#include "host/registry.h"
#include "rel/comp.h"
#include "rel/run.h"
#include "util/clock.h"

static int drop_send(struct ur_xport *x, const struct ur_path *p, const struct ur_tx_pkt *pkt)
{
	return 0;
}

static int drop_flush(struct ur_xport *x)
{
	return 0;
}

static const struct ur_xport_ops drop_ops = { .name = "drop", .send = drop_send, .flush = drop_flush };
static struct ur_xport drop_xport = { .ops = &drop_ops };

struct fuzz_stack fz;

/* The namespace's registry files go with it: nobody else would reclaim
 * them (runs after the engine's exit handler, registered later). */
static void forget_registry(void)
{
	char path[128];

	ur_registry_file_path(path, sizeof(path));
	unlink(path);
	ur_registry_router_lock_path(path, sizeof(path));
	unlink(path);
}

static void lo_up(void)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0)
		return;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (!ioctl(fd, SIOCGIFFLAGS, &ifr)) {
		ifr.ifr_flags |= IFF_UP;
		ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	close(fd);
}

static void post_recvs_to(struct ibv_qp *qp, struct ibv_srq *srq)
{
	for (int i = 0; i < 8; i++) {
		struct ibv_sge sge = { (uintptr_t)fz.buf + (unsigned)i * 8192, 8192, fz.mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1 }, *bad;

		if (qp)
			ibv_post_recv(qp, &wr, &bad);
		else
			ibv_post_srq_recv(srq, &wr, &bad);
	}
}

/* A QP's receive queue, or with NULL the XRC SRQ's. */
static void post_recvs(struct ibv_qp *qp)
{
	post_recvs_to(qp, fz.xsrq);
}

/* The DC target: its SRQ, key and access, in RTR for any initiator. */
static void dct_up(void)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 1 } };
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_DRIVER, .comp_mask = IBV_QP_INIT_ATTR_PD, .pd = fz.pd,
		.send_cq = fz.cq, .recv_cq = fz.cq,
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
						    IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE };

	fz.srq = ibv_create_srq(fz.pd, &sa);
	FUZZ_ASSERT(fz.srq);
	qa.srq = fz.srq;
	fz.qp[FUZZ_DCT] = uroce_dc_create_qp(fz.ctx, &qa, UROCE_DC_TARGET, FUZZ_DC_KEY);
	FUZZ_ASSERT(fz.qp[FUZZ_DCT]);
	FUZZ_ASSERT(!ibv_modify_qp(fz.qp[FUZZ_DCT], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				   IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = fz.peer;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.port_num = 1;
	FUZZ_ASSERT(!ibv_modify_qp(fz.qp[FUZZ_DCT], &a, IBV_QP_STATE | IBV_QP_AV |
				   IBV_QP_PATH_MTU | IBV_QP_MIN_RNR_TIMER));
	post_recvs_to(NULL, fz.srq);
}

/* Requests waiting for responses, so the completer has work. */
static void post_requests(struct ibv_qp *qp)
{
	static const enum ibv_wr_opcode ops[] = { IBV_WR_SEND, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ,
						  IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_CMP_AND_SWP };

	for (unsigned i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct ibv_sge sge = { (uintptr_t)fz.buf + 32768 + i * 4096,
				       ops[i] >= IBV_WR_ATOMIC_CMP_AND_SWP ? 8 : 3000, fz.mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 100 + i, .sg_list = &sge, .num_sge = 1,
					  .opcode = ops[i], .send_flags = IBV_SEND_SIGNALED }, *bad;

		wr.wr.rdma.remote_addr = 0x1000;
		wr.wr.rdma.rkey = 0x100;
		if (ops[i] >= IBV_WR_ATOMIC_CMP_AND_SWP) {
			wr.wr.atomic.remote_addr = 0x1000;
			wr.wr.atomic.rkey = 0x100;
			wr.wr.atomic.compare_add = 1;
		}
		ibv_post_send(qp, &wr, &bad);
	}
}

static void connect_qp(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { 0 };
	int ud = qp->qp_type == IBV_QPT_UD;

	a.qp_state = IBV_QPS_RESET;
	ibv_modify_qp(qp, &a, IBV_QP_STATE);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = 0x11111111;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE;
	FUZZ_ASSERT(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				    (ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS)));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = 0x123456;
	a.rq_psn = 0x100;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = fz.peer;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.port_num = 1;
	FUZZ_ASSERT(!ibv_modify_qp(qp, &a, ud ? IBV_QP_STATE :
				    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				    IBV_QP_RQ_PSN | (qp->qp_type == IBV_QPT_UC ? 0 :
				    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x200;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	FUZZ_ASSERT(!ibv_modify_qp(qp, &a, (ud || qp->qp_type == IBV_QPT_UC)
				    ? IBV_QP_STATE | IBV_QP_SQ_PSN
				    : qp->qp_type == IBV_QPT_XRC_RECV
				    ? IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT
				    : IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				      IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC));
	/* Replies go nowhere: the fuzzer is the only peer. */
	to_uqp(qp)->path.xport = &drop_xport;
	if (qp->qp_type != IBV_QPT_XRC_RECV)
		post_recvs(qp);
	if (qp->qp_type == IBV_QPT_RC)
		post_requests(qp);
}

struct ibv_srq *fuzz_xrc_srq(struct ibv_xrcd *xrcd, struct ibv_cq *cq, uint32_t max_sge)
{
	struct ibv_srq_init_attr_ex sa = { 0 };
	struct ibv_srq *srq;

	sa.attr.max_wr = 64;
	sa.attr.max_sge = max_sge;
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ |
		       IBV_SRQ_INIT_ATTR_PD;
	sa.srq_type = IBV_SRQT_XRC;
	sa.xrcd = xrcd;
	sa.cq = cq;
	sa.pd = fz.pd;
	srq = ibv_create_srq_ex(fz.ctx, &sa);
	FUZZ_ASSERT(srq);
	return srq;
}

void fuzz_stack_setup(void)
{
	struct ibv_device **list;
	struct ibv_qp_init_attr_ex qa;
	struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_OFLAGS, .oflags = O_CREAT };
	static const enum ibv_qp_type types[FUZZ_NQP] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD,
						     IBV_QPT_XRC_RECV };
	uint8_t *area;
	int n;

#ifndef UR_FUZZ_REPLAY
	if (ur_test_private_ns(0) == 0)
#endif
	{
		lo_up();
		atexit(forget_registry);
	}
	list = ibv_get_device_list(&n);
	FUZZ_ASSERT(list && n > 0);
	fz.ctx = ibv_open_device(list[0]);            /* uroce0: lo */
	FUZZ_ASSERT(fz.ctx);
	ibv_free_device_list(list);
	FUZZ_ASSERT(!ibv_query_gid(fz.ctx, 1, 1, &fz.peer));   /* ::ffff:127.0.0.1 */
	fz.pd = ibv_alloc_pd(fz.ctx);
	fz.cq = ibv_create_cq(fz.ctx, 4096, NULL, NULL, 0);
	fz.xcq = ibv_create_cq(fz.ctx, 4096, NULL, NULL, 0);
	/* Guard pages on both sides of the region the peer may reach. */
	area = mmap(NULL, FUZZ_MR_BYTES + 2 * 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	FUZZ_ASSERT(area != MAP_FAILED);
	mprotect(area, 4096, PROT_NONE);
	mprotect(area + 4096 + FUZZ_MR_BYTES, 4096, PROT_NONE);
	fz.buf = area + 4096;
	fz.mr = ibv_reg_mr(fz.pd, fz.buf, FUZZ_MR_BYTES, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	FUZZ_ASSERT(fz.pd && fz.cq && fz.xcq && fz.mr);
	fz.xrcd = ibv_open_xrcd(fz.ctx, &xa);
	FUZZ_ASSERT(fz.xrcd);
	fz.xsrq = fuzz_xrc_srq(fz.xrcd, fz.xcq, 1);
	for (int i = 0; i < FUZZ_DCT; i++) {
		memset(&qa, 0, sizeof(qa));
		qa.qp_type = types[i];
		if (types[i] == IBV_QPT_XRC_RECV) {
			qa.comp_mask = IBV_QP_INIT_ATTR_XRCD;
			qa.xrcd = fz.xrcd;
		} else {
			qa.comp_mask = IBV_QP_INIT_ATTR_PD;
			qa.pd = fz.pd;
			qa.send_cq = qa.recv_cq = fz.cq;
			qa.cap.max_send_wr = qa.cap.max_recv_wr = 64;
			qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
		}
		fz.qp[i] = ibv_create_qp_ex(fz.ctx, &qa);
		FUZZ_ASSERT(fz.qp[i]);
		connect_qp(fz.qp[i]);
	}
	dct_up();
	fz.ready = 1;
}

static uint32_t srq_used(struct ur_srq *srq)
{
	uint32_t n;

	pthread_mutex_lock(&srq->lock);
	n = ur_wq_used(&srq->rq);
	pthread_mutex_unlock(&srq->lock);
	return n;
}

void fuzz_stack_tidy(void)
{
	struct ibv_wc wc[64];

	while (ibv_poll_cq(fz.cq, 64, wc) > 0)
		;
	while (ibv_poll_cq(fz.xcq, 64, wc) > 0)
		;
	for (int i = 0; i < FUZZ_DCT; i++) {
		struct ur_qp *qp = to_uqp(fz.qp[i]);
		int err, low, idle;

		pthread_mutex_lock(&qp->lock);
		/* Fire whatever timers the packet armed, far in the future. */
		ur_comp_timers(qp, ur_now_ns() + 3600ull * 1000000000ull);
		ur_qp_run(qp);   /* what they kicked, as the timer's entry would */
		err = qp->state == IBV_QPS_ERR;
		low = qp->type != IBV_QPT_XRC_RECV && ur_wq_used(&qp->rq) < 4;
		/* Read under the lock: the engine thread completes on timers. */
		idle = qp->type == IBV_QPT_RC && ur_wq_empty(&qp->sq);
		pthread_mutex_unlock(&qp->lock);
		if (err || idle)
			connect_qp(fz.qp[i]);
		else if (low)
			post_recvs(fz.qp[i]);
	}
	if (srq_used(to_usrq(fz.xsrq)) < 8)
		post_recvs(NULL);
	if (srq_used(to_usrq(fz.srq)) < 8)
		post_recvs_to(NULL, fz.srq);
}
