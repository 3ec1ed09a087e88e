#include "core/channel.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"
#include "util/atfork.h"
#include "util/log.h"
#include "util/wakeup.h"

struct ur_chan_event {
	struct ur_list link;
	void *owner;
};

int ur_channel_create(struct ibv_context *ctx, struct ur_comp_channel **out)
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
	/* The write end never blocks the poster; the read end blocks unless
	 * the application sets O_NONBLOCK, as the kernel's does. */
	fcntl(fds[1], F_SETFL, O_NONBLOCK);
	ch->ibch.context = ctx;
	ch->ibch.fd = fds[0];
	ch->ibch.refcnt = 0;
	ch->wfd = fds[1];
	ch->wait_epfd = -1;
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
	if (ch->wait_epfd >= 0 && ch->wait_gen == ur_fork_generation())
		close(ch->wait_epfd);
	close(ch->ibch.fd);
	close(ch->wfd);
	free(ch);
	return 0;
}

int ur_channel_post(struct ur_comp_channel *ch, void *owner)
{
	struct ur_chan_event *ev = calloc(1, sizeof(*ev));
	char b = 1;

	if (!ev) {
		ur_warn_ratelimited(NULL, "completion event lost: out of memory");
		return -ENOMEM;
	}
	ev->owner = owner;
	pthread_mutex_lock(&ch->lock);
	ur_list_add_tail(&ch->events, &ev->link);
	pthread_mutex_unlock(&ch->lock);
	if (write(ch->wfd, &b, 1) != 1)
		ur_warn_ratelimited(NULL, "completion channel write failed: %s", strerror(errno));
	return 0;
}

int ur_channel_get(struct ur_comp_channel *ch, void (*taken)(void *owner), void **owner)
{
	for (;;) {
		struct ur_chan_event *ev = NULL;
		char b;
		int ret = ur_wakeup_read(ch->ibch.fd, &b, 1);

		if (ret)
			return ret;
		pthread_mutex_lock(&ch->lock);
		ev = ur_list_pop_entry(&ch->events, struct ur_chan_event, link);
		if (ev)
			taken(ev->owner);
		pthread_mutex_unlock(&ch->lock);
		if (ev) {
			*owner = ev->owner;
			free(ev);
			return 0;
		}
		/* The byte of an event whose owner went away unread: next. */
	}
}

void ur_channel_wait(struct ur_comp_channel *ch, struct ur_engine *e)
{
	int flags = fcntl(ch->ibch.fd, F_GETFL);
	int epfd;

	if (!e || flags < 0 || (flags & O_NONBLOCK))
		return;
	pthread_mutex_lock(&ch->lock);
	if (ch->wait_epfd < 0 || ch->wait_gen != ur_fork_generation()) {
		/* A parent's set is the parent's (fork shares it): ours. */
		ch->wait_epfd = ur_engine_wait_set(e, ch->ibch.fd);
		ch->wait_gen = ur_fork_generation();
		if (ch->wait_epfd < 0)
			ur_warn_ratelimited(NULL, "completion channel: the engine thread serves "
					    "its waits: %s", strerror(-ch->wait_epfd));
	}
	epfd = ch->wait_epfd;
	pthread_mutex_unlock(&ch->lock);
	if (epfd >= 0)
		ur_engine_block_on(e, epfd);
}

void ur_channel_forget(struct ur_comp_channel *ch, void *owner)
{
	struct ur_list *pos, *tmp;

	pthread_mutex_lock(&ch->lock);
	ur_list_for_each_safe(pos, tmp, &ch->events) {
		struct ur_chan_event *ev = ur_list_entry(pos, struct ur_chan_event, link);

		if (ev->owner == owner) {
			ur_list_del(pos);
			free(ev);
		}
	}
	pthread_mutex_unlock(&ch->lock);
}
