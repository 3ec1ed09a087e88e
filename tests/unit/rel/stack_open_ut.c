/* A stack that fails after its engine thread started leaves nothing
 * behind: no thread, no fd.  Its last step (the housekeeping timer) is
 * made to fail, so that all before it (the engine and its threads, both
 * transports, the resource window) is undone; white-box, stack_open.c
 * included. */
#include "ut.h"
#include "ut_env.h"

#include <dirent.h>

#include "engine/engine.h"
#include "xport/capture.h"

static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - (!strcmp(dir, "/proc/self/fd"));  /* opendir's own */
}

static int timer_err;
static int threads_at_failure;

static int timer_init_or_fail(struct ur_engine *e, struct ur_timer *t,
			      void (*fire)(struct ur_timer *t))
{
	if (!timer_err)
		return ur_engine_timer_init(e, t, fire);
	threads_at_failure = entries("/proc/self/task");
	return timer_err;
}

#define ur_engine_timer_init timer_init_or_fail
#include "rel/stack_open.c"
#undef ur_engine_timer_init

static void test_failure_undone(void)
{
	struct ur_stack *s = NULL;
	int threads, fds;

	/* What stays with the process whatever happens: its registry slot,
	 * the capture switch. */
	UT_EQ(ur_registry_attach(), 0);
	ur_capture_attach();
	threads = entries("/proc/self/task");
	fds = entries("/proc/self/fd");
	UT_EQ(threads, 1);

	timer_err = -ENOMEM;
	UT_EQ(open_stack(NULL, 0, &s), -ENOMEM);
	UT_CHECK(s == NULL);
	UT_CHECK(threads_at_failure > threads);      /* the engine thread had started */
	UT_EQ(entries("/proc/self/task"), threads);
	UT_EQ(entries("/proc/self/fd"), fds);
	UT_CHECK(exiting == NULL);

	timer_err = 0;                              /* and a stack still opens */
	UT_EQ(open_stack(NULL, 0, &s), 0);
	UT_CHECK(s != NULL);
	UT_CHECK(entries("/proc/self/task") > threads);
}

int main(void)
{
	ut_env_init("ut0:lo");
	UT_RUN(test_failure_undone);
	return UT_DONE();
}
