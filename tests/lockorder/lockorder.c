/* A lock-order recorder, loaded with LD_PRELOAD into programs running on
 * uroce.  It wraps the pthread lock calls and, whenever a call made from
 * uroce's own libraries takes a lock while the thread holds another that
 * uroce's code took, writes the pair of call sites once to
 * $UROCE_LOCKORDER_DIR/edges.PID (the object and the offset of each call).
 * check.py maps the sites to the lock classes of docs/design.md's lock
 * table and fails on a pair out of that order.
 *
 * A trylock never waits, so it orders nothing: it is held (what is taken
 * under it nests in it) but no edge leads to it; a timed lock neither (it
 * gives up).  Locks taken by the
 * program or by other libraries are not followed; a program's lock held
 * around a verb is the program's business.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_HELD 32
#define MAX_OBJS 8
#define EDGE_SLOTS 8192

struct obj_range {
	uintptr_t start, end, base;
	char path[PATH_MAX];
};

struct held {
	const void *lock;
	const void *site;
};

static struct obj_range objs[MAX_OBJS];
static atomic_int nobjs;
static atomic_long last_scan_ns;
static atomic_flag scanning = ATOMIC_FLAG_INIT;

static _Atomic uint64_t edge_keys[EDGE_SLOTS]; /* hash of the pair; 0 = empty */
static atomic_int out_fd = -1; /* opened at the first pair: most programs never write */

static __thread struct held held[MAX_HELD];
static __thread int nheld;
static __thread int inside; /* in a wrapper's own work: take nothing */

