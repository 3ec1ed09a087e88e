/* The UDP thread of datagram rsockets: one per process, started with the
 * first datagram rsocket that is bound, connected or sends.  It polls the
 * UDP sockets of all of them and hands what comes to rs_ds_udp_input, so
 * that an answer naming a peer's QP is taken even while the application
 * reads nothing (as rdma-core's service thread does).
 *
 * An rsocket is found by its number through the table, read-locked while
 * its input runs: rclose takes the socket out of this thread's set and
 * then out of the table, which waits for the input to finish, before it
 * frees anything. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "rsocket/rsocket.h"
#include "rsocket/dgram.h"
#include "util/log.h"

static pthread_mutex_t svc_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int wake_fd = -1;
static int start_err;
static int *fds;
static unsigned n_fds, cap_fds;

static void wake(void)
{
	if (write(wake_fd, &(uint64_t){ 1 }, sizeof(uint64_t)) < 0)
		return;   /* the counter is full: the thread wakes anyway */
}

static void *run(void *arg)
{
	struct pollfd *p = NULL;
	unsigned cap = 0;

	(void)arg;
	for (;;) {
		unsigned n;
		uint64_t v;

		pthread_mutex_lock(&svc_lock);
		if (n_fds + 1 > cap) {
			struct pollfd *q = realloc(p, (n_fds + 1) * sizeof(*p));

			if (q) {
				p = q;
				cap = n_fds + 1;
			}
		}
		n = n_fds + 1 <= cap ? n_fds : cap - 1;
		p[0] = (struct pollfd){ .fd = wake_fd, .events = POLLIN };
		for (unsigned i = 0; i < n; i++)
			p[i + 1] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
		pthread_mutex_unlock(&svc_lock);

		if (poll(p, n + 1, -1) < 0)
			continue;
		if (p[0].revents && read(wake_fd, &v, sizeof(v)) < 0)
			v = 0;
		for (unsigned i = 1; i <= n; i++)
			if (p[i].revents & POLLIN)
				rs_table_with(p[i].fd, rs_ds_udp_input);
	}
	return NULL;
}

static void start(void)
{
	pthread_attr_t a;
	pthread_t t;

	ur_log_init();   /* UROCE_LOG, for what the datagram path says */
	wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (wake_fd < 0) {
		start_err = -errno;
		return;
	}
	fds = calloc(16, sizeof(*fds));
	cap_fds = fds ? 16 : 0;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	start_err = -pthread_create(&t, &a, run, NULL);
	pthread_attr_destroy(&a);
}

int rs_ds_svc_add(int fd)
{
	int ret = 0;

	pthread_once(&once, start);
	if (start_err)
		return start_err;
	pthread_mutex_lock(&svc_lock);
	if (n_fds == cap_fds) {
		unsigned cap = cap_fds ? 2 * cap_fds : 16;
		int *f = realloc(fds, cap * sizeof(*f));

		if (!f) {
			ret = -ENOMEM;
			goto out;
		}
		fds = f;
		cap_fds = cap;
	}
	fds[n_fds++] = fd;
out:
	pthread_mutex_unlock(&svc_lock);
	if (!ret)
		wake();
	return ret;
}

void rs_ds_svc_remove(int fd)
{
	bool found = false;

	if (wake_fd < 0)
		return;
	pthread_mutex_lock(&svc_lock);
	for (unsigned i = 0; i < n_fds; i++)
		if (fds[i] == fd) {
			fds[i] = fds[--n_fds];
			found = true;
			break;
		}
	pthread_mutex_unlock(&svc_lock);
	if (found)
		wake();
}
