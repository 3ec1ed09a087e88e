/* Completion channels: a pipe carrying one byte per event, the list of
 * what each event is for (a CQ, to the channel an opaque owner), and the
 * fd applications poll: an epoll fd over the pipe's read end and the fds
 * of the receive path a waiting thread may run (rx_fd), so that a packet
 * wakes the thread that waits for its completion, which runs it itself
 * (one wake-up, not the engine thread's and then its own).  Readable thus
 * means an event is queued or may come of what is ready: ur_channel_get
 * runs that first.  Events are posted with no CQ lock held. */
#ifndef UROCE_CORE_CHANNEL_H
#define UROCE_CORE_CHANNEL_H

#include <pthread.h>
#include <infiniband/verbs.h>

#include "util/list.h"

struct ur_comp_channel {
	struct ibv_comp_channel ibch;  /* ibch.fd: the epoll fd applications poll */
	int rfd, wfd;                  /* the pipe (rfd non-blocking) */
	pthread_mutex_t lock;          /* events */
	struct ur_list events;         /* struct ur_chan_event, oldest first */
};

static inline struct ur_comp_channel *to_uchan(struct ibv_comp_channel *c)
{
	return (struct ur_comp_channel *)c;
}

/* rx_fd: what else makes ibch.fd readable (-1: nothing). */
int ur_channel_create(struct ibv_context *ctx, int rx_fd, struct ur_comp_channel **out);
/* -EBUSY while CQs use it. */
int ur_channel_destroy(struct ur_comp_channel *ch);
/* Queues an event for owner.  0 or -ENOMEM (the event is lost, logged). */
int ur_channel_post(struct ur_comp_channel *ch, void *owner);
/* How a reader takes the receive path: run() once, what is ready now;
 * wait(rfd) until rfd may be readable, taking it meanwhile or not. */
struct ur_channel_rx {
	void (*run)(void *arg);
	void (*wait)(void *arg, int rfd);
	void *arg;
};

/* Reads one event (blocking unless ibch.fd is O_NONBLOCK): its owner, in
 * *owner.  With none queued, rx (if not NULL) runs the receive path once,
 * or waits.  taken(owner) runs while the event is still the channel's, so
 * that the owner, which drops its unread events before it goes
 * (ur_channel_forget), is alive to count it.  0 or -errno (-EAGAIN:
 * non-blocking, none). */
int ur_channel_get(struct ur_comp_channel *ch, const struct ur_channel_rx *rx,
		   void (*taken)(void *owner), void **owner);
/* Drops owner's events still queued, unread (their bytes are skipped). */
void ur_channel_forget(struct ur_comp_channel *ch, void *owner);

#endif
