/* A QP's transmission when no post drives it: its timer firing, resuming
 * the QPs a full transport stopped (each runs its responses, then its
 * requests: rel/run.h), and an application thread polling for
 * completions. */
#ifndef UROCE_REL_PROGRESS_H
#define UROCE_REL_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

struct ur_qp;
struct ur_stack;
struct ur_timer;

/* The QP's timer (a reactor timer callback). */
void ur_progress_timer(struct ur_timer *t);
/* A transport has room again: the QPs waiting for it go on (a reactor
 * callback). */
void ur_progress_resume(struct ur_stack *s);
/* From an application thread whose CQ poll found nothing: this process's
 * receive path runs inline if no other thread is at it, and now and then
 * the thread gives its core away.  will_block: the CQ is armed, so the
 * thread waits on its channel next rather than polling again. */
void ur_progress_poll(struct ur_stack *s, bool will_block);
/* Before a QP is ended from outside the data path (the CM's DREQ, which
 * comes by UDP): what peers put in shared-memory rings before it, an ACK
 * for one, is taken first, as a NIC would have taken it off the wire
 * before the DREQ.  Waits at most max_ns; not on the engine thread. */
void ur_progress_settle(struct ur_stack *s, uint64_t max_ns);
/* The application arms a CQ's notification: it stops polling and will
 * wait, so the engine thread takes over receiving. */
void ur_progress_app_waits(struct ur_stack *s);
/* The fd whose readiness means the receive path has work a thread may
 * run (ur_progress_poll): a completion channel's fd watches it too. */
int ur_progress_rx_fd(struct ur_stack *s);
/* The application arms a CQ's notification: it waits on the channel next,
 * where it takes the receive path itself (the engine thread need not be
 * woken for it, unless shared-memory rings must be watched). */
void ur_progress_app_arms(struct ur_stack *s);
/* A thread about to block on a completion channel's fd takes the receive
 * path itself while it waits, for up to UR_WAIT_TAKES_RX_NS (a ping-pong's
 * answer comes well within it; a longer wait goes back to the engine
 * thread, so an idle program's threads sleep): a message then costs one
 * wake-up, this thread's, not the engine thread's and then this one's.
 * Whether fd is readable (else wait with ur_progress_app_waits first). */
#define UR_WAIT_TAKES_RX_NS 1000000u
bool ur_progress_wait_channel(struct ur_stack *s, int fd);

#endif
