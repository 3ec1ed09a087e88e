/* Application threads in the reactor: one that polls an empty CQ
 * (ur_engine_poll) and one that blocks on a completion channel
 * (ur_engine_block_on) run the INLINE class's callbacks and the pollers
 * themselves, so that the engine thread is not woken for what they take. */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine_priv.h"
#include "util/clock.h"
#include "util/lock.h"
#include "util/log.h"

/* A polling thread's own state, one thread-local (each costs a lookup
 * in a shared library): its polls since its last look at the sockets
 * while rings are active and how many it lets pass between looks, and
 * its run of polls: when the last came that read the clock, how many
 * came in a row, each within UR_POLLED_RECENTLY_NS of the one before, and
 * how many since the clock was last read. */
struct poll_run {
	unsigned sock_turn;
	unsigned sock_every;
	uint64_t last;
	unsigned len;
	unsigned unclocked;
};
static _Thread_local struct poll_run run UR_TLS_HOT;

/* Whether this thread spins: it has polled UR_SPINNING_POLLS times in a
 * row with no pause as long as the engine thread's nap.  A thread that
 * polls once or twice after each wake-up and then blocks (on a channel, a
 * socket, a condition) never gets there, however often it wakes.  A
 * spinner reads the clock on one poll in UR_SPIN_CLOCK_EVERY (a clock
 * read is a fifth of an empty poll): a pause among the others is seen a
 * few polls late, and those polls only take what they find. */
static bool spinning(struct poll_run *r)
{
	uint64_t now;

	if (r->len >= UR_SPINNING_POLLS && ++r->unclocked < UR_SPIN_CLOCK_EVERY)
		return true;
	r->unclocked = 0;
	now = ur_now_ns();
	if (now - r->last >= UR_POLLED_RECENTLY_NS)
		r->len = 0;
	r->last = now;
	if (r->len < UR_SPINNING_POLLS)
		r->len++;
	return r->len >= UR_SPINNING_POLLS;
}

/* What a poll tells the engine thread: a spinning thread takes the inline
 * set off it (it naps); one about to block does not, or what comes next
 * would wait for the nap's end, up to 5 ms a hop. */
static void note_poll(struct ur_engine *e, struct poll_run *r, bool will_block)
{
	if (will_block) {
		r->len = 0;
		return;
	}
	if (!spinning(r))
		return;
	atomic_store_explicit(&e->last_app_poll, r->last, memory_order_relaxed);
	/* Asleep, the engine thread has producers wake it for what we take
	 * anyway: woken once, it naps instead. */
	if (atomic_load_explicit(&e->deep_sleep, memory_order_relaxed) &&
	    atomic_exchange(&e->deep_sleep, false))
		ur_engine_wake(e);
}

/* The polls between a spinner's looks at the sockets while rings bring
 * work: UR_SOCK_LOOK_EVERY while the sockets bring packets, twice as many
 * after each look that found none, up to UR_SOCK_LOOK_MAX.  A look is an
 * epoll_wait system call, dearer than a poll of every ring, and a record
 * landing in a ring during it waits for it: between two processes of one
 * host the sockets are idle.  The first datagram after a quiet spell
 * waits up to UR_SOCK_LOOK_MAX polls (tens of microseconds), or the
 * engine thread's look after its nap. */
static unsigned sock_every(const struct poll_run *r)
{
	return r->sock_every ? r->sock_every : UR_SOCK_LOOK_EVERY;
}

static void looked(struct poll_run *r, bool found)
{
	unsigned every = sock_every(r);

	r->sock_turn = 0;
	if (found)
		r->sock_every = UR_SOCK_LOOK_EVERY;
	else if (every < UR_SOCK_LOOK_MAX)
		r->sock_every = every * 2;
}

/* Context 0: the inline set and the pollers. */
static bool poll_first(struct ur_engine *e, bool will_block)
{
	struct epoll_event evs[UR_BATCH];
	struct poll_run *r = &run;
	bool rings, sockets, found, due;
	int n;

	note_poll(e, r, will_block);
	/* A spinner runs the timers that fell due by its last clock read:
	 * the engine thread naps through them while it spins. */
	due = !will_block && r->last >= atomic_load_explicit(&e->timer_next,
							      memory_order_relaxed);
	/* While rings bring work, the sockets get a look every sock_every()
	 * polls (ib_send_lat on one host, a look every poll against one in
	 * 8: 1.00 against 0.88 us).  Between those looks a poll that sees no
	 * record in any ring is done, with no lock taken. */
	rings = ur_engine_pollers_active(e);
	sockets = !rings || ++r->sock_turn >= sock_every(r);
	if (!sockets && !due && !ur_engine_pollers_pending(e))
		return false;
	/* Somebody is dispatching already: what arrives, they take. */
	if (pthread_mutex_trylock(&e->dispatch_lock))
		return false;
	ur_dispatch_enter(e, 0);
	if (due)
		ur_engine_run_timers(e, ur_now_ns());
	found = ur_engine_run_pollers(e);
	n = sockets ? epoll_wait(e->inline_epfd, evs, UR_BATCH, 0) : 0;
	if (n > 0)
		ur_engine_run_events(e, evs, n);
	if (sockets && rings)
		looked(r, n > 0);
	ur_dispatch_leave();
	pthread_mutex_unlock(&e->dispatch_lock);
	return n > 0 || found;
}

