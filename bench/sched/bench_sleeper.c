/* A thread that sleeps 1 ms at a time, as a shell, an editor or a peer
 * process waiting for its next packet does: how late it wakes.  Prints,
 * after SECONDS, the longest time between two wake-ups and how many
 * exceeded 100 ms and 300 ms.  Run in a session of its own (setsid) beside
 * busy-polling programs in another (bench/neighbours.sh).
 *
 *   bench_sleeper SECONDS */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 30, start = now_s(), last = start, longest = 0;
	unsigned over100 = 0, over300 = 0;
	const struct timespec ms = { 0, 1000000 };

	if (secs <= 0) {
		fprintf(stderr, "usage: bench_sleeper SECONDS\n");
		return 2;
	}
	while (last - start < secs) {
		double t, gap;

		nanosleep(&ms, NULL);
		t = now_s();
		gap = t - last;
		last = t;
		if (gap > longest)
			longest = gap;
		over100 += gap > 0.1;
		over300 += gap > 0.3;
	}
	printf("longest %.1f ms, over 100 ms %u, over 300 ms %u, in %.0f s\n", longest * 1e3,
	       over100, over300, secs);
	return 0;
}
