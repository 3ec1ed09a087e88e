#include "util/fault_guard.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "util/copy.h"

/* The access a thread is inside, on its stack; NULL outside one.  Initial
 * exec: the handler reads it, and a dynamic TLS block may be allocated on
 * first touch, which a signal handler must not do. */
struct guard {
	sigjmp_buf env;
	uintptr_t lo[2], hi[2];      /* the ranges it may fault in */
};
static __thread struct guard *volatile active __attribute__((tls_model("initial-exec")));

static struct sigaction prev_segv, prev_bus;

/* Ranges being moved (ur_fault_guard_hold): hi 0 is a free entry. */
static struct {
	uintptr_t lo, hi;
} holds[UR_FAULT_HOLDS];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static bool within(const struct guard *g, uintptr_t a)
{
	for (int i = 0; i < 2; i++)
		if (a >= g->lo[i] && a < g->hi[i])
			return true;
	return false;
}

/* What would have happened without us. */
static void pass_on(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction *p = sig == SIGSEGV ? &prev_segv : &prev_bus;

	if (p->sa_flags & SA_SIGINFO) {
		p->sa_sigaction(sig, si, uc);
		return;
	}
	if (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN) {
		p->sa_handler(sig);
		return;
	}
	/* The default action: a fault repeats when the handler returns, a
	 * signal someone sent is sent again. */
	signal(sig, SIG_DFL);
	if (si->si_code <= 0)
		raise(sig);
}

/* A fault in a range that moves: wait until it has moved, and let the
 * access run again.  Only what a signal handler may call. */
static bool held(uintptr_t a)
{
	const struct timespec nap = { 0, 50000 };

	for (int i = 0; i < UR_FAULT_HOLDS; i++) {
		uintptr_t hi = __atomic_load_n(&holds[i].hi, __ATOMIC_ACQUIRE);

		if (!hi || a < __atomic_load_n(&holds[i].lo, __ATOMIC_RELAXED) || a >= hi)
			continue;
		while (__atomic_load_n(&holds[i].hi, __ATOMIC_ACQUIRE) == hi)
			nanosleep(&nap, NULL);
		return true;
	}
	return false;
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	struct guard *g = active;
	sigset_t fault_sigs;

	if (sig == SIGSEGV && si->si_code > 0 && held((uintptr_t)si->si_addr))
		return;
	if (!g || si->si_code <= 0 || !within(g, (uintptr_t)si->si_addr)) {
		pass_on(sig, si, uc);
		return;
	}
	active = NULL;
	/* The kernel blocked sig for the handler and siglongjmp(…, 0)
	 * restores no mask: unblock it, or the next fault kills. */
	sigemptyset(&fault_sigs);
	sigaddset(&fault_sigs, sig);
	pthread_sigmask(SIG_UNBLOCK, &fault_sigs, NULL);
	siglongjmp(g->env, 1);
}

typedef int sigaction_fn(int, const struct sigaction *, struct sigaction *);

/* libc's own sigaction: UCX's libucs exports a sigaction that silently
 * keeps its own handler for SIGSEGV and SIGBUS in place.  Its handler is
 * still called, through pass_on, for every fault that is not ours. */
static sigaction_fn *libc_sigaction(void)
{
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	sigaction_fn *fn = libc ? (sigaction_fn *)dlsym(libc, "sigaction") : NULL;

	if (libc)
		dlclose(libc);
	return fn ? fn : sigaction;
}

static void install(void)
{
	sigaction_fn *set = libc_sigaction();
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	set(SIGSEGV, &sa, &prev_segv);
	set(SIGBUS, &sa, &prev_bus);
}

void ur_fault_guard_install(void)
{
	pthread_once(&once, install);
}

int ur_fault_guard_hold(uintptr_t lo, uintptr_t hi)
{
	for (int i = 0; i < UR_FAULT_HOLDS; i++) {
		uintptr_t none = 0;

		if (__atomic_load_n(&holds[i].hi, __ATOMIC_RELAXED))
			continue;
		__atomic_store_n(&holds[i].lo, lo, __ATOMIC_RELAXED);
		if (__atomic_compare_exchange_n(&holds[i].hi, &none, hi, false, __ATOMIC_SEQ_CST,
						__ATOMIC_RELAXED))
			return i;
	}
	return -EBUSY;
}

void ur_fault_guard_release(int hold)
{
	__atomic_store_n(&holds[hold].hi, 0, __ATOMIC_RELEASE);
}

static void set_range(struct guard *g, int i, const void *p, size_t n)
{
	g->lo[i] = (uintptr_t)p;
	g->hi[i] = (uintptr_t)p + n;
}

bool ur_guarded_copy(void *dst, const void *src, size_t n)
{
	struct guard g;

	if (!n)
		return true;
	set_range(&g, 0, dst, n);
	set_range(&g, 1, src, n);
	if (sigsetjmp(g.env, 0))
		return false;
	active = &g;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	ur_memcpy(dst, src, n);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	active = NULL;
	return true;
}

/* Not seen by ThreadSanitizer: its atomics take a lock of its own, which a
 * fault inside one would leave held. */
__attribute__((no_sanitize("thread")))
bool ur_guarded_atomic(uint64_t *p, enum ur_guarded_op op, uint64_t a, uint64_t b, uint64_t *orig)
{
	struct guard g;
	uint64_t v = 0;

	set_range(&g, 0, p, sizeof(*p));
	set_range(&g, 1, p, sizeof(*p));
	if (sigsetjmp(g.env, 0))
		return false;
	active = &g;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	switch (op) {
	case UR_GUARDED_STORE:
		__atomic_store_n(p, a, __ATOMIC_SEQ_CST);
		break;
	case UR_GUARDED_CAS:
		v = a;
		__atomic_compare_exchange_n(p, &v, b, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		break;
	case UR_GUARDED_FADD:
		v = __atomic_fetch_add(p, a, __ATOMIC_SEQ_CST);
		break;
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	active = NULL;
	if (orig)
		*orig = v;
	return true;
}
