/* The reliability protocol's entry points.  Every function here runs with
 * qp->lock held. */
#ifndef UROCE_REL_REL_H
#define UROCE_REL_REL_H

#include <stdint.h>

#include "wire/pkt_parse.h"
#include "xport/xport.h"

struct ur_qp;

/* Packetize posted WQEs as far as the window and the transport allow. */
void ur_req_run(struct ur_qp *qp);
/* Send queued ACKs/NAKs and READ/ATOMIC responses. */
void ur_resp_tx(struct ur_qp *qp);
/* Everything a QP has to transmit: responses first, then requests. */
void ur_qp_tx(struct ur_qp *qp);

/* A packet for this QP: requests go to the responder, responses to the
 * completer. */
void ur_rel_rx(struct ur_qp *qp, const struct ur_pkt_view *pkt,
	       const struct ur_rx_meta *meta);
void ur_resp_rx(struct ur_qp *qp, const struct ur_pkt_view *pkt,
		const struct ur_rx_meta *meta);
void ur_comp_rx(struct ur_qp *qp, const struct ur_pkt_view *pkt);

/* Retransmit / RNR timers whose deadline passed. */
void ur_comp_timers(struct ur_qp *qp, uint64_t now);

/* State resets on QP transitions. */
void ur_rel_reset(struct ur_qp *qp);
void ur_rel_enter_rtr(struct ur_qp *qp);
void ur_rel_enter_rts(struct ur_qp *qp);
/* Drop all protocol state that refers to queued WQEs (ERROR/RESET). */
void ur_rel_abort(struct ur_qp *qp);

/* 4.096 us * 2^timeout, in ns; 0 means no timeout. */
uint64_t ur_rel_timeout_ns(uint8_t timeout);
/* The spec's RNR NAK timer table, in ns. */
uint64_t ur_rel_rnr_timer_ns(uint8_t code);

#endif
