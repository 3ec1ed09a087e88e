/* Queue pairs: the object, its work queues and WQE layouts, and the state
 * the protocol keeps in it (qp_proto.h).  Attribute validation and the
 * state table live in qp_modify.c and qp_state.c; the protocol that drives
 * a QP, and its life cycle, in src/rel. */
#ifndef UROCE_CORE_QP_H
#define UROCE_CORE_QP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "core/context.h"
#include "core/counters.h"
#include "core/qp_proto.h"
#include "core/wq.h"
#include "engine/engine.h"
#include "util/compiler.h"
#include "util/list.h"
#include "xport/xport.h"

struct ur_context;
struct ur_pd;
struct ur_cq;
struct ur_srq;
struct ur_ah;
struct ur_xrcd;
struct ur_xrc_queue;
struct ur_held;
struct ur_dc_halves;
struct ur_qp_kind;

/* DC (rel/dc.h).  A DCI and a DCT's halves run RC's protocol (qp->type is
 * IBV_QPT_RC inside; applications see IBV_QPT_DRIVER) with RD's opcodes;
 * each role is a kind of QP (qp->kind->dc, core/qp_kind.h). */
enum ur_dc_role {
	UR_DC_NONE = 0,
	UR_DC_INI,               /* initiator: one target at a time, per WR */
	UR_DC_TGT,               /* target: hands each initiator to its half */
	UR_DC_HALF,              /* a target's responder for one initiator */
};

enum ur_wqe_state {
	UR_WQE_POSTED = 0,       /* not yet (fully) packetized */
	UR_WQE_SENT,             /* every request packet sent, awaiting the peer */
	UR_WQE_DONE,             /* completed (and reported if signaled) */
};

/* WQEs the device queues itself (a tag-matching rendezvous, core/srq_tm.h):
 * their completion is not the application's; the SRQ's own_wqe_done
 * takes it (core/srq.h). */
/* Send queue room a QP on a TM SRQ keeps for rendezvous READs and FINs. */
#define UR_TM_SQ_SLOTS 32
enum ur_wqe_internal {
	UR_WQE_APP = 0,
	UR_WQE_TM_READ,          /* fetching a rendezvous message's data */
	UR_WQE_TM_FIN,           /* telling its sender the data is in */
};

struct ur_send_wqe {
	uint64_t wr_id;
	uint32_t opcode;         /* enum ibv_wr_opcode */
	uint32_t send_flags;     /* IBV_SEND_* */
	uint32_t imm;            /* immediate data (network order) or rkey to invalidate */
	uint32_t rkey;
	uint64_t remote_addr;
	uint64_t compare_add;
	uint64_t swap;
	struct ur_ah *ah;        /* UD */
	uint32_t remote_qpn;     /* UD */
	uint32_t remote_qkey;    /* UD */
	uint32_t remote_srqn;    /* XRC */
	uint64_t dc_key;         /* DC: the target's key (remote_qpn: its number) */
	struct ur_mw *mw;        /* BIND_MW: the window, w->rkey its new key */
	struct ibv_mw_bind_info bind;

	uint8_t internal;        /* enum ur_wqe_internal: the device's own, not the application's */

	/* progress, owned by the requester and completer */
	uint8_t state;
	bool is_inline;
	bool place_tried;        /* WRITE: the transport was asked to copy it */
	bool place_wait;         /* ... and waits for earlier requests to land first */
	bool placed;             /* ... and did: it is one packet of headers */
	uint32_t first_psn, last_psn;
	uint32_t length;         /* message bytes */
	uint32_t offset;         /* bytes packetized (reads: requested) */
	uint32_t read_done;      /* READ: response bytes placed */
	uint32_t num_sge;
	union {
		struct ibv_sge sge[0];
		uint8_t inline_data[0];
	};
};

struct ur_qp {
	struct ibv_qp_ex qpx;            /* qpx.qp_base is what applications see */
	struct ur_context *ctx;
	struct ur_pd *pd;
	struct ur_cq *scq, *rcq;
	struct ur_srq *srq;
	struct ur_xrcd *xrcd;            /* XRC target */
	struct ur_srq *resp_srq;         /* XRC target: the SRQ of the message in progress */
	uint32_t xrc_gen;                /* XRC target: incarnation, new at each RTR */
	struct ur_xrc_queue *xrc_q;      /* XRC target: packets held while parked (rel/xrc.c) */
	struct ur_held *held;            /* RC responder: packets past a gap (rel/held.c) */
	struct ur_held *held_resp;       /* RC requester: READ responses past a gap */
	enum ibv_qp_type type;
	const struct ur_qp_kind *kind;   /* RC, ..., DCI: what sets it apart (core/qp_kind.h) */
	uint64_t dc_key;                 /* TGT: the key it accepts; INI: the connection's */
	uint32_t dc_start;               /* INI, HALF: the PSN the connection began at */
	uint32_t dc_conn;                /* INI, HALF: the connection's number (INI: counts) */
	struct ur_dc_halves *dc_halves;  /* TGT: its initiators' halves */
	struct ur_qp *dc_tgt;            /* HALF: its target */
	struct ur_qp *dc_next;           /* HALF: next in its target's bucket */
	uint64_t dc_used_ns;             /* HALF: when its initiator last sent */
	uint32_t dc_bucket;              /* HALF: its bucket in the target's table */
	bool dc_fresh;                   /* HALF: new, or given to a new initiator: any connection opens */
	bool dc_on;                      /* INI: connected (path, dest, key, start set) */
	/* Bytes a driver library keeps in the QP (verbs/dc_abi.h). */
	uint64_t driver_ext[24];       /* UROCE_QP_DRIVER_EXT_BYTES */

