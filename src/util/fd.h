/* Small helpers on file descriptors. */
#ifndef UROCE_UTIL_FD_H
#define UROCE_UTIL_FD_H

#include <errno.h>
#include <fcntl.h>

/* Adds O_NONBLOCK to fd's status flags: 0 or -errno. */
static inline int ur_fd_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

#endif
