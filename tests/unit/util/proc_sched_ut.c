/* ur_proc_sched: a process's threads' time on a CPU and how many are
 * runnable, read from /proc: this process (running), a child spinning
 * (runnable), asleep (none), stopped by SIGSTOP (none: a stopped peer is
 * not waiting for a CPU, rel/starved.h), and one that has gone (an
 * error); and a recent look served again (ur_proc_sched_recent). */
#include "ut.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/proc_sched.h"

static pid_t child(int busy)
{
	pid_t pid = fork();

	if (pid == 0) {
		for (;;)
			if (!busy)
				pause();
	}
	return pid;
}

static void settle(void)
{
	struct timespec ts = { 0, 50 * 1000 * 1000 };

	nanosleep(&ts, NULL);
}

static void end(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void test_self(void)
{
	struct timespec t0, t;
	uint64_t ran = 0;
	unsigned runnable = 0;

	/* Run a while first: a thread's time is brought up to date at ticks
	 * and switches, and a fresh process may read 0. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 30000000L);
	UT_EQ(ur_proc_sched(getpid(), &ran, &runnable), 0);
	UT_CHECK(ran > 0);
	UT_CHECK(runnable >= 1);   /* this thread, reading */
}

static void test_children(void)
{
	pid_t busy = child(1), idle = child(0), stopped = child(1);
	uint64_t ran0 = 0, ran = 0;
	unsigned runnable = 0;

	UT_CHECK(busy > 0 && idle > 0 && stopped > 0);
	settle();
	UT_EQ(kill(stopped, SIGSTOP), 0);
	UT_EQ(ur_proc_sched(busy, &ran0, &runnable), 0);
	UT_EQ(runnable, 1u);
	settle();
	UT_EQ(ur_proc_sched(busy, &ran, &runnable), 0);
	UT_CHECK(ran > ran0);
	/* Asleep once it has reached pause(): a child that has not run yet
	 * (a loaded host, a ThreadSanitizer child's start) is runnable
	 * until then.  Two seconds at most. */
	for (int i = 0; i < 200; i++) {
		UT_EQ(ur_proc_sched(idle, &ran, &runnable), 0);
		if (!runnable)
			break;
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
	UT_EQ(runnable, 0u);
	/* SIGSTOP takes effect when the child next enters the kernel: a
	 * spinner is stopped by the time the signal is delivered and waited
	 * for (waitpid WUNTRACED). */
	UT_EQ(waitpid(stopped, NULL, WUNTRACED), stopped);
	UT_EQ(ur_proc_sched(stopped, &ran, &runnable), 0);
	UT_EQ(runnable, 0u);
	end(busy);
	end(idle);
	end(stopped);
	UT_CHECK(ur_proc_sched(busy, &ran, &runnable) < 0);
}

/* ur_proc_sched_recent: a look no older than the age asked for is served
 * again (by the caller's clock), an older one is taken anew, and each pid
 * has its own; a pid that has gone is an error, not served from before. */
static void test_recent(void)
{
	const uint64_t ms = 1000000, t0 = 1000 * ms;
	pid_t busy = child(1), other = child(1);
	struct ur_sched_look a, b, c;

	UT_CHECK(busy > 0 && other > 0);
	UT_EQ(ur_proc_sched_recent(busy, t0, 2 * ms, &a), 0);
	UT_CHECK(a.at == t0);
	settle();                              /* it runs meanwhile */
	UT_EQ(ur_proc_sched_recent(busy, t0 + 2 * ms, 2 * ms, &b), 0);
	UT_CHECK(b.at == t0 && b.ran == a.ran && b.runnable == a.runnable);
	UT_EQ(ur_proc_sched_recent(busy, t0 + 3 * ms, 2 * ms, &b), 0);
	UT_CHECK(b.at == t0 + 3 * ms);
	UT_CHECK(b.ran > a.ran);
	UT_EQ(ur_proc_sched_recent(other, t0 + 3 * ms, 2 * ms, &c), 0);
	UT_CHECK(c.at == t0 + 3 * ms);
	end(busy);
	end(other);
	UT_CHECK(ur_proc_sched_recent(busy, t0 + 6 * ms, 2 * ms, &a) < 0);
	UT_CHECK(ur_proc_sched_recent(other, t0 + 4 * ms, 2 * ms, &c) == 0);  /* remembered */
}

int main(void)
{
	UT_RUN(test_self);
	UT_RUN(test_children);
	UT_RUN(test_recent);
	return UT_DONE();
}
