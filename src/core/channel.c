#include "core/channel.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "util/log.h"
#include <stdbool.h>

struct ur_chan_event {
	struct ur_list link;
	void *owner;
};

static int watch(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

int ur_channel_create(struct ibv_context *ctx, int rx_fd, struct ur_comp_channel **out)
{
	struct ur_comp_channel *ch = calloc(1, sizeof(*ch));
	int fds[2], epfd, ret;

	if (!ch)
		return -ENOMEM;
	/* Both ends non-blocking: the poster never waits, and the reader
	 * blocks (unless the application set O_NONBLOCK on ibch.fd, as on
	 * the kernel's) in ur_channel_get, not in read. */
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK)) {
		ret = -errno;
		free(ch);
		return ret;
	}
	epfd = epoll_create1(EPOLL_CLOEXEC);
	ret = epfd < 0 ? -errno : watch(epfd, fds[0]);
	if (!ret && rx_fd >= 0)
		ret = watch(epfd, rx_fd);
	if (ret) {
		if (epfd >= 0)
			close(epfd);
		close(fds[0]);
		close(fds[1]);
		free(ch);
		return ret;
	}
	ch->ibch.context = ctx;
	ch->ibch.fd = epfd;
	ch->ibch.refcnt = 0;
	ch->rfd = fds[0];
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
	close(ch->rfd);
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

int ur_channel_get(struct ur_comp_channel *ch, const struct ur_channel_rx *rx,
		   void (*taken)(void *owner), void **owner)
{
	bool nonblock = fcntl(ch->ibch.fd, F_GETFL) & O_NONBLOCK;
	bool ran = false;

	for (;;) {
		struct ur_chan_event *ev = NULL;
		ssize_t n = read(ch->rfd, &(char){ 0 }, 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			return -EIO;
		if (n < 0 && errno != EAGAIN)
			return -errno;
		if (n < 0) {
			/* None queued.  ibch.fd may have woken the caller for a
			 * packet: its completion's event comes of running it. */
			if (nonblock) {
				if (ran || !rx)
					return -EAGAIN;
				rx->run(rx->arg);
				ran = true;
			} else if (rx) {
				rx->wait(rx->arg, ch->rfd);
			} else {
				struct pollfd p = { .fd = ch->rfd, .events = POLLIN };

				poll(&p, 1, -1);
			}
			continue;
		}
		pthread_mutex_lock(&ch->lock);
		if (!ur_list_empty(&ch->events)) {
			ev = ur_list_entry(ch->events.next, struct ur_chan_event, link);
			ur_list_del(&ev->link);
			taken(ev->owner);
		}
		pthread_mutex_unlock(&ch->lock);
		if (ev) {
			*owner = ev->owner;
			free(ev);
			return 0;
		}
		/* The byte of an event whose owner went away unread: next. */
	}
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
