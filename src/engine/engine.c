/* The reactor (engine.h).  Three epoll sets: the INLINE one, which polling
 * threads may dispatch, and the OWN one (the ENGINE-class fds and the
 * wake-up eventfd) both sit inside the outer one, which only the engine
 * thread waits on.  While an application thread polls, the engine thread
 * naps on its own set alone: what the inline set brings, the poller takes,
 * without waking a second thread for each packet.  One dispatch lock makes
 * callbacks run one batch at a time.  Timers live in a binary heap ordered
 * by deadline (engine_timer.c); application threads come in through
 * engine_app.c.  Further receive contexts (struct rx_ctx) are an epoll set,
 * a dispatch lock and a thread each, beside all that. */
#include "engine/engine.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "engine/engine_priv.h"
#include "util/clock.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/log.h"

_Thread_local unsigned ur_engine_in_dispatch UR_TLS_HOT;
_Thread_local const struct ur_engine *ur_engine_dispatched UR_TLS_HOT;

/* ---- fd watches --------------------------------------------------------- */

static int epfd_of(struct ur_engine *e, enum ur_watch_class cls, unsigned ctx)
{
	if (cls != UR_WATCH_INLINE)
		return e->own_epfd;
	return ctx ? e->rx[ctx].epfd : e->inline_epfd;
}

static int watch_in(struct ur_engine *e, int fd, uint32_t events, enum ur_watch_class cls,
		    unsigned ctx, ur_fd_handler fn, void *arg)
{
	struct epoll_event ev = { .events = events };
	struct watch *w = NULL;
	int ret = 0;

	if (ctx >= e->nrx)
		return -EINVAL;
	pthread_mutex_lock(&e->watch_lock);
	for (int i = 0; i < UR_MAX_WATCH && !w; i++)
		if (e->watches[i].fd < 0)
			w = &e->watches[i];
	if (!w) {
		ret = -ENOSPC;
		goto out;
	}
	*w = (struct watch){ fd, fn, arg, cls, ctx };
	ev.data.ptr = w;
	if (epoll_ctl(epfd_of(e, cls, ctx), EPOLL_CTL_ADD, fd, &ev)) {
		ret = -errno;
		w->fd = -1;
	}
out:
	pthread_mutex_unlock(&e->watch_lock);
	return ret;
}

int ur_engine_watch(struct ur_engine *e, int fd, uint32_t events, enum ur_watch_class cls,
		    ur_fd_handler fn, void *arg)
{
	return watch_in(e, fd, events, cls, 0, fn, arg);
}

int ur_engine_watch_rx(struct ur_engine *e, unsigned ctx, int fd, uint32_t events,
		       ur_fd_handler fn, void *arg)
{
	return watch_in(e, fd, events, UR_WATCH_INLINE, ctx, fn, arg);
}

static struct watch *find_watch(struct ur_engine *e, int fd)
{
	for (int i = 0; i < UR_MAX_WATCH; i++)
		if (e->watches[i].fd == fd)
			return &e->watches[i];
	return NULL;
}

int ur_engine_rewatch(struct ur_engine *e, int fd, uint32_t events)
{
	struct watch *w;
	int ret = -ENOENT;

	pthread_mutex_lock(&e->watch_lock);
	w = find_watch(e, fd);
	if (w) {
		struct epoll_event ev = { .events = events, .data.ptr = w };

		ret = epoll_ctl(epfd_of(e, w->cls, w->ctx), EPOLL_CTL_MOD, fd, &ev) ? -errno : 0;
	}
	pthread_mutex_unlock(&e->watch_lock);
	return ret;
}

void ur_engine_unwatch(struct ur_engine *e, int fd)
{
	struct watch *w;

	pthread_mutex_lock(&e->watch_lock);
	w = find_watch(e, fd);
	if (w) {
		epoll_ctl(epfd_of(e, w->cls, w->ctx), EPOLL_CTL_DEL, fd, NULL);
		w->fd = -1;
	}
	pthread_mutex_unlock(&e->watch_lock);
}