/* A further receive context: what its set has ready, unless somebody (its
 * thread, another poller) dispatches it already. */
static bool poll_rx(struct rx_ctx *c)
{
	struct epoll_event evs[UR_BATCH];
	int n;

	if (pthread_mutex_trylock(&c->dispatch_lock))
		return false;
	ur_dispatch_enter(c->e, c->index);
	n = epoll_wait(c->epfd, evs, UR_BATCH, 0);
	if (n > 0)
		ur_engine_run_events(c->e, evs, n);
	ur_dispatch_leave();
	pthread_mutex_unlock(&c->dispatch_lock);
	return n > 0;
}

bool ur_engine_poll(struct ur_engine *e, bool will_block)
{
	bool found = poll_first(e, will_block);

	for (unsigned i = 1; i < e->nrx; i++)
		if (poll_rx(&e->rx[i]))
			found = true;
	return found;
}

/* ---- application threads that block ---------------------------------- */

enum { WAIT_FD, WAIT_INLINE };

int ur_engine_wait_set(struct ur_engine *e, int fd)
{
	struct epoll_event own = { .events = EPOLLIN, .data.u32 = WAIT_FD };
	struct epoll_event work = { .events = EPOLLIN, .data.u32 = WAIT_INLINE };
	int epfd = epoll_create1(EPOLL_CLOEXEC);

	if (epfd < 0)
		return -errno;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &own) ||
	    epoll_ctl(epfd, EPOLL_CTL_ADD, e->inline_epfd, &work)) {
		int err = errno;

		close(epfd);
		return -err;
	}
	return epfd;
}

/* The first waiter takes the inline set from the engine thread, the last
 * gives it back: the engine thread, asleep, is neither woken to be told
 * nor for what the set brings meanwhile. */
static void waiter_enter(struct ur_engine *e)
{
	pthread_mutex_lock(&e->waiters_lock);
	if (e->waiters++ == 0 && epoll_ctl(e->epfd, EPOLL_CTL_DEL, e->inline_epfd, NULL))
		ur_warn_ratelimited(NULL, "engine: inline set kept: %s", strerror(errno));
	pthread_mutex_unlock(&e->waiters_lock);
}

static void waiter_leave(void *arg)
{
	struct ur_engine *e = arg;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &e->inline_set };

	pthread_mutex_lock(&e->waiters_lock);
	if (--e->waiters == 0 && epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->inline_epfd, &ev) &&
	    errno != EEXIST)
		ur_warn_ratelimited(NULL, "engine: inline set not given back: %s", strerror(errno));
	pthread_mutex_unlock(&e->waiters_lock);
}

unsigned ur_engine_waiting(struct ur_engine *e)
{
	return ur_read_locked(mutex, &e->waiters_lock, e->waiters);
}

/* What woke a blocked waiter: the inline set and the pollers, as the
 * engine thread would take them.  Not cancellable while it holds the
 * dispatch lock. */
static bool waiter_dispatch(struct ur_engine *e)
{
	bool found;
	int old;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	pthread_mutex_lock(&e->dispatch_lock);
	ur_dispatch_enter(e, 0);
	found = ur_engine_run_set(e, e->inline_epfd);
	if (ur_engine_run_pollers(e))
		found = true;
	ur_dispatch_leave();
	pthread_mutex_unlock(&e->dispatch_lock);
	pthread_setcancelstate(old, NULL);
	return found;
}

/* Until the waited fd is readable: 0, or -errno.  After work it polls on
 * for the engine's spin time before it sleeps, as the engine thread does:
 * a peer streaming to us (fio's WRITEs) sends the next batch within
 * microseconds, and a sleep between costs the peer a doorbell and us a
 * wake-up. */
static int wait_loop(struct ur_engine *e, int wait_epfd)
{
	uint64_t last_work = 0;

	for (;;) {
		struct epoll_event evs[2];
		bool ready = false, work = false;
		bool spin = last_work && ur_now_ns() - last_work < e->spin_ns;
		int n = epoll_wait(wait_epfd, evs, 2, spin ? 0 : -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		for (int i = 0; i < n; i++) {
			if (evs[i].data.u32 == WAIT_FD)
				ready = true;
			else
				work = true;
		}
		if ((work || spin) && waiter_dispatch(e))
			last_work = ur_now_ns();
		if (ready)
			return 0;
	}
}

int ur_engine_block_on(struct ur_engine *e, int wait_epfd)
{
	/* Read after a cancellation point's longjmp-like unwinding. */
	volatile int ret;

	if (!e->threaded)
		return 0;
	waiter_enter(e);
	/* A thread cancelled while it waits (rping cancels its completion
	 * thread) gives the inline set back on its way out. */
	pthread_cleanup_push(waiter_leave, e);
	ret = wait_loop(e, wait_epfd);
	pthread_cleanup_pop(1);
	return ret;
}

void ur_engine_app_waits(struct ur_engine *e)
{
	atomic_store(&e->last_app_poll, 0);
	if (atomic_load(&e->light_sleep))
		ur_engine_wake(e);
}
