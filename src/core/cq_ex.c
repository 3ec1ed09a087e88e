/* The extended polling interface (ibv_start_poll / ibv_next_poll /
 * ibv_end_poll and the ibv_wc_read_* accessors) over a CQ's ring.  The CQ
 * lock is held from a successful start to the end, as the verbs contract
 * allows: the application reads one completion at a time in between. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "core/cq.h"

static inline struct ur_cq *ex_to_ucq(struct ibv_cq_ex *ex)
{
	return container_of(ex, struct ur_cq, ibcq);
}

static void load_cur(struct ur_cq *cq)
{
	cq->cur = cq->ring[cq->head & (cq->size - 1)];
	__atomic_store_n(&cq->head, cq->head + 1, __ATOMIC_RELAXED);
	cq->ibcq.wr_id = cq->cur.wc.wr_id;
	cq->ibcq.status = cq->cur.wc.status;
}

int ur_cq_start_poll(struct ur_cq *cq)
{
	if (ur_cq_looks_empty(cq))
		return -ENOENT;
	pthread_spin_lock(&cq->lock);
	if (cq->head == cq->tail) {
		pthread_spin_unlock(&cq->lock);
		return -ENOENT;
	}
	load_cur(cq);
	return 0;   /* the lock is held until ibv_end_poll */
}

int ur_cq_next_poll(struct ur_cq *cq)
{
	if (cq->head == cq->tail)
		return -ENOENT;
	load_cur(cq);
	return 0;
}

static void ex_end_poll(struct ibv_cq_ex *ex)
{
	pthread_spin_unlock(&ex_to_ucq(ex)->lock);
}

#define CUR(ex) (ex_to_ucq(ex)->cur.wc)

static enum ibv_wc_opcode ex_read_opcode(struct ibv_cq_ex *ex) { return CUR(ex).opcode; }
static uint32_t ex_read_vendor_err(struct ibv_cq_ex *ex) { return CUR(ex).vendor_err; }
static uint32_t ex_read_byte_len(struct ibv_cq_ex *ex) { return CUR(ex).byte_len; }
static __be32 ex_read_imm_data(struct ibv_cq_ex *ex) { return CUR(ex).imm_data; }
static uint32_t ex_read_qp_num(struct ibv_cq_ex *ex) { return CUR(ex).qp_num; }
static uint32_t ex_read_src_qp(struct ibv_cq_ex *ex) { return CUR(ex).src_qp; }
static unsigned int ex_read_wc_flags(struct ibv_cq_ex *ex) { return CUR(ex).wc_flags; }
static uint32_t ex_read_slid(struct ibv_cq_ex *ex) { return CUR(ex).slid; }
static uint8_t ex_read_sl(struct ibv_cq_ex *ex) { return CUR(ex).sl; }
static uint8_t ex_read_dlid_path_bits(struct ibv_cq_ex *ex) { return CUR(ex).dlid_path_bits; }
static uint64_t ex_read_completion_ts(struct ibv_cq_ex *ex) { return ex_to_ucq(ex)->cur.ts_ns; }
static uint16_t ex_read_cvlan(struct ibv_cq_ex *ex) { return 0; }
static uint32_t ex_read_flow_tag(struct ibv_cq_ex *ex) { return 0; }

static uint64_t ex_read_completion_wallclock_ns(struct ibv_cq_ex *ex)
{
	/* Completion times are taken on CLOCK_MONOTONIC; convert by the
	 * current offset to CLOCK_REALTIME. */
	struct timespec rt, mono;
	int64_t off;

	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	off = ((int64_t)rt.tv_sec - mono.tv_sec) * 1000000000ll +
	      (rt.tv_nsec - mono.tv_nsec);
	return ex_to_ucq(ex)->cur.ts_ns + (uint64_t)off;
}

static void ex_read_tm_info(struct ibv_cq_ex *ex, struct ibv_wc_tm_info *tm)
{
	tm->tag = ex_to_ucq(ex)->cur.tm_tag;
	tm->priv = ex_to_ucq(ex)->cur.tm_priv;
}

#define UR_CQ_SUPPORTED_WC_FLAGS                                           \
	(IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM | \
	 IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |      \
	 IBV_WC_EX_WITH_DLID_PATH_BITS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |  \
	 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK | IBV_WC_EX_WITH_TM_INFO)

void ur_cq_init_ex_ops(struct ur_cq *cq)
{
	struct ibv_cq_ex *ex = &cq->ibcq;

	ex->end_poll = ex_end_poll;
	ex->read_opcode = ex_read_opcode;
	ex->read_vendor_err = ex_read_vendor_err;
	ex->read_byte_len = ex_read_byte_len;
	ex->read_imm_data = ex_read_imm_data;
	ex->read_qp_num = ex_read_qp_num;
	ex->read_src_qp = ex_read_src_qp;
	ex->read_wc_flags = ex_read_wc_flags;
	ex->read_slid = ex_read_slid;
	ex->read_sl = ex_read_sl;
	ex->read_dlid_path_bits = ex_read_dlid_path_bits;
	ex->read_completion_ts = ex_read_completion_ts;
	ex->read_completion_wallclock_ns = ex_read_completion_wallclock_ns;
	ex->read_cvlan = ex_read_cvlan;
	ex->read_flow_tag = ex_read_flow_tag;
	ex->read_tm_info = ex_read_tm_info;
}

