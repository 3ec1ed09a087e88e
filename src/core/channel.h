/* Completion channels: a pipe whose read end applications poll, carrying
 * one byte per event, and the list of what each event is for (a CQ, to
 * the channel an opaque owner).  Events are posted with no CQ lock held. */
#ifndef UROCE_CORE_CHANNEL_H
#define UROCE_CORE_CHANNEL_H

#include <pthread.h>
#include <sys/types.h>
#include <infiniband/verbs.h>

#include "util/list.h"

struct ur_comp_channel {
	struct ibv_comp_channel ibch;  /* ibch.fd is the pipe's read end */
	int wfd;
	pthread_mutex_t lock;          /* events */
	struct ur_list events;         /* struct ur_chan_event, oldest first */
	int wait_epfd;                 /* ur_channel_wait's set (-1: none yet) ... */
	unsigned wait_gen;             /* ... made in this fork generation (not a parent's) */
};

static inline struct ur_comp_channel *to_uchan(struct ibv_comp_channel *c)
{
	return (struct ur_comp_channel *)c;
}

int ur_channel_create(struct ibv_context *ctx, struct ur_comp_channel **out);
/* -EBUSY while CQs use it. */
int ur_channel_destroy(struct ur_comp_channel *ch);
/* Queues an event for owner.  0 or -ENOMEM (the event is lost, logged). */
int ur_channel_post(struct ur_comp_channel *ch, void *owner);
/* Reads one event (blocking unless the fd is O_NONBLOCK): its owner, in
 * *owner.  taken(owner) runs while the event is still the channel's, so
 * that the owner, which drops its unread events before it goes
 * (ur_channel_forget), is alive to count it.  0 or -errno. */
int ur_channel_get(struct ur_comp_channel *ch, void (*taken)(void *owner), void **owner);
struct ur_engine;
/* Waits until an event is there, running what e's receive path brings
 * meanwhile (ur_engine_block_on): then the packet that completes the wait
 * wakes this thread alone.  Returns at once if the application made the
 * fd non-blocking (it waits in poll() or epoll, where the engine thread
 * serves it) or e is NULL. */
void ur_channel_wait(struct ur_comp_channel *ch, struct ur_engine *e);
/* Drops owner's events still queued, unread (their bytes are skipped). */
void ur_channel_forget(struct ur_comp_channel *ch, void *owner);

#endif
