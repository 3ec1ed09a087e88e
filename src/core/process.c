/* The process's objects (core/process.h), made with the library, and what
 * becomes of them around fork(). */
#include "core/process.h"

#include "util/atfork.h"

static struct ur_process process = {
	.devices = { .lock = PTHREAD_MUTEX_INITIALIZER },
	.xrcds = { .lock = PTHREAD_MUTEX_INITIALIZER, .all = UR_LIST_INIT(process.xrcds.all) },
};
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* Held across fork(), in the lock order, so that the child's copy of
 * either list is whole and its lock free. */
static void lock_for_fork(void)
{
	pthread_mutex_lock(&process.devices.lock);
	pthread_mutex_lock(&process.xrcds.lock);
	/* A call, not a jump: the lock-order recorder names a lock by where
	 * its call returns (rel/stack_open.c's lock_for_fork says more). */
	__asm__ volatile("" ::: "memory");
}

static void unlock_after_fork(void)
{
	pthread_mutex_unlock(&process.xrcds.lock);
	pthread_mutex_unlock(&process.devices.lock);
}

/* The parent's XRC domains are the parent's: each names a context of the
 * parent's, which the child cannot use, so one the child opens through the
 * same file must be its own.  Their memory is left (nothing is freed in a
 * child hook), as the parent's contexts are. */
static void child_after_fork(void)
{
	ur_list_init(&process.xrcds.all);
	unlock_after_fork();
}

static void watch_forks(void)
{
	static const struct ur_atfork_hooks hooks = {
		lock_for_fork, unlock_after_fork, child_after_fork,
	};

	ur_atfork_register(UR_ATFORK_PROCESS, &hooks);
}

struct ur_process *ur_process(void)
{
	pthread_once(&fork_once, watch_forks);
	return &process;
}