	pthread_mutex_t lock;            /* everything below */
	enum ibv_qp_state state;
	struct ibv_qp_attr attr;         /* as set, for ibv_query_qp */
	struct ibv_qp_cap cap;
	bool sq_sig_all;
	unsigned mtu;                    /* path MTU in bytes */
	struct ur_path path;             /* RC/UC: to the peer, set at RTR */

	struct ur_wq sq;                 /* struct ur_send_wqe slots */
	struct ur_wq rq;                 /* struct ur_recv_wqe slots */

	struct ur_req_state req;
	struct ur_comp_state comp;
	struct ur_resp_state resp;

	/* ibv_wr_* builder: WQEs between sq.tail and wr_tail are being built */
	uint32_t wr_tail;
	int wr_err;                      /* the batch's first error, -errno */

	struct ur_timer timer;           /* the earlier of comp's two deadlines */
	struct ur_list wait_link;        /* on the stack's list of QPs waiting for room */
	bool dying;                      /* being destroyed: nothing re-arms or re-queues it */
	uint8_t run_pending;             /* UR_RUN_* parts kicked, run before unlock (rel/kick.h) */
	struct ur_inbox inbox;           /* ACKs left for the lock holder (rel/inbox.h) */
	bool comm_est;                   /* IBV_EVENT_COMM_EST raised */
	bool cq_overrun;                 /* a completion found its CQ full: QP_FATAL next */
	uint64_t cnt[UR_CNT_NR];         /* this QP's share of the device counters */
	/* When it last received a packet and last sent one (coarse: what a
	 * QP that gives up, and uroce res, tell). */
	uint64_t rx_ns, tx_ns;
};

/* Counts an event (n events) on the QP and on its device. */
#define UR_QP_COUNT_N(qp, c, n)                                             \
	do {                                                                \
		(qp)->cnt[c] += (n);                                        \
		__atomic_add_fetch(&(qp)->ctx->dev->cnt[c], (n), __ATOMIC_RELAXED); \
	} while (0)
#define UR_QP_COUNT(qp, c) UR_QP_COUNT_N(qp, c, 1)

static inline struct ur_qp *to_uqp(struct ibv_qp *ibqp)
{
	return container_of((struct ibv_qp_ex *)ibqp, struct ur_qp, qpx);
}

/* RC, DC and both XRC halves: acknowledged, retransmitted. */
static inline bool ur_qp_is_reliable(const struct ur_qp *qp)
{
	return qp->type == IBV_QPT_RC || qp->type == IBV_QPT_XRC_SEND ||
	       qp->type == IBV_QPT_XRC_RECV;
}

static inline uint32_t ur_qp_num(const struct ur_qp *qp)
{
	return qp->qpx.qp_base.qp_num;
}

static inline struct ur_send_wqe *ur_sq_wqe(struct ur_qp *qp, uint32_t idx)
{
	return ur_wq_slot(&qp->sq, idx);
}

/* The SQ's oldest WQE, completed, gives its slot back (QP lock held).  A
 * release store: the ibv_wr_* builders read the head without the lock
 * and may then reuse the slot. */
static inline void ur_sq_retire(struct ur_qp *qp)
{
	__atomic_store_n(&qp->sq.head, qp->sq.head + 1, __ATOMIC_RELEASE);
}

/* The device a QP is on, for log lines. */
#define ur_qp_dev(qp) ((qp)->ctx->dev->ibdev.name)

/* Allocates a QP and its queues for checked creation attributes (type,
 * caps, CQs, PD); takes references on the objects it uses.  Numbering it
 * and starting the protocol are the caller's (rel/qp_ops.c).  0 or -errno. */
int ur_qp_alloc(struct ur_context *ctx, struct ibv_qp_init_attr_ex *attr, struct ur_qp **out);
/* Drops the references and frees the QP and everything it holds. */
void ur_qp_free(struct ur_qp *qp);
int ur_qp_query(struct ur_qp *qp, struct ibv_qp_attr *attr, int mask,
		struct ibv_qp_init_attr *init);

/* Posting into the queues (qp_post.c), qp->lock held: validated WQEs are
 * added; 0 or -errno with *bad at the first one refused. */
int ur_sq_post(struct ur_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int ur_rq_post(struct ur_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
/* Installs the ibv_wr_* builders (qp_wr.c) in qpx; wr_start, wr_complete
 * and wr_abort are the protocol's. */
void ur_qp_init_wr_builders(struct ur_qp *qp);
/* The DC target of the WQE being built on a DCI (mlx5dv_wr_set_dc_addr):
 * the DCT's number behind ah, and the key it checks. */
void ur_qp_wr_set_dc_addr(struct ur_qp *qp, struct ibv_ah *ah, uint32_t dctn, uint64_t key);

/* Work requests executed inside the device, never put on the wire. */
static inline bool ur_wr_is_local(uint32_t op)
{
	return op == IBV_WR_BIND_MW || op == IBV_WR_LOCAL_INV;
}

static inline bool ur_wr_is_rd_atomic(uint32_t op)
{
	return op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

/* Generates a completion for a send WQE (respecting signaling) and retires
 * it from the SQ head.  qp->lock held. */
void ur_qp_complete_send(struct ur_qp *qp, struct ur_send_wqe *wqe,
			 enum ibv_wc_status status);
/* Everything queued, and a receive in progress, completes in order with
 * IBV_WC_WR_FLUSH_ERR.  qp->lock held. */
void ur_qp_flush_queues(struct ur_qp *qp);
/* Drops this QP's completions still queued in its CQs (reset, destroy). */
void ur_qp_purge_completions(struct ur_qp *qp);
/* Queues an asynchronous event about this QP on its context. */
void ur_qp_event(struct ur_qp *qp, enum ibv_event_type type);

/* State names for logs. */
extern const char *const ur_qp_state_name[];

#endif
