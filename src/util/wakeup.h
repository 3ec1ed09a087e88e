/* The read side of a wake-up fd: a pipe or eventfd that holds one token per
 * queued event. */
#ifndef UROCE_UTIL_WAKEUP_H
#define UROCE_UTIL_WAKEUP_H

#include <errno.h>
#include <unistd.h>

/* Reads one token (len bytes) from fd, blocking unless fd is non-blocking,
 * and again after a signal: 0, -errno, or -EIO when fd is closed. */
static inline int ur_wakeup_read(int fd, void *token, size_t len)
{
	ssize_t n;

	do
		n = read(fd, token, len);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		return 0;
	return n < 0 ? -errno : -EIO;
}

#endif
