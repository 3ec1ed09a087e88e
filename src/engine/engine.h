/* The progress engine: one per process, one thread.
 *
 * It owns the transports' file descriptors, dispatches received packets to
 * their QPs, fires retransmit and RNR timers, and resumes QPs whose
 * transmission stalled on a full socket.  Passive targets need it: an
 * ib_write_bw server sits in a TCP read while its memory is written.
 * Posting threads transmit on their own; the engine only takes over what
 * cannot be done right away.
 */
#ifndef UROCE_ENGINE_ENGINE_H
#define UROCE_ENGINE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "util/list.h"
#include "xport/xport.h"

struct ur_qp;
struct ur_engine;

/* The process's engine, started on first use; NULL with errno set if its
 * thread, sockets or host registry cannot be set up. */
struct ur_engine *ur_engine_get(void);

/* Receive and run timers from the calling thread, if no other thread is at
 * it: a busy-polling application then needs no thread switch per packet
 * (which costs milliseconds when busy pollers fill every core). */
void ur_engine_poll(struct ur_engine *e);

/* QP numbers are unique on the host; registering makes the QP reachable. */
int ur_engine_qp_register(struct ur_engine *e, struct ur_qp *qp);
/* After this returns, no engine thread touches the QP. */
void ur_engine_qp_unregister(struct ur_engine *e, struct ur_qp *qp);

/* Returns once no receive dispatch that started before the call is still
 * running: objects found during dispatch can then be freed. */
void ur_engine_quiesce(struct ur_engine *e);

/* A one-shot timer for objects other than QPs (CQ moderation).  fire runs
 * on the engine thread with no lock of the engine held, during a dispatch:
 * an owner that cancels and then calls ur_engine_quiesce may free it. */
struct ur_timer {
	uint64_t deadline;          /* ns, CLOCK_MONOTONIC; 0 = not armed */
	void (*fire)(struct ur_timer *t);
	struct ur_list link;
};
void ur_engine_timer_arm(struct ur_timer *t, uint64_t deadline);
void ur_engine_timer_cancel(struct ur_timer *t);

/* The QP's timer deadlines changed (qp->lock held). */
void ur_engine_timers_changed(struct ur_qp *qp);
/* The transport said EAGAIN: run the QP's transmit side when it drains
 * (qp->lock held). */
void ur_engine_tx_blocked(struct ur_qp *qp);

/* A transport socket drained: resume QPs that stalled on it. */
void ur_engine_writable(struct ur_engine *e);

/* The transport that reaches peers (resolution picks the path). */
struct ur_xport *ur_engine_xport(struct ur_engine *e);

/* For transports: a received RoCE packet (BTH .. ICRC), integrity checked. */
/* A control message from another process of the host (the transport's
 * local_msg), with the receive lock and the QP table's read lock held. */
void ur_engine_local_msg(struct ur_engine *e, const uint8_t *msg, size_t len);
/* The QP numbered qpn, or NULL.  Only where the table's read lock is held
 * (fd handlers and timers run so); qp->lock is not taken. */
struct ur_qp *ur_engine_find_qp(struct ur_engine *e, uint32_t qpn);
void ur_engine_rx(struct ur_engine *e, const uint8_t *pkt, size_t len,
		  const struct ur_rx_meta *meta);

typedef void (*ur_fd_handler)(void *arg, uint32_t events);
int ur_engine_watch_fd(struct ur_engine *e, int fd, uint32_t events,
		       ur_fd_handler fn, void *arg);
int ur_engine_rewatch_fd(struct ur_engine *e, int fd, uint32_t events);
void ur_engine_unwatch_fd(struct ur_engine *e, int fd);

/* Device-wide counters, as rxe's hw_counters names them. */
struct ur_engine_counters {
	uint64_t rcvd_pkts, sent_pkts;
	uint64_t icrc_errors;          /* dropped: ICRC mismatch */
	uint64_t malformed;            /* dropped: failed to parse */
	uint64_t no_qp;                /* dropped: no such QP here */
	uint64_t forwarded;            /* demultiplexed to another process */
	uint64_t tx_eagain;
};
void ur_engine_counters(struct ur_engine *e, struct ur_engine_counters *out);
extern struct ur_engine_counters ur_engine_stats;

#endif
