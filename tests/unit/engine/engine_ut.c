/* Unit tests of the reactor (src/engine): timers fire in deadline order,
 * once, after moves and cancels, from a heap that never allocates when
 * armed; fds in the INLINE class are dispatched by a polling thread and
 * ENGINE-class ones never are; callbacks never run two at a time;
 * quiesce waits for the callback in progress; a deadline already past is
 * deferred work; pollers run wherever INLINE callbacks do, and a producer
 * that rings the bell only while the engine thread says it sleeps never
 * has its work stranded; a fault in a guarded access on the engine thread
 * is caught, not fatal; receive contexts: each dispatched by its own thread
 * or a polling one, one callback at a time within a context, contexts at
 * the same time, quiesce waiting for all of them; UROCE_RX_THREADS; a
 * thread blocked on a channel's fd runs what the INLINE class brings
 * itself, and gives it back to the engine thread when it returns or is
 * cancelled; a backlog the polling thread leaves in the INLINE class is
 * taken on by the engine thread, not one dispatch a nap; a spinning
 * thread runs the timers that fall due, the engine thread napping. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ut.h"

#include "engine/engine.h"
#include "engine/engine_priv.h"   /* last_app_poll: an application's mark */
#include "util/clock.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/fault_guard.h"

/* ---- timers ---------------------------------------------------------------- */

#define NT 300

struct t_timer {
	struct ur_timer t;
	int id;
	int fired;
};

static int order[NT * 2], norder;

static void fire(struct ur_timer *t)
{
	struct t_timer *x = container_of(t, struct t_timer, t);

	x->fired++;
	order[norder++] = x->id;
}

/* Deadlines from a fixed pseudo-random sequence: the heap sees every
 * shape of insert, move and removal. */
