/* The process's objects (core/process.h), made with the library, and what
 * becomes of them around fork(). */
#include "core/process.h"

#include "util/atfork.h"

static struct ur_process process = {
	.devices = { .lock = PTHREAD_MUTEX_INITIALIZER },
	.registry = UR_REGISTRY_INIT,
	.xrcds = { .lock = PTHREAD_MUTEX_INITIALIZER, .all = UR_LIST_INIT(process.xrcds.all) },
};
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* Each list's lock is held across fork(), in the lock order (the
 * registry's slot comes between them: host/registry_slots.c holds its
 * lock, registered by its first attach), so that the child's copy is whole
 * and its lock free.  A call, not a jump, after each lock: the lock-order
 * recorder names a lock by where its call returns (rel/stack_open.c). */
static void lock_devices(void)
{
	pthread_mutex_lock(&process.devices.lock);
	__asm__ volatile("" ::: "memory");
}

static void unlock_devices(void)
{
	pthread_mutex_unlock(&process.devices.lock);
}

static void lock_xrcds(void)
{
	pthread_mutex_lock(&process.xrcds.lock);
	__asm__ volatile("" ::: "memory");
}

static void unlock_xrcds(void)
{
	pthread_mutex_unlock(&process.xrcds.lock);
}

/* The parent's XRC domains are the parent's: each names a context of the
 * parent's, which the child cannot use, so one the child opens through the
 * same file must be its own.  Their memory is left (nothing is freed in a
 * child hook), as the parent's contexts are. */
static void child_xrcds(void)
{
	ur_list_init(&process.xrcds.all);
	unlock_xrcds();
}

static void watch_forks(void)
{
	static const struct ur_atfork_hooks devices = { lock_devices, unlock_devices, unlock_devices };
	static const struct ur_atfork_hooks xrcds = { lock_xrcds, unlock_xrcds, child_xrcds };

	ur_atfork_register(UR_ATFORK_DEVICES, &devices);
	ur_atfork_register(UR_ATFORK_XRCDS, &xrcds);
}

struct ur_process *ur_process(void)
{
	pthread_once(&fork_once, watch_forks);
	return &process;
}
