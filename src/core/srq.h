/* Shared receive queues. */
#ifndef UROCE_CORE_SRQ_H
#define UROCE_CORE_SRQ_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <infiniband/verbs.h>

#include "core/wq.h"
#include "util/compiler.h"
#include "util/list.h"

struct ur_context;
struct ur_pd;
struct ur_xrcd;
struct ur_cq;
struct ur_tm;
struct ur_qp;
struct ur_send_wqe;

struct ur_srq {
	struct ibv_srq ibsrq;          /* applications see this */
	struct ur_context *ctx;
	struct ur_pd *pd;
	pthread_mutex_t lock;          /* rq, limit */
	struct ur_wq rq;
	uint32_t max_sge;
	uint32_t limit;                /* srq_limit: armed when non-zero */
	uint32_t srq_num;              /* XRC: unique on the host, names it on the wire */
	uint32_t users;                /* QPs attached: destroy -> EBUSY */
	enum ibv_srq_type type;
	struct ur_xrcd *xrcd;          /* XRC */
	struct ur_cq *cq;              /* XRC: where its receive completions go;
					  TM: where its list operations complete */
	struct ur_tm *tm;              /* TM: the tag list (core/srq_tm.h) */
	/* TM: completes a WQE the device queued itself on a QP of this SRQ
	 * (a rendezvous READ, its FIN) instead of a completion for the
	 * application (core/srq_tm.c). */
	void (*own_wqe_done)(struct ur_qp *qp, struct ur_send_wqe *w, enum ibv_wc_status status);
	struct ur_list xrcd_link;
	/* XRC, shared domain: per target QP of another process feeding this
	 * SRQ, the message in progress (rel/xrc_owner.c places them).  Touched
	 * only by reactor callbacks, which never run concurrently. */
	struct ur_list xrc_sinks;
	uint32_t nsinks;
};

/* What an XRC SRQ keeps per target QP of another process that feeds it:
 * the receive WQE of the message in progress and the last PSN placed, so
 * that a hand-over sent twice is answered without being placed twice. */
struct ur_srq_sink {
	struct ur_list link;         /* srq->xrc_sinks, most recently used first */
	pid_t pid;                   /* the target QP's process */
	uint32_t tgt_qpn;
	uint32_t gen;                /* the target QP's incarnation */
	bool have_last;
	uint32_t last_psn;           /* the last PSN placed */
	bool active;                 /* wqe holds the message in progress */
	uint32_t offset;
	struct ur_recv_wqe wqe;      /* sized for the SRQ's max_sge */
};

static inline struct ur_srq *to_usrq(struct ibv_srq *ibsrq)
{
	return container_of(ibsrq, struct ur_srq, ibsrq);
}

int ur_srq_create(struct ur_context *ctx, struct ur_pd *pd, struct ibv_srq_init_attr_ex *attr,
		  struct ur_srq **out);
int ur_srq_destroy(struct ur_srq *srq);
int ur_srq_modify(struct ur_srq *srq, struct ibv_srq_attr *attr, int mask);
int ur_srq_query(struct ur_srq *srq, struct ibv_srq_attr *attr);
int ur_srq_post_recv(struct ur_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
/* Takes the oldest receive WQE into *out (sized for max_sge); false when
 * empty.  Raises the SRQ limit event when the level drops below it. */
bool ur_srq_take(struct ur_srq *srq, struct ur_recv_wqe *out);
/* The sink for target QP qpn of process pid, made if need be (idle ones
 * beyond a limit are forgotten, oldest first); NULL if none can be had. */
struct ur_srq_sink *ur_srq_sink_get(struct ur_srq *srq, pid_t pid, uint32_t qpn);

#endif
