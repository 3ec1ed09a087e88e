/* Small helpers on file descriptors. */
#ifndef UROCE_UTIL_FD_H
#define UROCE_UTIL_FD_H

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

/* Adds O_NONBLOCK to fd's status flags: 0 or -errno. */
static inline int ur_fd_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/* Closes the n descriptors of fds (what a message that is refused
 * brought with it). */
static inline void ur_fds_close(const int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		close(fds[i]);
}

#endif
