/* What sets one kind of QP apart from another: RC, UC, UD, the two XRC
 * halves, and DC's initiator, target and a target's halves, which run
 * RC's protocol inside (qp->type is IBV_QPT_RC).  A QP's kind is chosen
 * when it is made, by its type (ur_qp_alloc: the tables of qp_kind.c) or
 * by the file that makes a kind of its own (DC: rel/dc.c fills its three
 * tables and sets qp->kind), as a provider fills verbs_context_ops in one
 * place.  The code where kinds differ looks the kind up here rather than
 * testing the type and the DC role: the protocol calls the hooks and
 * never names the kind's file, which stays a client of it.
 *
 * Fixed for the QP's life once it can be reached: read without the lock. */
#ifndef UROCE_CORE_QP_KIND_H
#define UROCE_CORE_QP_KIND_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "core/qp.h"
#include "wire/pkt_parse.h"
#include "xport/xport.h"

/* What a kind has or lacks, where code tests it. */
enum ur_qp_kind_flag {
	/* Its AV names its one peer, resolved when the AV is set (a DC
	 * QP's peers come with each work request or packet, UD's with
	 * each work request). */
	UR_KIND_AV_PEER = 1 << 0,
	/* The transport may copy its WRITEs (and an RC QP's READs)
	 * straight between address spaces (rel/req.c's one_copy_op); a DC
	 * target's memory is reached through its packets alone. */
	UR_KIND_ONE_COPY = 1 << 1,
	/* No receive queue of its own: ibv_post_recv is refused. */
	UR_KIND_NO_RQ = 1 << 2,
	/* Work requests come through ibv_wr_* alone, which can name a DC
	 * target (mlx5dv_wr_set_dc_addr): ibv_post_send is refused. */
	UR_KIND_WR_ONLY = 1 << 3,
	/* Not the application's (a DCT's half): it raises no async event,
	 * an initiator's failure being the initiator's, as on a NIC. */
	UR_KIND_HIDDEN = 1 << 4,
};

struct ur_qp_kind {
	const char *name;          /* "RC", "DCI", ...: log lines, the resource dump */
	enum ibv_qp_type rules;    /* its rows in the state table (UR_QPT_DCI, ...: qp_state.c) */
	uint8_t dc;                /* enum ur_dc_role */
	uint8_t opcodes;           /* its packets' BTH transport bits (UR_OP_TYPE_*) */
	uint16_t flags;            /* enum ur_qp_kind_flag */

	/* The hooks; NULL: the kind adds nothing there.  qp->lock held,
	 * unless said otherwise. */

	/* The protocol's state was reset: at creation, and entering RESET. */
	void (*reset)(struct ur_qp *qp);
	/* An ibv_wr_* batch, WQEs sq.tail..wr_tail, before the requester
	 * takes it: 0, or -errno and the batch is discarded. */
	int (*check_batch)(struct ur_qp *qp);
	/* Whether the requester may send w, the first packet of a WQE, now
	 * (a DCI: w's target is the one connected, or it connects there once
	 * everything before is acknowledged).  False: it waits. */
	bool (*connect)(struct ur_qp *qp, struct ur_send_wqe *w);
	/* The kind's own extension headers of a packet the QP sends, with
	 * opcode op, hdr its headers from the BTH on. */
	void (*headers)(const struct ur_qp *qp, uint8_t *hdr, uint8_t op);
	/* A packet for the QP, taken instead of by its responder and
	 * completer (a DCT: handed to its initiator's half). */
	void (*rx)(struct ur_qp *qp, const struct ur_pkt_view *pkt, const struct ur_rx_meta *meta);
	/* The QP is out of the QP table, the engine and the transports'
	 * waiting list: what the kind owns is freed (a DCT's halves).  No
	 * locks held. */
	void (*destroy)(struct ur_qp *qp);
};

/* RC's own kind: what was built for RC alone (selective repeat, ACKs held
 * over a batch, the inbox, ATOMIC WRITE) is RC's and not yet the DC
 * kinds', which run RC's protocol inside. */
extern const struct ur_qp_kind ur_qp_kind_rc;

static inline bool ur_qp_plain_rc(const struct ur_qp *qp)
{
	return qp->kind == &ur_qp_kind_rc;
}

static inline bool ur_qp_kind_has(const struct ur_qp *qp, enum ur_qp_kind_flag f)
{
	return (qp->kind->flags & f) != 0;
}

/* The kind of a QP of type t (one ur_qp_alloc accepts). */
const struct ur_qp_kind *ur_qp_kind_of(enum ibv_qp_type t);

#endif