/* ---- dispatch ------------------------------------------------------------ */


/* dispatch_lock held. */
void ur_engine_run_events(struct ur_engine *e, const struct epoll_event *evs, int n)
{
	for (int i = 0; i < n; i++) {
		struct watch *w = evs[i].data.ptr, copy;

		/* Copied under the lock: a slot can be unwatched (and taken
		 * again) by another thread meanwhile. */
		pthread_mutex_lock(&e->watch_lock);
		copy = *w;
		pthread_mutex_unlock(&e->watch_lock);
		if (copy.fd >= 0)
			copy.fn(copy.arg, evs[i].events);
	}
}

/* dispatch_lock held: what one inner set has ready now; whether any. */
bool ur_engine_run_set(struct ur_engine *e, int epfd)
{
	struct epoll_event evs[UR_BATCH];
	int n = epoll_wait(epfd, evs, UR_BATCH, 0);

	if (n > 0)
		ur_engine_run_events(e, evs, n);
	return n > 0;
}

/* dispatch_lock held: whether any poller found work. */
bool ur_engine_run_pollers(struct ur_engine *e)
{
	unsigned n = atomic_load_explicit(&e->npollers, memory_order_acquire);
	bool found = false;

	for (unsigned i = 0; i < n; i++)
		if (e->pollers[i].poll(e->pollers[i].arg))
			found = true;
	return found;
}

bool ur_engine_pollers_pending(struct ur_engine *e)
{
	unsigned n = atomic_load_explicit(&e->npollers, memory_order_acquire);

	for (unsigned i = 0; i < n; i++)
		if (!e->pollers[i].pending || e->pollers[i].pending(e->pollers[i].arg))
			return true;
	return false;
}

/* Whether any poller may get work: else the thread just sleeps. */
bool ur_engine_pollers_active(struct ur_engine *e)
{
	unsigned n = atomic_load_explicit(&e->npollers, memory_order_acquire);

	for (unsigned i = 0; i < n; i++)
		if (!e->pollers[i].active || e->pollers[i].active(e->pollers[i].arg))
			return true;
	return false;
}

/* Tells the pollers the thread goes to sleep (going) or woke: false if
 * one of them had work come meanwhile. */
static bool pollers_sleep(struct ur_engine *e, bool going)
{
	unsigned n = atomic_load_explicit(&e->npollers, memory_order_acquire);
	bool ok = true;

	for (unsigned i = 0; i < n; i++)
		if (!e->pollers[i].sleep(e->pollers[i].arg, going))
			ok = false;
	return ok;
}

static void pollers_doze(struct ur_engine *e, bool dozing)
{
	unsigned n = atomic_load_explicit(&e->npollers, memory_order_acquire);

	for (unsigned i = 0; i < n; i++)
		if (e->pollers[i].doze)
			e->pollers[i].doze(e->pollers[i].arg, dozing);
}

int ur_engine_add_poller(struct ur_engine *e, const struct ur_poller *p)
{
	unsigned n;
	int ret = 0;

	pthread_mutex_lock(&e->watch_lock);
	n = atomic_load(&e->npollers);
	if (n == UR_MAX_POLLERS) {
		ret = -ENOSPC;
	} else {
		e->pollers[n] = *p;
		atomic_store_explicit(&e->npollers, n + 1, memory_order_release);
	}
	pthread_mutex_unlock(&e->watch_lock);
	ur_engine_wake(e);   /* the thread may be asleep without having asked it */
	return ret;
}

