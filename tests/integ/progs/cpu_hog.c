/* Keeps one CPU from everything else for a while: pinned to it, in
 * SCHED_FIFO, it spins for SECONDS (the kernel's real-time throttling, 95 %
 * by default, still lets ordinary threads of that CPU run 50 ms a second).
 * A process pinned to the same CPU is then runnable but not running, as a
 * loaded host's scheduler can leave one (frozen.test.sh).
 *
 *   integ_cpu_hog CPU SECONDS
 *
 * Exit 0 when done, 3 if it may not take SCHED_FIFO (needs root or
 * CAP_SYS_NICE), 2 on bad arguments. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct sched_param sp = { .sched_priority = 10 };
	double end;
	cpu_set_t set;
	int cpu;

	if (argc != 3 || (cpu = atoi(argv[1])) < 0 || cpu >= CPU_SETSIZE || atof(argv[2]) <= 0) {
		fprintf(stderr, "usage: integ_cpu_hog CPU SECONDS\n");
		return 2;
	}
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, "integ_cpu_hog: cannot run on CPU %d: %s\n", cpu, strerror(errno));
		return 2;
	}
	if (sched_setscheduler(0, SCHED_FIFO, &sp)) {
		fprintf(stderr, "integ_cpu_hog: no SCHED_FIFO: %s (needs root or CAP_SYS_NICE)\n",
			strerror(errno));
		return 3;
	}
	end = now_s() + atof(argv[2]);
	while (now_s() < end)
		;
	return 0;
}
