#include "util/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

int ur_log_level = UR_LOG_WARN;

void ur_log_init(void)
{
	const char *s = getenv("UROCE_LOG");

	if (!s || !*s)
		return;
	if (!strcasecmp(s, "error") || !strcmp(s, "0"))
		ur_log_level = UR_LOG_ERR;
	else if (!strcasecmp(s, "warn") || !strcmp(s, "1"))
		ur_log_level = UR_LOG_WARN;
	else if (!strcasecmp(s, "info") || !strcmp(s, "2"))
		ur_log_level = UR_LOG_INFO;
	else if (!strcasecmp(s, "debug") || !strcmp(s, "3"))
		ur_log_level = UR_LOG_DBG;
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
