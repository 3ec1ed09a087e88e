/* The reactor's timers: a binary heap ordered by deadline, under
 * timer_lock; arming one earlier than the engine thread's sleep wakes it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine_priv.h"
#include "util/lock.h"
#include "util/log.h"

/* ---- timers: a binary heap on deadline ----------------------------------- */

static void heap_set(struct ur_engine *e, unsigned pos, struct ur_timer *t)
{
	e->heap[pos] = t;
	t->heap_pos = pos;
}

static void sift_up(struct ur_engine *e, unsigned pos)
{
	struct ur_timer *t = e->heap[pos];

	while (pos > 1 && e->heap[pos / 2]->deadline > t->deadline) {
		heap_set(e, pos, e->heap[pos / 2]);
		pos /= 2;
	}
	heap_set(e, pos, t);
}

static void sift_down(struct ur_engine *e, unsigned pos)
{
	struct ur_timer *t = e->heap[pos];

	for (;;) {
		unsigned c = pos * 2;

		if (c > e->nheap)
			break;
		if (c + 1 <= e->nheap && e->heap[c + 1]->deadline < e->heap[c]->deadline)
			c++;
		if (e->heap[c]->deadline >= t->deadline)
			break;
		heap_set(e, pos, e->heap[c]);
		pos = c;
	}
	heap_set(e, pos, t);
}

/* timer_lock held: the earliest deadline, for polling threads that run
 * what is due without the lock (engine_app.c). */
static void publish_next(struct ur_engine *e)
{
	atomic_store_explicit(&e->timer_next, e->nheap ? e->heap[1]->deadline : UINT64_MAX,
			      memory_order_relaxed);
}

/* timer_lock held. */
static void heap_remove(struct ur_engine *e, struct ur_timer *t)
{
	unsigned pos = t->heap_pos;
	struct ur_timer *last = e->heap[e->nheap--];

	t->heap_pos = 0;
	if (last != t) {
		heap_set(e, pos, last);
		sift_up(e, pos);
		sift_down(e, last->heap_pos);
	}
	publish_next(e);
}

int ur_engine_timer_init(struct ur_engine *e, struct ur_timer *t, void (*fire)(struct ur_timer *t))
{
	int ret = 0;

	t->deadline = 0;
	t->heap_pos = 0;
	t->fire = fire;
	pthread_mutex_lock(&e->timer_lock);
	if (e->reserved + 2 > e->cap) {
		struct ur_timer **h = realloc(e->heap, (size_t)e->cap * 2 * sizeof(*h));

		if (h) {
			e->heap = h;
			e->cap *= 2;
		} else {
			ret = -ENOMEM;
		}
	}
	if (!ret)
		e->reserved++;
	pthread_mutex_unlock(&e->timer_lock);
	return ret;
}

/* The engine thread looks at its timers again (and at what else woke
 * it): the wake-up eventfd in its own set. */
void ur_engine_wake(struct ur_engine *e)
{
	uint64_t one = 1;

	if (write(e->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		ur_warn_ratelimited(NULL, "engine wake-up failed: %s", strerror(errno));
}

void ur_engine_timer_arm(struct ur_engine *e, struct ur_timer *t, uint64_t deadline)
{
	bool kick;

	if (!deadline)
		deadline = 1;              /* 0 means "not armed" */
	pthread_mutex_lock(&e->timer_lock);
	/* Armed while the timers run, at a deadline this round has reached:
	 * the next round's, behind the others due now.  A timer whose
	 * callback keeps it due would else hold the loop for ever, and the
	 * engine thread would never read its fds again. */
	if (e->round_now && deadline <= e->round_now)
		deadline = e->round_now + 1;
	t->deadline = deadline;
	if (t->heap_pos) {
		sift_up(e, t->heap_pos);
		sift_down(e, t->heap_pos);
	} else {
		e->heap[++e->nheap] = t;
		sift_up(e, e->nheap);
	}
	publish_next(e);
	kick = deadline < e->sleep_until;
	pthread_mutex_unlock(&e->timer_lock);
	if (kick)
		ur_engine_wake(e);
}

void ur_engine_timer_arm_by(struct ur_engine *e, struct ur_timer *t, uint64_t deadline)
{
	pthread_mutex_lock(&e->timer_lock);
	if (t->heap_pos && t->deadline <= deadline) {
		pthread_mutex_unlock(&e->timer_lock);
		return;
	}
	pthread_mutex_unlock(&e->timer_lock);
	ur_engine_timer_arm(e, t, deadline);
}

void ur_engine_timer_cancel(struct ur_engine *e, struct ur_timer *t)
{
	pthread_mutex_lock(&e->timer_lock);
	if (t->heap_pos)
		heap_remove(e, t);
	t->deadline = 0;
	pthread_mutex_unlock(&e->timer_lock);
}

void ur_engine_timer_fini(struct ur_engine *e, struct ur_timer *t)
{
	pthread_mutex_lock(&e->timer_lock);
	if (t->heap_pos)
		heap_remove(e, t);
	t->deadline = 0;
	e->reserved--;
	pthread_mutex_unlock(&e->timer_lock);
}

unsigned ur_engine_timers_armed(struct ur_engine *e)
{
	return ur_read_locked(mutex, &e->timer_lock, e->nheap);
}

void ur_engine_run_timers(struct ur_engine *e, uint64_t now)
{
	pthread_mutex_lock(&e->timer_lock);
	e->round_now = now;
	while (e->nheap && e->heap[1]->deadline <= now) {
		struct ur_timer *t = e->heap[1];

		heap_remove(e, t);
		t->deadline = 0;
		pthread_mutex_unlock(&e->timer_lock);
		t->fire(t);
		pthread_mutex_lock(&e->timer_lock);
	}
	e->round_now = 0;
	pthread_mutex_unlock(&e->timer_lock);
}
