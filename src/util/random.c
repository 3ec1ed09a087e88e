#include "util/random.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

/* Kernels without getrandom(2) (before 3.17), or seccomp filters that
 * refuse it, still have /dev/urandom. */
static int from_urandom(uint8_t *p, size_t len)
{
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	int ret = 0;

	if (fd < 0)
		return -errno;
	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			break;
		}
		p += n;
		len -= (size_t)n;
	}
	close(fd);
	return ret;
}

int ur_random_bytes(void *buf, size_t len)
{
	uint8_t *p = buf;
	int ret = 0;

	while (len) {
		ssize_t n = getrandom(p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = from_urandom(p, len);
			break;
		}
		p += n;
		len -= (size_t)n;
	}
	return ret;
}
