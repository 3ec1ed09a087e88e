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
	return n - 1;                               /* opendir's own fd */
}

/* uroce's threads ("uroce-engine", "uroce-rx1", ...): a sanitizer's
 * runtime may start one of its own at the first pthread_create. */
static int uroce_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[320], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "re");
		if (f && fgets(comm, sizeof(comm), f) && !strncmp(comm, "uroce", 5))
			n++;
		if (f)
			fclose(f);
	}
	closedir(d);
	return n;
}

static int timer_err;
static int threads_at_failure;

static int timer_init_or_fail(struct ur_engine *e, struct ur_timer *t,
			      void (*fire)(struct ur_timer *t))
{
	if (!timer_err)
		return ur_engine_timer_init(e, t, fire);
	threads_at_failure = uroce_threads();
	return timer_err;
}

#define ur_engine_timer_init timer_init_or_fail
#include "rel/stack_open.c"
#undef ur_engine_timer_init

static void test_failure_undone(void)
{
	struct ur_stack *s = (struct ur_stack *)&s;  /* stale: a failure clears it */
	int threads, fds;

	/* What stays with the process whatever happens: its registry slot,
	 * the capture switch. */
	UT_EQ(ur_registry_attach(&ur_process()->registry), 0);
	ur_capture_attach();
	threads = uroce_threads();
	fds = entries("/proc/self/fd");
	UT_EQ(threads, 0);

	timer_err = -ENOMEM;
	UT_EQ(open_stack(NULL, 0, &s), -ENOMEM);
	UT_CHECK(s == NULL);
	UT_CHECK(threads_at_failure > threads);      /* the engine thread had started */
	UT_EQ(uroce_threads(), threads);
	UT_EQ(entries("/proc/self/fd"), fds);
	UT_CHECK(exiting == NULL);

	timer_err = 0;                              /* and a stack still opens */
	UT_EQ(open_stack(NULL, 0, &s), 0);
	UT_CHECK(s != NULL);
	UT_CHECK(uroce_threads() > threads);
}

int main(void)
{
	ut_env_init("ut0:lo");
	UT_RUN(test_failure_undone);
	return UT_DONE();
}
