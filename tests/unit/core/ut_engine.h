/* The progress engine without its thread, white-box: src/engine/engine.c is
 * compiled into the test with pthread_create replaced by a stub, so that the
 * engine exists (QP table, host registry, UDP sockets in the test's private
 * namespace) but nothing runs behind the test's back.  Timers fire and
 * stalled QPs resume only when the test calls run_timers(), run_gtimers(),
 * ur_comp_timers() or ur_engine_writable() itself, which makes every
 * retransmission and RNR scenario deterministic.
 *
 * The test's translation unit then defines every symbol of engine.c, so the
 * linker never takes engine.c.o from the uroce_core archive.
 */
#ifndef UROCE_TESTS_UT_ENGINE_H
#define UROCE_TESTS_UT_ENGINE_H

#include <pthread.h>

static int ut_engine_thread_created;

static inline int ut_no_thread(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	(void)attr;
	(void)fn;
	(void)arg;
	*t = pthread_self();
	ut_engine_thread_created++;
	return 0;
}

#define pthread_create ut_no_thread
#define pthread_setname_np(t, name) ((void)(t), (void)(name))
#include "engine/engine.c"
#undef pthread_create
#undef pthread_setname_np

/* Runs the engine's QP timers as its thread would at time now. */
static inline void ut_engine_run_timers_at(uint64_t now)
{
	struct ur_engine *e = ur_engine_get();
	struct ur_qp *due[256];
	struct ur_list *pos, *tmp;
	int n = 0;

	pthread_rwlock_rdlock(&e->table_lock);
	pthread_mutex_lock(&e->timer_lock);
	ur_list_for_each_safe(pos, tmp, &e->timers) {
		struct ur_qp *qp = ur_list_entry(pos, struct ur_qp, timer_link);

		if (qp->timer_min && qp->timer_min <= now && n < (int)UR_ARRAY_SIZE(due)) {
			ur_list_del(pos);
			qp->timer_min = 0;
			due[n++] = qp;
		}
	}
	pthread_mutex_unlock(&e->timer_lock);
	for (int i = 0; i < n; i++) {
		pthread_mutex_lock(&due[i]->lock);
		ur_comp_timers(due[i], now);
		ur_engine_timers_changed(due[i]);
		pthread_mutex_unlock(&due[i]->lock);
	}
	run_gtimers(e, now);
	pthread_rwlock_unlock(&e->table_lock);
}

#endif
