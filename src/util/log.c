#include "util/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "util/config.h"

int ur_log_level = UR_LOG_WARN;

void ur_log_init(void)
{
	int level = ur_config()->log_level;

	if (level >= 0)
		ur_log_level = level;
}

static const char *const level_name[] = {
	[UR_LOG_ERR] = "error",
	[UR_LOG_WARN] = "warning",
	[UR_LOG_INFO] = "info",
	[UR_LOG_DBG] = "debug",
};

void ur_log_emit(int level, const char *dev, const char *func,
		 const char *fmt, ...)
{
	int saved_errno = errno;   /* the caller may still read it */
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (dev)
		fprintf(stderr, "uroce %s: %s: %s: %s\n", level_name[level], dev,
			func, msg);
	else
		fprintf(stderr, "uroce %s: %s: %s\n", level_name[level], func,
			msg);
	errno = saved_errno;
}

bool ur_log_ratelimit_ok(unsigned *last_sec, unsigned *count)
{
	struct timespec ts;
	unsigned now;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (unsigned)ts.tv_sec;
	if (now != __atomic_load_n(last_sec, __ATOMIC_RELAXED)) {
		__atomic_store_n(last_sec, now, __ATOMIC_RELAXED);
		__atomic_store_n(count, 0, __ATOMIC_RELAXED);
	}
	return __atomic_add_fetch(count, 1, __ATOMIC_RELAXED) <= 10;
}