static int (*real_mutex_lock)(pthread_mutex_t *);
static int (*real_mutex_trylock)(pthread_mutex_t *);
static int (*real_mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
static int (*real_mutex_unlock)(pthread_mutex_t *);
static int (*real_spin_lock)(pthread_spinlock_t *);
static int (*real_spin_trylock)(pthread_spinlock_t *);
static int (*real_spin_unlock)(pthread_spinlock_t *);
static int (*real_rw_rdlock)(pthread_rwlock_t *);
static int (*real_rw_wrlock)(pthread_rwlock_t *);
static int (*real_rw_tryrdlock)(pthread_rwlock_t *);
static int (*real_rw_trywrlock)(pthread_rwlock_t *);
static int (*real_rw_unlock)(pthread_rwlock_t *);

/* glibc's own names, used until dlsym has answered: dlsym may lock. */
extern int __pthread_mutex_lock(pthread_mutex_t *);
extern int __pthread_mutex_trylock(pthread_mutex_t *);
extern int __pthread_mutex_unlock(pthread_mutex_t *);

static void resolve(void)
{
	static atomic_int done;
	if (atomic_load_explicit(&done, memory_order_acquire))
		return;
	inside++;
	real_mutex_lock = dlsym(RTLD_NEXT, "pthread_mutex_lock");
	real_mutex_trylock = dlsym(RTLD_NEXT, "pthread_mutex_trylock");
	real_mutex_timedlock = dlsym(RTLD_NEXT, "pthread_mutex_timedlock");
	real_mutex_unlock = dlsym(RTLD_NEXT, "pthread_mutex_unlock");
	real_spin_lock = dlsym(RTLD_NEXT, "pthread_spin_lock");
	real_spin_trylock = dlsym(RTLD_NEXT, "pthread_spin_trylock");
	real_spin_unlock = dlsym(RTLD_NEXT, "pthread_spin_unlock");
	real_rw_rdlock = dlsym(RTLD_NEXT, "pthread_rwlock_rdlock");
	real_rw_wrlock = dlsym(RTLD_NEXT, "pthread_rwlock_wrlock");
	real_rw_tryrdlock = dlsym(RTLD_NEXT, "pthread_rwlock_tryrdlock");
	real_rw_trywrlock = dlsym(RTLD_NEXT, "pthread_rwlock_trywrlock");
	real_rw_unlock = dlsym(RTLD_NEXT, "pthread_rwlock_unlock");
	inside--;
	atomic_store_explicit(&done, 1, memory_order_release);
}

/* The objects we follow: uroce's libraries, by the names they are built
 * with (libibverbs, librdmacm, libmlx5 from a directory holding all
 * three, checked by UROCE_LOCKORDER_LIBDIR when set). */
static int add_obj(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	int *n = arg;
	const char *dir = getenv("UROCE_LOCKORDER_LIBDIR");
	const char *name = info->dlpi_name;
	if (!name || !*name || *n >= MAX_OBJS)
		return 0;
	if (dir && strncmp(name, dir, strlen(dir)) != 0)
		return 0;
	if (!strstr(name, "/libibverbs.so") && !strstr(name, "/librdmacm.so") &&
	    !strstr(name, "/libmlx5.so"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		struct obj_range *o = &objs[*n];
		o->base = info->dlpi_addr;
		o->start = info->dlpi_addr + ph->p_vaddr;
		o->end = o->start + ph->p_memsz;
		snprintf(o->path, sizeof(o->path), "%s", name);
		(*n)++;
		break;
	}
	return 0;
}

static void scan(void)
{
	if (atomic_flag_test_and_set(&scanning))
		return;
	int n = 0;
	inside++;
	dl_iterate_phdr(add_obj, &n);
	inside--;
	atomic_store(&nobjs, n);
	atomic_flag_clear(&scanning);
}

static long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* The object a call site lies in, or -1.  Unknown sites rescan at most
 * every 100 ms, for libraries loaded later (python's ctypes). */
static int obj_of(const void *site)
{
	uintptr_t a = (uintptr_t)site;
	for (int pass = 0; pass < 2; pass++) {
		int n = atomic_load(&nobjs);
		for (int i = 0; i < n; i++)
			if (a >= objs[i].start && a < objs[i].end)
				return i;
		long t = now_ns(), last = atomic_load(&last_scan_ns);
		if (pass || t - last < 100000000L ||
		    !atomic_compare_exchange_strong(&last_scan_ns, &last, t))
			return -1;
		scan();
	}
	return -1;
}

static void open_out(void)
{
	const char *dir = getenv("UROCE_LOCKORDER_DIR");
	char path[PATH_MAX];
	int fd, none = -1;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/edges.%d", dir, (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd >= 0 && !atomic_compare_exchange_strong(&out_fd, &none, fd))
		close(fd); /* another thread's first pair came first */
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb93fe51a62e5ULL;
	return x ^ (x >> 33);
}

/* Writes the pair once per process (a table of hashes, never emptied). */
static void note_edge(const void *outer, const void *inner, int inner_obj)
{
	int oo = obj_of(outer);
	if (oo < 0)
		return;
	uint64_t key = mix((uintptr_t)outer * 31 + (uintptr_t)inner) | 1;
	for (unsigned i = 0; i < EDGE_SLOTS; i++) {
		_Atomic uint64_t *slot = &edge_keys[(key + i) % EDGE_SLOTS];
		uint64_t cur = atomic_load(slot);
		if (cur == key)
			return;
		if (cur == 0 && atomic_compare_exchange_strong(slot, &cur, key))
			break;
		if (cur == key)
			return;
	}
	if (out_fd < 0)
		open_out();
	if (out_fd < 0)
		return;
	char line[2 * PATH_MAX + 64];
	int len = snprintf(line, sizeof(line), "%s %#lx %s %#lx\n",
			   objs[oo].path, (unsigned long)((uintptr_t)outer - objs[oo].base),
			   objs[inner_obj].path,
			   (unsigned long)((uintptr_t)inner - objs[inner_obj].base));
	if (len > 0 && write(out_fd, line, (size_t)len) < 0)
		return;
}

/* After a lock was taken at SITE: edges from what is held, then held. */
static void taken(const void *lock, const void *site, int tried)
{
	if (inside)
		return;
	inside++;
	int o = obj_of(site);
	if (o >= 0) {
		if (!tried)
			for (int i = 0; i < nheld; i++)
				if (held[i].lock != lock)
					note_edge(held[i].site, site, o);
		if (nheld < MAX_HELD)
			held[nheld++] = (struct held){ lock, site };
	}
	inside--;
}

static void released(const void *lock)
{
	for (int i = nheld - 1; i >= 0; i--)
		if (held[i].lock == lock) {
			memmove(&held[i], &held[i + 1], (size_t)(nheld - i - 1) * sizeof(held[0]));
			nheld--;
			return;
		}
}

#define SITE __builtin_return_address(0)

int pthread_mutex_lock(pthread_mutex_t *m)
{
	if (!real_mutex_lock) {
		if (inside)
			return __pthread_mutex_lock(m);
		resolve();
	}
	int rc = real_mutex_lock(m);
	if (!rc)
		taken(m, SITE, 0);
	return rc;
}

int pthread_mutex_trylock(pthread_mutex_t *m)
{
	if (!real_mutex_trylock) {
		if (inside)
			return __pthread_mutex_trylock(m);
		resolve();
	}
	int rc = real_mutex_trylock(m);
	if (!rc)
		taken(m, SITE, 1);
	return rc;
}

int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *t)
{
	resolve();
	int rc = real_mutex_timedlock(m, t);
	if (!rc)
		taken(m, SITE, 1); /* a bounded wait: it gives up, so it orders nothing */
	return rc;
}

int pthread_mutex_unlock(pthread_mutex_t *m)
{
	if (!real_mutex_unlock) {
		if (inside)
			return __pthread_mutex_unlock(m);
		resolve();
	}
	released(m);
	return real_mutex_unlock(m);
}

#define WRAP(name, type, real, tried)                 \
	int name(type *l)                             \
	{                                             \
		resolve();                            \
		int rc = real(l);                     \
		if (!rc)                              \
			taken((const void *)l, SITE, tried); \
		return rc;                            \
	}
WRAP(pthread_spin_lock, pthread_spinlock_t, real_spin_lock, 0)
WRAP(pthread_spin_trylock, pthread_spinlock_t, real_spin_trylock, 1)
WRAP(pthread_rwlock_rdlock, pthread_rwlock_t, real_rw_rdlock, 0)
WRAP(pthread_rwlock_wrlock, pthread_rwlock_t, real_rw_wrlock, 0)
WRAP(pthread_rwlock_tryrdlock, pthread_rwlock_t, real_rw_tryrdlock, 1)
WRAP(pthread_rwlock_trywrlock, pthread_rwlock_t, real_rw_trywrlock, 1)

int pthread_spin_unlock(pthread_spinlock_t *l)
{
	resolve();
	released((const void *)l);
	return real_spin_unlock(l);
}

int pthread_rwlock_unlock(pthread_rwlock_t *l)
{
	resolve();
	released((const void *)l);
	return real_rw_unlock(l);
}

__attribute__((constructor)) static void lockorder_init(void)
{
	resolve();
	scan();
}