void ur_engine_remove_poller(struct ur_engine *e, const struct ur_poller *p)
{
	unsigned n, keep = 0;

	pthread_mutex_lock(&e->watch_lock);
	n = atomic_load(&e->npollers);
	/* Out of reach first, then the callers in progress are waited for
	 * (without watch_lock: a dispatcher takes it). */
	atomic_store(&e->npollers, 0);
	pthread_mutex_unlock(&e->watch_lock);
	ur_engine_quiesce(e);
	pthread_mutex_lock(&e->watch_lock);
	for (unsigned i = 0; i < n; i++)
		if (e->pollers[i].arg != p->arg || e->pollers[i].poll != p->poll)
			e->pollers[keep++] = e->pollers[i];
	atomic_store_explicit(&e->npollers, keep, memory_order_release);
	pthread_mutex_unlock(&e->watch_lock);
}

/* Whether the thread may nap (an application thread polls, so the pollers
 * need not wake it): then the flag is up, and app_waits sees it. */
static bool may_nap(struct ur_engine *e, uint64_t now)
{
	uint64_t last;

	atomic_store(&e->light_sleep, true);
	last = atomic_load(&e->last_app_poll);
	/* A poll stamped after this thread read its clock is recent too, not
	 * an unsigned difference of centuries. */
	if (last && (last >= now || now - last < UR_POLLED_RECENTLY_NS))
		return true;
	atomic_store(&e->light_sleep, false);
	return false;
}

bool ur_engine_dispatching(const struct ur_engine *e)
{
	return ur_engine_dispatched == e;
}

/* Context 0's dispatch lock first, then the others' in order: only
 * context 0's callbacks quiesce, so no thread waits the other way round. */
void ur_engine_quiesce(struct ur_engine *e)
{
	if (ur_engine_in_dispatch != 1) {
		pthread_mutex_lock(&e->dispatch_lock);
		pthread_mutex_unlock(&e->dispatch_lock);
	}
	for (unsigned i = 1; i < e->nrx; i++) {
		if (ur_engine_in_dispatch == 1 + i)
			continue;
		pthread_mutex_lock(&e->rx[i].dispatch_lock);
		pthread_mutex_unlock(&e->rx[i].dispatch_lock);
	}
}

static void on_wake(void *arg, uint32_t events)
{
	struct ur_engine *e = arg;
	uint64_t v;

	if (read(e->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		ur_warn_ratelimited(NULL, "engine wake-up read failed: %s", strerror(errno));
}

static void on_inline_set(void *arg, uint32_t events)
{
	struct ur_engine *e = arg;

	ur_engine_run_set(e, e->inline_epfd);
}

static void on_own_set(void *arg, uint32_t events)
{
	struct ur_engine *e = arg;

	ur_engine_run_set(e, e->own_epfd);
}

/* ---- the thread ---------------------------------------------------------- */

/* How long the thread may sleep: until the earliest timer, at most forever. */
static int sleep_for(struct ur_engine *e, uint64_t now, struct timespec *ts)
{
	uint64_t next;

	pthread_mutex_lock(&e->timer_lock);
	next = e->nheap ? e->heap[1]->deadline : UINT64_MAX;
	e->sleep_until = next;
	pthread_mutex_unlock(&e->timer_lock);
	if (next == UINT64_MAX)
		return -1;
	next = next > now ? next - now : 0;
	ts->tv_sec = (time_t)(next / 1000000000ull);
	ts->tv_nsec = (long)(next % 1000000000ull);
	return 0;
}

/* A nap while an application thread spins: that thread runs what falls
 * due, so arming a timer wakes nobody.  A thread that sleeps and wakes a
 * few thousand times a second beside a busy one (a nap of 0.5 ms, or a
 * retransmission timer of 1 ms firing while a message is in flight) makes
 * this kernel's scheduler (6.18, autogroup) keep other sessions' threads
 * off the CPU for seconds (docs/reliability.md). */
static void spinner_has_timers(struct ur_engine *e)
{
	pthread_mutex_lock(&e->timer_lock);
	e->sleep_until = 0;
	pthread_mutex_unlock(&e->timer_lock);
}

/* UROCE_ENGINE_PRIO=idle puts the engine thread in SCHED_IDLE: it then
 * never takes a core from a busy-polling application, which helps latency
 * on small machines, but a passive side (a server blocked in a TCP read)
 * then makes progress only when some core is idle.  Off by default. */
static void set_priority(void)
{
	struct sched_param sp = { 0 };

	if (!ur_config()->engine_idle)
		return;
	if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp))
		ur_info(NULL, "engine thread stays at normal priority: %s", strerror(errno));
}

