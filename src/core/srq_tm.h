/* Tag matching SRQs (IBV_SRQT_TM): receive buffers posted with a tag
 * (ibv_post_srq_ops), matched against the tag in the header (struct
 * ibv_tmh) that starts each SEND, beside the SRQ's ordinary receives, which
 * take what matches nothing ("unexpected").  A rendezvous message matched
 * to a tag has its data fetched by the device with an RDMA READ of the
 * buffer its header names, then answered with a FIN message.
 * docs/design.md, "Tag matching". */
#ifndef UROCE_CORE_SRQ_TM_H
#define UROCE_CORE_SRQ_TM_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

struct ur_context;
struct ur_pd;
struct ur_srq;
struct ur_qp;
struct ur_recv_wqe;
struct ur_send_wqe;

#define UR_TM_MAX_TAGS 256
#define UR_TM_MAX_OPS 256
#define UR_TM_MAX_SGE 1
/* The TMH and the rendezvous header (struct ibv_rvh). */
#define UR_TM_HDR_BYTES 16
#define UR_TM_RNDV_HDR_BYTES 32
/* The device's limit on a rendezvous request's headers. */
#define UR_TM_MAX_RNDV_HDR 64

/* What a SEND into a TM SRQ turned out to be. */
enum ur_tm_kind {
	UR_TM_NONE = 0,          /* not a TM SRQ */
	UR_TM_NO_TAG,            /* a NO_TAG message: an ordinary receive */
	UR_TM_UNEXPECTED,        /* tagged, matched nothing: an ordinary receive */
	UR_TM_EAGER,             /* matched a tag: the data after the TMH lands there */
	UR_TM_RNDV,              /* matched a tag: the data is READ from the sender */
};

struct ur_tm_tag {
	bool used;
	uint64_t seq;            /* posting order: the oldest match wins */
	uint64_t tag, mask, wr_id;
	uint32_t num_sge;
	struct ibv_sge sge[UR_TM_MAX_SGE];
};

struct ur_tm {
	uint32_t max_tags;
	uint32_t hw_unexpected;  /* unexpected messages delivered */
	uint32_t sw_unexpected;  /* as many as the application says it handled */
	uint64_t seq;
	struct ur_tm_tag tags[];
};

/* What a match found: the tag buffer's (or receive's) WQE is in the
 * caller's receive WQE; these go into the completion. */
struct ur_tm_match {
	enum ur_tm_kind kind;
	uint64_t tag;
	uint32_t priv;
	uint64_t rndv_va;
	uint32_t rndv_rkey, rndv_len;
};

/* A tag-matching SRQ (a->srq_type IBV_SRQT_TM): an SRQ (ur_srq_create)
 * with its tag list, its CQ for list operations, and what completes the
 * WQEs the device queues on its QPs.  0 or -errno (-EINVAL without tags or
 * a CQ, or past the limits above). */
int ur_srq_tm_create(struct ur_context *ctx, struct ur_pd *pd, struct ibv_srq_init_attr_ex *a,
		     struct ur_srq **out);
/* ibv_post_srq_ops: tag adds, deletes and syncs, completed on the SRQ's
 * CQ.  0 or -errno, *bad at the first refused. */
int ur_srq_post_ops(struct ur_srq *srq, struct ibv_ops_wr *wr, struct ibv_ops_wr **bad);
/* The message whose first payload bytes are hdr (len of them) arrives:
 * fills out (a tag buffer or an ordinary receive) and m.  False when it
 * needs an ordinary receive and none is posted (RNR). */
bool ur_srq_tm_take(struct ur_srq *srq, const uint8_t *hdr, uint32_t len,
		    struct ur_recv_wqe *out, struct ur_tm_match *m);

/* The READ of a matched rendezvous message's data, queued on qp (locked)
 * as a WQE of the device's own; its completion reports the data and
 * queues the FIN (the SRQ's own_wqe_done). */
void ur_tm_rndv_read(struct ur_qp *qp, const struct ur_recv_wqe *buf, const struct ur_tm_match *m);

#endif
