/* fork support: always safe, so nothing to set up and no madvise. */
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ut.h"

#include "verbs/fork.c"

static void test_status(void)
{
	UT_EQ(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);
	UT_EQ(ibv_fork_init(), 0);
	UT_EQ(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);
	UT_EQ(ibv_fork_init(), 0);      /* idempotent */
}

/* rdma-core refuses a late ibv_fork_init() (EINVAL) once a range call has
 * run without it; with nothing to set up there is no "too late". */
static void test_late_init(void)
{
	char buf[64];

	UT_EQ(ibv_dontfork_range(buf, sizeof(buf)), 0);
	UT_EQ(ibv_dofork_range(buf, sizeof(buf)), 0);
	UT_EQ(ibv_fork_init(), 0);
}

/* A "registered" range stays mapped in a child: had the range call applied
 * MADV_DONTFORK, the child's read would fault. */
static void test_range_stays_inherited(void)
{
	long page = sysconf(_SC_PAGESIZE);
	volatile char *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int status = 0;
	pid_t pid;

	UT_CHECK(p != MAP_FAILED);
	if (p == MAP_FAILED)
		return;
	p[0] = 42;
	UT_EQ(ibv_fork_init(), 0);
	UT_EQ(ibv_dontfork_range((void *)p, (size_t)page), 0);
	pid = fork();
	if (pid == 0)
		_exit(p[0] == 42 ? 0 : 1);
	UT_CHECK(pid > 0);
	UT_EQ(waitpid(pid, &status, 0), pid);
	UT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	munmap((void *)p, (size_t)page);
}

int main(void)
{
	UT_RUN(test_status);
	UT_RUN(test_late_init);
	UT_RUN(test_range_stays_inherited);
	return UT_DONE();
}
