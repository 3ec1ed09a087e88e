/* ur_starved_judge (rel/starved.h): a peer of this host runnable at two
 * looks a timeout apart and running under a quarter of the time between
 * is kept off the CPU, its silence not counted; asleep or stopped at
 * either look, or running its share, it is not.  ur_runs_judge: one that
 * ran a sixteenth of the time or more runs, and reads what it was sent.  The whole path (a peer
 * held off its CPU by a real-time thread, its pair ending well, and
 * RETRY_EXC_ERR without the check) is integ.frozen's starved.veth. */
#include "ut.h"

#include "rel/starved.h"

static void test_judge(void)
{
	const uint64_t span = 67000000;

	UT_CHECK(ur_starved_judge(span, 0, true, true));
	UT_CHECK(ur_starved_judge(span, span / 4 - 1, true, true));
	UT_CHECK(!ur_starved_judge(span, span / 4, true, true));   /* ran its share */
	UT_CHECK(!ur_starved_judge(span, 0, false, true));         /* asleep before */
	UT_CHECK(!ur_starved_judge(span, 0, true, false));         /* asleep or stopped now */
	UT_CHECK(!ur_starved_judge(0, 0, true, true));
}

static void test_runs(void)
{
	const uint64_t span = 67000000;

	UT_CHECK(ur_runs_judge(span, span / 16));
	UT_CHECK(ur_runs_judge(span, 2 * span));    /* two threads on two CPUs */
	UT_CHECK(!ur_runs_judge(span, span / 16 - 1));
	UT_CHECK(!ur_runs_judge(span, 0));          /* frozen or stopped */
	UT_CHECK(!ur_runs_judge(0, 0));
}

int main(void)
{
	UT_RUN(test_judge);
	UT_RUN(test_runs);
	return UT_DONE();
}
