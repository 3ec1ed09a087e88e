/* The reactor: file descriptors, timers and one thread that runs their
 * callbacks (libuv's loop, redis's ae).  It knows no QP, no packet and no
 * transport: whoever watches an fd or arms a timer says what runs.
 *
 * Threads.  The engine thread runs every callback.  An application thread
 * that polls (ur_engine_poll, from a CQ poll that found nothing) runs the
 * callbacks of the fds watched in the INLINE class only, and only when no
 * other thread is dispatching: never a timer, never an ENGINE-class fd.
 * While an application thread spins (polls again and again), the engine
 * thread naps on the ENGINE class alone and looks at the INLINE class only
 * between naps; a thread that polls once and then blocks leaves it awake.
 * Callbacks of one receive context never run concurrently with each other
 * (one dispatcher per context at a time), so a callback sees its fd's
 * events in order and needs no lock against the other callbacks of its
 * context.
 *
 * Receive contexts.  Context 0 is the INLINE class above.  With more than
 * one (UROCE_RX_THREADS), contexts 1..n-1 each have an epoll set, a
 * dispatch lock and a thread of their own that sleeps in epoll_wait until
 * one of its fds is ready: what is watched there is dispatched by that
 * thread or by a polling application thread, concurrently with the other
 * contexts.  Timers, pollers and ENGINE-class fds stay with context 0.
 *
 * Nothing here allocates after a timer is initialised.  While a callback
 * runs, its context's dispatch lock is held (it is what serialises them:
 * a callback may take any lock that docs/design.md's table puts after it)
 * and no other lock of the engine.
 */
#ifndef UROCE_ENGINE_ENGINE_H
#define UROCE_ENGINE_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

struct ur_engine;

enum ur_watch_class {
	UR_WATCH_ENGINE,       /* run on the engine thread only */
	UR_WATCH_INLINE,       /* also by threads that poll (ur_engine_poll) */
};

typedef void (*ur_fd_handler)(void *arg, uint32_t events);

/* A one-shot timer, embedded in its owner.  fire runs on the engine thread
 * (or in ur_engine_run_timers) under context 0's dispatch lock, and no
 * other lock of the engine. */
struct ur_timer {
	uint64_t deadline;             /* ns, CLOCK_MONOTONIC; 0 = not armed */
	unsigned heap_pos;             /* engine's: 1-based place in its heap, 0 = none */
	void (*fire)(struct ur_timer *t);
};

enum {
	UR_ENGINE_NO_THREAD = 1 << 0,  /* tests: callbacks run only when asked */
};

#define UR_ENGINE_MAX_RX 8          /* receive contexts, at most */

/* 0 or -errno.  thread_name names the engine thread (ps, gdb); the further
 * contexts' threads are uroce-rx1, uroce-rx2 ...  Receive contexts:
 * ur_engine_default_rx(). */
int ur_engine_create(unsigned flags, const char *thread_name, struct ur_engine **out);
/* The same with rx receive contexts (1..UR_ENGINE_MAX_RX). */
int ur_engine_create_rx(unsigned flags, const char *thread_name, unsigned rx,
			struct ur_engine **out);
/* How many receive contexts a process gets: UROCE_RX_THREADS (1..8), else
 * one per 4 online CPUs, at most 4 (1 below 8 CPUs). */
unsigned ur_engine_default_rx(void);
/* This engine's receive contexts (1: context 0 alone). */
unsigned ur_engine_rx_count(const struct ur_engine *e);
/* Stops the thread and frees the engine; nothing may be watched or armed
 * any more, and no other thread may be polling it. */
void ur_engine_destroy(struct ur_engine *e);

int ur_engine_watch(struct ur_engine *e, int fd, uint32_t events, enum ur_watch_class cls,
		    ur_fd_handler fn, void *arg);
/* Watches fd in receive context ctx: ctx 0 is the INLINE class, ctx >= 1
 * that context's own set (-EINVAL past the engine's count). */
int ur_engine_watch_rx(struct ur_engine *e, unsigned ctx, int fd, uint32_t events,
		       ur_fd_handler fn, void *arg);
int ur_engine_rewatch(struct ur_engine *e, int fd, uint32_t events);
void ur_engine_unwatch(struct ur_engine *e, int fd);

/* Registers a timer: reserves its room so that arming never allocates.
 * 0 or -ENOMEM.  fini cancels it and gives the room back. */
