#include "util/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "util/config.h"
#include "util/log_file.h"

int ur_log_level = UR_LOG_WARN;
/* The log file, or -1.  With one, stderr gets only warnings and errors
 * (the file has the rest, and the program's output stays as its readers
 * expect); without, all that ur_log_level lets through. */
static int file_fd = -1;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void log_init_once(void)
{
	const struct ur_config *c = ur_config();
	int fd;

	if (c->log_level >= 0)
		ur_log_level = c->log_level;
	if (!c->log_file)
		return;
	fd = ur_log_file_open(c->log_file);
	if (fd < 0) {
		fprintf(stderr, "uroce warning: cannot open UROCE_LOG_FILE=%s (%s): the log goes "
			"to stderr\n", c->log_file, strerror(-fd));
		return;
	}
	file_fd = fd;
}

void ur_log_init(void)
{
	pthread_once(&init_once, log_init_once);
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
	char msg[512], line[640], stamp[32];
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (dev)
		n = snprintf(line, sizeof(line), "uroce %s: %s: %s: %s\n", level_name[level], dev,
			     func, msg);
	else
		n = snprintf(line, sizeof(line), "uroce %s: %s: %s\n", level_name[level], func,
			     msg);
	if (n >= (int)sizeof(line)) {
		n = (int)sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	if (file_fd < 0 || level <= UR_LOG_WARN)
		fputs(line, stderr);
	if (file_fd >= 0) {
		/* One write a line: lines of threads and of a forked child
		 * sharing the file stay whole (O_APPEND). */
		struct iovec iov[2] = {
			{ stamp, ur_log_stamp(stamp, sizeof(stamp)) },
			{ line, (size_t)n },
		};
		ssize_t w = writev(file_fd, iov, 2);

		(void)w;   /* a full disk loses log lines, nothing else */
	}
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