/* Signals belong to the application's threads, but for the faults an
 * engine thread causes itself: blocked, the kernel would kill the process
 * for one rather than run the handler that util/fault_guard.h relies on. */
static void block_signals(void)
{
	sigset_t all;

	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGILL);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
}

static void *engine_main(void *arg)
{
	struct ur_engine *e = arg;
	struct epoll_event evs[UR_BATCH];
	uint64_t last_work = 0;
	/* A nap found the inline set ready: the application thread that
	 * polls did not take it all (it polls only when its CQ is empty; a
	 * program busy with the completions the other receive contexts
	 * bring polls now and then, one batch a poll).  Taken on, without a
	 * nap, until the set has nothing, as a further context's thread
	 * takes its own: with one batch a nap, context 0 read a tenth of
	 * what each of the others did in a failing integ.rxctx run, and one
	 * of its QPs received none of its answers for half a second
	 * (RETRY_EXC_ERR, docs/reliability.md). */
	bool behind = false;

	block_signals();
	set_priority();
	while (!atomic_load(&e->stopping)) {
		static const struct timespec now_ts;
		struct timespec ts;
		const struct timespec *to = sleep_for(e, ur_now_ns(), &ts) ? NULL : &ts;
		bool polled = atomic_load_explicit(&e->npollers, memory_order_acquire) > 0;
		bool told = false, dozed = false, napped = false;
		int n;

		uint64_t now = ur_now_ns();

		/* Pollers: spin a little after work.  While an application
		 * thread polls, nap on the own set alone: the poller finds the
		 * inline set's packets and the rings' work first, and two
		 * threads woken for each packet on two cores cost more than
		 * either's work.  Else sleep, once the pollers have made sure
		 * their work will wake us. */
		bool active = polled && ur_engine_pollers_active(e);

		if ((polled && now - last_work < e->spin_ns) || behind) {
			to = &now_ts;
		} else if (may_nap(e, now)) {
			/* The spinner runs the timers too (engine_app.c): the
			 * nap is not cut short for one, nor is this thread
			 * woken when one is armed sooner. */
			ts = (struct timespec){ 0, UR_LIGHT_SLEEP_NS };
			to = &ts;
			napped = true;
			spinner_has_timers(e);
			if (active) {
				dozed = true;
				pollers_doze(e, true);
			}
		} else if (polled) {
			told = true;
			/* Only a thread that would nap is worth an application's
			 * kick: with nothing to poll it sleeps as before. */
			if (active)
				atomic_store(&e->deep_sleep, true);
			if (!pollers_sleep(e, true))
				to = &now_ts;
		}
		n = epoll_pwait2(napped ? e->own_epfd : e->epfd, evs, UR_BATCH, to, NULL);
		atomic_store(&e->light_sleep, false);
		atomic_store(&e->deep_sleep, false);
		if (told)
			pollers_sleep(e, false);
		if (dozed)
			pollers_doze(e, false);

		pthread_mutex_lock(&e->timer_lock);
		e->sleep_until = 0;        /* awake: arming a timer needs no wake-up */
		pthread_mutex_unlock(&e->timer_lock);
		/* A polling thread may hold the lock: wait for it, then take
		 * what it left. */
		pthread_mutex_lock(&e->dispatch_lock);
		ur_dispatch_enter(e, 0);
		if (n > 0)
			ur_engine_run_events(e, evs, n);
		/* What the application thread left, if it stopped or is busy:
		 * while there is some, on at once. */
		if (napped)
			behind = ur_engine_run_set(e, e->inline_epfd);
		else if (behind)
			behind = n > 0;
		if (polled && ur_engine_run_pollers(e))
			last_work = ur_now_ns();
		ur_engine_run_timers(e, ur_now_ns());
		ur_dispatch_leave();
		pthread_mutex_unlock(&e->dispatch_lock);
	}
	return NULL;
}

