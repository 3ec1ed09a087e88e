/* ACKs held back while a transport hands over one batch of received
 * packets: at most one ACK per QP per batch.  A stream of small messages,
 * each posted alone, asks for an ACK on every message (its sender cannot
 * know another follows); sent one by one, the ACKs double the packets
 * both ways and the work of both sides.  The batch is the calling
 * thread's: a transport opens it around the packets it takes in one go,
 * inside one reactor callback (so no QP in it can be freed before it
 * ends), and only ACKs wait, never a NAK or a response. */
#ifndef UROCE_REL_RESP_BATCH_H
#define UROCE_REL_RESP_BATCH_H

#include <stdbool.h>

struct ur_qp;

void ur_resp_batch_begin(void);
/* Sends the ACKs held, each QP locked in turn (none may be held by the
 * caller). */
void ur_resp_batch_end(void);
/* qp locked: whether its ACK waits for the batch's end (queued then by the
 * caller); false outside a batch, or when the batch is full. */
bool ur_resp_batch_hold(struct ur_qp *qp);
/* qp locked, the application about to send on it: an ACK it holds leaves
 * now, ahead of the requests.  Otherwise the application's reply to a
 * message could reach the peer before that message's ACK, and the peer
 * see the reply's receive completion before its own send's. */
void ur_resp_batch_before_post(struct ur_qp *qp);

#endif
