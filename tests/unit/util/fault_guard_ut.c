/* util/fault_guard: an access to memory unmapped (or made inaccessible)
 * under it returns false and the process lives on; every other fault
 * still reaches the handler installed before, or kills as it would have.
 * A write into a held range (a move, util/vm_share.c) waits for the
 * release and is made then. */
#include "ut.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/fault_guard.h"

static long page;

/* Two pages: the first mapped, the second not. */
static uint8_t *half_mapped(void)
{
	uint8_t *p = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	munmap(p + page, (size_t)page);
	return p;
}

static void test_copy(void)
{
	uint8_t *p = half_mapped(), src[256];
	uint8_t *gone;

	UT_CHECK(p != NULL);
	if (!p)
		return;
	memset(src, 0xab, sizeof(src));
	gone = p + page;
	/* Into and out of a mapped page: copied. */
	UT_CHECK(ur_guarded_copy(p, src, sizeof(src)));
	UT_EQ(p[255], 0xab);
	UT_CHECK(ur_guarded_copy(src, p + 16, 8));
	/* Into, out of, and across into an unmapped page: refused, and again
	 * (the handler is still in place, the signal not left blocked). */
	for (int i = 0; i < 3; i++) {
		UT_CHECK(!ur_guarded_copy(gone, src, sizeof(src)));
		UT_CHECK(!ur_guarded_copy(src, gone + 64, 64));
		UT_CHECK(!ur_guarded_copy(gone - 128, src, sizeof(src)));
	}
	UT_EQ(p[page - 128], 0xab);    /* the mapped part was copied */
	/* Every size the copy has a path for (libc, vector, large). */
	for (size_t n = 1; n <= (512u << 10); n *= 4) {
		uint8_t *big = malloc(n);

		UT_CHECK(big && !ur_guarded_copy(gone, big, n));
		free(big);
	}
	/* Read-only memory faults on writing (SIGSEGV, SEGV_ACCERR). */
	mprotect(p, (size_t)page, PROT_READ);
	UT_CHECK(!ur_guarded_copy(p, src, 8));
	UT_CHECK(ur_guarded_copy(src, p, 8));
	munmap(p, (size_t)page);
}

static void test_atomic(void)
{
	uint8_t *p = half_mapped();
	uint64_t *w, *gone, orig = 0;

	UT_CHECK(p != NULL);
	if (!p)
		return;
	w = (uint64_t *)p;
	gone = (uint64_t *)(p + page);
	*w = 5;
	UT_CHECK(ur_guarded_atomic(w, UR_GUARDED_FADD, 3, 0, &orig));
	UT_EQ(orig, 5);
	UT_EQ(*w, 8);
	UT_CHECK(ur_guarded_atomic(w, UR_GUARDED_CAS, 8, 42, &orig));
	UT_EQ(orig, 8);
	UT_EQ(*w, 42);
	UT_CHECK(ur_guarded_atomic(w, UR_GUARDED_CAS, 8, 1, &orig));   /* no match */
	UT_EQ(orig, 42);
	UT_EQ(*w, 42);
	UT_CHECK(ur_guarded_atomic(w, UR_GUARDED_STORE, 7, 0, NULL));
	UT_EQ(*w, 7);
	UT_CHECK(!ur_guarded_atomic(gone, UR_GUARDED_FADD, 1, 0, &orig));
	UT_CHECK(!ur_guarded_atomic(gone, UR_GUARDED_CAS, 0, 1, &orig));
	UT_CHECK(!ur_guarded_atomic(gone, UR_GUARDED_STORE, 1, 0, NULL));
	munmap(p, (size_t)page);
}

/* Outside a guarded access, a fault goes where it went before. */
static sigjmp_buf app_env;
static volatile sig_atomic_t app_saw;

static void app_handler(int sig)
{
	app_saw = sig;
	siglongjmp(app_env, 1);
}

static void test_other_faults_pass_on(void)
{
	volatile uint8_t *p = half_mapped();
	int status = 0;
	pid_t pid;

	UT_CHECK(p != NULL);
	if (!p)
		return;
	/* The application's handler (installed before ours, see main). */
	if (!sigsetjmp(app_env, 1))
		p[page] = 1;
	UT_EQ(app_saw, SIGSEGV);
	/* No handler before ours: the default action, a SIGSEGV death (in a
	 * fresh process, where ours is the first). */
	pid = fork();
	if (pid == 0) {
		execl("/proc/self/exe", "fault_guard_ut", "--fault-unguarded", (char *)NULL);
		_exit(127);
	}
	UT_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	UT_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
	munmap((void *)p, (size_t)page);
}

/* The writer's byte and the test's look at it meet on purpose (the look
 * says the write has not landed yet): both are atomic.  A plain store is
 * recorded by ThreadSanitizer before it faults, and the look raced with it. */
static uint8_t *held_page;
static int wrote;

static void *write_held(void *arg)
{
	(void)arg;
	__atomic_store_n(&held_page[7], 0x42, __ATOMIC_RELAXED);   /* faults: read-only while held */
	__atomic_store_n(&wrote, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void test_hold(void)
{
	uint8_t *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	pthread_t t;
	int hold;

	UT_CHECK(p != MAP_FAILED);
	if (p == MAP_FAILED)
		return;
	hold = ur_fault_guard_hold((uintptr_t)p, (uintptr_t)p + (uintptr_t)page);
	UT_CHECK(hold >= 0);
	UT_CHECK(!mprotect(p, (size_t)page, PROT_READ));
	held_page = p;
	UT_CHECK(!pthread_create(&t, NULL, write_held, NULL));
	usleep(100000);
	/* The writer waits in the handler while the range is held. */
	UT_EQ(__atomic_load_n(&wrote, __ATOMIC_ACQUIRE), 0);
	UT_EQ(__atomic_load_n(&p[7], __ATOMIC_RELAXED), 0);
	UT_CHECK(!mprotect(p, (size_t)page, PROT_READ | PROT_WRITE));
	ur_fault_guard_release(hold);
	pthread_join(t, NULL);
	UT_EQ(wrote, 1);
	UT_EQ(p[7], 0x42);
	munmap(p, (size_t)page);
}

int main(int argc, char **argv)
{
	page = sysconf(_SC_PAGESIZE);
	if (argc > 1 && !strcmp(argv[1], "--fault-unguarded")) {
		volatile uint8_t *p = half_mapped();

		signal(SIGSEGV, SIG_DFL);
		ur_fault_guard_install();
		p[page] = 1;
		return 0;
	}
	signal(SIGSEGV, app_handler);
	ur_fault_guard_install();
	UT_RUN(test_copy);
	UT_RUN(test_atomic);
	UT_RUN(test_other_faults_pass_on);
	UT_RUN(test_hold);
	return UT_DONE();
}