/* A further receive context's thread: it sleeps until one of its fds is
 * ready, never spins, and runs nothing but their callbacks. */
static void *rx_main(void *arg)
{
	struct rx_ctx *c = arg;
	struct ur_engine *e = c->e;
	struct epoll_event evs[UR_BATCH];

	block_signals();
	set_priority();
	while (!atomic_load(&e->stopping)) {
		int n = epoll_wait(c->epfd, evs, UR_BATCH, -1);

		if (n <= 0)
			continue;
		/* A polling thread may hold the lock: what it leaves, we take. */
		pthread_mutex_lock(&c->dispatch_lock);
		ur_dispatch_enter(e, c->index);
		ur_engine_run_events(e, evs, n);
		ur_dispatch_leave();
		pthread_mutex_unlock(&c->dispatch_lock);
	}
	return NULL;
}

/* ---- life ---------------------------------------------------------------- */

static int add_own(struct ur_engine *e, int epfd, struct watch *w, int fd, ur_fd_handler fn)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = w };

	*w = (struct watch){ fd, fn, e, UR_WATCH_ENGINE };
	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

_Static_assert(UR_ENGINE_MAX_RX == 8, "util/config.c checks UROCE_RX_THREADS against 8");

unsigned ur_engine_default_rx(void)
{
	const struct ur_config *cfg = ur_config();
	long n;

	if (cfg->rx_threads < 0) {
		static bool warned;

		if (!__atomic_exchange_n(&warned, true, __ATOMIC_RELAXED))
			ur_warn(NULL, "UROCE_RX_THREADS=%s: expected 1 .. %d; one receive "
				"context", cfg->rx_threads_raw, UR_ENGINE_MAX_RX);
		return 1;
	}
	if (cfg->rx_threads)
		return (unsigned)cfg->rx_threads;
	/* One context per 4 cores, at most 4: the application's threads and
	 * the engine thread keep cores of their own.  Below 8 cores, one. */
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n >= 8 ? (unsigned)(n / 4 < 4 ? n / 4 : 4) : 1;
}

unsigned ur_engine_rx_count(const struct ur_engine *e)
{
	return e->nrx;
}

/* The wake-up of a further context's thread is never read: it stays
 * readable, so that the thread (and no poller) sees it until it leaves. */
static void on_rx_stop(void *arg, uint32_t events)
{
}

/* Sets up context i (e->nrx is then i + 1). */
static int add_rx(struct ur_engine *e, unsigned i, bool threaded)
{
	struct rx_ctx *c = &e->rx[i];
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &c->wake };
	char name[16];
	int ret;

	c->e = e;
	c->index = i;
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	c->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	pthread_mutex_init(&c->dispatch_lock, NULL);
	e->nrx = i + 1;                /* destroy undoes what is done */
	if (c->epfd < 0 || c->wake_fd < 0)
		return -errno;
	c->wake = (struct watch){ c->wake_fd, on_rx_stop, c, UR_WATCH_INLINE, i };
	if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->wake_fd, &ev))
		return -errno;
	if (!threaded)
		return 0;
	ret = -pthread_create(&c->thread, NULL, rx_main, c);
	if (ret)
		return ret;
	c->threaded = true;
	snprintf(name, sizeof(name), "uroce-rx%u", i);
	pthread_setname_np(c->thread, name);
	return 0;
}

