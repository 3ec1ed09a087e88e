#include "util/log_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int ur_log_path(char *out, size_t len, const char *pattern, pid_t pid)
{
	size_t at = 0;

	for (const char *p = pattern; *p; p++) {
		char num[16];
		const char *piece = num;
		size_t n;

		if (*p != '%') {
			num[0] = *p;
			num[1] = '\0';
		} else if (p[1] == 'p') {
			snprintf(num, sizeof(num), "%d", (int)pid);
			p++;
		} else if (p[1] == '%') {
			piece = "%";
			p++;
		} else {
			return -EINVAL;
		}
		n = strlen(piece);
		if (at + n >= len)
			return -ENAMETOOLONG;
		memcpy(out + at, piece, n);
		at += n;
	}
	if (at >= len)
		return -ENAMETOOLONG;
	out[at] = '\0';
	return 0;
}

int ur_log_file_open(const char *pattern)
{
	char path[PATH_MAX];
	int ret = ur_log_path(path, sizeof(path), pattern, getpid());
	int fd;

	if (ret)
		return ret;
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	return fd < 0 ? -errno : fd;
}

size_t ur_log_stamp(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	int n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(buf, len, "%02d:%02d:%02d.%03ld %d ", tm.tm_hour, tm.tm_min, tm.tm_sec,
		     ts.tv_nsec / 1000000, (int)getpid());
	return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}
