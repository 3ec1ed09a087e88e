/* The communication manager's state machine for one connection (IBA 12.9),
 * free of verbs and sockets: it is told what arrived and when, sends
 * through ops->send, and answers what the consumer (librdmacm) must do.
 *
 * Active side:  IDLE -REQ-> REQ_SENT -REP-> REP_RCVD -RTU-> ESTABLISHED
 * Passive side: REQ arrives -> REQ_RCVD -REP-> REP_SENT -RTU-> ESTABLISHED
 * Either:       ESTABLISHED -DREQ-> DREQ_SENT -DREP-> TIMEWAIT
 *               ESTABLISHED <-DREQ- (DREP sent) TIMEWAIT
 * UD (SIDR):    IDLE -SIDR_REQ-> SIDR_REQ_SENT -SIDR_REP-> TIMEWAIT
 *               SIDR_REQ arrives -> SIDR_REQ_RCVD -SIDR_REP-> TIMEWAIT
 * A REJ ends any state before ESTABLISHED.  REQ, REP and DREQ are sent
 * again until answered (an MRA buys time) and the connection times out
 * after max_retries.  A message that arrives twice is answered again
 * (a lost REP, RTU or DREP) and never reported twice.
 *
 * Callers serialize: every function runs under the consumer's lock.
 */
#ifndef UROCE_CM_CM_H
#define UROCE_CM_CM_H

#include <stdbool.h>
#include <stdint.h>

#include "util/enum_name.h"
#include "wire/mad.h"

#define UR_CM_STATE_LIST(X)			\
	X(UR_CM_IDLE, "IDLE")			\
	X(UR_CM_REQ_SENT, "REQ_SENT")		\
	X(UR_CM_REQ_RCVD, "REQ_RCVD")		\
	X(UR_CM_REP_SENT, "REP_SENT")		\
	X(UR_CM_REP_RCVD, "REP_RCVD")		\
	X(UR_CM_ESTABLISHED, "ESTABLISHED")	\
	X(UR_CM_DREQ_SENT, "DREQ_SENT")		\
	X(UR_CM_TIMEWAIT, "TIMEWAIT")		\
	X(UR_CM_SIDR_REQ_SENT, "SIDR_REQ_SENT")	\
	X(UR_CM_SIDR_REQ_RCVD, "SIDR_REQ_RCVD")

UR_ENUM_DECLARE(ur_cm_state, UR_CM_STATE_LIST, UR_CM_STATE_NR, ur_cm_state_name);

/* What the consumer learns from ur_cm_rx and ur_cm_tick. */
enum ur_cm_up {
	UR_CM_UP_NONE,           /* nothing to do (a repeat, or not for this state) */
	UR_CM_UP_REP,            /* REP_RCVD: move the QP, then ur_cm_send_rtu */
	UR_CM_UP_RTU,            /* ESTABLISHED on the passive side */
	UR_CM_UP_REJ,            /* rejected (msg says why) */
	UR_CM_UP_DREQ,           /* the peer disconnects; DREP already sent */
	UR_CM_UP_DREP,           /* our DREQ was answered */
	UR_CM_UP_TIMEOUT,        /* no answer to REQ or REP: unreachable */
	UR_CM_UP_DREQ_TIMEOUT,   /* no answer to DREQ: disconnected anyway */
	UR_CM_UP_SIDR_REP,       /* our SIDR_REQ was answered (msg: status, QPN, Q_Key) */
};

struct ur_cm_conn;

struct ur_cm_ops {
	/* One message to the connection's peer (fire and forget). */
	void (*send)(struct ur_cm_conn *c, const struct ur_cm_msg *m);
};

struct ur_cm_conn {
	const struct ur_cm_ops *ops;
	enum ur_cm_state state;
	uint32_t local_id, remote_id;     /* comm IDs */
	uint64_t tid;                     /* transaction ID of our REQ or of theirs */
	uint32_t remote_qpn;
	struct ur_cm_msg out;             /* the last REQ/REP/DREQ, to send again */
	struct ur_cm_msg answer;          /* the last RTU/DREP/REJ, for a repeat */
	bool have_answer;
	uint64_t deadline_ns;             /* 0: no timer */
	uint64_t timeout_ns;              /* between sends */
	unsigned max_retries, retries_left;
	uint64_t req_sent_ns;             /* when our REQ first went */
	bool await_listener;              /* REJ "invalid service ID" early on: asking again */
};

/* A REJ saying nobody listens on the service (or a SIDR_REP saying so),
 * received this soon after our REQ first went, is not reported: the REQ
 * goes again every
 * UR_CM_LISTEN_RETRY_NS.  Programs tell their peer to connect and then
 * listen (perftest's -R does it for its test QPs): on a loaded host the REQ
 * can arrive before the listener is up.  After the grace, the REJ is the
 * answer (RDMA_CM_EVENT_REJECTED, status 8). */
#define UR_CM_LISTEN_GRACE_NS (1500ull * 1000 * 1000)
#define UR_CM_LISTEN_RETRY_NS (50ull * 1000 * 1000)

void ur_cm_init(struct ur_cm_conn *c, const struct ur_cm_ops *ops, uint32_t local_id,
		uint64_t timeout_ns, unsigned max_retries);

/* Active side: sends REQ (m filled but for comm IDs). */
int ur_cm_send_req(struct ur_cm_conn *c, struct ur_cm_msg *m, uint64_t now);
/* Passive side: a REQ made this connection. */
void ur_cm_req_rcvd(struct ur_cm_conn *c, const struct ur_cm_msg *req);
int ur_cm_send_rep(struct ur_cm_conn *c, struct ur_cm_msg *m, uint64_t now);
int ur_cm_send_rtu(struct ur_cm_conn *c, const uint8_t *priv, uint8_t len);
/* Rejects a REQ or REP (before ESTABLISHED). */
int ur_cm_send_rej(struct ur_cm_conn *c, uint16_t reason, const uint8_t *priv, uint8_t len);
int ur_cm_send_dreq(struct ur_cm_conn *c, const uint8_t *priv, uint8_t len, uint64_t now);
/* The passive side has seen traffic before the RTU: established. */
void ur_cm_established(struct ur_cm_conn *c);
/* The peer is known to be gone without a word (a killed process of this
 * host): the connection ends as if its DREQ had come, with nothing sent. */
void ur_cm_peer_gone(struct ur_cm_conn *c);

/* UD: asks for the QP behind m->service_id (m filled but for the request ID). */
int ur_cm_send_sidr_req(struct ur_cm_conn *c, struct ur_cm_msg *m, uint64_t now);
/* Passive side: a SIDR_REQ made this connection. */
void ur_cm_sidr_req_rcvd(struct ur_cm_conn *c, const struct ur_cm_msg *req);
/* Answers it (status UR_SIDR_OK with our QP and Q_Key, or why not). */
int ur_cm_send_sidr_rep(struct ur_cm_conn *c, uint8_t status, uint32_t qpn, uint32_t qkey,
			const uint8_t *priv, uint8_t len);

/* A message for this connection arrived. */
enum ur_cm_up ur_cm_rx(struct ur_cm_conn *c, const struct ur_cm_msg *m, uint64_t now);
/* The timer: resends, or reports a timeout once the retries are spent. */
enum ur_cm_up ur_cm_tick(struct ur_cm_conn *c, uint64_t now);

/* A REJ answering a message no connection knows (a REQ for a service
 * nobody listens on, a REP for a gone connection). */
void ur_cm_rej_for(const struct ur_cm_msg *in, uint16_t reason, struct ur_cm_msg *out);

#endif
