/* What a QP that gives up (RETRY_EXC_ERR, RNR_RETRY_EXC_ERR) tells: a rare
 * event, so it says (at info level: UROCE_LOG=info) where its requester
 * stood, each counted retry since the last progress (when, why, what the
 * QP received and sent by then) and its counters, so that a failure seen
 * once explains itself.  Not at warning level: a failed work request is
 * the application's to report (its completion says so), and the library
 * writes nothing on stderr for it by default.  qp->lock held throughout. */
#ifndef UROCE_REL_GIVEUP_H
#define UROCE_REL_GIVEUP_H

#include <stdbool.h>
#include <stdint.h>

struct ur_qp;
struct ur_pkt_view;

/* A retry that counts against retry_cnt starts; pkt is the answer that
 * started it, NULL for the timer.  Progress clears the marks (ack.c). */
void ur_giveup_mark(struct ur_qp *qp, const struct ur_pkt_view *pkt, uint8_t syn);
/* The QP gives up with status (an enum ibv_wc_status); pkt as above. */
void ur_giveup_log(struct ur_qp *qp, const struct ur_pkt_view *pkt, uint8_t syn, int status);

#endif
