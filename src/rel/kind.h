/* What a kind of QP adds to RC's protocol, in one table that its own file
 * fills when it makes the QP (qp->kind; NULL for plain RC, UC, UD and
 * XRC), as a provider fills verbs_context_ops: the core protocol calls
 * through it and never names the kind's file, which stays a client of the
 * protocol above it (DC, rel/dc.c).  Every entry may be NULL. */
#ifndef UROCE_REL_KIND_H
#define UROCE_REL_KIND_H

#include <stdbool.h>

#include "core/qp.h"
#include "wire/pkt_parse.h"
#include "xport/xport.h"

struct ur_qp_kind {
	/* Whether the requester may send w, the first packet of a WQE, now
	 * (a DCI: w's target is the one connected, or it connects there once
	 * everything before is acknowledged).  False: it waits.  NULL:
	 * always.  qp->lock held. */
	bool (*connect)(struct ur_qp *qp, struct ur_send_wqe *w);
	/* A packet for the QP, taken instead of by its responder and
	 * completer (a DCT: handed to its initiator's half).  qp->lock held. */
	void (*rx)(struct ur_qp *qp, const struct ur_pkt_view *pkt, const struct ur_rx_meta *meta);
	/* The QP is out of the QP table, the engine and the transports'
	 * waiting list: what the kind owns is freed (a DCT's halves).  No
	 * locks held. */
	void (*destroy)(struct ur_qp *qp);
};

#endif
