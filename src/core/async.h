/* Asynchronous events (QP fatal, comm established, port active, ...) queued
 * behind context->async_fd, a pipe the application may poll. */
#ifndef UROCE_CORE_ASYNC_H
#define UROCE_CORE_ASYNC_H

#include <pthread.h>
#include <infiniband/verbs.h>

#include "util/list.h"

struct ur_async_queue {
	int rfd, wfd;                 /* pipe: one byte per queued event */
	pthread_mutex_t lock;
	pthread_cond_t acked;         /* destroy waits for events to be acked */
	struct ur_list events;
};

int ur_async_init(struct ur_async_queue *q);
void ur_async_fini(struct ur_async_queue *q);
/* Queues an event; the element (qp/cq/srq/port) is in ev. */
void ur_async_post(struct ur_async_queue *q, const struct ibv_async_event *ev);
/* Blocks (unless the fd is O_NONBLOCK) until an event is available. */
int ur_async_get(struct ur_async_queue *q, struct ibv_async_event *ev);
/* Drops queued events about an object being destroyed. */
void ur_async_forget(struct ur_async_queue *q, const void *element);

#endif