int ur_engine_timer_init(struct ur_engine *e, struct ur_timer *t, void (*fire)(struct ur_timer *t));
void ur_engine_timer_fini(struct ur_engine *e, struct ur_timer *t);
/* Arms (or moves) a timer to an absolute deadline; a deadline already past
 * fires at the next dispatch (deferred work). */
void ur_engine_timer_arm(struct ur_engine *e, struct ur_timer *t, uint64_t deadline);
/* Makes it fire by deadline: one armed earlier stays as it is.  For an
 * owner whose fire checks what is due and arms again: arming a deadline
 * earlier than the engine thread's sleep wakes it to say so, and a
 * deadline moved with every message would wake it with every message. */
void ur_engine_timer_arm_by(struct ur_engine *e, struct ur_timer *t, uint64_t deadline);
/* Disarms it.  A fire already running is not waited for: an owner that
 * frees the timer's object quiesces first. */
void ur_engine_timer_cancel(struct ur_engine *e, struct ur_timer *t);

/* Work no fd announces (a ring in shared memory) is found by polling.  A
 * poller's poll runs wherever INLINE callbacks run, under the same rules,
 * and says whether it found any.  Before the engine thread sleeps it calls
 * sleep(arg, true): the poller must then make new work wake the thread
 * through an fd it watches, and returns false if work came meanwhile (the
 * thread then does not sleep); once awake, sleep(arg, false).  After work
 * the thread keeps polling for UROCE_SPIN_US (default 20) before it sleeps. */
struct ur_poller {
	bool (*poll)(void *arg);
	bool (*sleep)(void *arg, bool going);
	/* Whether anything may come to poll at all (NULL: always): with
	 * nothing, the thread neither naps nor spins, it sleeps. */
	bool (*active)(void *arg);
	/* The thread naps (true: work may wait out the nap, 5 ms, unless an
	 * application thread takes it) or is up again.  May be NULL. */
	void (*doze)(void *arg, bool dozing);
	/* Whether work waits, looked at without taking it (NULL: it may):
	 * an application's poll that finds none takes no lock. */
	bool (*pending)(void *arg);
	void *arg;
};

/* Adds a poller (at most 2), before anything it polls can arrive: 0 or
 * -ENOSPC.  Removing one quiesces the reactor first. */
int ur_engine_add_poller(struct ur_engine *e, const struct ur_poller *p);
void ur_engine_remove_poller(struct ur_engine *e, const struct ur_poller *p);

/* From a thread that waits for something an INLINE fd or a poller will
 * bring: runs their callbacks if no other thread is dispatching (and, for
 * each further receive context, its fds' if nobody dispatches it).  Returns
 * whether any callback ran or a poller found work.  A thread that polls
 * again and again (a run of polls with no long pause) takes the INLINE
 * class off the engine thread, which naps; will_block says this thread
 * blocks next if it finds nothing (it armed a CQ's event): its poll never
 * counts toward a run. */
bool ur_engine_poll(struct ur_engine *e, bool will_block);

/* An application thread stops polling and will wait (on a completion
 * channel, say): the engine thread must now take what pollers find. */
void ur_engine_app_waits(struct ur_engine *e);

/* An application thread that would block until fd is readable (a
 * completion channel's) blocks here instead: meanwhile it, not the engine
 * thread, runs what the INLINE class and the pollers bring (as
 * ur_engine_poll would), so the packet that ends its wait wakes one thread
 * instead of the engine thread and then it.  wait_epfd comes from
 * ur_engine_wait_set(e, fd), made once per fd.  Returns once fd is
 * readable (0) or -errno; at once with an engine without a thread. */
int ur_engine_wait_set(struct ur_engine *e, int fd);
int ur_engine_block_on(struct ur_engine *e, int wait_epfd);

/* How many application threads wait in ur_engine_block_on now (tests). */
unsigned ur_engine_waiting(struct ur_engine *e);

/* How many timers are armed (diagnostics, tests). */
unsigned ur_engine_timers_armed(struct ur_engine *e);

/* Fires the timers due at now (the engine thread does this itself; a
 * NO_THREAD engine's owner calls it). */
void ur_engine_run_timers(struct ur_engine *e, uint64_t now);

/* Returns once no callback that started before the call is still running,
 * in any receive context.  From inside a callback it does not wait for its
 * own context (nothing else runs there); only context 0's callbacks may
 * call it (its dispatch lock comes before the other contexts'). */
void ur_engine_quiesce(struct ur_engine *e);
/* Whether this thread runs e's callbacks now: then what e's quiesce
 * guards (an object freed only after one) stays while it runs. */
bool ur_engine_dispatching(const struct ur_engine *e);

#endif
