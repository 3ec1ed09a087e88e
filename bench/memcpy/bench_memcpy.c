/* Copy bandwidth, the ceiling of any copy-based transport: one core,
 * buffers in and out of cache, GB/s (10^9 bytes/s), for glibc's memcpy and
 * for the data path's ur_memcpy (util/copy.h says why both). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/copy.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double measure(void (*copy)(void *, const void *, size_t), size_t n, double secs)
{
	char *a = malloc(n), *b = malloc(n);
	double t0, t;
	uint64_t iters = 0, bytes = 0;

	if (!a || !b)
		exit(1);
	memset(a, 1, n);
	memset(b, 2, n);
	t0 = now();
	do {
		copy(b, a, n);
		a[iters % n]++;        /* keep the copy from being elided */
		bytes += n;
		/* The clock is read rarely: on some VMs it is a system call. */
		t = ++iters % 256 == 0 ? now() : t0;
	} while (t - t0 < secs);
	t = now();
	free(a);
	free(b);
	return bytes / (t - t0) / 1e9;
}

static void libc_copy(void *d, const void *s, size_t n)
{
	memcpy(d, s, n);
}

static void uroce_copy(void *d, const void *s, size_t n)
{
	ur_memcpy(d, s, n);
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 1024, 4096, 65536, 1 << 20, 64 << 20 };
	double secs = argc > 1 ? atof(argv[1]) : 0.5;

	printf("%-10s %14s %14s\n", "bytes", "memcpy GB/s", "ur_memcpy GB/s");
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		printf("%-10zu %14.2f %14.2f\n", sizes[i], measure(libc_copy, sizes[i], secs),
		       measure(uroce_copy, sizes[i], secs));
	return 0;
}
