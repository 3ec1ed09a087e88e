/* DC, the dynamically connected transport: a DC initiator (DCI) reaches
 * any DC target (DCT) per work request, by (address, DCT number, key),
 * and a DCT serves any initiator that knows its key, receiving on an SRQ.
 *
 * Reliability is RC's: a DCI is an RC requester whose peer changes with
 * the work requests, one target at a time, and only once everything sent
 * to the last one is acknowledged (as a NIC's DCI reconnects).  A DCT
 * gives each initiator a half: a hidden RC responder, made on its first
 * packet, sharing the DCT's number, PD, SRQ, CQ and access.  Packets use
 * RD's opcodes; the RDETH names the connection by its first PSN, so that a
 * half knows a new connection from a late packet of the last one, and the
 * DETH carries the key and the initiator's QP number (docs/dc.md).
 *
 * The core protocol never calls this file: the kinds of a DCI, a DCT and
 * a half (core/qp_kind.h), set here at creation, check that a DCI's work
 * requests name their targets, connect it before a WQE, write DC's headers
 * into a DCI's and a half's packets, hand a DCT's packets to its halves
 * and free them at destroy.  qp->lock held throughout, unless said
 * otherwise. */
#ifndef UROCE_REL_DC_H
#define UROCE_REL_DC_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "core/limits.h"
#include "core/qp.h"
#include "wire/pkt_parse.h"
#include "xport/xport.h"

struct ur_context;

/* Halves a DCT keeps at once; an initiator past them is not answered
 * (its DCI retries, and fails if none frees). */
#define UR_DC_MAX_HALVES 1024
/* READ/ATOMIC requests a half answers at once, per initiator: as many as
 * any DCI may have outstanding. */
#define UR_DC_RD_ATOMIC UR_MAX_QP_RD_ATOM

/* A DCI or DCT for attr (its qp_type is the application's
 * IBV_QPT_DRIVER).  No locks held.  0 or -errno, the reason logged. */
int ur_dc_create(struct ur_context *ctx, struct ibv_qp_init_attr_ex *attr,
		 enum ur_dc_role role, uint64_t key, struct ur_qp **out);
/* A request packet for a DCT: checked against its key and handed to the
 * initiator's half (made if new). */
void ur_dc_target_rx(struct ur_qp *dct, const struct ur_pkt_view *pkt,
		     const struct ur_rx_meta *meta);

#endif
