/* rpoll and rselect over rsockets and ordinary fds together.  An rsocket
 * stands in poll(2) for two fds, its CM channel and its (armed) CQ's
 * completion channel; ordinary fds are polled as they are. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <rdma/rsocket.h>

#include "rsocket/rsocket.h"
#include "util/clock.h"
#include "util/compiler.h"

/* Milliseconds to sleep until end_ns, rounded up: poll(2) sleeps at least
 * its timeout, and a caller that resends when rpoll says nothing came (udpong
 * after 1 ms) must not be told so sooner. */
static int ms_until(uint64_t end_ns)
{
	uint64_t now = ur_now_ns();

	return now >= end_ns ? 0 : (int)((end_ns - now + 999999) / 1000000);
}

static short rs_revents(struct rsock *rs, short want)
{
	short ev;

	pthread_mutex_lock(&rs->lock);
	rs_progress(rs);
	ev = rs_poll_events(rs);
	pthread_mutex_unlock(&rs->lock);
	return ev & (want | POLLERR | POLLHUP);
}

/* What the rsockets among fds have now, without arming or sleeping; 0
 * when an ordinary fd is among them (only poll(2) can tell). */
static int peek_rsockets(struct pollfd *fds, nfds_t nfds)
{
	int ready = 0;

	for (nfds_t i = 0; i < nfds; i++) {
		struct rsock *rs = rs_table_get(fds[i].fd);

		if (!rs)
			return 0;
		fds[i].revents = rs_revents(rs, fds[i].events);
		if (fds[i].revents)
			ready++;
	}
	return ready;
}

/* timeout as poll(2)'s, counted from start_ns (rpoll's call). */
static int poll_sleeping(struct pollfd *fds, nfds_t nfds, int timeout, uint64_t start_ns)
{
	struct pollfd *p = calloc(2 * nfds + 1, sizeof(*p));
	uint64_t end = timeout > 0 ? start_ns + (uint64_t)timeout * 1000000u : 0;
	int ready;

	if (!p) {
		errno = ENOMEM;
		return -1;
	}
	for (;;) {
		int wait_ms;

		ready = 0;
		/* Rsockets first: what they have now, arming those that have
		 * nothing (and looking again after arming). */
		for (nfds_t i = 0; i < nfds; i++) {
			struct rsock *rs = rs_table_get(fds[i].fd);

			fds[i].revents = 0;
			p[2 * i].fd = p[2 * i + 1].fd = -1;
			if (!rs) {
				p[2 * i].fd = fds[i].fd;
				p[2 * i].events = fds[i].events;
				continue;
			}
			fds[i].revents = rs_revents(rs, fds[i].events);
			/* Armed only to sleep: a poll with timeout 0 (rstream
			 * -T a spins on one) would make every completion
			 * an event to write and read. */
			if (!fds[i].revents && timeout != 0) {
				pthread_mutex_lock(&rs->lock);
				rs_poll_arm(rs, &p[2 * i], &p[2 * i + 1]);
				pthread_mutex_unlock(&rs->lock);
				fds[i].revents = rs_revents(rs, fds[i].events);
			}
			if (fds[i].revents)
				ready++;
		}
		wait_ms = ready || timeout == 0 ? 0 : timeout < 0 ? -1 : ms_until(end);
		/* wake_up_interval: looked at again this often at least
		 * (rsocket(7)), as a safeguard against a lost wake-up. */
		if (rs_config()->wake_ms > 0 && (wait_ms < 0 || wait_ms > rs_config()->wake_ms))
			wait_ms = rs_config()->wake_ms;
		if (poll(p, 2 * nfds, wait_ms) < 0 && errno != EINTR) {
			free(p);
			return -1;
		}
		ready = 0;
		for (nfds_t i = 0; i < nfds; i++) {
			struct rsock *rs = rs_table_get(fds[i].fd);

			if (!rs) {
				fds[i].revents = p[2 * i].revents;
			} else if (p[2 * i].fd >= 0) {
				pthread_mutex_lock(&rs->lock);
				rs_poll_drain(rs, p[2 * i].revents, p[2 * i + 1].revents);
				pthread_mutex_unlock(&rs->lock);
				fds[i].revents = rs_revents(rs, fds[i].events);
			}
			if (fds[i].revents)
				ready++;
		}
		if (ready || timeout == 0 || (timeout > 0 && ur_now_ns() >= end))
			break;
	}
	free(p);
	return ready;
}

/* rpoll's spin, learnt as a blocking call's is (rs_spin_next), for the
 * thread: a thread serves one loop of rpoll calls. */
static __thread uint32_t poll_spin_ns;

/* Only a poll for reading learns its spin (rs_wait_recv says why). */
static bool reading_only(const struct pollfd *fds, nfds_t nfds)
{
	for (nfds_t i = 0; i < nfds; i++)
		if (fds[i].events & ~(POLLIN | POLLRDNORM | POLLPRI))
			return false;
	return true;
}

UR_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	bool learn = reading_only(fds, nfds);
	uint64_t start = ur_now_ns();
	uint64_t spin_end = start + (learn && poll_spin_ns ? poll_spin_ns
							   : rs_config()->polling_ns);
	int ready;

	/* A short spin first, as rdma-core's rpoll does: an answer often
	 * comes sooner than a sleep and a wake-up would take. */
	do {
		ready = peek_rsockets(fds, nfds);
		if (ready) {
			if (learn)
				poll_spin_ns = rs_spin_next(poll_spin_ns, ur_now_ns() - start, false);
			return ready;
		}
	} while (timeout != 0 && ur_now_ns() < spin_end);
	ready = poll_sleeping(fds, nfds, timeout, start);
	if (ready > 0 && learn)
		poll_spin_ns = rs_spin_next(poll_spin_ns, ur_now_ns() - start, true);
	return ready;
}

UR_EXPORT int rselect(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *timeout)
{
	struct pollfd *p;
	int n = 0, ret, ms;

	if (nfds < 0 || nfds > FD_SETSIZE) {
		errno = EINVAL;
		return -1;
	}
	p = calloc((size_t)nfds + 1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return -1;
	}
	for (int fd = 0; fd < nfds; fd++) {
		short ev = 0;

		if (r && FD_ISSET(fd, r))
			ev |= POLLIN;
		if (w && FD_ISSET(fd, w))
			ev |= POLLOUT;
		if (e && FD_ISSET(fd, e))
			ev |= POLLPRI;
		if (!ev)
			continue;
		p[n].fd = fd;
		p[n].events = ev;
		n++;
	}
	ms = timeout ? (int)(timeout->tv_sec * 1000 + (timeout->tv_usec + 999) / 1000) : -1;
	ret = rpoll(p, (nfds_t)n, ms);
	if (ret < 0) {
		free(p);
		return -1;
	}
	if (r)
		FD_ZERO(r);
	if (w)
		FD_ZERO(w);
	if (e)
		FD_ZERO(e);
	ret = 0;
	for (int i = 0; i < n; i++) {
		short rev = p[i].revents;

		if (r && (rev & (POLLIN | POLLHUP | POLLERR))) {
			FD_SET(p[i].fd, r);
			ret++;
		}
		if (w && (rev & (POLLOUT | POLLERR))) {
			FD_SET(p[i].fd, w);
			ret++;
		}
		if (e && (rev & POLLPRI)) {
			FD_SET(p[i].fd, e);
			ret++;
		}
	}
	free(p);
	return ret;
}
