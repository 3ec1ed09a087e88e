/* Completion channels: a pipe whose read end applications poll, carrying
 * one byte per event, and the list of CQs the events are for. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/context.h"
#include "core/cq.h"
#include "util/log.h"

struct ur_chan_event {
	struct ur_list link;
	struct ur_cq *cq;
};

int ur_channel_create(struct ur_context *ctx, struct ur_comp_channel **out)
{
	struct ur_comp_channel *ch = calloc(1, sizeof(*ch));
	int fds[2];

	if (!ch)
		return -ENOMEM;
	if (pipe2(fds, O_CLOEXEC)) {
		int err = errno;

		free(ch);
		return -err;
	}
	fcntl(fds[1], F_SETFL, O_NONBLOCK);
	ch->ibch.context = &ctx->vctx.context;
	ch->ibch.fd = fds[0];
	ch->ibch.refcnt = 0;
	ch->wfd = fds[1];
	pthread_mutex_init(&ch->lock, NULL);
	ur_list_init(&ch->events);
	*out = ch;
	return 0;
}

int ur_channel_destroy(struct ur_comp_channel *ch)
{
	struct ur_list *pos, *tmp;

	if (ch->ibch.refcnt)
		return -EBUSY;
	ur_list_for_each_safe(pos, tmp, &ch->events) {
		ur_list_del(pos);
		free(ur_list_entry(pos, struct ur_chan_event, link));
	}
	pthread_mutex_destroy(&ch->lock);
	close(ch->ibch.fd);
	close(ch->wfd);
	free(ch);
	return 0;
}

int ur_channel_get_event(struct ur_comp_channel *ch, struct ur_cq **cq)
{
	for (;;) {
		struct ur_chan_event *ev = NULL;
		ssize_t n;
		char b;

		do
			n = read(ch->ibch.fd, &b, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1)
			return n < 0 ? -errno : -EIO;
		pthread_mutex_lock(&ch->lock);
		if (!ur_list_empty(&ch->events)) {
			ev = ur_list_entry(ch->events.next, struct ur_chan_event, link);
			ur_list_del(&ev->link);
			/* Counted while the channel lock keeps the CQ from being
			 * destroyed: from now on it waits for this event's ack. */
			pthread_mutex_lock(&ev->cq->ibcq.mutex);
			ev->cq->events_reported++;
			pthread_mutex_unlock(&ev->cq->ibcq.mutex);
		}
		pthread_mutex_unlock(&ch->lock);
		if (ev) {
			*cq = ev->cq;
			free(ev);
			return 0;
		}
		/* The byte of an event whose CQ was destroyed unread: next. */
	}
}

void ur_channel_post(struct ur_cq *cq)
{
	struct ur_comp_channel *ch = to_uchan(cq->ibcq.channel);
	struct ur_chan_event *ev = calloc(1, sizeof(*ev));
	char b = 1;

	if (!ev) {
		ur_warn_ratelimited(NULL, "completion event lost: out of memory");
		return;
	}
	ev->cq = cq;
	pthread_mutex_lock(&ch->lock);
	ur_list_add_tail(&ch->events, &ev->link);
	pthread_mutex_unlock(&ch->lock);
	if (write(ch->wfd, &b, 1) != 1)
		ur_warn_ratelimited(NULL, "completion channel write failed: %s",
				    strerror(errno));
}

/* Drops the events of cq still queued on its channel, unread. */
void ur_channel_forget(struct ur_cq *cq)
{
	struct ur_comp_channel *ch = to_uchan(cq->ibcq.channel);
	struct ur_list *pos, *tmp;

	pthread_mutex_lock(&ch->lock);
	ur_list_for_each_safe(pos, tmp, &ch->events) {
		struct ur_chan_event *ev = ur_list_entry(pos, struct ur_chan_event, link);

		if (ev->cq == cq) {
			ur_list_del(pos);
			free(ev);
		}
	}
	pthread_mutex_unlock(&ch->lock);
}