int ur_engine_create(unsigned flags, const char *thread_name, struct ur_engine **out)
{
	return ur_engine_create_rx(flags, thread_name, ur_engine_default_rx(), out);
}

int ur_engine_create_rx(unsigned flags, const char *thread_name, unsigned rx,
			struct ur_engine **out)
{
	struct ur_engine *e;
	int ret;

	if (rx < 1 || rx > UR_ENGINE_MAX_RX)
		return -EINVAL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->nrx = 1;
	e->epfd = e->own_epfd = e->inline_epfd = e->wake_fd = -1;
	pthread_mutex_init(&e->dispatch_lock, NULL);
	pthread_mutex_init(&e->watch_lock, NULL);
	pthread_mutex_init(&e->timer_lock, NULL);
	pthread_mutex_init(&e->waiters_lock, NULL);
	for (int i = 0; i < UR_MAX_WATCH; i++)
		e->watches[i].fd = -1;
	e->cap = 2;
	e->heap = calloc(e->cap, sizeof(*e->heap));
	atomic_store(&e->timer_next, UINT64_MAX);
	e->spin_ns = ur_config()->spin_ns;
	e->epfd = epoll_create1(EPOLL_CLOEXEC);
	e->own_epfd = epoll_create1(EPOLL_CLOEXEC);
	e->inline_epfd = epoll_create1(EPOLL_CLOEXEC);
	e->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!e->heap || e->epfd < 0 || e->own_epfd < 0 || e->inline_epfd < 0 || e->wake_fd < 0) {
		ret = e->heap ? -errno : -ENOMEM;
		goto err;
	}
	ret = add_own(e, e->own_epfd, &e->wake, e->wake_fd, on_wake);
	if (!ret)
		ret = add_own(e, e->epfd, &e->own_set, e->own_epfd, on_own_set);
	if (!ret)
		ret = add_own(e, e->epfd, &e->inline_set, e->inline_epfd, on_inline_set);
	if (ret)
		goto err;
	if (!(flags & UR_ENGINE_NO_THREAD)) {
		ret = -pthread_create(&e->thread, NULL, engine_main, e);
		if (ret)
			goto err;
		pthread_setname_np(e->thread, thread_name);
		e->threaded = true;
	}
	for (unsigned i = 1; i < rx; i++) {
		ret = add_rx(e, i, !(flags & UR_ENGINE_NO_THREAD));
		if (ret)
			goto err;
	}
	*out = e;
	return 0;

err:
	ur_engine_destroy(e);
	return ret;
}

void ur_engine_destroy(struct ur_engine *e)
{
	if (!e)
		return;
	atomic_store(&e->stopping, true);
	if (e->threaded) {
		ur_engine_wake(e);
		pthread_join(e->thread, NULL);
	}
	for (unsigned i = 1; i < e->nrx; i++) {
		struct rx_ctx *c = &e->rx[i];
		uint64_t one = 1;

		if (c->threaded) {
			if (write(c->wake_fd, &one, sizeof(one)) < 0)
				ur_warn(NULL, "cannot stop receive thread %u: %s", i, strerror(errno));
			pthread_join(c->thread, NULL);
		}
		if (c->wake_fd >= 0)
			close(c->wake_fd);
		if (c->epfd >= 0)
			close(c->epfd);
		pthread_mutex_destroy(&c->dispatch_lock);
	}
	if (e->wake_fd >= 0)
		close(e->wake_fd);
	if (e->inline_epfd >= 0)
		close(e->inline_epfd);
	if (e->own_epfd >= 0)
		close(e->own_epfd);
	if (e->epfd >= 0)
		close(e->epfd);
	pthread_mutex_destroy(&e->timer_lock);
	pthread_mutex_destroy(&e->waiters_lock);
	pthread_mutex_destroy(&e->watch_lock);
	pthread_mutex_destroy(&e->dispatch_lock);
	free(e->heap);
	free(e);
}
