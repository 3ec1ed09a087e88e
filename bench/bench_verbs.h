/* What the benchmarks on the public verbs API share: a clock in seconds
 * and a device opened by name.  Header-only: each benchmark is one
 * program built against whatever libibverbs it is run under. */
#ifndef UROCE_BENCH_BENCH_VERBS_H
#define UROCE_BENCH_BENCH_VERBS_H

#include <string.h>
#include <time.h>
#include <infiniband/verbs.h>

static inline double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The device called name (NULL: the first one), opened; NULL if none. */
static inline struct ibv_context *bench_open_dev(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; list && list[i] && !ctx; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

#endif
