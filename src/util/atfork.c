/* One pthread_atfork for the process (util/atfork.h). */
#include "util/atfork.h"

#include <pthread.h>
#include <stdbool.h>

static const struct ur_atfork_hooks *slots[UR_ATFORK_SLOTS];
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
/* The slots whose prepare ran in this thread's fork: a slot filled
 * meanwhile gets no parent or child call it was not prepared for. */
static __thread unsigned prepared;
/* One more in each child; read by any thread, written by the child's only
 * thread before any other exists. */
static unsigned generation = 1;

static void at_prepare(void)
{
	prepared = 0;
	for (int i = 0; i < UR_ATFORK_SLOTS; i++) {
		const struct ur_atfork_hooks *h = __atomic_load_n(&slots[i], __ATOMIC_ACQUIRE);

		if (!h)
			continue;
		prepared |= 1u << i;
		if (h->prepare)
			h->prepare();
	}
}

static void at_parent(void)
{
	for (int i = UR_ATFORK_SLOTS - 1; i >= 0; i--)
		if (prepared & (1u << i) && slots[i]->parent)
			slots[i]->parent();
}

static void at_child(void)
{
	/* First, so that the slots' child hooks see the child's generation. */
	__atomic_store_n(&generation, generation + 1, __ATOMIC_RELAXED);
	for (int i = UR_ATFORK_SLOTS - 1; i >= 0; i--)
		if (prepared & (1u << i) && slots[i]->child)
			slots[i]->child();
}

static void install(void)
{
	pthread_atfork(at_prepare, at_parent, at_child);
}

void ur_atfork_register(enum ur_atfork_slot slot, const struct ur_atfork_hooks *hooks)
{
	const struct ur_atfork_hooks *none = NULL;

	pthread_once(&atfork_once, install);
	__atomic_compare_exchange_n(&slots[slot], &none, hooks, false, __ATOMIC_RELEASE,
				    __ATOMIC_RELAXED);
}

unsigned ur_fork_generation(void)
{
	/* Installed before any state records a generation, so no fork after
	 * that goes unseen. */
	pthread_once(&atfork_once, install);
	return __atomic_load_n(&generation, __ATOMIC_RELAXED);
}
