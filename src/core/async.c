#include "core/async.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"
#include "util/wakeup.h"

struct async_item {
	struct ur_list link;
	struct ibv_async_event ev;
};

int ur_async_init(struct ur_async_queue *q)
{
	int fds[2];

	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	/* The write end never blocks the engine; the read end is left blocking
	 * so ibv_get_async_event blocks unless the application sets O_NONBLOCK. */
	fcntl(fds[1], F_SETFL, O_NONBLOCK);
	q->rfd = fds[0];
	q->wfd = fds[1];
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->acked, NULL);
	ur_list_init(&q->events);
	return 0;
}

void ur_async_fini(struct ur_async_queue *q)
{
	struct ur_list *pos, *tmp;

	ur_list_for_each_safe(pos, tmp, &q->events) {
		ur_list_del(pos);
		free(ur_list_entry(pos, struct async_item, link));
	}
	close(q->rfd);
	close(q->wfd);
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->acked);
}

void ur_async_post(struct ur_async_queue *q, const struct ibv_async_event *ev)
{
	struct async_item *it = calloc(1, sizeof(*it));
	char b = 1;

	if (!it)
		return;
	it->ev = *ev;
	pthread_mutex_lock(&q->lock);
	ur_list_add_tail(&q->events, &it->link);
	pthread_mutex_unlock(&q->lock);
	if (write(q->wfd, &b, 1) != 1)
		ur_warn_ratelimited(NULL, "async event pipe full: %s", strerror(errno));
}

int ur_async_get(struct ur_async_queue *q, struct ibv_async_event *ev)
{
	struct async_item *it = NULL;
	char b;

	while (!it) {
		int ret = ur_wakeup_read(q->rfd, &b, 1);

		if (ret)
			return ret;
		pthread_mutex_lock(&q->lock);
		/* An empty list means the event was about an object destroyed
		 * since: skip its byte and wait for the next one. */
		it = ur_list_pop_entry(&q->events, struct async_item, link);
		pthread_mutex_unlock(&q->lock);
	}
	*ev = it->ev;
	free(it);
	return 0;
}

void ur_async_forget(struct ur_async_queue *q, const void *element)
{
	struct ur_list *pos, *tmp;

	pthread_mutex_lock(&q->lock);
	ur_list_for_each_safe(pos, tmp, &q->events) {
		struct async_item *it = ur_list_entry(pos, struct async_item, link);

		if (it->ev.element.qp == element) {
			ur_list_del(pos);
			free(it);
		}
	}
	pthread_mutex_unlock(&q->lock);
}
