/* The reactor's insides, shared by its files: engine.c (sets, dispatch,
 * the threads, life), engine_timer.c (the timer heap) and engine_app.c
 * (application threads: polling and blocking). */
#ifndef UROCE_ENGINE_ENGINE_PRIV_H
#define UROCE_ENGINE_ENGINE_PRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

#include "engine/engine.h"
#include "util/compiler.h"

#define UR_MAX_WATCH 96            /* sockets, and up to 64 local peers */
#define UR_BATCH 32                /* events taken per epoll_wait */
#define UR_MAX_POLLERS 2
#define UR_POLLED_RECENTLY_NS 1000000u /* an application thread polls: it finds the work */
#define UR_LIGHT_SLEEP_NS 5000000u  /* ... and the engine thread only looks now and then */
#define UR_SOCK_LOOK_EVERY 8u       /* polls per look at the sockets while rings are active */
#define UR_SOCK_LOOK_MAX 256u       /* ... at most, after looks that found nothing */
#define UR_SPINNING_POLLS 8u        /* polls in a row, each within UR_POLLED_RECENTLY_NS: a spinner */
#define UR_SPIN_CLOCK_EVERY 8u      /* a spinner's polls per clock read */

struct watch {
	int fd;                        /* -1: a free slot */
	ur_fd_handler fn;
	void *arg;
	enum ur_watch_class cls;
	unsigned ctx;                  /* INLINE: the receive context */
};

/* A receive context past the first: its fds, the lock that lets one thread
 * at a time dispatch them, and the thread that sleeps on them. */
struct rx_ctx {
	struct ur_engine *e;
	unsigned index;                /* 1.. */
	int epfd;
	int wake_fd;                   /* eventfd: destroy tells the thread */
	struct watch wake;
	pthread_mutex_t dispatch_lock;
	pthread_t thread;
	bool threaded;
};

struct ur_engine {
	pthread_t thread;
	bool threaded;
	_Atomic bool stopping;         /* ur_engine_destroy: the thread leaves */
	int epfd;                      /* the inline set and the own set */
	int own_epfd;                  /* ENGINE class and the wake fd */
	int inline_epfd;               /* INLINE class */
	int wake_fd;                   /* eventfd: a timer earlier than the sleep */

	pthread_mutex_t dispatch_lock; /* one dispatcher at a time */

	pthread_mutex_t watch_lock;    /* watches[] */
	struct watch watches[UR_MAX_WATCH];
	struct watch inline_set, own_set, wake; /* the engine's own members */

	pthread_mutex_t timer_lock;    /* heap, nheap, reserved, sleep_until */
	struct ur_timer **heap;        /* heap[1..nheap], earliest first */
	unsigned nheap;
	uint64_t round_now;            /* ur_engine_run_timers' now while it runs; else 0 */
	unsigned reserved;             /* timers initialised: the heap's room */
	unsigned cap;                  /* heap[] entries allocated (heap[0] unused) */
	uint64_t sleep_until;          /* the engine thread sleeps until then; 0: awake */
	_Atomic uint64_t timer_next;   /* heap[1]'s deadline, UINT64_MAX: none (read unlocked) */

	/* Set before the work they poll can arrive, cleared after a quiesce:
	 * read without a lock by dispatchers. */
	struct ur_poller pollers[UR_MAX_POLLERS];
	_Atomic unsigned npollers;
	uint64_t spin_ns;
	_Atomic uint64_t last_app_poll; /* ns: an application thread polled */
	_Atomic bool light_sleep;       /* the thread naps without telling the pollers */
	_Atomic bool deep_sleep;        /* ... or sleeps, having told them */

	/* Application threads blocked in ur_engine_block_on: while there is
	 * one, the inline set is out of the engine thread's outer set (they
	 * take what it brings), and waiters_lock orders the moves. */
	pthread_mutex_t waiters_lock;
	unsigned waiters;

	unsigned nrx;                   /* receive contexts: 0 and rx[1..nrx-1] */
	struct rx_ctx rx[UR_ENGINE_MAX_RX];  /* rx[0] unused: context 0 is the above */
};

/* While this thread runs callbacks: 1 + the receive context's index (0:
 * none); quiesce must not wait for itself.  And whose. */
extern _Thread_local unsigned ur_engine_in_dispatch UR_TLS_HOT;
extern _Thread_local const struct ur_engine *ur_engine_dispatched UR_TLS_HOT;

/* Around the callbacks a thread runs, holding a dispatch lock of e's:
 * ctx 0 is the engine's own, 1.. its further receive contexts. */
static inline void ur_dispatch_enter(const struct ur_engine *e, unsigned ctx)
{
	ur_engine_in_dispatch = 1 + ctx;
	ur_engine_dispatched = e;
}

static inline void ur_dispatch_leave(void)
{
	ur_engine_in_dispatch = 0;
	ur_engine_dispatched = NULL;
}

/* engine_timer.c: the engine thread wakes to look again. */
void ur_engine_wake(struct ur_engine *e);
/* engine.c, for the other files of the reactor. */
void ur_engine_run_events(struct ur_engine *e, const struct epoll_event *evs, int n);
bool ur_engine_run_set(struct ur_engine *e, int epfd);
bool ur_engine_run_pollers(struct ur_engine *e);
bool ur_engine_pollers_active(struct ur_engine *e);
/* Whether a poller has work waiting, by a look that takes nothing. */
bool ur_engine_pollers_pending(struct ur_engine *e);

#endif
