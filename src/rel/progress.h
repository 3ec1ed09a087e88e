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

#endif