static uint64_t next_rand(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

static void test_timer_order(void)
{
	static struct t_timer tt[NT];
	struct ur_engine *e;
	uint64_t seed = 42, last = 0;

	UT_EQ(ur_engine_create(UR_ENGINE_NO_THREAD, "ut", &e), 0);
	for (int i = 0; i < NT; i++) {
		tt[i].id = i;
		UT_EQ(ur_engine_timer_init(e, &tt[i].t, fire), 0);
		ur_engine_timer_arm(e, &tt[i].t, 1000 + next_rand(&seed) % 100000);
	}
	UT_EQ(ur_engine_timers_armed(e), NT);
	/* Move a third later, cancel a third. */
	for (int i = 0; i < NT; i += 3)
		ur_engine_timer_arm(e, &tt[i].t, 200000 + next_rand(&seed) % 1000);
	for (int i = 1; i < NT; i += 3)
		ur_engine_timer_cancel(e, &tt[i].t);
	UT_EQ(ur_engine_timers_armed(e), NT - (NT + 1) / 3);
	/* Nothing is due before the earliest deadline. */
	norder = 0;
	ur_engine_run_timers(e, 999);
	UT_EQ(norder, 0);
	/* Step through time: each fires once, at or after its deadline, in
	 * deadline order. */
	for (uint64_t now = 0; now <= 300000; now += 777) {
		int before = norder;

		ur_engine_run_timers(e, now);
		for (int k = before; k < norder; k++) {
			UT_CHECK(tt[order[k]].t.deadline == 0);
		}
	}
	UT_EQ(norder, NT - (NT + 1) / 3);
	for (int i = 0; i < NT; i++)
		UT_EQ(tt[i].fired, i % 3 == 1 ? 0 : 1);
	UT_EQ(ur_engine_timers_armed(e), 0);
	/* Fired in non-decreasing deadline order: re-derive the deadlines. */
	seed = 42;
	{
		uint64_t dl[NT];

		for (int i = 0; i < NT; i++)
			dl[i] = 1000 + next_rand(&seed) % 100000;
		for (int i = 0; i < NT; i += 3)
			dl[i] = 200000 + next_rand(&seed) % 1000;
		for (int k = 0; k < norder; k++) {
			UT_CHECK(dl[order[k]] >= last);
			last = dl[order[k]];
		}
	}
	for (int i = 0; i < NT; i++)
		ur_engine_timer_fini(e, &tt[i].t);
	ur_engine_destroy(e);
}

static int fires;

static void count_fire(struct ur_timer *t)
{
	fires++;
}

static void test_timer_deferred(void)
{
	struct ur_engine *e;
	struct ur_timer t;

	UT_EQ(ur_engine_create(UR_ENGINE_NO_THREAD, "ut", &e), 0);
	UT_EQ(ur_engine_timer_init(e, &t, count_fire), 0);
	fires = 0;
	/* Deadline 0: "as soon as possible", not "disarmed". */
	ur_engine_timer_arm(e, &t, 0);
	UT_CHECK(t.deadline != 0);
	UT_EQ(ur_engine_timers_armed(e), 1);
	ur_engine_run_timers(e, 1);
	UT_EQ(fires, 1);
	ur_engine_run_timers(e, UINT64_MAX);
	UT_EQ(fires, 1);
	ur_engine_timer_fini(e, &t);
	ur_engine_destroy(e);
}

static struct ur_engine *rearm_e;

/* Arms itself again at a deadline already past, as a timer whose owner
 * never clears its deadline would. */
static void rearm_past(struct ur_timer *t)
{
	fires++;
	ur_engine_timer_arm(rearm_e, t, 1);
}

/* A timer armed again, from its callback, at a deadline the round has
 * reached fires on the next round, after the others due now: it can
 * neither hold the engine thread in its timer loop (which then never
 * reads its fds again) nor starve the other timers. */
static void test_timer_rearmed_past(void)
{
	struct ur_timer t, u;

	UT_EQ(ur_engine_create(UR_ENGINE_NO_THREAD, "ut", &rearm_e), 0);
	UT_EQ(ur_engine_timer_init(rearm_e, &t, rearm_past), 0);
	UT_EQ(ur_engine_timer_init(rearm_e, &u, count_fire), 0);
	fires = 0;
	ur_engine_timer_arm(rearm_e, &t, 5);
	ur_engine_timer_arm(rearm_e, &u, 6);
	ur_engine_run_timers(rearm_e, 10);
	UT_EQ(fires, 2);                        /* each once */
	UT_EQ(u.deadline, 0);
	UT_EQ(t.deadline, 11);                  /* the next round's */
	ur_engine_run_timers(rearm_e, 10);
	UT_EQ(fires, 2);
	ur_engine_run_timers(rearm_e, 11);
	UT_EQ(fires, 3);
	UT_EQ(ur_engine_timers_armed(rearm_e), 1);
	ur_engine_timer_cancel(rearm_e, &t);
	ur_engine_timer_fini(rearm_e, &t);
	ur_engine_timer_fini(rearm_e, &u);
	ur_engine_destroy(rearm_e);
}

/* ---- fds: the two classes -------------------------------------------------- */

struct t_fd {
	int fd;
	int calls;
	pthread_t who;
	int busy;           /* callbacks running now */
	int overlap;        /* a callback saw another running */
};

static int running;
#define LD(x) __atomic_load_n(&(x), __ATOMIC_SEQ_CST)

static void on_fd(void *arg, uint32_t events)
{
	struct t_fd *f = arg;
	uint64_t v;

	/* Atomic: the test thread reads them while the engine thread runs. */
	if (__atomic_add_fetch(&running, 1, __ATOMIC_SEQ_CST) > 1)
		__atomic_add_fetch(&f->overlap, 1, __ATOMIC_SEQ_CST);
	if (read(f->fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		__atomic_store_n(&f->calls, -1000, __ATOMIC_SEQ_CST);
	__atomic_store_n(&f->who, pthread_self(), __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&f->calls, 1, __ATOMIC_SEQ_CST);
	__atomic_sub_fetch(&running, 1, __ATOMIC_SEQ_CST);
}

/* Unwatched, then closed once no callback can still be running on it:
 * unwatch does not wait for a callback in progress (on another context's
 * thread, say), which may still read the fd. */
static void unwatch_close(struct ur_engine *e, int fd)
{
	ur_engine_unwatch(e, fd);
	ur_engine_quiesce(e);
	close(fd);
}

static void poke(int fd)
{
	uint64_t one = 1;

	UT_EQ(write(fd, &one, sizeof(one)), sizeof(one));
}

static void test_classes_polled(void)
{
	struct ur_engine *e;
	struct t_fd in = { 0 }, eng = { 0 };

	UT_EQ(ur_engine_create(UR_ENGINE_NO_THREAD, "ut", &e), 0);
	in.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	eng.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	UT_EQ(ur_engine_watch(e, in.fd, EPOLLIN, UR_WATCH_INLINE, on_fd, &in), 0);
	UT_EQ(ur_engine_watch(e, eng.fd, EPOLLIN, UR_WATCH_ENGINE, on_fd, &eng), 0);
	UT_CHECK(!ur_engine_poll(e, false));           /* nothing ready */
	poke(in.fd);
	poke(eng.fd);
	/* A polling thread runs the INLINE fd, never the ENGINE one. */
	UT_CHECK(ur_engine_poll(e, false));
	UT_EQ(in.calls, 1);
	UT_CHECK(pthread_equal(in.who, pthread_self()));
	for (int i = 0; i < 5; i++)
		ur_engine_poll(e, false);
	UT_EQ(eng.calls, 0);
	UT_EQ(in.calls, 1);
	/* Unwatched: no more calls. */
	ur_engine_unwatch(e, in.fd);
	poke(in.fd);
	UT_CHECK(!ur_engine_poll(e, false));
	UT_EQ(in.calls, 1);
	close(in.fd);
	close(eng.fd);
	ur_engine_destroy(e);
}

static void wait_for(int *v, int want)
{
	for (int i = 0; i < 2000 && __atomic_load_n(v, __ATOMIC_SEQ_CST) < want; i++)
		usleep(1000);
}

/* With its thread: the engine thread runs both classes; a polling thread
 * and the engine thread never run callbacks at the same time. */
static void test_classes_threaded(void)
{
	struct ur_engine *e;
	struct t_fd in = { 0 }, eng = { 0 };

	UT_EQ(ur_engine_create(0, "ut-engine", &e), 0);
	in.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	eng.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	UT_EQ(ur_engine_watch(e, in.fd, EPOLLIN, UR_WATCH_INLINE, on_fd, &in), 0);
	UT_EQ(ur_engine_watch(e, eng.fd, EPOLLIN, UR_WATCH_ENGINE, on_fd, &eng), 0);
	poke(eng.fd);
	wait_for(&eng.calls, 1);
	UT_EQ(LD(eng.calls), 1);
	UT_CHECK(!pthread_equal(LD(eng.who), pthread_self()));
	/* Many pokes, the test thread polling all the while. */
	for (int i = 0; i < 2000; i++) {
		poke(in.fd);
		poke(eng.fd);
		ur_engine_poll(e, false);
	}
	usleep(50000);
	UT_EQ(LD(in.overlap) + LD(eng.overlap), 0);
	UT_CHECK(LD(in.calls) >= 1 && LD(eng.calls) >= 2);
	unwatch_close(e, in.fd);
	unwatch_close(e, eng.fd);
	ur_engine_destroy(e);          /* the thread stops and is joined */
}

/* ---- quiesce and threaded timers -------------------------------------------- */

static int slow_started, slow_done;

static void slow_fire(struct ur_timer *t)
{
	__atomic_store_n(&slow_started, 1, __ATOMIC_SEQ_CST);
	usleep(100000);
	__atomic_store_n(&slow_done, 1, __ATOMIC_SEQ_CST);
}

static void test_quiesce(void)
{
	struct ur_engine *e;
	struct ur_timer t;

	UT_EQ(ur_engine_create(0, "ut-engine", &e), 0);
	UT_EQ(ur_engine_timer_init(e, &t, slow_fire), 0);
	/* Armed for now on a sleeping engine thread: it is woken. */
	ur_engine_timer_arm(e, &t, ur_now_ns());
	wait_for(&slow_started, 1);
	UT_EQ(slow_started, 1);
	ur_engine_quiesce(e);
	UT_EQ(slow_done, 1);                     /* the callback in progress ended */
	ur_engine_timer_fini(e, &t);
	ur_engine_destroy(e);
}

/* ---- pollers ------------------------------------------------------------------ */

/* Work no fd announces: a counter a producer raises and the poller takes,
 * with the bell protocol the shared-memory transport uses. */
struct t_poll {
	int work;                      /* items waiting */
	int taken;
	int sleeping;                  /* the engine thread said it sleeps */
	int sleeps;                    /* times it did */
	int bell;                      /* eventfd, watched INLINE */
	int dozes;                     /* times the engine thread napped */
};

static int t_polls;                   /* calls of t_poll */

static bool t_pending(void *arg)
{
	return __atomic_load_n(&((struct t_poll *)arg)->work, __ATOMIC_SEQ_CST) > 0;
}

static bool t_active(void *arg)
{
	(void)arg;
	return true;
}

static bool t_poll(void *arg)
{
	struct t_poll *p = arg;
	int n = __atomic_exchange_n(&p->work, 0, __ATOMIC_SEQ_CST);

	__atomic_add_fetch(&t_polls, 1, __ATOMIC_SEQ_CST);

	__atomic_add_fetch(&p->taken, n, __ATOMIC_SEQ_CST);
	return n > 0;
}

static bool t_sleep(void *arg, bool going)
{
	struct t_poll *p = arg;

	__atomic_store_n(&p->sleeping, going, __ATOMIC_SEQ_CST);
	if (!going)
		return true;
	__atomic_add_fetch(&p->sleeps, 1, __ATOMIC_SEQ_CST);
	return __atomic_load_n(&p->work, __ATOMIC_SEQ_CST) == 0;
}

static void t_doze(void *arg, bool dozing)
{
	struct t_poll *p = arg;

	if (dozing)
		__atomic_add_fetch(&p->dozes, 1, __ATOMIC_SEQ_CST);
}

static void t_bell(void *arg, uint32_t events)
{
	struct t_poll *p = arg;
	uint64_t v;

	(void)events;
	UT_CHECK(read(p->bell, &v, sizeof(v)) == sizeof(v));
}

static void produce(struct t_poll *p)
{
	__atomic_add_fetch(&p->work, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&p->sleeping, __ATOMIC_SEQ_CST))
		poke(p->bell);
}

/* Without a thread: ur_engine_poll runs the poller and says whether it
 * found work. */
/* A packet on a socket (the bell), taken by the look on its turn. */
static void take_bell(struct ur_engine *e, struct t_poll *p)
{
	unsigned polls = 0;

	poke(p->bell);
	while (polls < UR_SOCK_LOOK_MAX && !ur_engine_poll(e, false))
		polls++;
	UT_CHECK(polls < UR_SOCK_LOOK_MAX);
}

/* Without a thread: a poll that sees no record in any ring runs no poller
 * and takes no lock but on the sockets' turns, which space out while the
 * looks find nothing (8, 16, ... UR_SOCK_LOOK_MAX polls apart) and close
 * up at once when one finds a packet.  Work a poller says is pending is
 * taken at the next poll. */
static void test_poller_pending(void)
{
	struct t_poll p = { 0 };
	struct ur_poller pl = { .poll = t_poll, .sleep = t_sleep, .active = t_active,
				.pending = t_pending, .arg = &p };
	struct ur_engine *e;
	int before;

	p.bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	UT_EQ(ur_engine_create(UR_ENGINE_NO_THREAD, "ut-engine", &e), 0);
	UT_EQ(ur_engine_watch(e, p.bell, EPOLLIN, UR_WATCH_INLINE, t_bell, &p), 0);
	UT_EQ(ur_engine_add_poller(e, &pl), 0);
	take_bell(e, &p);                  /* the turns start 8 apart */
	before = t_polls;
	for (unsigned i = 0; i < 8 + 16 + 32 + 64 + 128 + 256 + 256; i++)
		UT_CHECK(!ur_engine_poll(e, false));
	UT_EQ(t_polls - before, 7);        /* the sockets' turns only */
	take_bell(e, &p);
	before = t_polls;
	for (unsigned i = 0; i < UR_SOCK_LOOK_EVERY; i++)
		UT_CHECK(!ur_engine_poll(e, false));
	UT_EQ(t_polls - before, 1);        /* 8 apart again */
	p.work = 2;
	UT_CHECK(ur_engine_poll(e, false));
	UT_EQ(p.taken, 2);
	/* Taken while another thread dispatches: nothing to wait for. */
	pthread_mutex_lock(&e->dispatch_lock);
	before = t_polls;
	for (int i = 0; i < 7; i++)
		UT_CHECK(!ur_engine_poll(e, false));
	pthread_mutex_unlock(&e->dispatch_lock);
	UT_EQ(t_polls - before, 0);
	ur_engine_remove_poller(e, &pl);
	ur_engine_unwatch(e, p.bell);
	ur_engine_destroy(e);
	close(p.bell);
}

static void test_poller_polled(void)
{
	struct t_poll p = { 0 };
	struct ur_poller pl = { .poll = t_poll, .sleep = t_sleep, .arg = &p };
	struct ur_engine *e;

	UT_EQ(ur_engine_create(UR_ENGINE_NO_THREAD, "ut-engine", &e), 0);
	UT_EQ(ur_engine_add_poller(e, &pl), 0);
	UT_CHECK(!ur_engine_poll(e, false));
	p.work = 3;
	UT_CHECK(ur_engine_poll(e, false));
	UT_EQ(p.taken, 3);
	UT_CHECK(!ur_engine_poll(e, false));
	ur_engine_remove_poller(e, &pl);
	p.work = 1;
	UT_CHECK(!ur_engine_poll(e, false));            /* removed: not run */
	UT_EQ(p.taken, 3);
	ur_engine_destroy(e);
}

/* With the thread and nobody polling: every item produced is taken, the
 * thread sleeping between them (so the bell was needed), none stranded. */
static void test_poller_threaded(void)
{
	struct t_poll p = { 0 };
	struct ur_poller pl = { .poll = t_poll, .sleep = t_sleep, .arg = &p };
	struct ur_engine *e;
	uint64_t seed = 7;
	int n = 300;

	p.bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	UT_EQ(ur_engine_create(0, "ut-engine", &e), 0);
	UT_EQ(ur_engine_watch(e, p.bell, EPOLLIN, UR_WATCH_INLINE, t_bell, &p), 0);
	UT_EQ(ur_engine_add_poller(e, &pl), 0);
	for (int i = 0; i < n; i++) {
		produce(&p);
		/* Sometimes while it spins, sometimes once it sleeps. */
		if (next_rand(&seed) % 4 == 0)
			usleep(25 + next_rand(&seed) % 50);
	}
	wait_for(&p.taken, n);
	UT_EQ(LD(p.taken), n);
	wait_for(&p.sleeping, 1);
	UT_EQ(LD(p.sleeping), 1);                /* idle: asleep, not spinning */
	UT_CHECK(LD(p.sleeps) >= 1);
	/* One more after it sleeps: the bell wakes it. */
	produce(&p);
	wait_for(&p.taken, n + 1);
	UT_EQ(LD(p.taken), n + 1);
	ur_engine_remove_poller(e, &pl);
	unwatch_close(e, p.bell);
	ur_engine_destroy(e);
}

/* The engine thread places packets into memory the application may have
 * unmapped under a live region: a fault there is caught and reported (it
 * keeps SIGSEGV unblocked; blocked, the kernel would kill the process). */
struct t_fault {
	int fd;
	void *gone;
	int ran, copied, refused;
};

static void t_fault_cb(void *arg, uint32_t events)
{
	struct t_fault *f = arg;
	uint8_t src[64] = { 0 };
	uint64_t v;

	(void)events;
	if (read(f->fd, &v, sizeof(v)) != sizeof(v))
		return;      /* counted on ran: the test waits for each poke */
	if (ur_guarded_copy(f->gone, src, sizeof(src)))
		__atomic_add_fetch(&f->copied, 1, __ATOMIC_SEQ_CST);
	else
		__atomic_add_fetch(&f->refused, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&f->ran, 1, __ATOMIC_SEQ_CST);
}

static void test_engine_thread_fault_guarded(void)
{
	struct t_fault f = { 0 };
	struct ur_engine *e;
	long page = sysconf(_SC_PAGESIZE);

	ur_fault_guard_install();
	/* PROT_NONE faults as a hole does, and no allocation can fill it. */
	f.gone = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	UT_CHECK(f.gone != MAP_FAILED);
	f.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	UT_EQ(ur_engine_create(0, "ut-engine", &e), 0);
	UT_EQ(ur_engine_watch(e, f.fd, EPOLLIN, UR_WATCH_ENGINE, t_fault_cb, &f), 0);
	for (int i = 1; i <= 3; i++) {
		poke(f.fd);
		wait_for(&f.ran, i);
	}
	UT_EQ(f.refused, 3);
	UT_EQ(f.copied, 0);
	unwatch_close(e, f.fd);
	ur_engine_destroy(e);
	munmap(f.gone, (size_t)page);
}

/* An application thread polls: the engine thread naps without saying it
 * sleeps (producers need not ring) at least some of the time; once the
 * application says it will wait, the engine thread sleeps properly and a
 * bell wakes it. */
static void test_poller_app_waits(void)
{
	struct t_poll p = { 0 };
	struct ur_poller pl = { .poll = t_poll, .sleep = t_sleep, .arg = &p };
	struct ur_engine *e;

	p.bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	UT_EQ(ur_engine_create(0, "ut-engine", &e), 0);
	UT_EQ(ur_engine_watch(e, p.bell, EPOLLIN, UR_WATCH_INLINE, t_bell, &p), 0);
	UT_EQ(ur_engine_add_poller(e, &pl), 0);
	int slept = 0;

	wait_for(&p.sleeping, 1);
	/* Asleep when the application starts polling: one bell wakes it,
	 * and from then on it naps. */
	produce(&p);
	for (int i = 0; i < 300; i++) {          /* 30 ms of application polling */
		ur_engine_poll(e, false);
		usleep(100);
		if (i >= 100 && __atomic_load_n(&p.sleeping, __ATOMIC_SEQ_CST))
			slept++;
	}
	UT_EQ(LD(p.taken), 1);
	/* Napping is a matter of timing (a loaded machine can leave more than
	 * 1 ms between two polls, and then the thread rightly sleeps): it must
	 * have napped at some point, not all along. */
	UT_CHECK(slept < 200);
	ur_engine_app_waits(e);
	wait_for(&p.sleeping, 1);
	UT_EQ(LD(p.sleeping), 1);
	produce(&p);
	wait_for(&p.taken, 2);
	UT_EQ(LD(p.taken), 2);
	ur_engine_remove_poller(e, &pl);
	unwatch_close(e, p.bell);
	ur_engine_destroy(e);
}

/* A thread that polls once and then blocks (it armed a CQ: will_block, or
 * it sleeps longer than a nap between polls) never makes the engine thread
 * nap: what comes while it blocks is taken at once, not half a
 * millisecond later.  A thread that spins does make it nap. */
static void test_poll_then_block(void)
{
	struct t_poll p = { 0 };
	struct ur_poller pl = { .poll = t_poll, .sleep = t_sleep, .doze = t_doze, .arg = &p };
	struct ur_engine *e;

	p.bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	UT_EQ(ur_engine_create(0, "ut-engine", &e), 0);
	UT_EQ(ur_engine_watch(e, p.bell, EPOLLIN, UR_WATCH_INLINE, t_bell, &p), 0);
	UT_EQ(ur_engine_add_poller(e, &pl), 0);
	wait_for(&p.sleeping, 1);
	for (int i = 0; i < 100; i++) {          /* an armed CQ: polled, then a wait */
		ur_engine_poll(e, true);
		usleep(200);
		produce(&p);
		wait_for(&p.taken, i + 1);
	}
	for (int i = 0; i < 20; i++) {           /* two polls a wake-up, then a long wait */
		ur_engine_poll(e, false);
		ur_engine_poll(e, false);
		usleep(1500);
	}
	UT_EQ(LD(p.taken), 100);
	UT_EQ(LD(p.dozes), 0);
	for (int i = 0; i < 3000 && !__atomic_load_n(&p.dozes, __ATOMIC_SEQ_CST); i++) {
		ur_engine_poll(e, false);        /* spinning */
		usleep(10);
	}
	UT_CHECK(LD(p.dozes) > 0);
	ur_engine_app_waits(e);
	ur_engine_remove_poller(e, &pl);
	unwatch_close(e, p.bell);
	ur_engine_destroy(e);
}


/* An application thread that polls keeps the engine thread napping, and
 * it may leave what the inline set holds: a program busy with the
 * completions its further receive contexts bring polls an empty CQ only
 * now and then, one batch a poll.  What the engine thread finds after a
 * nap, it takes on without a nap until the set is empty: one dispatch a
 * nap served context 0's socket a fraction of what each further context's
 * thread took, and its backlog outgrew the QP timeout (integ.rxctx).
 * The application is played by its mark (last_app_poll, as poll_first
 * sets it), so that it takes nothing; each dispatch takes one unit (a
 * semaphore eventfd), as each takes one batch of datagrams off a socket. */
static int taken;

static void take_one(void *arg, uint32_t events)
{
	int *fd = arg;
	uint64_t v;

	if (read(*fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
		__atomic_add_fetch(&taken, 1, __ATOMIC_SEQ_CST);
}

static void tick(struct ur_timer *t)
{
}

static void test_nap_takes_backlog(void)
{
	struct ur_timer wake;
	struct ur_engine *e;
	uint64_t units = 2000, t0, took;
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC | EFD_SEMAPHORE);

	UT_EQ(ur_engine_create(0, "ut-engine", &e), 0);
	UT_EQ(ur_engine_watch(e, fd, EPOLLIN, UR_WATCH_INLINE, take_one, &fd), 0);
	/* The engine thread sees the application poll when it next wakes (a
	 * QP's timer, in a process): then it naps. */
	UT_EQ(ur_engine_timer_init(e, &wake, tick), 0);
	ur_engine_timer_arm(e, &wake, ur_now_ns() + 2000000);
	taken = 0;
	/* Polled "now" for the whole test, however late this thread runs on
	 * a loaded host. */
	atomic_store(&e->last_app_poll, ur_now_ns() + 20000000000ull);
	usleep(5000);
	UT_EQ(write(fd, &units, sizeof(units)), (ssize_t)sizeof(units));
	t0 = ur_now_ns();
	while (__atomic_load_n(&taken, __ATOMIC_SEQ_CST) < (int)units &&
	       ur_now_ns() - t0 < 10000000000ull)
		usleep(1000);
	took = ur_now_ns() - t0;
	UT_EQ(LD(taken), (int)units);
	/* One a nap: a second at least.  Taken on: milliseconds. */
	UT_CHECK(took < 300000000ull);
	ur_engine_app_waits(e);
	ur_engine_timer_fini(e, &wake);
	unwatch_close(e, fd);
	ur_engine_destroy(e);
}

/* A thread that spins on ur_engine_poll runs the timers that fall due
 * itself, while the engine thread naps through them: woken for each (a
 * retransmission timer of 1 ms, re-armed by every message), the engine
 * thread slept and woke thousands of times a second beside the spinner,
 * which made the kernel's scheduler keep other sessions' threads off the
 * CPU for seconds (docs/reliability.md).  Before: the spinner ran none. */
#define SPIN_TIMERS 100

static _Thread_local int on_spinner;
static int spin_fires, spinner_fires, spin_stop;
static struct ur_engine *spin_e;

static void spin_fire(struct ur_timer *t)
{
	__atomic_add_fetch(&spin_fires, 1, __ATOMIC_SEQ_CST);
	if (on_spinner)
		__atomic_add_fetch(&spinner_fires, 1, __ATOMIC_SEQ_CST);
	if (LD(spin_fires) < SPIN_TIMERS)
		ur_engine_timer_arm(spin_e, t, ur_now_ns() + 1000000);
}

static void *spinner(void *arg)
{
	on_spinner = 1;
	while (!LD(spin_stop))
		ur_engine_poll(spin_e, false);
	return NULL;
}

static void test_spinner_runs_timers(void)
{
	struct ur_timer t;
	pthread_t th;
	uint64_t t0;

	UT_EQ(ur_engine_create(0, "ut-engine", &spin_e), 0);
	UT_EQ(ur_engine_timer_init(spin_e, &t, spin_fire), 0);
	spin_fires = spinner_fires = spin_stop = 0;
	UT_EQ(pthread_create(&th, NULL, spinner, NULL), 0);
	usleep(20000);   /* the engine thread sees a spinner and naps */
	ur_engine_timer_arm(spin_e, &t, ur_now_ns() + 1000000);
	t0 = ur_now_ns();
	while (LD(spin_fires) < SPIN_TIMERS && ur_now_ns() - t0 < 10000000000ull)
		usleep(1000);
	__atomic_store_n(&spin_stop, 1, __ATOMIC_SEQ_CST);
	pthread_join(th, NULL);
	UT_EQ(LD(spin_fires), SPIN_TIMERS);
	/* Most on the spinner; the engine thread takes what is due when a
	 * nap of its ends (one in five at most, with 1 ms timers). */
	UT_CHECK(LD(spinner_fires) >= SPIN_TIMERS / 2);
	ur_engine_app_waits(spin_e);
	ur_engine_timer_fini(spin_e, &t);
	ur_engine_destroy(spin_e);
}

/* ---- a thread blocked on a channel ------------------------------------------ */

/* What a completion channel does: an INLINE fd's callback (a packet) makes
 * the waited fd readable (the channel's event). */
struct t_chan {
	struct t_fd in;
	int pipe[2];
	int wait_epfd;
	struct ur_engine *e;
	int ret;
	int returned;
};

static void on_packet(void *arg, uint32_t events)
{
	struct t_chan *c = arg;
	char b = 1;

	on_fd(&c->in, events);
	if (write(c->pipe[1], &b, 1) != 1)
		__atomic_store_n(&c->in.calls, -1000, __ATOMIC_SEQ_CST);
}

static void *blocked(void *arg)
{
	struct t_chan *c = arg;

	c->ret = ur_engine_block_on(c->e, c->wait_epfd);
	__atomic_store_n(&c->returned, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* Until a thread waits in ur_engine_block_on (2 s at most): the set is
 * then out of the engine thread's. */
static void wait_for_waiter(struct ur_engine *e)
{
	for (int i = 0; i < 2000 && !ur_engine_waiting(e); i++)
		usleep(1000);
	UT_EQ(ur_engine_waiting(e), 1);
}

static void chan_open(struct t_chan *c, struct ur_engine *e)
{
	memset(c, 0, sizeof(*c));
	c->e = e;
	c->in.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	UT_EQ(pipe2(c->pipe, O_CLOEXEC), 0);
	UT_EQ(ur_engine_watch(e, c->in.fd, EPOLLIN, UR_WATCH_INLINE, on_packet, c), 0);
	c->wait_epfd = ur_engine_wait_set(e, c->pipe[0]);
	UT_CHECK(c->wait_epfd >= 0);
}

/* Unwatching does not wait for a callback in progress, and on_packet
 * writes to the pipe after it counts its call: quiesced before the pipe
 * is closed under it. */
static void chan_close(struct t_chan *c)
{
	ur_engine_unwatch(c->e, c->in.fd);
	ur_engine_quiesce(c->e);
	close(c->in.fd);
	close(c->pipe[0]);
	close(c->pipe[1]);
	close(c->wait_epfd);
}

/* The thread blocked in ur_engine_block_on runs the packet's callback
 * itself (the engine thread, out of the INLINE set meanwhile, does not)
 * and returns once the callback made its fd readable; after it, the
 * engine thread takes the INLINE set again. */
static void test_block_on_takes_the_packet(void)
{
	struct ur_engine *e;
	struct t_chan c;
	pthread_t t;
	char b;

	UT_EQ(ur_engine_create(0, "ut-engine", &e), 0);
	chan_open(&c, e);
	for (int round = 0; round < 50; round++) {
		c.returned = 0;
		UT_EQ(pthread_create(&t, NULL, blocked, &c), 0);
		wait_for_waiter(e);
		usleep(1000);
		UT_EQ(__atomic_load_n(&c.returned, __ATOMIC_SEQ_CST), 0);   /* it blocks */
		poke(c.in.fd);
		pthread_join(t, NULL);
		UT_EQ(c.ret, 0);
		UT_EQ(LD(c.in.calls), round + 1);
		UT_CHECK(pthread_equal(LD(c.in.who), t));     /* the waiter, not the engine thread */
		UT_EQ(read(c.pipe[0], &b, 1), 1);
	}
	/* Nobody waits: the engine thread takes the packet. */
	poke(c.in.fd);
	wait_for(&c.in.calls, 51);
	UT_EQ(LD(c.in.calls), 51);
	UT_CHECK(!pthread_equal(LD(c.in.who), pthread_self()) && !pthread_equal(LD(c.in.who), t));
	UT_EQ(LD(c.in.overlap), 0);
	UT_EQ(read(c.pipe[0], &b, 1), 1);
	chan_close(&c);
	ur_engine_destroy(e);
}

/* A waiter cancelled in its wait (rping cancels its completion thread)
 * gives the INLINE set back: the engine thread takes the next packet. */
static void test_block_on_cancelled(void)
{
	struct ur_engine *e;
	struct t_chan c;
	pthread_t t;

	/* ThreadSanitizer does not see the locks a cleanup handler takes
	 * when pthread_cancel ends a wait in a call it intercepts
	 * (epoll_wait): waiter_leave's update of the waiter count, under
	 * waiters_lock, is reported as racing with this thread's read of it
	 * under the same lock (google/sanitizers#646; a 30-line program with
	 * a mutex, epoll_wait and pthread_cancel shows it without uroce). */
	if (UT_TSAN) {
		fprintf(stderr, "  skipped under ThreadSanitizer: it cannot follow a cancelled wait\n");
		return;
	}
	UT_EQ(ur_engine_create(0, "ut-engine", &e), 0);
	chan_open(&c, e);
	UT_EQ(pthread_create(&t, NULL, blocked, &c), 0);
	wait_for_waiter(e);
	UT_EQ(pthread_cancel(t), 0);
	pthread_join(t, NULL);
	UT_EQ(c.returned, 0);
	UT_EQ(ur_engine_waiting(e), 0);
	poke(c.in.fd);
	wait_for(&c.in.calls, 1);
	UT_EQ(LD(c.in.calls), 1);        /* fails if the set stayed with the dead waiter */
	UT_CHECK(!pthread_equal(LD(c.in.who), pthread_self()));
	chan_close(&c);
	ur_engine_destroy(e);
}

/* ---- receive contexts ------------------------------------------------------ */

/* Without threads: each context's fds are the polling thread's; a context
 * past the count is refused. */
static void test_rx_polled(void)
{
	struct ur_engine *e;
	struct t_fd f[3] = { { 0 } };

	UT_EQ(ur_engine_create_rx(UR_ENGINE_NO_THREAD, "ut", 3, &e), 0);
	UT_EQ(ur_engine_rx_count(e), 3);
	for (unsigned i = 0; i < 3; i++) {
		f[i].fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		UT_EQ(ur_engine_watch_rx(e, i, f[i].fd, EPOLLIN, on_fd, &f[i]), 0);
	}
	UT_EQ(ur_engine_watch_rx(e, 3, f[0].fd, EPOLLIN, on_fd, &f[0]), -EINVAL);
	UT_CHECK(!ur_engine_poll(e, false));
	poke(f[2].fd);
	UT_CHECK(ur_engine_poll(e, false));
	UT_EQ(f[2].calls, 1);
	UT_EQ(f[0].calls + f[1].calls, 0);
	poke(f[0].fd);
	poke(f[1].fd);
	UT_CHECK(ur_engine_poll(e, false));
	for (unsigned i = 0; i < 3; i++) {
		UT_EQ(f[i].calls, 1);
		UT_CHECK(pthread_equal(f[i].who, pthread_self()));
		unwatch_close(e, f[i].fd);
	}
	ur_engine_destroy(e);
	UT_EQ(ur_engine_create_rx(UR_ENGINE_NO_THREAD, "ut", 0, &e), -EINVAL);
	UT_EQ(ur_engine_create_rx(UR_ENGINE_NO_THREAD, "ut", UR_ENGINE_MAX_RX + 1, &e), -EINVAL);
}

/* A callback of one context that holds on until another context's runs:
 * only two dispatchers at once can finish it without the timeout. */
struct t_meet {
	int fd;
	int arrived;        /* callbacks that came */
	int met;            /* callbacks that saw the other one come */
	pthread_t who;
};

static struct t_meet meet[2];

static void on_meet(void *arg, uint32_t events)
{
	struct t_meet *m = arg, *other = &meet[m == &meet[0]];
	uint64_t v;

	(void)events;
	if (read(m->fd, &v, sizeof(v)) < 0)
		return;
	m->who = pthread_self();
	__atomic_add_fetch(&m->arrived, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 2000 && !__atomic_load_n(&other->arrived, __ATOMIC_SEQ_CST); i++)
		usleep(1000);
	if (__atomic_load_n(&other->arrived, __ATOMIC_SEQ_CST))
		__atomic_add_fetch(&m->met, 1, __ATOMIC_SEQ_CST);
}

/* With threads: contexts 1 and 2 are dispatched by two threads of their
 * own (neither the caller's nor each other's) at the same time, while
 * within a context callbacks never overlap, a polling thread included. */
static void test_rx_threaded(void)
{
	struct ur_engine *e;
	struct t_fd f = { 0 };

	UT_EQ(ur_engine_create_rx(0, "ut-engine", 3, &e), 0);
	for (unsigned i = 0; i < 2; i++) {
		meet[i].fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		UT_EQ(ur_engine_watch_rx(e, 1 + i, meet[i].fd, EPOLLIN, on_meet, &meet[i]), 0);
	}
	poke(meet[0].fd);
	poke(meet[1].fd);
	wait_for(&meet[0].met, 1);
	wait_for(&meet[1].met, 1);
	UT_EQ(meet[0].met, 1);
	UT_EQ(meet[1].met, 1);
	UT_CHECK(!pthread_equal(meet[0].who, meet[1].who));
	UT_CHECK(!pthread_equal(meet[0].who, pthread_self()));
	UT_CHECK(!pthread_equal(meet[1].who, pthread_self()));
	for (unsigned i = 0; i < 2; i++) {
		unwatch_close(e, meet[i].fd);
	}
	/* One context's thread and a polling thread: one at a time. */
	running = 0;
	f.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	UT_EQ(ur_engine_watch_rx(e, 2, f.fd, EPOLLIN, on_fd, &f), 0);
	for (int i = 0; i < 2000; i++) {
		poke(f.fd);
		ur_engine_poll(e, false);
	}
	usleep(50000);
	unwatch_close(e, f.fd);
	ur_engine_destroy(e);          /* every thread stops and is joined */
	UT_EQ(f.overlap, 0);
	UT_CHECK(f.calls >= 1);
}

static int slow_rx_started, slow_rx_done;

static void on_slow_rx(void *arg, uint32_t events)
{
	int fd = *(int *)arg;
	uint64_t v;

	(void)events;
	if (read(fd, &v, sizeof(v)) < 0)
		return;
	__atomic_store_n(&slow_rx_started, 1, __ATOMIC_SEQ_CST);
	usleep(100000);
	__atomic_store_n(&slow_rx_done, 1, __ATOMIC_SEQ_CST);
}

/* quiesce waits for a callback in progress in any context. */
static void test_rx_quiesce(void)
{
	struct ur_engine *e;
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

	UT_EQ(ur_engine_create_rx(0, "ut-engine", 3, &e), 0);
	UT_EQ(ur_engine_watch_rx(e, 2, fd, EPOLLIN, on_slow_rx, &fd), 0);
	poke(fd);
	wait_for(&slow_rx_started, 1);
	UT_EQ(slow_rx_started, 1);
	ur_engine_quiesce(e);
	UT_EQ(slow_rx_done, 1);
	unwatch_close(e, fd);
	ur_engine_destroy(e);
}

/* UROCE_RX_THREADS: 1 .. UR_ENGINE_MAX_RX, anything else one context;
 * unset, a count from the CPUs within 1 .. 4. */
static void test_rx_setting(void)
{
	static const struct {
		const char *v;
		unsigned want;
	} cases[] = { { "3", 3 }, { "1", 1 }, { "8", 8 }, { "0", 1 }, { "9", 1 },
		      { "two", 1 }, { "2x", 1 } };
	unsigned d;

	for (size_t i = 0; i < UR_ARRAY_SIZE(cases); i++) {
		setenv("UROCE_RX_THREADS", cases[i].v, 1);
		ur_config_reread();
		UT_EQ(ur_engine_default_rx(), cases[i].want);
	}
	unsetenv("UROCE_RX_THREADS");
	ur_config_reread();
	d = ur_engine_default_rx();
	UT_CHECK(d >= 1 && d <= 4);
	if (sysconf(_SC_NPROCESSORS_ONLN) < 8)
		UT_EQ(d, 1);
}

int main(void)
{
	UT_RUN(test_timer_order);
	UT_RUN(test_timer_deferred);
	UT_RUN(test_timer_rearmed_past);
	UT_RUN(test_classes_polled);
	UT_RUN(test_classes_threaded);
	UT_RUN(test_quiesce);
	UT_RUN(test_poller_polled);
	UT_RUN(test_poller_pending);
	UT_RUN(test_poller_threaded);
	UT_RUN(test_poller_app_waits);
	UT_RUN(test_poll_then_block);
	UT_RUN(test_nap_takes_backlog);
	UT_RUN(test_spinner_runs_timers);
	UT_RUN(test_block_on_takes_the_packet);
	UT_RUN(test_block_on_cancelled);
	UT_RUN(test_engine_thread_fault_guarded);
	UT_RUN(test_rx_polled);
	UT_RUN(test_rx_threaded);
	UT_RUN(test_rx_quiesce);
	UT_RUN(test_rx_setting);
	return UT_DONE();
}
